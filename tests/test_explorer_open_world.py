"""Every page's data for a game from outside the tree (``tinyvote``, installed by conftest), through the generic view.

The game gives only the required contract (parameters, ``build``) plus its rule and
LLM policies: the default ``GameView`` finds its agents on the model's Mesa
``Network`` and its rounds in the ``DataCollector``, and the explorer and Mesa's
SolaraViz components draw them. Also: the explorer names no game and no game's
parameter, and a game's view imports neither solara nor the explorer.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

from llm_mesa.cli import main
from llm_mesa.registry import game_names, get_game
from llm_mesa.sweep import run_sweep
from llm_mesa.views import GameView, view_of
from llm_mesa.views.controls import ControlError, initial_values
from llm_mesa.views.sweeps import SweepGames
from llm_mesa.visualization.compare_app import build_pair, compare_controls
from llm_mesa.visualization.network_chart import chamber_spec, network_spec

ROOT = Path(__file__).resolve().parents[1]
EXTRA = "tinyvote"


@pytest.fixture(scope="module")
def view() -> GameView:
    return view_of(get_game(EXTRA))


def test_the_generic_view_gives_controls_from_the_parameters_policies_llm_and_seed(view):
    controls = view.controls()
    assert type(view) is GameView
    assert list(controls) == ["n", "max_rounds", "start_share", "policy", "llm_endpoint", "llm_model", "seed"]
    assert controls["policy"]["values"] == ["follow", "coin", "llm"]
    assert controls["llm_endpoint"]["value"] == "loopback" and controls["llm_model"]["value"] == "tinyvote:follow"
    values, errors = view.query_values("n=2&start_share=x&policy=coin")
    assert values == {"policy": "coin"}
    assert errors == {"n": "n: 2 is below the game's minimum 3", "start_share": "start share: 'x' is not a number"}
    assert controls["n"]["max"] < 500  # the slider offers a range around the default; a link beyond it widens it
    assert view.query_values("n=500") == ({"n": 500}, {})


def test_the_picture_is_the_models_network_coloured_by_agent_state_and_steps(view):
    model = view.build_from({**initial_values(view.controls()), "n": 12, "seed": 4})
    first = view.snapshot(model)
    assert first.label == "Round 0 of 20" and first.round_number == 0  # its declared round limit, as the CLI's
    assert nx.utils.graphs_equal(first.picture.graph, model.network.G)
    assert list(first.picture.state) == [v.state for v in model.voters]
    model.step()
    later = view.snapshot(model, selected=3)
    assert later.round_number == 1 and list(later.picture.state) == [v.state for v in model.voters]
    assert later.agent["state"] == model.voters[3].state and later.agent["policy"] == "follow"
    spec = network_spec(later.picture)
    assert [r["fill"] for r in spec["datasets"]["nodes"]] == [v.state for v in model.voters]
    bubbles = chamber_spec(later.picture)["datasets"]["bubbles"]
    assert sum(b["members"] for b in bubbles) == 12
    charts = dict(view.charts(later.rounds))
    label, collected = get_game(EXTRA).measures["share_a"].label, model.datacollector.get_model_vars_dataframe()["share_a"]
    if collected.nunique() > 1:  # it moved: drawn round by round
        values = [r for r in charts["llm-mesa-chart-shares"]["data"]["values"] if r["series"] == label]
        assert [r["value"] for r in values] == pytest.approx(list(collected))
    else:  # it has not moved: listed with its value, not drawn as a flat line
        lines = [r["line"] for r in charts["llm-mesa-chart-unchanged"]["data"]["values"]]
        assert f"{label}: {collected.iloc[0]:.4g}" in lines


def test_a_bad_build_names_its_control_and_compare_plays_two_policies_from_one_start(view):
    with pytest.raises(ControlError) as caught:
        view.build_from({**initial_values(view.controls()), "policy": "llm", "llm_model": ""})
    assert caught.value.control == "llm_model"
    values = {**initial_values(compare_controls(view)), "policy_a": "follow", "policy_b": "coin", "n": 14}
    a, b = build_pair(view, values)
    assert [v.state for v in a.voters] == [v.state for v in b.voters]  # same seed, same start
    a.step()
    b.step()
    assert view.round_number(a) == view.round_number(b) == 1


def test_a_run_directory_replays_round_by_round_as_it_was_played(view, tmp_path):
    out = tmp_path / "run"
    assert main([EXTRA, "--policy", "coin", "--n", "12", "--seed", "5", "--out", str(out)]) == 0
    recording = view.recording(out)
    model = get_game(EXTRA).build({"n": 12}, "coin", 5)
    states = [[v.state for v in model.voters]]
    while model.running:
        model.step()
        states.append([v.state for v in model.voters])
    assert recording.note == "" and recording.last_round == len(states) - 1
    assert [list(recording.snapshot(r).picture.state) for r in range(recording.last_round + 1)] == states
    assert recording.snapshot(1, selected=2).agent["state"] == states[1][2]


def test_a_sweep_browses_and_replays_its_games(view, tmp_path):
    out = tmp_path / "sweep"
    run_sweep(None, "follow;coin", 3, out, game=EXTRA, axes=["n=8,10"], tables=["rounds"], model_options={"max_rounds": 6})
    sweep = SweepGames.open(out)
    assert sweep.game_name == EXTRA and sweep.conditions == ["n=8", "n=10"]
    table = view.sweep_table(sweep.games)
    assert list(table["games"]) == [3, 3, 3, 3] and "share_a" in table.columns
    assert all(" ± " in cell for cell in table["share_a"])  # mean and SD in one column: the table fits the page
    seed = int(sweep.games.iloc[0]["seed"])
    recording = view.sweep_game(sweep, "n=10", "coin", seed)
    assert recording.note == "" and recording.snapshot(recording.last_round).picture is not None


def test_viz_takes_the_extra_game_by_name(tmp_path):
    import argparse

    from llm_mesa.visualization import cli as viz_cli

    parser = argparse.ArgumentParser()
    viz_cli.configure(parser)
    assert EXTRA in game_names()
    assert viz_cli.chosen_game(parser.parse_args(["--game", EXTRA, "--compare"]))[0] == EXTRA


def test_the_components_find_the_game_of_a_model_and_give_mesa_model_params():
    from llm_mesa.visualization import components

    model = get_game(EXTRA).build({"n": 8}, "follow", 1)
    assert components.view_for(model).game.name == EXTRA
    consensus = get_game("consensus").build({"n": 10}, "voter", 1)
    assert type(components.view_for(consensus)).__name__ == "ConsensusView"
    params = components.model_params(EXTRA, policy="coin", seed=2)
    assert params["n"]["type"] == "SliderInt" and params["policy"] == "coin" and params["seed"] == 2
    assert len(components.components(EXTRA)) == 3


def _string_constants(folder: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.setdefault(node.value, []).append(f"{path.name}:{node.lineno}")
    return found


def test_the_explorer_names_no_game_and_no_games_parameter():
    """No game's name anywhere in visualization/ (code, strings, comments), no parameter's name as a string."""
    games = [g for g in game_names() if (ROOT / "models" / g).is_dir() or g == EXTRA]
    words = __import__("re").compile(r"\b(" + "|".join(games) + r")\b", __import__("re").IGNORECASE)
    mentions = [f"{p.name}:{i}" for p in (ROOT / "visualization").glob("*.py")
                for i, line in enumerate(p.read_text().splitlines(), 1) if words.search(line)]
    assert mentions == []
    parameters = {name for g in games for name in get_game(g).parameters.names}
    # the control specs' own vocabulary (Mesa's model_params) and the charts' sizes (Vega-Lite, CSS): the words
    # Mesa's grid examples also name their grid's sides with, but here never a parameter
    spec_words = {"label", "width", "height"}
    named = {k: v for k, v in _string_constants(ROOT / "visualization").items() if k in parameters - spec_words}
    assert named == {}


def test_the_checks_can_fail(tmp_path):
    (tmp_path / "bad.py").write_text("x = {'topology': 1}\n")
    assert "topology" in _string_constants(tmp_path)


def test_a_games_view_imports_neither_solara_nor_the_explorer():
    code = ("import sys\nfrom llm_mesa.registry import get_game\nfrom llm_mesa.views import view_of\n"
            "for name in ('consensus', 'naming'):\n    view_of(get_game(name))\n"
            "import llm_mesa.models.consensus.view_replay, llm_mesa.views.runs, llm_mesa.views.sweeps\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('solara', 'ipyvuetify', 'altair')"
            " or m.startswith('llm_mesa.visualization')]\n"
            "sys.stderr.write(repr(bad)); sys.exit(1 if bad else 0)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
