"""The minimal naming game (Baronchelli et al.): the classic baseline, time in interactions.

Inventories start empty. Each interaction picks a uniformly random speaker and a
uniformly random hearer among its neighbours (anyone else on the complete graph); the
speaker says a uniformly random word of its inventory, inventing a new one when the
inventory is empty. Success (the hearer knows the word): both collapse their inventories
to it. Failure: the hearer adds it. The game converges when every agent holds the same
single word; on a complete graph that takes about N^1.5 interactions.

The interaction loop is plain Python over Mesa agents (a DataCollector row per
interaction would cost more than the game); ``history`` samples the total number of
words and of distinct words every ``record_every`` interactions, the classic curves.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import mesa
import networkx as nx
import pandas as pd

from llm_mesa.mesa_versions import seed_streams

from .observation import NamingConfigError


class MinimalAgent(mesa.Agent):
    """One player of the minimal naming game: an inventory of words (integers)."""

    def __init__(self, model: "MinimalNamingGame"):
        super().__init__(model)
        self.inventory: list[int] = []


class MinimalNamingGame(mesa.Model):
    """The minimal naming game on a complete graph (``n``) or any connected networkx graph."""

    def __init__(self, n: int | None = None, graph: nx.Graph | None = None,
                 max_interactions: int | None = None, record_every: int = 0,
                 rng: int | None = None):
        super().__init__(rng=rng)
        self.seed = seed_streams(self, rng)  # the seed's own stream, on Mesa 3 and 4 alike
        if graph is None:
            if n is None or int(n) != n or n < 2:
                raise NamingConfigError(f"n={n}: the minimal naming game needs at least 2 agents")
            self.n = int(n)
            self.neighbours: list[list[int]] | None = None
        else:
            if graph.number_of_nodes() < 2 or not nx.is_connected(graph):
                raise NamingConfigError("the graph must be connected with at least 2 nodes, "
                                        "or the game can never converge")
            nodes = list(graph.nodes)
            position = {node: i for i, node in enumerate(nodes)}
            self.n = len(nodes)
            self.neighbours = [[position[m] for m in graph.neighbors(node)] for node in nodes]
        self.players = [MinimalAgent(self) for _ in range(self.n)]
        self.max_interactions = max_interactions
        self.record_every = int(record_every)
        self.interactions = 0
        self.successes = 0
        self.total_words = 0
        self.holders: Counter[int] = Counter()
        self.next_word = 0
        self.converged_at: int | None = None
        #: the peak of the total number of words and when it happened (t_max ~ N^1.5)
        self.peak_words = 0
        self.peak_at = 0
        self.history: list[tuple[int, int, int]] = []

    @property
    def converged(self) -> bool:
        return self.total_words == self.n and len(self.holders) == 1

    def interact(self) -> bool:
        """One interaction; True on success."""
        rand = self.random.random
        n = self.n
        s = int(rand() * n)
        if self.neighbours is None:
            h = int(rand() * (n - 1))
            if h >= s:
                h += 1
        else:
            around = self.neighbours[s]
            h = around[int(rand() * len(around))]
        speaker, hearer = self.players[s].inventory, self.players[h].inventory
        if not speaker:
            word = self.next_word
            self.next_word += 1
            speaker.append(word)
            self.total_words += 1
            self.holders[word] += 1
        else:
            word = speaker[int(rand() * len(speaker))]
        self.interactions += 1
        if word in hearer:
            self.successes += 1
            for inventory in (speaker, hearer):
                for other in inventory:
                    if other != word:
                        self._drop(other)
                self.total_words -= len(inventory) - 1
                inventory[:] = [word]
            if self.converged and self.converged_at is None:
                self.converged_at = self.interactions
            return True
        hearer.append(word)
        self.total_words += 1
        self.holders[word] += 1
        if self.total_words > self.peak_words:
            self.peak_words, self.peak_at = self.total_words, self.interactions
        if self.total_words == self.n and self.converged_at is None and self.converged:
            self.converged_at = self.interactions  # e.g. N = 2: the first failure teaches the only word
        return False

    def _drop(self, word: int) -> None:
        left = self.holders[word] - 1
        if left:
            self.holders[word] = left
        else:
            del self.holders[word]

    def step(self) -> None:
        """One Mesa step is one interaction (time is counted in interactions)."""
        self.interact()
        self._record()
        if self.converged or (self.max_interactions and self.interactions >= self.max_interactions):
            self.running = False

    def _record(self) -> None:
        if self.record_every and self.interactions % self.record_every == 0:
            self.history.append((self.interactions, self.total_words, len(self.holders)))

    def run(self) -> int | None:
        """Interact until convergence (or ``max_interactions``); the convergence time or None."""
        limit = self.max_interactions
        while not self.converged and (not limit or self.interactions < limit):
            self.interact()
            self._record()
        self.running = False
        return self.converged_at

    def history_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.history, columns=["interaction", "total_words", "distinct_words"])

    def summary(self) -> dict[str, Any]:
        return {"n": self.n, "graph": "complete" if self.neighbours is None else "graph",
                "interactions": self.interactions, "successes": self.successes,
                "converged_at": self.converged_at, "distinct_words": len(self.holders),
                "total_words": self.total_words, "words_invented": self.next_word,
                "peak_words": self.peak_words, "peak_at": self.peak_at}
