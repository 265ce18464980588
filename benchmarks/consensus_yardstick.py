"""A hand-vectorised yardstick of rule games: the study's rule grid in plain numpy/scipy.

No Mesa, no model, no engine: it builds the same design's graphs and preferences
(``random.Random(seed)``, as the model does), stacks every game of one size as
one block-diagonal sparse matrix, and plays synchronous rounds from the same
per-game rule stream (``SeedSequence(seed, spawn_key=(RULE_STREAM,))``, one
uniform per agent and round), computing every per-round measure: share of blue,
largest same-colour component and its colour, stubborn opportunities and moves,
local agreement, pseudo-equilibrium and flippers. Games stop on consensus or at
their round limit. ``benchmarks/bench_consensus_rules.py`` times it against the
sweep, and checks that both played the same games.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping

import numpy as np
from scipy.sparse import block_diag, csr_array
from scipy.sparse.csgraph import connected_components

from llm_mesa.graphs import build_topology
from llm_mesa.models.consensus.array_state import RULE_STREAM
from llm_mesa.models.consensus.preferences import assign_preferences
from llm_mesa.policy import parse_policy_spec


def build(conditions: Mapping[str, Mapping], policies: Mapping[str, str], seeds) -> list[dict]:
    """Every game of the grid: graph (CSR), preferences, rule parameters, round limit, seed."""
    games, drawn = [], {}
    for cname, cond in conditions.items():
        for label, spec in policies.items():
            name, kw = parse_policy_spec(spec)
            for seed in seeds:
                key = (seed, cond["n"], cond["topology"], cond.get("preferences", "random"), cond.get("minority", 5))
                if key not in drawn:
                    rng = random.Random(seed)
                    g = build_topology(cond["topology"], cond["n"], rng)
                    prefs = assign_preferences(g, cond.get("preferences", "random"), rng,
                                               minority=cond.get("minority", 5),
                                               minority_colour=cond.get("minority_colour", "red"))
                    edges = np.array(list(g.edges), dtype=np.int64).reshape(-1, 2)
                    n = cond["n"]
                    a = csr_array((np.ones(2 * len(edges)), (np.r_[edges[:, 0], edges[:, 1]],
                                                              np.r_[edges[:, 1], edges[:, 0]])), shape=(n, n))
                    a.sort_indices()
                    drawn[key] = (a, np.array([p == "blue" for p in prefs], dtype=np.int64))
                a, prefs = drawn[key]
                games.append({"condition": cname, "policy": label, "seed": seed, "n": cond["n"], "matrix": a,
                              "prefs": prefs, "voter": name == "voter", "inertia": float(kw.get("inertia", 0.2)),
                              "threshold": float(kw.get("threshold", 0.5)),
                              "max_rounds": int(cond.get("max_rounds", 50))})
    return games


def play(games: list[dict], window: int = 3, level: float = 0.9) -> dict:
    """Play every game (stacked by size); per game: rounds, final consensus, final largest component."""
    out = {}
    for n in sorted({g["n"] for g in games}):
        stack = [g for g in games if g["n"] == n]
        out.update(_play_same_size(stack, n, window, level))
    return out


def _play_same_size(stack: list[dict], n: int, window: int, level: float) -> dict:
    b = len(stack)
    a = csr_array(block_diag([g["matrix"] for g in stack], format="csr"))
    a.sort_indices()
    deg = np.diff(a.indptr)
    prefs = np.concatenate([g["prefs"] for g in stack])
    c = prefs.copy()
    inertia = np.repeat([g["inertia"] for g in stack], n)
    threshold = np.repeat([g["threshold"] for g in stack], n)
    voter = np.repeat([g["voter"] for g in stack], n)
    limit = np.array([g["max_rounds"] for g in stack])
    rows = np.repeat(np.arange(b * n), deg)
    streams = [np.random.default_rng(np.random.SeedSequence(entropy=g["seed"], spawn_key=(RULE_STREAM,)))
               for g in stack]
    u_all = np.stack([s.random((int(limit.max()), n)) for s in streams], axis=1).reshape(int(limit.max()), b * n)

    def measure(c):
        blue = a @ c
        same = np.where(c == 1, blue, deg - blue)
        keep = c[rows] == c[a.indices]
        sub = csr_array((np.ones(int(keep.sum())), (rows[keep], a.indices[keep])), shape=(b * n, b * n))
        _, labels = connected_components(sub, directed=False)
        per_node = np.bincount(labels)[labels].reshape(b, n)
        best = per_node.argmax(axis=1)
        largest = per_node[np.arange(b), best]
        colour = c.reshape(b, n)[np.arange(b), best]
        agreement = (((same >= 0.5 * deg) | (deg == 0)).reshape(b, n)).mean(axis=1)
        return blue, same, largest, colour, agreement

    blue, same, largest, colour, agreement = measure(c)
    grid = c.reshape(b, n)
    active = ~(grid == grid[:, :1]).all(axis=1)
    rounds = np.zeros(b, dtype=np.int64)
    agreements, flips, records = [agreement], [], []
    t = 0
    while active.any():
        t += 1
        u = u_all[t - 1]
        keep = (u < inertia) | (deg == 0) | (2 * blue == deg)
        share = blue / np.maximum(deg, 1)
        against = np.where(prefs == 0, share, 1.0 - share)
        choice = np.where(threshold > 0.5, np.where(against > threshold, 1 - prefs, prefs), (2 * blue > deg))
        majority = np.where(keep, c, choice)
        pick = a.indices[np.minimum(a.indptr[:-1] + (u * deg).astype(np.int64), len(a.indices) - 1)]
        copied = np.where(deg > 0, c[pick], c)
        new = np.where(voter, copied, majority)
        new = np.where(np.repeat(active, n), new, c)
        opportunity = 2 * (deg - same) > deg
        moves = opportunity & (new == c)
        flipped = new != c
        c = new
        blue, same, largest, colour, agreement = measure(c)
        agreements.append(agreement)
        flips.append(flipped)
        grid = c.reshape(b, n)
        consensus = (grid == grid[:, :1]).all(axis=1)
        pseudo = np.zeros(b, dtype=bool)
        flippers = np.zeros(0, dtype=np.int64)
        if t >= window:
            pseudo = ~consensus & (np.min(agreements[-window:], axis=0) >= level)
            recent = np.sum(flips[-window:], axis=0)
            flippers = np.flatnonzero((recent >= 2) & np.repeat(pseudo, n))
        records.append((c.reshape(b, n).mean(axis=1), consensus, largest, colour, agreement, pseudo, flippers,
                        moves.reshape(b, n).sum(axis=1), opportunity.reshape(b, n).sum(axis=1)))
        stop = active & (consensus | (t >= limit))
        rounds[stop] = t
        active &= ~stop
    final_consensus = (c.reshape(b, n) == c.reshape(b, n)[:, :1]).all(axis=1)
    return {(g["condition"], g["policy"], g["seed"]): (int(rounds[i]), bool(final_consensus[i]), int(largest[i]))
            for i, g in enumerate(stack)}


def run(conditions, policies, seeds) -> tuple[dict, float, float]:
    """Build and play the grid: its results and the CPU seconds of each part."""
    t0 = time.process_time()
    games = build(conditions, policies, seeds)
    t1 = time.process_time()
    results = play(games)
    t2 = time.process_time()
    return results, t1 - t0, t2 - t1
