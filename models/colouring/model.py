"""The colouring game as a Mesa model: agents on a network, each holding one of k colours.

The group is paid when no two neighbours share a colour (a proper colouring); the
game ends then, or at ``max_rounds``. A round is synchronous: every agent that
does not sit it out (``inertia``) observes the same state, all decide together
(``llm_mesa.play_round``), then all apply their choices.

Randomness: four streams derived from the seed itself (numpy ``SeedSequence``),
never from ``model.random`` (Mesa versions seed it differently): the graph, the
initial colours, who sits a round out, and the decisions' ties. So the same seed
plays the same network and start whatever the policy or inertia, and the same
game on any Mesa version.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import mesa
import networkx as nx
import numpy as np
from mesa.datacollection import DataCollector
from mesa.discrete_space import FixedAgent

from llm_mesa import (
    Policy,
    PolicyAgent,
    activation_stream,
    dependencies,
    depth,
    make_policy,
    network_space,
    play_activations,
    play_round,
    turn_order,
)

from . import game as _game  # noqa: F401  (its catalogue names the policies built by name here, llm included)
from .graphs import build_graph, drawing_layout
from .parameters import COLOURS, PARAMETERS, ColouringError
from .policies import NAME, Move, View

#: the conflict count is summarised at these fractions of the round limit (0 once solved)
FRACTIONS = (25, 50, 75)


def seed_streams(seed: int, count: int = 4) -> list[random.Random]:
    """``count`` independent ``random.Random`` streams derived from ``seed`` alone."""
    children = np.random.SeedSequence(seed & (2**128 - 1)).spawn(count)
    return [random.Random(int.from_bytes(child.generate_state(4).tobytes(), "little")) for child in children]


class Player(FixedAgent, PolicyAgent):
    """One node of the network: its colour is ``state`` (what pages colour the network by)."""

    def __init__(self, model: ColouringModel, node: int, colour: str, policy: Policy) -> None:
        super().__init__(model)
        self.cell = model.network[node]
        self.node, self.state, self.policy = node, colour, policy

    def observe(self) -> View:
        model: ColouringModel = self.model
        neighbours = model.neighbours[self.node]
        return View(
            agent=self.node, round=model.round + 1, colour=self.state, neighbours=neighbours,
            neighbour_colours=tuple(model.players[v].state for v in neighbours), colours=model.colours,
            n_players=model.n, max_rounds=model.max_rounds, payoff=model.payoff,
            neighbour_degrees=tuple(len(model.neighbours[v]) for v in neighbours) if model.show_degrees else None,
            conflicts=model.count_conflicts() if model.show_conflicts else None, inertia=model.inertia,
            game_key=model.game_key, update=model.update, activation=model.activation,
            network_colours=model.colouring() if model.show_network else None,
            links=tuple(model.edges) if model.show_network else None)

    def advance(self) -> None:
        move: Move = self.pending
        self.state = move.colour if move.colour in self.model.colours else self.state


class ColouringModel(mesa.Model):
    """One game of network colouring (parameters: ``parameters.PARAMETERS``).

    Library callers may also pass ``graph`` (a networkx graph on nodes 0..n-1, played
    instead of one drawn; ``n`` is then its size) and ``start`` (each node's first colour).
    """

    def __init__(self, policy: str | Policy | Sequence[str | Policy] = "best-response", seed: int = 0, *,
                 graph: nx.Graph | None = None, start: Sequence[str] | None = None, **parameters: Any) -> None:
        super().__init__(rng=seed)
        p = PARAMETERS.validate(parameters, complete=True)
        self.seed, self.parameters = seed, p
        graph_rng, start_rng, self.sit_out_rng, self.decision_rng = seed_streams(seed)
        given = graph is not None
        if graph is None:
            graph = build_graph(p["topology"], p["n"], graph_rng, k=p["k"], chords=p["chords"],
                                leaders=p["leaders"], links=p["links"])
        elif set(graph) != set(range(graph.number_of_nodes())):
            raise ColouringError("a given graph needs nodes 0..n-1; relabel it with networkx.convert_node_labels_to_integers")
        self.graph = graph
        self.n = graph.number_of_nodes()
        self.colours: tuple[str, ...] = COLOURS[: p["k"]]
        self.inertia, self.max_rounds, self.payoff = p["inertia"], p["max_rounds"], p["payoff"]
        self.show_degrees, self.show_conflicts, self.show_network = p["show_degrees"], p["show_conflicts"], p["show_network"]
        self.update = p["update"]
        self.activation: int | None = None  # the turn being taken (None under synchronous rounds)
        self.order_rng = activation_stream(seed)  # its own stream: one seed, one game, under every scheme
        self.depth = 0
        self.neighbours = [tuple(sorted(graph[v])) for v in range(self.n)]
        self.edges = sorted((min(u, v), max(u, v)) for u, v in graph.edges if u != v)
        self.game_key = self._game_key(given, start)
        self.network = network_space(graph, random.Random(seed))  # as the installed Mesa accepts it
        policies = self._policies(policy)
        self.players = [Player(self, v, c, policies[v]) for v, c in enumerate(self._start(p["initial"], start, start_rng))]
        self.round = 0
        self.changed = self.failed = 0
        self.conflicts = self.count_conflicts()
        self.history: list[tuple[str, ...]] = [self.colouring()]
        self.conflict_history = [self.conflicts]
        self.changes = self.failures = 0
        self.datacollector = DataCollector(model_reporters={
            "conflicts": "conflicts", "in_conflict": lambda m: m.agents_in_conflict(), "solved": "solved",
            "changed": "changed", "failed": "failed"})
        self.datacollector.collect(self)
        self.running = not self.solved

    # --- set-up ---------------------------------------------------------------------
    def _policies(self, policy: str | Policy | Sequence[str | Policy]) -> list[Policy]:
        if isinstance(policy, (str, Policy)):
            return [make_policy(policy, NAME)] * self.n
        chosen = [make_policy(p, NAME) for p in policy]
        if len(chosen) != self.n:
            raise ColouringError(f"give one policy for all agents or one per agent ({self.n}), not {len(chosen)}")
        return chosen

    def _start(self, initial: str, given: Sequence[str] | None, rng: random.Random) -> list[str]:
        if given is not None:
            start = list(given)
            if len(start) != self.n or not set(start) <= set(self.colours):
                raise ColouringError(f"give {self.n} start colours, each one of: {', '.join(self.colours)}")
            return start
        if initial == "same":
            return [self.colours[0]] * self.n
        return [self.colours[rng.randrange(len(self.colours))] for _ in range(self.n)]

    def _game_key(self, given_graph: bool, start: Sequence[str] | None) -> str:
        """Names this game in LLM call records: its parameters, seed, and any given graph or start."""
        identity = {"parameters": self.parameters, "seed": self.seed, "edges": self.edges if given_graph else None,
                    "start": list(start) if start is not None else None}
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]

    # --- one round -------------------------------------------------------------------
    def movers(self) -> list[Player]:
        """The agents that decide this round: each sits it out with probability ``inertia``
        (one draw per agent, in node order, every round)."""
        draws = [self.sit_out_rng.random() for _ in self.players]
        return [player for player, u in zip(self.players, draws) if u >= self.inertia]

    def step(self) -> None:
        before = self.colouring()
        if self.update == "synchronous":
            moves = play_round(self.movers(), self.decision_rng)
            self.depth += 1  # one level: every call of the round is in flight at once
        else:
            moves = self._turns()
        self.round += 1
        after = self.colouring()
        self.changed = sum(a != b for a, b in zip(before, after))
        self.failed = sum(move.failed for move in moves)
        self.changes += self.changed
        self.failures += self.failed
        self.conflicts = self.count_conflicts()
        self.history.append(after)
        self.conflict_history.append(self.conflicts)
        self.datacollector.collect(self)
        self.running = not self.solved and self.round < self.max_rounds

    def _turns(self) -> list[Move]:
        """One round of turns: each agent acts on the colours as they are at its turn.

        The order is drawn from the game's activation stream; each turn sits out with
        probability ``inertia`` (one draw per turn), and each decision has its own tie
        stream, drawn beforehand in turn order. A turn waits only for the earlier turns
        of its neighbours (of everyone, when agents see the network's conflict count or the
        whole network).
        """
        order = [v for v in turn_order(self.update, self.n, self.order_rng)
                 if self.sit_out_rng.random() >= self.inertia]
        rngs = [random.Random(self.decision_rng.getrandbits(64)) for _ in order]
        everyone = range(self.n)
        sees_all = self.show_conflicts or self.show_network
        waits = dependencies(order, (lambda v: everyone) if sees_all else (lambda v: self.neighbours[v]))
        self.depth += depth(waits)

        def observe(player: Player, turn: int) -> View:
            self.activation = turn
            return player.observe()

        try:
            return play_activations(self.players, order, waits, rngs, observe=observe)
        finally:
            self.activation = None

    # --- measures --------------------------------------------------------------------
    def colouring(self) -> tuple[str, ...]:
        return tuple(player.state for player in self.players)

    def count_conflicts(self) -> int:
        """Edges whose two ends hold the same colour."""
        state = self.colouring()
        return sum(state[u] == state[v] for u, v in self.edges)

    def agents_in_conflict(self, state: Sequence[str] | None = None) -> int:
        state = self.colouring() if state is None else state
        return sum(any(state[u] == state[v] for u in self.neighbours[v]) for v in range(self.n))

    @property
    def solved(self) -> bool:
        return self.conflicts == 0

    @cached_property
    def layout(self) -> dict[int, tuple[float, float]]:
        """Where to draw each node, computed on first use (sweeps never draw)."""
        return drawing_layout(self.graph, self.parameters["topology"], self.seed, self.parameters["leaders"])

    def summary(self) -> dict[str, Any]:
        """The finished game's row: solved, when, and how the conflicts fell over the game's horizon."""
        horizon = self.max_rounds
        # a solved game holds 0 conflicts to the horizon (an unfinished one, so far, its current count)
        played = self.conflict_history[1:] + [0 if self.solved else self.conflicts] * (horizon - self.round)
        solved_at = self.round if self.solved else None
        row: dict[str, Any] = {
            "solved": self.solved, "rounds": self.round, "rounds_to_solution": solved_at, "depth": self.depth,
            "n": self.n, "edges": len(self.edges), "k": len(self.colours),
            "conflicts_start": self.conflict_history[0], "conflicts_final": self.conflicts,
            "conflicts_min": min(self.conflict_history),
            "conflicts_mean": float(np.mean(played)),
        }
        for share in FRACTIONS:
            row[f"conflicts_at_{share}"] = played[max(1, -(-horizon * share // 100)) - 1]
        row.update(changes=self.changes, failed_decisions=self.failures,
                   payoff_earned=self.payoff if self.solved else 0.0)
        templates = sorted({t for p in self.players if (t := getattr(getattr(p.policy, "prompt", None), "template_hash", None))})
        if templates:  # LLM agents: which prompt they read (the report's manifest summary names it)
            row["prompt_template_hash"] = ",".join(templates)
        return row

    # --- tables -----------------------------------------------------------------------
    def agents_frame(self):
        """One row per agent and round (0 the start): colour, in conflict, changed since the last round."""
        import pandas as pd

        rows = []
        for r, state in enumerate(self.history):
            previous = self.history[r - 1] if r else state
            for v, colour in enumerate(state):
                rows.append((r, v, colour, any(state[u] == colour for u in self.neighbours[v]), colour != previous[v]))
        return pd.DataFrame(rows, columns=["round", "agent", "colour", "in_conflict", "changed"])

    def edges_frame(self):
        import pandas as pd

        return pd.DataFrame(self.edges, columns=["source", "target"])
