"""The Watts–Strogatz ring degree is a parameter (SPEC: k = 4, the study's unreported choice)."""

from __future__ import annotations

import random
import subprocess
import sys

import networkx as nx
import pytest

from llm_mesa.graphs import build_topology
from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.sweep import read_sweep, run_sweep

GOLDEN_KEY = "e69587e4d3a71bd9"  # test_consensus_history pins it: recordings made before keep replaying


@pytest.mark.parametrize("k", [2, 4, 6, 8])
def test_the_ring_degree_is_the_graphs_mean_degree_and_the_default_is_the_studys_four(k):
    """Rewiring moves links but keeps their number: N k / 2 links, mean degree k, connected."""
    model = ConsensusModel(36, "ws", rng=5, ring_degree=k, baseline_permutations=0)
    assert model.graph.number_of_edges() == 36 * k // 2 and nx.is_connected(model.graph)
    if k == 4:
        default = ConsensusModel(36, "ws", rng=5, baseline_permutations=0)
        assert sorted(default.graph.edges) == sorted(model.graph.edges)
        assert sorted(default.graph.edges) == sorted(build_topology("ws", 36, random.Random(5)).edges)


def test_the_default_keeps_every_games_key_and_another_degree_gets_its_own():
    assert ConsensusModel(36, "ba", rng=1, baseline_permutations=0, ring_degree=4).game_key == GOLDEN_KEY
    other = ConsensusModel(36, "ws", rng=1, baseline_permutations=0, ring_degree=6).game_key
    assert other != ConsensusModel(36, "ws", rng=1, baseline_permutations=0).game_key


def test_a_sweep_of_ring_degrees_plays_in_the_batched_engine_what_the_mesa_model_plays(tmp_path):
    out = tmp_path / "rings"
    run_sweep({"ws-none": {"topology": "ws", "n": 24, "communication": "none"}}, "mi-0.2", 3, out,
              axes={"ring_degree": [4, 8]}, model_options={"baseline_permutations": 0}, game="consensus")
    games = read_sweep(out)
    assert set(games["condition"]) == {"ws-none|ring_degree=4", "ws-none|ring_degree=8"}
    for row in games.to_dict("records"):
        k = 4 if row["condition"].endswith("=4") else 8
        model = ConsensusModel(24, "ws", policy="majority-inertia:inertia=0.2", rng=row["seed"],
                               ring_degree=k, baseline_permutations=0)
        model.run()
        assert (model.summary()["rounds"], model.summary()["consensus"]) == (row["rounds"], row["consensus"])


def test_an_odd_ring_degree_is_one_line_naming_the_fix():
    done = subprocess.run([sys.executable, "-m", "llm_mesa.cli", "consensus", "--topology", "ws", "--ring-degree", "5"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "use an even number" in done.stderr
