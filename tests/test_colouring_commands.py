"""The colouring game through every command: its subcommand, sweeps, experiment files, analyze, report."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from llm_mesa.cli import main
from llm_mesa.models.colouring.design import CONDITIONS, GRAPHS
from llm_mesa.models.colouring.model import ColouringModel
from llm_mesa.registry import get_game
from llm_mesa.sweep import read_sweep
from llm_mesa.sweep.experiment import load_experiment
from llm_mesa.views import view_of

EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments"


def test_the_subcommand_plays_one_game_and_writes_its_tables(tmp_path, capsys):
    argv = ["colouring", "--topology", "pa", "--k", "3", "--inertia", "0.2", "--seed", "3", "--json"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 0
    row = json.loads(capsys.readouterr().out)
    model = ColouringModel("best-response", 3, topology="pa", k=3, inertia=0.2)
    while model.running:
        model.step()
    assert {k: row[k] for k in model.summary()} == model.summary()
    assert row["game"] == "colouring" and row["policy"] == "best-response"
    tables = {name: pd.read_parquet(tmp_path / "run" / f"{name}.parquet") for name in ("rounds", "agents", "edges")}
    assert list(tables["rounds"]["conflicts"]) == model.conflict_history
    assert len(tables["agents"]) == 38 * (model.round + 1) and len(tables["edges"]) == len(model.edges)
    assert main(["colouring", "--seed", "3"]) == 0
    assert capsys.readouterr().out.startswith("colouring: ")


def status_of(argv: list[str]) -> int:
    """``main``'s exit status, also where argparse exits for it."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code)


@pytest.mark.parametrize("argv, fragment", [
    (["--k", "11"], "k=11 is above its maximum"),
    (["--topology", "leader-cycle", "--leaders", "30"], "use --leaders 13 or fewer"),
    (["--topology", "cycle", "--n", "6", "--chords", "40"], "room for"),
    (["--policy", "greedy"], "unknown colouring policy 'greedy'"),
    (["--initial", "striped"], "choose one of: random, same"),
    (["--policy", "llm"], "no endpoint given"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, argv, fragment):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    out = tmp_path / "o"
    assert status_of(["colouring", *argv, "--out", str(out)]) == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("usage:")]
    assert len(err) == 1 and fragment in err[0], err
    assert not out.exists()


def test_a_sweep_crosses_conditions_axes_and_the_rule_policies(tmp_path, capsys):
    out = tmp_path / "sweep"
    argv = ["sweep", "--game", "colouring", "--conditions", "cycle,pa-2", "--policies", "rules", "--seeds", "3",
            "--set", "inertia=0,0.3", "--set", "max_rounds=30", "--tables", "rounds,agents", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    assert "share solved" in capsys.readouterr().out
    games = read_sweep(out)
    assert len(games) == 2 * 2 * 2 * 3
    assert set(games["policy"]) == {"best-response", "random"}
    assert set(games["condition"]) == {f"{c}|inertia={p}" for c in ("cycle", "pa-2") for p in (0.0, 0.3)}
    one = games[(games.condition == "pa-2|inertia=0.3") & (games.policy == "best-response")].iloc[0]
    alone = ColouringModel("best-response", int(one["seed"]), **{**CONDITIONS["pa-2"], "inertia": 0.3, "max_rounds": 30})
    while alone.running:
        alone.step()
    assert one["solved"] == alone.summary()["solved"] and one["conflicts_mean"] == alone.summary()["conflicts_mean"]
    rounds = read_sweep(out, "rounds")
    assert len(rounds) == games["rounds"].sum() + len(games)  # round 0 and every round played
    assert main(argv) == 0  # resumes: nothing left to play
    assert "0 games played, 24 already present" in capsys.readouterr().out


def test_a_dry_run_with_the_llm_policy_estimates_without_a_call(capsys):
    argv = ["sweep", "--game", "colouring", "--conditions", "study", "--policies", "llm", "--model", "m",
            "--base-url", "http://127.0.0.1:9/v1", "--seeds", "2", "--set", "max_rounds=10", "--dry-run"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"games: {len(CONDITIONS) * 2}"
    assert f"calls: at most {len(CONDITIONS) * 2 * 38 * 10:,}" in "\n".join(lines)


def test_the_experiment_files_hold_the_studys_design_and_pair_their_seeds():
    rules = load_experiment(EXPERIMENTS / "colouring-kearns2006.toml")
    llm = load_experiment(EXPERIMENTS / "colouring-kearns2006-llm.toml")
    assert rules.games == len(GRAPHS) * 4 * 2 * 20 and llm.games == len(GRAPHS) * 3 * 5
    assert all(c["n"] == 38 and c["max_rounds"] == 100 for c in (*rules.conditions.values(), *llm.conditions.values()))
    assert {c["k"] for name, c in llm.conditions.items() if name.startswith("pa")} == {3}
    assert {c["k"] for name, c in llm.conditions.items() if not name.startswith("pa")} == {2}
    rule_seeds, llm_seeds = rules.seeds(), llm.seeds()
    for graph in GRAPHS:  # the rule baseline without inertia plays the LLM file's local-view games
        assert rule_seeds[f"{graph}|inertia=0.0"][:5] == llm_seeds[graph]


def test_the_rule_experiment_plays_and_analyze_and_report_read_it(tmp_path, capsys):
    out = tmp_path / "kearns"
    assert main(["sweep", str(EXPERIMENTS / "colouring-kearns2006.toml"), "--repetitions", "1", "--processes", "1",
                 "--out", str(out), "--quiet"]) == 0
    games = read_sweep(out)
    assert len(games) == len(GRAPHS) * 4 * 2
    assert games.loc[games.policy == "random", "solved"].sum() <= games.loc[games.policy == "best-response", "solved"].sum()
    capsys.readouterr()
    assert main(["analyze", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    text = json.dumps(report)
    assert "solved" in text and "rounds_to_solution" in text and "conflicts_mean" in text
    assert main(["report", str(out), "--out", str(tmp_path / "report.html")]) == 0
    html = (tmp_path / "report.html").read_text()
    assert "conflicts_mean" in html and "rounds_to_solution" in html and html.count("<img") >= 3


def test_the_generic_page_draws_the_network_where_the_game_lays_it_out_in_its_colours():
    from llm_mesa.views import NAMED_COLOURS

    view = view_of(get_game("colouring"))
    model = view.build_from({name: spec.get("value") for name, spec in view.controls().items()})
    picture = view.picture(model)
    assert picture.layout == {v: tuple(map(float, model.layout[v])) for v in model.graph}
    assert picture.state == [p.state for p in model.players]
    colours = picture.colours()
    assert all(colours[state] == NAMED_COLOURS[state] for state in set(picture.state))
