"""The batched engine: many consensus games of rule agents advanced at once, as arrays.

Games whose agents all follow rule policies (``policies.RulePolicy``) are
grouped by size and measure settings, stacked as one block-diagonal graph and
played together, round by round: one ``policies.rule_step`` and one
``array_state.Rounds`` measurement per round for the whole stack. Each game
keeps its own random streams, so a game played here is the game the Mesa model
(``ConsensusModel``) plays from the same seed, bit for bit:

* set-up (graph, preferences, initial colours, key) from ``random.Random(seed)``,
  the model's ``random``, through the same ``setup.game_setup``;
* rounds from the game's rule stream (``array_state.rule_stream(seed)``),
  drawn in blocks of rounds per game (the same numbers as round by round);
* the random-colouring baseline from its own stream, as in the model;
* under an update scheme with turns (``random-sequential``, ``random-asynchronous``),
  each game's order from its own activation stream (``llm_mesa.turn_order``),
  one draw of the rule stream per activation in activation order, and each turn
  seeing the turns before it: the stack plays its games' k-th activations together,
  turn by turn (``Stack.turns``), which is what the model's ``play_turns`` plays
  agent by agent.

Games that share a seed and a set-up (the conditions of a study that differ only
in what rule agents never use, e.g. communication) share the one drawn graph.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from llm_mesa.games import GameResult, PlayRequest
from llm_mesa.graph_measures import Adjacency, BlockGraph
from llm_mesa.graphs import seeded_layout
from llm_mesa.policy import PolicyError, make_policy
from llm_mesa.update import activation_stream, turn_order

from . import measures
from .array_state import Rounds, rule_stream
from .observation import colour_code
from .policies import RulePolicy, combine_rules, rule_step
from .record import NO_LLM, NO_MESSAGES, baseline_stream, summary_row
from .setup import GameSetup, game_setup

#: tables the engine gives (all of the consensus game's)
TABLES = ("rounds", "agents", "messages", "transcript", "edges")
#: most agents (over all games) advanced together; a larger single game goes alone
MAX_BATCH_NODES = 1 << 20
#: most bytes of uniform draws held at once (rounds are drawn in blocks within it)
DRAW_MEMORY = 64 << 20
#: the set-up parameters that fix what is drawn before the first round (with the seed)
_DRAWN = ("n", "topology", "ring_degree", "preferences", "minority", "minority_colour", "initial")


def batchable(request: PlayRequest) -> bool:
    """Can the engine play this game? (rule policy, no endpoint, tables it gives)."""
    if request.endpoint is not None or not set(request.tables) <= set(TABLES):
        return False
    if request.parameters.get("preferences") == "explicit" or "graph" in request.parameters \
            or request.parameters.get("assign"):
        return False  # the engine plays one rule for every agent
    try:
        return isinstance(make_policy(request.policy, "consensus"), RulePolicy)
    except PolicyError:
        return False


@dataclass
class BatchedGame:
    """One game played by the engine: the model's reading interface (summary and tables)."""

    setup: GameSetup
    adjacency: Adjacency
    rounds: Rounds
    index: int  # the game's block in ``rounds``
    round: int  # rounds played
    stop_reason: str
    seed: int
    depth: int  # the rounds' longest chains of turns, summed (a synchronous round: 1)

    @property
    def parameters(self) -> dict[str, Any]:
        return self.setup.parameters

    @property
    def n(self) -> int:
        return self.adjacency.n

    @property
    def colours(self) -> list[str]:
        return self.rounds.colours(self.index, self.round)

    @property
    def preferences(self) -> list[str]:
        return self.setup.preferences

    @property
    def game_key(self) -> str:
        return self.setup.game_key

    @property
    def transcript(self) -> list[dict[str, Any]]:
        return []

    @cached_property
    def layout(self) -> dict[int, tuple[float, float]]:
        return seeded_layout(self.setup.graph, self.setup.layout_seed)

    def last(self) -> dict[str, Any]:
        return self.rounds.row(self.index, self.round)

    def summary(self, baseline: np.ndarray | None = None) -> dict[str, Any]:
        p = self.parameters
        colours = self.colours
        if baseline is None and p["baseline_permutations"]:
            baseline = measures.random_colouring_baseline(self.adjacency, colours, p["baseline_permutations"],
                                                          baseline_stream(self.seed))
        totals = {**NO_LLM, "decisions": self.n * self.round, "depth": self.depth,
                  "stubborn_moves": int(self.rounds.total_moves[self.index]),
                  "opportunities": int(self.rounds.total_opportunities[self.index])}
        return summary_row(p, colours, self.preferences, self.last(), self.round, self.stop_reason, totals, {},
                           baseline, NO_MESSAGES, self.game_key)

    def rounds_table(self) -> pd.DataFrame:
        return self.rounds.rounds_table(self.index, self.round)

    def agents_table(self) -> pd.DataFrame:
        return self.rounds.agents_table(self.index, self.round)

    def messages_table(self) -> pd.DataFrame:
        turns = self.parameters.get("update", "synchronous") != "synchronous"  # as the model's: a turn column
        return pd.DataFrame([], columns=["round", "sender", *(["activation"] if turns else []), "to", "text",
                                         "delivered"])

    def edges_table(self) -> pd.DataFrame:
        adj = self.adjacency
        order = np.lexsort((adj.dst, adj.src))
        return pd.DataFrame({"source": adj.src[order].tolist(), "target": adj.dst[order].tolist()},
                            columns=["source", "target"])

    def graph_table(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        edges = self.edges_table()
        nodes = pd.DataFrame({"node": range(self.n), "preference": self.preferences,
                              "x": [self.layout[v][0] for v in range(self.n)],
                              "y": [self.layout[v][1] for v in range(self.n)],
                              "policy": [p.spec() for p in self.setup.policies]})
        return nodes, edges

    def tables(self, names: Sequence[str]) -> dict[str, pd.DataFrame]:
        makers = {"rounds": self.rounds_table, "agents": self.agents_table, "messages": self.messages_table,
                  "edges": self.edges_table, "transcript": lambda: pd.DataFrame(self.transcript)}
        return {name: makers[name]() for name in names}


def play_games(specs: Sequence[tuple[str, int, dict[str, Any]]], agents: bool = True) -> list[BatchedGame]:
    """Play games given as ``(rule policy spec, seed, parameters)``; the finished games, in order.

    ``agents`` keeps the per-agent table of every game (off: less memory).
    """
    setups: list[GameSetup] = []
    drawn: dict[tuple, tuple[GameSetup, Adjacency]] = {}
    adjacencies: list[Adjacency] = []
    for spec, seed, parameters in specs:
        key = (seed, *(repr(parameters.get(k)) for k in _DRAWN))
        known = drawn.get(key)
        setup = game_setup(random.Random(seed), seed, seed, parameters=parameters, policy=spec,
                           drawn=None if known is None else known[0])
        if known is None:
            known = drawn[key] = (setup, Adjacency.from_graph(setup.graph))
        setups.append(setup)
        adjacencies.append(known[1])
    games: list[BatchedGame | None] = [None] * len(specs)
    groups: dict[tuple, list[int]] = {}
    for i, setup in enumerate(setups):
        p = setup.parameters
        groups.setdefault((p["n"], p["satisfied_threshold"], p["pseudo_window"], p["pseudo_level"],
                           p.get("update", "synchronous"), p["communication"] == "global"), []).append(i)
    for (n, *_), members in groups.items():
        per_batch = max(1, MAX_BATCH_NODES // max(n, 1))
        for start in range(0, len(members), per_batch):
            chosen = members[start:start + per_batch]
            played = Stack([setups[i] for i in chosen], [adjacencies[i] for i in chosen],
                           [specs[i][1] for i in chosen], agents).play()
            for i, game in zip(chosen, played):
                games[i] = game
    return games  # type: ignore[return-value]


class Stack:
    """Games of one size stacked as one block-diagonal graph, ready to play (``play``)."""

    def __init__(self, setups: list[GameSetup], adjacencies: list[Adjacency], seeds: list[int], agents: bool):
        self.setups, self.adjacencies, self.seeds = setups, adjacencies, seeds
        b, n = len(setups), adjacencies[0].n
        first = setups[0].parameters
        self.graph = BlockGraph(adjacencies)
        self.preferences = np.array([colour_code(c) for s in setups for c in s.preferences], dtype=np.int8)
        colours = np.array([colour_code(c) for s in setups for c in s.colours], dtype=np.int8)
        self.rule = combine_rules([s.policies[0].rule() for s in setups], [n] * b)
        self.rounds = Rounds(self.graph, self.preferences, colours, satisfied_threshold=first["satisfied_threshold"],
                             pseudo_window=first["pseudo_window"], pseudo_level=first["pseudo_level"], agents=agents)
        self.max_rounds = np.array([s.parameters["max_rounds"] for s in setups])
        self.streams = [rule_stream(seed) for seed in seeds]
        self.update = first.get("update", "synchronous")
        self.everyone_related = first["communication"] == "global"  # each turn waits for all before it
        self.orders = [activation_stream(seed) for seed in seeds] if self.update != "synchronous" else []
        self.depth = np.zeros(b, dtype=np.int64)

    def play(self) -> list[BatchedGame]:
        """Every game to its end: consensus or its round limit."""
        rounds, graph, b, n = self.rounds, self.graph, self.graph.b, self.graph.n
        played = np.zeros(b, dtype=np.int64)
        reasons = np.array([""] * b, dtype=object)
        done = rounds.stats["consensus"][-1].copy()
        reasons[done] = "consensus"
        rounds.active = ~done
        # rounds drawn per block: enough to spread each stream's call over many games' rounds
        # (a lone game draws round by round: its draws stay in cache), within DRAW_MEMORY
        block = max(1, min(64, b // 32, DRAW_MEMORY // (8 * b * n)))
        draws, k = np.zeros((0, b * n)), 0
        while rounds.active.any():
            if k == len(draws):  # the next rounds of every game's stream, a block at once
                size = min(block, int((self.max_rounds - rounds.round).max()))
                draws = self.streams[0].random((size, n)) if b == 1 else \
                    np.stack([s.random((size, n)) for s in self.streams], axis=1).reshape(size, b * n)
                k = 0
            before = rounds.codes
            if self.update == "synchronous":
                rounds.codes = rule_step(before, self.preferences, rounds.blue, graph.degree, draws[k], self.rule,
                                         graph.indptr, graph.indices)
                self.depth += rounds.active
            else:
                rounds.codes = self.turns(before, draws[k])
            k += 1
            rounds.moved(before)
            consensus = rounds.stats["consensus"][-1]
            stop = rounds.active & (consensus | (rounds.round >= self.max_rounds))
            played[stop] = rounds.round
            reasons[stop & consensus] = "consensus"
            reasons[stop & ~consensus] = "max rounds"
            rounds.active = rounds.active & ~stop
        return [BatchedGame(s, a, rounds, g, int(played[g]), reasons[g], seed, int(self.depth[g]))
                for g, (s, a, seed) in enumerate(zip(self.setups, self.adjacencies, self.seeds))]

    def turns(self, before: np.ndarray, draws: np.ndarray) -> np.ndarray:
        """One round of turns in every active game: the colours after it (and each game's depth counted).

        Activation k of every game is played at once: each acting agent decides from the colours
        as the turns before it left them, its draw the k-th of its game's round. Its neighbours'
        blue counts follow its move at once, and the longest chain of turns grows as
        ``dependencies`` has it: a turn waits for the latest earlier turn of itself and of each
        agent related to it (its neighbours; everyone under global communication).
        """
        graph, n = self.graph, self.graph.n
        active = np.flatnonzero(self.rounds.active)
        orders = np.array([turn_order(self.update, n, self.orders[g]) for g in active], dtype=np.int64)
        offsets = active * n
        codes, blue = before.copy(), self.rounds.blue.astype(np.int64)
        indptr, indices, degree = graph.indptr, graph.indices, graph.degree
        level = np.zeros(len(codes), dtype=np.int64)  # each agent's latest turn's place in its chain
        longest = np.zeros(len(active), dtype=np.int64)
        draws = draws.reshape(graph.b, n)[active]
        for k in range(orders.shape[1] if len(active) else 0):
            at = offsets + orders[:, k]
            lengths = degree[at]
            starts = np.cumsum(lengths) - lengths
            neighbours = indices[np.repeat(indptr[at] - starts, lengths) + np.arange(lengths.sum())]
            if self.everyone_related:
                turn = np.full(len(at), k + 1, dtype=np.int64)
            else:
                seen = np.maximum.reduceat(np.append(level[neighbours], 0), starts)  # 0 closes an empty last one
                turn = 1 + np.maximum(level[at], np.where(lengths > 0, seen, 0))
            level[at] = turn
            longest = np.maximum(longest, turn)
            new = rule_step(codes, self.preferences, blue, degree, draws[:, k], self.rule, indptr, indices, at=at)
            moved = new != codes[at]
            if moved.any():
                codes[at] = new
                step = np.repeat(np.where(moved, 2 * new.astype(np.int64) - 1, 0), lengths)
                blue[neighbours] += step  # one acting agent a game: no neighbour is counted twice
        self.depth[active] += longest
        return codes


def play_requests(requests: Sequence[PlayRequest]) -> list[GameResult]:
    """Sweep requests of rule games (``batchable``) played together: one ``GameResult`` each, in order."""
    agents = any("agents" in r.tables for r in requests)
    games = play_games([(r.policy, r.seed, dict(r.parameters)) for r in requests], agents=agents)
    summaries: list[dict[str, Any]] = [{}] * len(games)
    for i in sorted(range(len(games)), key=lambda i: id(games[i].adjacency)):  # a graph's baselines in a row
        summaries[i] = games[i].summary()
    results = []
    for request, game, summary in zip(requests, games, summaries):
        row = {("policy_spec" if k == "policy" else k): v for k, v in summary.items() if k != "seed"}
        results.append(GameResult(row, game.tables(request.tables)))
    return results


__all__ = ["MAX_BATCH_NODES", "TABLES", "BatchedGame", "Stack", "batchable", "play_games", "play_requests"]
