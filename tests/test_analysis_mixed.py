"""The mixed-effects fit: seeded (two runs equal), a sparse random-effect design, memory within 2 GB."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import sparse
from scipy.special import expit

from llm_mesa.analysis import mixed_logit
from llm_mesa.analysis.mixed_logit import random_intercept_design


def transitions(rows: int, games: int, agents: int = 36, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    game, agent, share = rng.integers(0, games, rows), rng.integers(0, agents, rows), rng.random(rows)
    effect = rng.normal(0, 0.5, games)[game] + rng.normal(0, 0.5, (games, agents))[game, agent]
    return pd.DataFrame({"y": rng.random(rows) < expit(-6 + 12 * share + effect), "share": share,
                         "game": game, "agent": agent})


GROUPS = {"game": "game", "agent_in_game": ["game", "agent"]}


def test_two_runs_on_the_same_rows_are_equal():
    data = transitions(3000, 60)
    first, again = (mixed_logit("y ~ share", data, GROUPS) for _ in range(2))
    pd.testing.assert_frame_equal(first.fixed_effects, again.fixed_effects, check_exact=True)
    assert first.random_effect_sd == again.random_effect_sd and first.converged
    assert first.params["share"] == pytest.approx(12, rel=0.25)  # the slope the rows were drawn with
    other = mixed_logit("y ~ share", data, GROUPS, seed=5)  # another start, the same optimum to tolerance
    assert other.params["share"] == pytest.approx(first.params["share"], rel=1e-2)


def test_the_random_effect_design_is_sparse_with_one_entry_per_row_and_group():
    data = transitions(2000, 50)
    design, ident, levels = random_intercept_design(data, {k: [v] if isinstance(v, str) else v
                                                           for k, v in GROUPS.items()}, "test")
    assert sparse.issparse(design) and design.nnz == 2 * len(data)
    assert design.shape == (len(data), levels["game"] + levels["agent_in_game"])
    assert list(np.bincount(ident)) == [levels["game"], levels["agent_in_game"]]


@pytest.mark.slow
def test_20000_transitions_with_an_intercept_per_agent_stay_within_2_gb():
    """The size that took 9 GB with a dense design: 20,000 rows, ~17,500 agent-in-game levels."""
    here = str(Path(__file__).parent)
    code = (f"import resource, sys; sys.path.insert(0, {here!r})\n"
            "from test_analysis_mixed import transitions, GROUPS\n"
            "from llm_mesa.analysis import mixed_logit\n"
            "fit = mixed_logit('y ~ share', transitions(20000, 2160), GROUPS)\n"
            "print(fit.n_groups['agent_in_game'], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    levels, peak_kib = map(int, done.stdout.split())
    assert levels > 15_000
    assert peak_kib < 2 * 1024 * 1024, f"peak RSS {peak_kib / 1024:.0f} MiB"  # ru_maxrss: KiB on Linux
