"""The colouring study as the paper ran it: the whole network in the high-information view, paired
inertia levels and views, and the paper's published results beside ours in the report, the headline first."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from llm_mesa.models.colouring import analysis
from llm_mesa.models.colouring.design import CONDITIONS, GRAPHS, VIEWS
from llm_mesa.models.colouring.model import ColouringModel
from llm_mesa.models.colouring.prompt import ColouringPrompt
from llm_mesa.sweep.experiment import load_experiment

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def test_the_inertia_levels_of_the_rule_file_play_the_same_seeds_graphs_and_starts():
    experiment = load_experiment(EXPERIMENTS / "colouring-kearns2006.toml")
    seeds = {name: list(s) for name, s in experiment.seeds().items()}
    levels = sorted({name.partition("|")[2] for name in seeds})
    assert levels == ["inertia=0.0", "inertia=0.1", "inertia=0.3", "inertia=0.5"]
    for graph in GRAPHS:
        cells = [seeds[f"{graph}|{level}"] for level in levels]
        assert all(cell == cells[0] for cell in cells), graph  # "FAMILY|inertia=X": one set of seeds
    graph = dict(CONDITIONS["pa-2"])
    seed = seeds["pa-2|inertia=0.0"][3]
    low, high = ColouringModel("best-response", seed, **{**graph, "inertia": 0.0}), \
        ColouringModel("best-response", seed, **{**graph, "inertia": 0.5})
    assert low.edges == high.edges and low.colouring() == high.colouring()  # the same graph and start


def test_the_views_and_the_llm_file_play_the_rule_files_seeds():
    rules = load_experiment(EXPERIMENTS / "colouring-kearns2006.toml").seeds()
    llm = load_experiment(EXPERIMENTS / "colouring-kearns2006-llm.toml").seeds()
    for graph in GRAPHS:
        views = [list(llm[graph if view == "local" else f"{graph}-{view}"]) for view in VIEWS]
        assert views[0] == views[1] == views[2]  # what agents are shown changes no seed
        assert views[0] == list(rules[f"{graph}|inertia=0.0"])[: len(views[0])]


def test_the_global_view_shows_every_nodes_colour_and_every_link():
    parameters = dict(CONDITIONS["chords-5-global"])
    assert parameters["show_network"] and not CONDITIONS["chords-5"].get("show_network")
    model = ColouringModel("best-response", 4, **parameters)
    model.step()
    view = model.players[7].observe()
    rules, state = (m["content"] for m in ColouringPrompt().messages(view))
    assert "sees the whole network" in rules and "never the whole network" not in rules
    links = rules.split("The network's links (node-node): ")[1].splitlines()[0].split(", ")
    assert sorted(tuple(map(int, link.split("-"))) for link in links) == model.edges  # every link, once
    shown = state.split("Every node's current colour: ")[1].splitlines()[0].split(", ")
    assert shown == [f"{v}: {c}" for v, c in enumerate(model.colouring())]  # every node's colour, now
    local = ColouringModel("best-response", 4, **dict(CONDITIONS["chords-5"])).players[7].observe()
    text = "\n".join(m["content"] for m in ColouringPrompt().messages(local))
    assert "Every node's current colour" not in text and "links (node-node)" not in text


def test_under_turns_an_agent_that_sees_the_whole_network_waits_for_every_earlier_turn():
    """Each turn reads the colours of everyone who moved before it: a round's depth is its number of turns."""
    common = {"n": 20, "topology": "cycle", "k": 2, "update": "random-sequential", "max_rounds": 3}
    seeing = ColouringModel("best-response", 2, show_network=True, **common)
    local = ColouringModel("best-response", 2, **common)
    seeing.step()
    local.step()
    assert seeing.depth == 20  # one chain through all 20 turns
    assert local.depth < 20  # neighbours only: turns far apart on the ring run side by side


def placed_games(rows: list[dict]) -> object:
    """A stand-in for ``SweepData``: games with the manifest's condition parameters."""
    games = pd.DataFrame(rows)
    games = games.assign(model=games["policy"])

    class Sweep:
        manifests = [{"grid": {"conditions": {name: dict(CONDITIONS[name]) for name in set(games["condition"])}}}]

        def ordered(self, column):
            return list(dict.fromkeys(games[column]))

    sweep = Sweep()
    sweep.games = games
    return sweep


def test_the_report_holds_the_papers_findings_against_ours(monkeypatch):
    monkeypatch.setattr(analysis.generic, "analyze", lambda sweep, options: {})  # the rest is any game's
    rows = [{"condition": graph, "policy": "br", "seed": s, "solved": solved, "rounds_to_solution": 10 if solved else None}
            for graph, wins in (("cycle", 1), ("chords-5", 3), ("chords-20", 4), ("leader-cycle", 4), ("pa-2", 0),
                                ("pa-3", 1)) for s in range(4) for solved in [s < wins]]
    report = analysis.analyze(placed_games(rows), {})
    headline = report["headline"][0]
    assert (headline["games"], headline["solved"]) == (24, 13) and headline["median_s"] == 30.0  # 10 rounds x 3 s
    verdict = report["structure"][0]
    assert verdict["pa_harder"] == "yes" and verdict["chords_easier"] == "yes"
    assert report["published"]["solved"] == 31 and report["published"]["experiments"] == 38
    assert "Science 313" in report["published"]["source"]
    assert report["views"] == []  # one view played: said so, not invented
    flipped = [dict(r, solved=not r["solved"], rounds_to_solution=10) for r in rows]
    verdict = analysis.analyze(placed_games(flipped), {})["structure"][0]
    assert verdict["pa_harder"] == "no" and verdict["chords_easier"] == "no"


def test_each_design_condition_is_placed_in_its_graph_and_view():
    for name, parameters in CONDITIONS.items():
        seen = next((v for v in VIEWS if v != "local" and name.endswith(f"-{v}")), "local")
        assert analysis.family(parameters) == name.removesuffix(f"-{seen}"), name
        assert analysis.view(parameters) == seen, name
    assert analysis.family({**CONDITIONS["cycle"], "n": 40}) is None  # not the study's 38


@pytest.fixture(scope="module")
def rule_report(tmp_path_factory):
    from llm_mesa.analysis.report import build_report
    from llm_mesa.sweep import run_sweep

    out = tmp_path_factory.mktemp("colouring") / "sweep"
    run_sweep(["cycle", "chords-20", "pa-2"], "best-response", 2, out, game="colouring",
              axes={"inertia": [0.0, 0.3]}, model_options={"max_rounds": 30})
    return build_report([str(out)], cache=False)[0]


def test_the_colouring_report_puts_the_headline_first_with_the_published_result_and_its_source(rule_report):
    titles = [t.split("</h3>")[0] for t in rule_report.split("<h3>")[1:]]
    assert titles[0].startswith("Solved within the round limit") and "Kearns et al. (2006)" in titles[0]
    assert titles[1].startswith("Time to a proper colouring")
    assert "solved" not in titles[4:]  # the generic panel of the headline is not drawn again after the rest
    first = rule_report.split("<h3>")[1]
    assert "31 of 38 experiments" in first and "Science 313(5788):824-827, 2006" in first
    assert "could not be drawn" not in rule_report


def test_the_information_panel_compares_the_views_of_each_graph_on_the_same_games(tmp_path):
    """Best response ignores what it is shown: on paired seeds its three views solve the same games."""
    from llm_mesa.analysis.sweep_data import open_sweeps
    from llm_mesa.models.colouring.figures import information_panel
    from llm_mesa.sweep import run_sweep

    out = tmp_path / "views"
    run_sweep({name: dict(CONDITIONS[name]) for name in ("chords-20", "chords-20-degrees", "chords-20-global")},
              "best-response", 3, out, game="colouring", model_options={"max_rounds": 40, "inertia": 0.1})
    report = analysis.analyze(open_sweeps([out]), {})
    views = {r["view"]: (r["games"], r["solved"]) for r in report["views"]}
    assert set(views) == {"local", "degrees", "global"} and len(set(views.values())) == 1  # paired: the same games
    panel = information_panel(report)
    assert panel.skipped is None and panel.figure and set(panel.table["view"]) == set(views)
