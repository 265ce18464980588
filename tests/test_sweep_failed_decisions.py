"""A sweep's progress line, its closing lines and the report's run summary count the failed LLM decisions
the rows hold: the core's count (``failed_decisions``, filled from the decision ledger), for every game.

They counted a game's own ``failures`` column, which most games do not have (the colouring game showed
0 while its rows held 336; a game registered from outside, 0 against 23). Each row is an LLM sweep
against the stand-in whose answers are malformed now and then (one attempt a call, so they stick).
"""

from __future__ import annotations

import io
import re
from contextlib import redirect_stderr, redirect_stdout

import pytest
from conftest import EXTRA_GAME

from llm_mesa.cli import main
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.sweep import read_sweep
from llm_mesa.sweep.columns import failed_decisions

#: (game, the stand-in's behaviour with its share of malformed answers, the grid's options): a game of the
#: test's world (played by the core's default play), and the project's games that play their own way (a
#: malformed answer gets a reminder, which the consensus game's stand-in mostly answers well: more of them)
GAMES = [
    (EXTRA_GAME, f"{EXTRA_GAME}:follow?pmalformed=0.04", ["--set", "n=12", "--set", "max_rounds=4", "--set", "start_share=0.5"]),
    ("consensus", "rule:majority-inertia?pmalformed=0.2", ["--conditions", "cc-local", "--set", "n=12", "--set", "max_rounds=3",
                                            "--set", "baseline_permutations=0"]),
    ("colouring", "colouring:best-response?pmalformed=0.1", ["--conditions", "cycle", "--set", "max_rounds=4"]),
]


@pytest.fixture
def server():
    with LoopbackServer(seed=7) as s:
        yield s


@pytest.mark.parametrize("game, behaviour, grid", GAMES, ids=[g[0] for g in GAMES])
def test_the_progress_line_and_the_closing_line_count_the_failed_decisions_the_rows_hold(game, behaviour, grid,
                                                                                         server, tmp_path):
    out = tmp_path / "s"
    err, printed = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(printed):
        status = main(["sweep", "--game", game, *grid, "--policies", "llm", "--model", behaviour,
                       "--base-url", server.base_url, "--max-attempts", "1", "--seeds", "4", "--out", str(out)])
    games = read_sweep(out)
    held = int(games["failed_decisions"].sum())
    assert status in (0, 3) and held > 0 and len(games) == 4, err.getvalue()
    progress = [line for line in err.getvalue().splitlines() if "failed decisions" in line]
    shown = int(re.search(r"(\d+) failed decisions", progress[-1]).group(1))
    assert shown == held, progress[-1]
    closing = printed.getvalue().splitlines()[0]
    assert f"; {held:,} failed LLM decisions;" in closing, closing
    if "failures" in games:  # a game with a count of its own agrees with the core's
        assert int(games["failures"].sum()) == held


def test_the_count_prefers_the_cores_column_and_reads_a_games_own_only_where_a_row_lacks_it():
    import pandas as pd

    rows = pd.DataFrame({"failed_decisions": pd.array([2, None, 0], dtype="Int64"), "failures": [9, 5, 9]})
    assert failed_decisions(rows) == 2 + 5 + 0
    assert failed_decisions(pd.DataFrame({"failures": [1, 2]})) == 3  # a sweep written before the core counted
    assert failed_decisions(pd.DataFrame({"rounds": [1]})) == 0 == failed_decisions(pd.DataFrame())
    assert failed_decisions({"failed_decisions": 4, "failures": 1}) == 4
    assert failed_decisions({"failures": 1}) == 1 and failed_decisions({"failed_decisions": None}) == 0


def test_the_reports_run_summary_counts_them_too(server, tmp_path):
    from llm_mesa.analysis.report import manifest_summary
    from llm_mesa.analysis.sweep_data import open_sweeps

    out = tmp_path / "s"
    with redirect_stderr(io.StringIO()), redirect_stdout(io.StringIO()):
        main(["sweep", "--game", EXTRA_GAME, "--set", "n=12", "--set", "max_rounds=4", "--policies", "llm",
              "--model", f"{EXTRA_GAME}:follow?pmalformed=0.04", "--base-url", server.base_url, "--max-attempts", "1",
              "--seeds", "3", "--out", str(out), "--quiet"])
    held = int(read_sweep(out)["failed_decisions"].sum())
    summary = manifest_summary(open_sweeps([str(out)]))
    assert held > 0 and int(summary["failed_decisions"].sum()) == held
