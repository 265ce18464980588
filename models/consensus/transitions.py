"""Majority-following transitions of a whole sweep at once, from its saved agents and edges tables.

Why its own module: ``analysis.transitions_from_rounds`` turns one game at a time (a pivot,
an adjacency matrix and a data frame per game) and took 28 s of ``llm-mesa analyze`` on the
study's 1,980-game rule grid. Here every game's colours go into one (nodes x rounds) array
over one block-diagonal adjacency matrix of all games, so the neighbour shares of every agent
and round are one sparse product, and the check that each game's record is whole (the largest
same-colour component of its final colours equals the game's own ``largest_component``) is
one connected-components call. The rows, their order and their values are those of
``transitions_from_rounds`` applied game by game in the games table's order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.sparse.csgraph import connected_components


def _game_ids(frame: pd.DataFrame, key_cols: Sequence[str], keys: pd.MultiIndex) -> np.ndarray:
    """Each row's game, as its position in ``keys`` (-1: a game the games table does not hold)."""
    return keys.get_indexer(pd.MultiIndex.from_frame(frame[list(key_cols)]))


def fast_sweep_transitions(games: pd.DataFrame, agents: pd.DataFrame, edges: pd.DataFrame,
                           key_cols: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    """``analysis.sweep_transitions`` for sweeps that saved their edges (see the module doc)."""
    keys = pd.MultiIndex.from_frame(games[list(key_cols)])
    names = np.array(["|".join(map(str, key)) for key in keys], dtype=object)
    n = games["n"].to_numpy(dtype=np.int64)
    offset = np.concatenate([[0], np.cumsum(n)])
    gid = _game_ids(agents, key_cols, keys)
    node = agents["node"].to_numpy(dtype=np.int64)
    round_ = agents["round"].to_numpy(dtype=np.int64)
    ok = gid >= 0
    rounds = np.full(len(games), -1, dtype=np.int64)  # each game's last round
    np.maximum.at(rounds, gid[ok], round_[ok])
    rows = np.bincount(gid[ok], minlength=len(games))
    whole = (rounds >= 0) & (rows == n * (rounds + 1))
    total = int(offset[-1])
    width = int(rounds.max()) + 1 if len(rounds) else 1
    blue = np.zeros((total, max(width, 1)), dtype=np.float64)
    seen = np.zeros_like(blue, dtype=bool)
    keep = ok & whole[np.clip(gid, 0, None)] & (node >= 0) & (node < n[np.clip(gid, 0, None)])
    at = offset[gid[keep]] + node[keep]
    blue[at, round_[keep]] = (agents["colour"].to_numpy()[keep] == "blue")
    seen[at, round_[keep]] = True
    if total:  # every agent in every round up to the game's last, once
        span = np.arange(width)[None, :] <= np.repeat(rounds, n)[:, None]
        whole &= np.add.reduceat((seen == span).all(axis=1), offset[:-1]) == n
    egid = _game_ids(edges, key_cols, keys)
    mine = egid >= 0
    source = offset[egid[mine]] + edges["source"].to_numpy(dtype=np.int64)[mine]
    target = offset[egid[mine]] + edges["target"].to_numpy(dtype=np.int64)[mine]
    ones = np.ones(2 * len(source))
    adjacency = sparse.csr_array((ones, (np.concatenate([source, target]), np.concatenate([target, source]))),
                                 shape=(total, total))
    adjacency.sum_duplicates()
    adjacency.data[:] = 1.0
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    whole &= _records_match(games, adjacency, blue, rounds, offset, n)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = (adjacency @ blue) / degree[:, None]
    frames = []
    for g in np.flatnonzero(whole):
        lo, hi, last = offset[g], offset[g + 1], rounds[g]
        nodes = np.flatnonzero(degree[lo:hi] > 0)
        t = np.repeat(np.arange(last), len(nodes))
        v = np.tile(nodes, last)
        frames.append((g, t, v, share[lo + v, t], blue[lo + v, t], blue[lo + v, t + 1]))
    left_out = [str(name) for name in names[~whole]]
    if not frames:
        return pd.DataFrame(), left_out
    game = np.concatenate([np.full(len(f[1]), f[0]) for f in frames])
    return pd.DataFrame({
        "game": pd.Categorical.from_codes(game, categories=pd.Index(names, dtype=object)),  # codes, not a string a row
        "agent": np.concatenate([f[2] for f in frames]),
        "round": np.concatenate([f[1] for f in frames]),
        "blue_share_neighbours": np.concatenate([f[3] for f in frames]),
        "blue_now": np.concatenate([f[4] for f in frames]).astype(bool),
        "chose_blue_next": np.concatenate([f[5] for f in frames]).astype(bool),
    }), left_out


def _records_match(games: pd.DataFrame, adjacency: sparse.csr_array, blue: np.ndarray, rounds: np.ndarray,
                   offset: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per game: does the largest same-colour component of its final colours equal its recorded one?"""
    total = adjacency.shape[0]
    final = blue[np.arange(total), np.repeat(np.clip(rounds, 0, None), n)]
    coo = adjacency.tocoo()
    same = final[coo.row] == final[coo.col]
    graph = sparse.csr_array((np.ones(int(same.sum())), (coo.row[same], coo.col[same])), shape=(total, total))
    _, labels = connected_components(graph, directed=False)
    sizes = np.bincount(labels)[labels]  # each node's component size
    largest = np.maximum.reduceat(sizes, offset[:-1]) if total else np.zeros(0)
    return largest == games["largest_component"].to_numpy(dtype=np.int64)


__all__ = ["fast_sweep_transitions"]
