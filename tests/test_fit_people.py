"""People beside agents in ``llm-mesa fit`` and the report: a lab session's seats, and people's own CSV data.

A lab's seats are one more policy, ``people`` (their missed answers left out: the game played its
default for them); people's decisions in a CSV file of the agents-table layout give the same fit
as the sweep they were copied from (network given or rebuilt from the seed), and every fault in
the file is one line that names the fix (exit status 2).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from lab_people import play

from llm_mesa.cli import main
from llm_mesa.lab import LabSession
from llm_mesa.lab.run_folder import lab_manifest_part, lab_summary, lab_tables
from llm_mesa.registry import get_game
from llm_mesa.run_output import build_manifest, write_run
from llm_mesa.sweep import read_sweep

DESIGN = {"n": 10, "max_rounds": 4}


def lab_folder(out, seed: int, miss_after: int = 99) -> dict[int, str]:
    """A lab session whose two seats (nodes 3 and 8) answer their preference; seat 2 stops after ``miss_after`` rounds."""
    game = get_game("consensus")
    lab = LabSession(game, DESIGN, "majority-inertia", seed, 2, seat_agents=[3, 8], deadline=1.0)
    preferences = {a.node: a.preference for a in lab.model.agents_by_node}
    play(lab, {1: lambda r, f: {"colour": preferences[3]},
               2: lambda r, f: {"colour": preferences[8]} if r <= miss_after else None})
    summary = lab_summary(lab, "majority-inertia")
    manifest = build_manifest(game.name, lab.parameters, summary=summary, policy="majority-inertia", seed=seed,
                              lab=lab_manifest_part(lab, ""))
    write_run(out, lab_tables(lab), summary, manifest)
    return preferences


def fits_of(capsys, *args) -> list[dict]:
    capsys.readouterr()
    assert main(["fit", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["fits"]


def test_a_lab_sessions_seats_are_one_more_policy_people(tmp_path, capsys):
    lab_folder(tmp_path / "lab1", 3, miss_after=2)
    lab_folder(tmp_path / "lab2", 4)
    found = fits_of(capsys, str(tmp_path / "lab1"), str(tmp_path / "lab2"))
    people = {f["rule"]: f for f in found if f["policy"] == "people"}
    rounds = [int(json.loads((tmp_path / d / "summary.json").read_text())["rounds"]) for d in ("lab1", "lab2")]
    missed = rounds[0] - 2  # seat 2's missed rounds in the first session: not the person's decisions
    assert people["stubborn"]["decisions"] == 2 * sum(rounds) - missed
    assert people["stubborn"]["log_likelihood"] == 0 and people["stubborn"]["parameters"] == {}
    assert min(people.values(), key=lambda f: f["aic"])["rule"] == "stubborn"
    assert {c["measure"] for c in people["stubborn"]["checks"]} == {"consensus", "rounds"}  # two sessions: a test
    others = [f for f in found if f["policy"] != "people"]
    assert others and all(f["policy"].startswith("majority-inertia") for f in others)
    assert others[0]["decisions"] == 8 * sum(rounds)  # the eight agents on the rule, every round
    assert all(f["checks"] == [] for f in others)  # their games had people in them, who cannot be played again


def test_a_lab_session_goes_into_the_report_as_people(tmp_path, capsys):
    lab_folder(tmp_path / "lab1", 3)
    sweep = tmp_path / "rules"
    assert main(["sweep", "--game", "consensus", "--conditions", "ba-none", "--set", "n=10", "--set", "max_rounds=4",
                 "--policies", "stubborn",
                 "--seeds", "2", "--out", str(sweep)]) == 0
    out = tmp_path / "report.html"
    assert main(["report", str(sweep), "--out", str(out), "--fit", str(tmp_path / "lab1")]) == 0
    page = out.read_text()
    assert "Which rule plays like these agents" in page and "people · BA, N=10, no communication" in page


def people_csv(tmp_path, edges: bool = False) -> tuple[str, str]:
    """A rule sweep's agents table written as people's CSV data (its design as columns), and that sweep."""
    sweep = tmp_path / "mi"
    assert main(["sweep", "--game", "consensus", "--conditions", "ws-none", "--set", "n=20", "--set", "max_rounds=12",
                 "--policies", "majority-inertia:inertia=0.4", "--seeds", "4", "--tables", "agents", "--out",
                 str(sweep)]) == 0
    agents = read_sweep(sweep, "agents")
    frame = agents[["seed", "round", "node", "colour", "preference"]].assign(game="consensus", n=20, topology="ws",
                                                                            max_rounds=12)
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    if edges:
        read_sweep(sweep, "edges")[["seed", "source", "target"]].to_csv(tmp_path / "edges.csv", index=False)
    return str(path), str(sweep)


@pytest.mark.parametrize("with_edges", [False, True])
def test_peoples_csv_fits_as_the_sweep_it_was_copied_from(tmp_path, capsys, with_edges):
    path, sweep = people_csv(tmp_path, edges=with_edges)
    extra = ["--edges", str(tmp_path / "edges.csv")] if with_edges else []
    from_csv = fits_of(capsys, path, "--rules", "majority-inertia;voter", "--no-check", *extra)
    from_sweep = fits_of(capsys, sweep, "--rules", "majority-inertia;voter", "--no-check")
    assert [f["policy"] for f in from_csv] == ["people", "people"]
    for a, b in zip(from_csv, from_sweep):
        assert (a["rule"], a["decisions"]) == (b["rule"], b["decisions"])
        assert a["log_likelihood"] == pytest.approx(b["log_likelihood"], abs=1e-9)
        assert a["parameters"].keys() == b["parameters"].keys()
        for name, value in a["parameters"].items():
            assert value["estimate"] == pytest.approx(b["parameters"][name]["estimate"], abs=1e-6)
    assert from_csv[0]["checks"] == []  # a CSV holds no outcomes to replay against


def _bad(tmp_path, frame: pd.DataFrame, name="bad.csv") -> str:
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return str(path)


GOOD = {"game": ["consensus"] * 4, "seed": [1, 1, 1, 1], "round": [0, 0, 1, 1], "node": [0, 1, 0, 1],
        "colour": ["red", "blue", "blue", "blue"], "preference": ["red", "blue", "red", "blue"], "n": [2] * 4,
        "topology": ["er"] * 4}


@pytest.mark.parametrize("change, words", [
    (lambda f: f.drop(columns=["seed"]), "no 'seed' column"),
    (lambda f: f.assign(round=["0", "x", "1", "1"]), "row 3: round is 'x'"),
    (lambda f: f.drop(columns=["game"]), "names no game"),
    (lambda f: f.assign(n=[2, 3, 2, 2]), "n takes several values"),
    (lambda f: f.assign(n=[1] * 4), "n=1 is below its minimum 2"),
    (lambda f: f.assign(topology=["moon"] * 4), "unknown topology 'moon'"),
    (lambda f: f.drop(columns=["preference"]), "no column 'preference'"),
    (lambda f: f.assign(colour=["red", "green", "red", "red"]), "'green'"),
    (lambda f: f[f["round"] == 1], "has no round 0"),
    (lambda f: pd.concat([f, f.tail(1)]), "two rows in round 1"),
])
def test_every_fault_of_peoples_csv_is_one_line_and_exit_2(tmp_path, capsys, change, words):
    path = _bad(tmp_path, change(pd.DataFrame(GOOD)))
    capsys.readouterr()
    assert main(["fit", path, "--no-check"]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1, err


def test_a_good_small_csv_fits_and_its_faulty_edges_are_refused(tmp_path, capsys):
    path = _bad(tmp_path, pd.DataFrame(GOOD), "good.csv")
    found = fits_of(capsys, path, "--rules", "stubborn", "--no-check")
    assert found[0]["decisions"] == 2 and found[0]["policy"] == "people"
    edges = _bad(tmp_path, pd.DataFrame({"seed": [2], "source": [0], "target": [1]}), "edges.csv")
    capsys.readouterr()
    assert main(["fit", path, "--edges", edges, "--no-check"]) == 2
    assert "no edge of game 1" in capsys.readouterr().err
    assert main(["fit", str(tmp_path / "missing.csv")]) == 2
    assert "no file" in capsys.readouterr().err


def test_the_colouring_report_shows_the_published_people_beside_ours_with_nothing_estimated(tmp_path):
    from llm_mesa.analysis.sweep_data import open_sweep
    from llm_mesa.models.colouring import analysis, figures

    out = tmp_path / "colouring"
    assert main(["sweep", "--game", "colouring", "--conditions", "chords-20,leader-cycle", "--set", "inertia=0.1",
                 "--policies", "best-response", "--seeds", "3", "--out", str(out)]) == 0
    report = analysis.analyze(open_sweep(out), {})
    for panel in (figures.solved_panel(report), figures.time_panel(report)):
        table = panel.table
        assert list(table["source"][:-1]) == ["ours"] * (len(table) - 1)
        people = table.iloc[-1]
        assert people["setting"] == "people: Kearns, Suri and Montfort (2006)" and people["source"] == analysis.SOURCE
        assert (people["solved"], people["mean_s"], people["median_s"]) == (31, 82.0, 44.0)
    solved = figures.solved_panel(report).table.iloc[-1]
    assert solved["games"] == 38 and pd.isna(solved["low"]) and pd.isna(solved["high"])  # no interval invented
