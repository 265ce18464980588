"""Rounds of consensus games as arrays: the colours, every per-round measure, what is recorded.

One ``Rounds`` holds ``b`` games of ``n`` agents each, stacked as one
block-diagonal graph (``llm_mesa.graph_measures.BlockGraph``; node ``g * n + v``
is agent ``v`` of game ``g``). The Mesa model keeps its one game in a
``Rounds`` (``b = 1``) and the batched engine (``batched.py``) many: both
measure a round with the same code, on arrays, with no Python object per agent.

Per round and game: share of blue, consensus, the largest same-colour component
and its colour (recomputed only after a round in which some colour changed),
local agreement, stubborn opportunities and moves, the pseudo-equilibrium and
its flippers. Per round and agent (``agents=True``): colour, opportunity,
stubborn move, whether it flipped, and the accounting of LLM decisions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from llm_mesa.graph_measures import BlockGraph

from .observation import COLOURS

#: spawn key of the rule policies' random stream (see ``rule_stream``)
RULE_STREAM = 0x0A11_BA5E

ROUND_COLUMNS = (
    "round", "blue_share", "consensus", "largest_component", "largest_component_colour",
    "local_agreement", "pseudo_equilibrium", "flippers", "stubborn_moves", "opportunities",
    "messages", "private_messages", "calls", "prompt_tokens", "completion_tokens", "cached_tokens", "cost", "failures",
)
#: per-round accounting of LLM decisions (zero in rule games)
ACCOUNTING = ("messages", "private_messages", "calls", "prompt_tokens", "completion_tokens", "cached_tokens", "cost",
              "failures")
AGENT_COLUMNS = ("node", "colour", "preference", "opportunity", "stubborn_move", "flipped", "failed", "calls",
                 "prompt_tokens", "completion_tokens")
AGENT_ACCOUNTING = ("failed", "calls", "prompt_tokens", "completion_tokens")
_NAMES = np.array(COLOURS, dtype=object)


def rule_stream(entropy: int) -> np.random.Generator:
    """The random stream of a game's rule policies.

    ``numpy.random.default_rng(SeedSequence(entropy=seed, spawn_key=(RULE_STREAM,)))``:
    each round draws ``random(n)``, one uniform per agent in node order (a block
    of ``k`` rounds drawn as ``random((k, n))`` is the same numbers). Graph,
    preferences and everything else keep drawing from the model's ``random``.
    """
    return np.random.default_rng(np.random.SeedSequence(entropy=entropy, spawn_key=(RULE_STREAM,)))


class Rounds:
    """Colours of ``b`` games and the measures of every round played so far."""

    def __init__(self, graph: BlockGraph, preferences: np.ndarray, colours: np.ndarray, *,
                 satisfied_threshold: float = 0.5, pseudo_window: int = 3, pseudo_level: float = 0.9,
                 agents: bool = True):
        self.graph, self.b, self.n = graph, graph.b, graph.n
        self.preferences = np.asarray(preferences, dtype=np.int8)
        self.codes = np.array(colours, dtype=np.int8)
        self.window, self.level, self.agents = pseudo_window, pseudo_level, agents
        self._satisfied_at = satisfied_threshold * graph.degree
        self.round = 0
        self.active = np.ones(self.b, dtype=bool)  # games still playing (the engine stops them one by one)
        self.history: list[np.ndarray] = []  # colour codes after each round (index 0: the start)
        self.flipped: list[np.ndarray] = []  # who changed colour in each round
        self.opportunity: list[np.ndarray] = []
        self.stubborn: list[np.ndarray] = []
        self.accounting: list[dict[str, np.ndarray] | None] = []  # per agent, None: all zero
        self.stats: dict[str, list[np.ndarray]] = {k: [] for k in (
            "blue_share", "consensus", "largest_component", "largest_component_colour", "local_agreement",
            "pseudo_equilibrium", "stubborn_moves", "opportunities")}
        self.flippers: list[np.ndarray] = []  # per round: flat ids of flippers of games in pseudo-equilibrium
        self.round_accounting: list[dict[str, Any] | None] = []  # per game (b = 1 only), None: all zero
        self.total_moves = np.zeros(self.b, dtype=np.int64)
        self.total_opportunities = np.zeros(self.b, dtype=np.int64)
        self.flip_counts = np.zeros(self.b * self.n, dtype=np.int64)
        self._largest: tuple[np.ndarray, np.ndarray] | None = None
        self._stack_cache: dict[str, Any] = {}
        self._measure(None, None)

    # --- playing ------------------------------------------------------------------

    def moved(self, before: np.ndarray, accounting: dict[str, np.ndarray] | None = None,
              round_accounting: dict[str, Any] | None = None) -> None:
        """The colours went from ``before`` to ``self.codes``: count the round and measure it.

        Games no longer active keep their colours whatever ``self.codes`` says.
        """
        if not self.active.all():
            frozen = np.repeat(~self.active, self.n)
            self.codes[frozen] = before[frozen]
        self.round += 1
        self._measure(before, accounting, round_accounting)

    def _measure(self, before: np.ndarray | None, accounting=None, round_accounting=None) -> None:
        graph, b, n, codes = self.graph, self.b, self.n, self.codes
        degree = graph.degree
        self.blue = graph.neighbour_sum(codes)  # blue neighbours: the next round's rule reads it too
        same = np.where(codes == 1, self.blue, degree - self.blue)
        satisfied = (same >= self._satisfied_at) | (degree == 0)
        agreement = satisfied.reshape(b, n).mean(axis=1)
        if before is None:
            flipped = opportunity = moves = np.zeros(b * n, dtype=bool)
            changed = True
        else:
            flipped = before != codes
            opportunity = 2 * (degree - self._same) > degree  # an opposing strict majority at the start
            moves = opportunity & ~flipped
            changed = bool(flipped.any())
        self._same = same
        if changed or self._largest is None:
            self._largest = graph.largest_components(codes)
        grid = codes.reshape(b, n)
        consensus = (grid == grid[:, :1]).all(axis=1)
        self.history.append(codes.copy())
        self.flipped.append(flipped)
        self.flip_counts += flipped
        if self.agents:
            self.opportunity.append(opportunity)
            self.stubborn.append(moves)
            self.accounting.append(accounting)
        elif len(self.flipped) > self.window:
            self.flipped[-self.window - 1] = None  # only the pseudo-equilibrium window is read again
        per_game_moves = moves.reshape(b, n).sum(axis=1)
        per_game_opportunities = opportunity.reshape(b, n).sum(axis=1)
        self.total_moves += np.where(self.active, per_game_moves, 0)
        self.total_opportunities += np.where(self.active, per_game_opportunities, 0)
        stats = self.stats
        stats["local_agreement"].append(agreement)
        pseudo = np.zeros(b, dtype=bool)
        flippers = np.zeros(0, dtype=np.int64)
        if self.round >= self.window:
            recent = np.min(stats["local_agreement"][-self.window:], axis=0)
            pseudo = ~consensus & (recent >= self.level)
            if pseudo.any():
                flips = np.sum(self.flipped[-self.window:], axis=0)
                flippers = np.flatnonzero((flips >= 2) & np.repeat(pseudo, n))
        stats["blue_share"].append(grid.mean(axis=1))
        stats["consensus"].append(consensus)
        stats["largest_component"].append(self._largest[0])
        stats["largest_component_colour"].append(self._largest[1])
        stats["pseudo_equilibrium"].append(pseudo)
        stats["stubborn_moves"].append(per_game_moves)
        stats["opportunities"].append(per_game_opportunities)
        self.flippers.append(flippers)
        self.round_accounting.append(round_accounting)

    # --- reading ------------------------------------------------------------------

    def colours(self, g: int = 0, round_: int = -1) -> list[str]:
        """Game ``g``'s colours after round ``round_`` (default: now), as names."""
        return _NAMES[self.history[round_][g * self.n:(g + 1) * self.n]].tolist()

    def flippers_of(self, g: int, round_: int = -1) -> list[int]:
        ids = self.flippers[round_]
        if not len(ids):
            return []
        lo, hi = np.searchsorted(ids, [g * self.n, (g + 1) * self.n])
        return (ids[lo:hi] - g * self.n).tolist()

    def latest(self, g: int = 0) -> dict[str, Any]:
        """Game ``g``'s measures of the last round, as one row of the rounds table."""
        return self.row(g, -1)

    def row(self, g: int, round_: int) -> dict[str, Any]:
        stats = self.stats
        accounting = self.round_accounting[round_] or {}
        return {
            "round": len(stats["consensus"]) - 1 if round_ == -1 else round_,
            "blue_share": float(stats["blue_share"][round_][g]),
            "consensus": bool(stats["consensus"][round_][g]),
            "largest_component": int(stats["largest_component"][round_][g]),
            "largest_component_colour": COLOURS[stats["largest_component_colour"][round_][g]],
            "local_agreement": float(stats["local_agreement"][round_][g]),
            "pseudo_equilibrium": bool(stats["pseudo_equilibrium"][round_][g]),
            "flippers": self.flippers_of(g, round_),
            "stubborn_moves": int(stats["stubborn_moves"][round_][g]),
            "opportunities": int(stats["opportunities"][round_][g]),
            **{k: accounting.get(k, 0.0 if k == "cost" else 0) for k in ACCOUNTING},
        }

    def rounds_table(self, g: int = 0, rounds: int | None = None) -> pd.DataFrame:
        """Game ``g``'s rounds 0..``rounds`` (default: all), one row each (the model's ``rounds_table``)."""
        last = len(self.stats["consensus"]) if rounds is None else rounds + 1
        columns: dict[str, Any] = {"round": np.arange(last, dtype=np.int64)}
        for key in ("blue_share", "consensus", "largest_component", "largest_component_colour",
                    "local_agreement", "pseudo_equilibrium", "stubborn_moves", "opportunities"):
            columns[key] = self._stacked(key)[:last, g]
        for key in ("largest_component", "stubborn_moves", "opportunities"):
            columns[key] = columns[key].astype(np.int64)
        columns["largest_component_colour"] = _NAMES[columns["largest_component_colour"]]
        columns["flippers"] = [self.flippers_of(g, r) for r in range(last)]
        accounting = self.round_accounting[:last]
        for key in ACCOUNTING:
            values = [(a or {}).get(key, 0) for a in accounting]
            columns[key] = np.array(values, dtype=np.float64 if key == "cost" else np.int64)
        return pd.DataFrame(columns, columns=list(ROUND_COLUMNS))

    def _stacked(self, key: str) -> np.ndarray:
        """One measure of every round and game as a (rounds, games) array (kept until the next round)."""
        played = len(self.stats["consensus"])
        if self._stack_cache.get("rounds") != played:
            self._stack_cache = {"rounds": played}
        if key not in self._stack_cache:
            self._stack_cache[key] = np.stack(self.stats[key])
        return self._stack_cache[key]

    def agents_table(self, g: int = 0, rounds: int | None = None) -> pd.DataFrame:
        """Game ``g``'s agents in rounds 0..``rounds``, one row per agent and round (the model's ``agents_table``)."""
        if not self.agents:
            return pd.DataFrame(columns=["round", *AGENT_COLUMNS])
        last = len(self.history) if rounds is None else rounds + 1
        n, cut = self.n, slice(g * self.n, (g + 1) * self.n)
        columns: dict[str, Any] = {
            "round": np.repeat(np.arange(last, dtype=np.int64), n),
            "node": np.tile(np.arange(n, dtype=np.int64), last),
            "colour": _NAMES[np.concatenate([h[cut] for h in self.history[:last]])],
            "preference": _NAMES[np.tile(self.preferences[cut], last)],
            "opportunity": np.concatenate([o[cut] for o in self.opportunity[:last]]),
            "stubborn_move": np.concatenate([m[cut] for m in self.stubborn[:last]]),
            "flipped": np.concatenate([f[cut] for f in self.flipped[:last]]),
        }
        for key in AGENT_ACCOUNTING:
            dtype = bool if key == "failed" else np.int64
            columns[key] = np.concatenate([
                np.zeros(n, dtype=dtype) if a is None else np.asarray(a[key][cut], dtype=dtype)
                for a in self.accounting[:last]])
        return pd.DataFrame(columns)


__all__ = ["ACCOUNTING", "AGENT_COLUMNS", "ROUND_COLUMNS", "RULE_STREAM", "Rounds", "rule_stream"]
