"""Every comparison tests the design cells its label names: the minority design is never pooled into a 50/50 cell."""

from __future__ import annotations

import pytest

from llm_mesa.analysis.cli import analyze
from llm_mesa.sweep import read_sweep, run_sweep


@pytest.fixture(scope="module")
def pooling_trap(tmp_path_factory):
    """BA with no communication and local, 50/50, beside BA local under the minority design, whose largest
    components are much larger: pooled into "local", they would move its mean."""
    out = tmp_path_factory.mktemp("cells") / "sweep"
    run_sweep("ba-none,ba-local,ba-local-minority,ws-none,ws-local", "majority-inertia:inertia=0.2", 8, out,
              model_options={"max_rounds": 15, "baseline_permutations": 20}, game="consensus")
    return out


def test_no_communication_against_local_compares_the_50_50_games_alone(pooling_trap):
    games = read_sweep(pooling_trap)
    local = games.loc[games["condition"] == "ba-local", "largest_component"].mean()
    pooled = games.loc[games["condition"].isin(["ba-local", "ba-local-minority"]), "largest_component"].mean()
    assert abs(pooled - local) > 1  # the trap works: pooling would show
    report = analyze(pooling_trap)
    rows = next(iter(report["largest_component"]["per_model"].values()))["none_vs_local"]
    ba = [r for r in rows if r["topology"] == "ba"]
    assert len(ba) == 1 and ba[0]["cell"] == "ba"  # among the cells tested only the topology differs
    assert ba[0]["conditions_none"] == "ba-none" and ba[0]["conditions_local"] == "ba-local"
    assert ba[0]["games_local"] == 8 and ba[0]["mean_local"] == pytest.approx(local)
    assert [r["topology"] for r in rows] == ["ba", "ws"]  # the minority cell has no 'none' games: no test of it
