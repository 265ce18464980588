"""`llm-mesa analyze`: its numbers are those of the games table and of the statistics called directly."""

from __future__ import annotations

import json
import subprocess
import sys

import networkx as nx
import pandas as pd
import pytest

from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.models.consensus.analysis import _game_graph, firth_consensus_regression, stubbornness_vs_consensus
from llm_mesa.models.consensus.analysis_paper import short_term
from llm_mesa.models.consensus.analysis_report import default_formula
from llm_mesa.sweep import read_sweep, run_sweep

CONDITIONS = {
    "ws-none": {"n": 12, "topology": "ws", "communication": "none"},
    "cc-local": {"n": 12, "topology": "caveman", "communication": "local"},
    "ba-global": {"n": 12, "topology": "ba", "communication": "global"},
}
FAST = {"max_rounds": 30, "baseline_permutations": 50}


def analyze(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "llm_mesa.cli", "analyze", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("analyze") / "sweep"
    run_sweep(CONDITIONS, "mi-0.2;voter", 6, out, model_options=FAST, tables=("agents",), game="consensus")
    return out


def test_text_report_holds_the_consensus_counts_of_the_games_table(sweep_dir):
    done = analyze(sweep_dir)
    assert done.returncode == 0, done.stderr
    games = read_sweep(sweep_dir)
    counts = games.groupby(["condition", "policy"])["consensus"].agg(["sum", "count"])
    block = done.stdout.split("consensus (successes / games):\n")[1].split("\n\n")[0]
    lines = {line.split()[0]: line.split()[1:] for line in block.splitlines()[2:]}
    assert block.splitlines()[0].split() == ["mi-0.2", "voter", "all"]
    assert list(lines) == [*CONDITIONS, "all"]
    for condition in CONDITIONS:  # columns: mi-0.2, voter, all
        expected = [f"{int(counts.loc[(condition, p), 'sum'])}/{int(counts.loc[(condition, p), 'count'])}"
                    for p in ("mi-0.2", "voter")]
        sub = games[games["condition"] == condition]
        assert lines[condition] == [*expected, f"{int(sub['consensus'].sum())}/{len(sub)}"]
    assert lines["all"][-1] == f"{int(games['consensus'].sum())}/{len(games)}"
    for heading in ("Firth logistic regression", "point-biserial", "Kruskal-Wallis", "Mann-Whitney",
                    "majority following per model", "Wilson", "McFadden pseudo-R2", "LR chi2(",
                    "log-likelihood", "Bonferroni", "Holm", "pseudo-equilibrium", "rounds to consensus"):
        assert heading in done.stdout


def test_json_equals_the_statistics_called_directly(sweep_dir, tmp_path):
    target = tmp_path / "analysis.json"
    done = analyze(sweep_dir, "--json", "--out", target)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert json.loads(target.read_text()) == report
    games = read_sweep(sweep_dir).assign(model=lambda g: g["policy"])  # rule policies: the model is the configuration

    counts = games.groupby(["condition", "model"])["consensus"].agg(["sum", "count"])
    assert {(r["condition"], r["model"]): (r["successes"], r["games"]) for r in report["consensus"]} == \
        {key: (int(row["sum"]), int(row["count"])) for key, row in counts.iterrows()}
    for row in report["consensus"]:  # Wilson intervals hold the rate
        assert row["ci_low"] <= row["rate"] <= row["ci_high"]

    firth = report["firth"]
    # only what varies enters the default formula: n = 12 everywhere drops out, and is named
    assert firth["formula"] == default_formula(games)[0] == \
        "consensus ~ C(topology) * C(communication) + C(model)"
    assert firth["single_level_terms_dropped"]["n"] == "12"
    direct = firth_consensus_regression(games, firth["formula"])
    assert list(firth["terms"]) == [short_term(t) for t in direct.table.index]
    for term, row in direct.table.iterrows():
        assert firth["terms"][short_term(term)]["coef"] == pytest.approx(row["coef"], rel=1e-9, abs=1e-12)
        assert firth["terms"][short_term(term)]["odds_ratio"] == pytest.approx(row["odds_ratio"], rel=1e-9)
    assert firth["lr_chi2"] == pytest.approx(direct.lr_chi2) and firth["lr_df"] == direct.lr_df
    assert firth["loglik"] == pytest.approx(direct.loglik)

    stub = report["stubbornness_vs_consensus"]
    assert stub["r"] == pytest.approx(stubbornness_vs_consensus(games).r)
    for model in ("mi-0.2", "voter"):  # per model, not pooled
        assert stub["per_model"][model]["r"] == pytest.approx(stubbornness_vs_consensus(games[games["model"] == model]).r)

    major = report["majority_following"]
    assert "skipped" not in major and major["games_left_out"] == []
    # every agent with neighbours, every round but the last, of every game
    assert major["transitions_total"] == int((games["n"] * games["rounds"]).sum())
    assert set(major["per_model"]) == {"mi-0.2", "voter"}
    for part in major["per_model"].values():
        assert part["slope"] > 0  # both rules follow their neighbourhood
        assert part["curve"][0]["p_blue"] < part["curve"][-1]["p_blue"]


def test_transitions_are_capped_by_a_seeded_subsample(sweep_dir):
    first, again = (json.loads(analyze(sweep_dir, "--json", "--max-transitions", 500).stdout)
                    for _ in range(2))
    major = first["majority_following"]["per_model"]["voter"]
    assert major["nobs"] == 500 and major["subsample"] == {"rows": 500, "seed": 0}
    # the same rows and the same seeded fit each time: equal, not merely close
    assert first["majority_following"] == again["majority_following"]
    assert sum(b["n"] for b in major["empirical"]) == 500
    other = json.loads(analyze(sweep_dir, "--json", "--max-transitions", 500, "--sample-seed", 1).stdout)
    assert other["majority_following"]["per_model"]["voter"]["empirical"] != major["empirical"]


@pytest.mark.parametrize("row", [
    {"topology": "ba", "communication": "global"},
    {"topology": "er", "communication": "none"},
    {"topology": "ws", "communication": "local"},
    {"topology": "caveman", "communication": "none"},
])
def test_redrawn_graph_is_the_games_graph(row):
    for seed in (0, 7):
        model = ConsensusModel(n=16, policy="stubborn", rng=seed, baseline_permutations=0, **row)
        graph = _game_graph(pd.Series({**row, "n": 16, "seed": seed}))
        assert nx.utils.graphs_equal(graph, model.graph)


def test_tests_that_cannot_run_are_skipped_with_their_reason(tmp_path):
    out = tmp_path / "stubborn"  # stubborn agents with 50/50 preferences never agree; no agents table kept
    run_sweep({k: CONDITIONS[k] for k in ("ws-none", "cc-local")}, "stubborn", 3, out,
              model_options={"max_rounds": 3, "baseline_permutations": 20}, game="consensus")
    done = analyze(out, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "false in all 6 rows" in report["firth"]["skipped"]
    assert "skipped" in report["stubbornness_vs_consensus"]
    assert "skipped" in report["stubbornness_vs_consensus"]["per_model"]["stubborn"]
    assert "--tables agents" in report["majority_following"]["skipped"]
    assert "caveman" in report["paper_models"]["models"]["topology"]["pooled"]["skipped"] or \
        "false in all" in report["paper_models"]["models"]["topology"]["pooled"]["skipped"]
    text = analyze(out).stdout
    assert text.count("skipped:") >= 6


@pytest.mark.parametrize("make", ["missing", "not-a-sweep", "bad-formula"])
def test_bad_input_is_one_line_and_exit_2(tmp_path, sweep_dir, make):
    if make == "missing":
        done = analyze(tmp_path / "nowhere")
    elif make == "not-a-sweep":
        (tmp_path / "stray.txt").write_text("x")
        done = analyze(tmp_path)
    else:
        done = analyze(sweep_dir, "--formula", "consensus ~ C(no_such_column)")
    assert done.returncode == 2
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("llm-mesa analyze: error:")


def test_a_sweep_of_one_game_is_analysed_each_test_it_cannot_run_skipped_with_its_reason(tmp_path):
    """One game is the first thing a researcher analyses: every part reported, nothing refused."""
    out = tmp_path / "tiny"
    run_sweep({"ws-none": CONDITIONS["ws-none"]}, "voter", 1, out, model_options=FAST, game="consensus")
    done = analyze(out)
    assert done.returncode == 0, done.stderr
    assert "tiny: 1 games" in done.stdout
    assert "stubbornness vs consensus" in done.stdout and "need at least 3" in done.stdout  # said, not refused


def test_saved_edges_give_the_same_transitions_as_redrawn_graphs(sweep_dir):
    from llm_mesa.models.consensus.analysis import sweep_transitions
    from llm_mesa.models.consensus.analysis_report import load_edges, load_sweep

    games, agents, _ = load_sweep(sweep_dir)
    edges = load_edges(sweep_dir)
    assert edges is not None and len(edges) > 0  # a sweep keeping agents keeps each game's edges
    saved, left_saved = sweep_transitions(games, agents, edges)
    redrawn, left_redrawn = sweep_transitions(games, agents, None)
    assert left_saved == [] and left_redrawn == []
    assert isinstance(saved["game"].dtype, pd.CategoricalDtype)  # one code a row, not one string a row
    pd.testing.assert_frame_equal(saved.assign(game=saved["game"].astype(str)), redrawn)
