"""Mesa's spatial prisoner's dilemma, its agents choosing their next move through policies.

``PdGridModel`` subclasses the installed example's ``PdGrid`` and keeps its grid (one agent
a cell), its agents' random first moves, their payoffs and scores (``PDAgent.advance``),
its three activation orders and its DataCollector (``Cooperating_Agents``). What the game
changes is who chooses an agent's next move, asked where the example's rule looks:

* ``Simultaneous``: every agent on the state at the start of the step, all at once (an LLM
  population's calls of a step in flight together); then Mesa's own step applies them;
* ``Random`` and ``Sequential``: each agent at its turn, after the neighbours that acted
  before it, in the example's order (``Random``'s drawn by the example's own
  ``shuffle_do``, so the stream is consumed exactly as it is there). A turn waits only for
  the earlier turns of its neighbours (``llm_mesa.dependencies``), so turns that cannot see
  each other have their calls in flight together, and the outcome is the one-at-a-time
  game's; ``depth`` sums each step's longest chain of turns.

With the ``mesa`` policy a seed plays exactly the example run directly with ``rng=seed``,
on Mesa 3.5 and on Mesa 4, each against its own example (the versions seed it differently,
and Mesa 4's takes a scenario).
"""

from __future__ import annotations

import inspect
import random
from typing import Any

from mesa.examples.advanced.pd_grid.agents import PDAgent
from mesa.examples.advanced.pd_grid.model import PdGrid

from llm_mesa import Policy, decide_all, dependencies, depth, make_policy, play_activations
from llm_mesa.mesa_versions import example_game_arguments, game_ended, track_rounds

from .parameters import EXAMPLE, NAME, PARAMETERS, PAYOFF_TABLE, payoff_table
from .policies import MesaRule, View


def example_arguments(parameters: dict[str, Any], seed: int | None) -> dict[str, Any]:
    """What the installed example's ``PdGrid`` takes for these parameters and seed: a scenario (Mesa 4) or
    keyword arguments (Mesa 3.5)."""
    given = {name: payoff_table(parameters) if name == PAYOFF_TABLE else parameters[name] for name in EXAMPLE}
    if "scenario" in inspect.signature(PdGrid.__init__).parameters:
        from mesa.examples.advanced.pd_grid.model import PrisonersDilemmaScenario

        return {"scenario": PrisonersDilemmaScenario(rng=seed, **given)}
    return {**given, "rng": seed}


class PDPlayer(PDAgent):
    """Mesa's prisoner's-dilemma agent, whose next move comes from its policy. ``state`` is its move."""

    policy: Policy
    pending: str | None = None

    @property
    def state(self) -> str:
        return self.move

    def observe(self) -> View:
        model: PdGridModel = self.model
        neighbours = tuple((n.move, n.score) for n in self.cell.neighborhood.agents)
        return View(agent=self.unique_id, round=model.round + 1, move=self.move, score=self.score,
                    neighbours=neighbours, payoffs=tuple(model.payoff.items()),
                    activation_order=model.activation_order, width=model.grid.dimensions[0],
                    height=model.grid.dimensions[1], torus=bool(model.grid.torus))

    def step(self) -> None:
        """Mesa's step takes the best scorer's move as the next one; this one takes its policy's."""
        self.next_move = self.pending


class PdGridModel(PdGrid):
    """One game of the spatial prisoner's dilemma (parameters: ``parameters.PARAMETERS``) with the agents' ``policy``."""

    def __init__(self, policy: str | Policy = "mesa", seed: int | None = None, *, rng: int | None = None,
                 scenario: Any = None, **parameters: Any) -> None:
        """Called as Mesa calls its example (``rng=``, ``scenario=``) or as a game (``seed``, parameters):
        ``example_game_arguments`` reads which."""
        seed, p = example_game_arguments(PARAMETERS, parameters, seed, rng, scenario)
        super().__init__(**example_arguments(p, seed))
        self.seed, self.parameters = seed, p
        self.max_rounds, self.round = p["max_rounds"], 0
        chosen = make_policy(policy, NAME)
        self.players: list[PDPlayer] = list(self.agents)  # the example's order (Sequential's)
        for player in self.players:
            player.policy = chosen
        place = {id(player): i for i, player in enumerate(self.players)}
        self.around = [[place[id(n)] for n in player.cell.neighborhood.agents] for player in self.players]
        self.decision_rng = random.Random(seed)  # rule policies' own draws: never the example's stream
        self.decisions = self.agreed = self.depth = 0
        self.history: list[tuple[Any, ...]] = []
        self._keep_round()
        self.running = self.round < self.max_rounds
        track_rounds(self)  # Mesa 4's data recorders may record the rounds beside the DataCollector

    def register_agent(self, agent: Any) -> None:
        """Mesa's example builds its own agent class inside its ``__init__``; each one becomes this game's player
        as it registers, before anything sees it (the same id, the same place in the agent set, no draw)."""
        if type(agent) is PDAgent:
            agent.__class__ = PDPlayer
        super().register_agent(agent)

    def step(self) -> None:
        if self.activation_order == "Simultaneous":
            self._simultaneous()
        else:
            self._turns()
        self.round += 1
        self._keep_round()
        self.running = self.running and self.round < self.max_rounds
        if not self.running:
            game_ended(self)

    def _simultaneous(self) -> None:
        """Every policy decides on the state at the start of the step, all at once; then Mesa's own step."""
        views = [player.observe() for player in self.players]
        choices = decide_all([(player.policy, view) for player, view in zip(self.players, views)],
                             self.decision_rng, self.players)
        for player, view, choice in zip(self.players, views, choices):
            player.pending = choice
            self._count(view, choice)
        self.depth += 1
        super().step()

    def turn_order(self) -> list[int]:
        """The players (by index) in the order they act this step: ``Random``'s drawn by the example's own
        ``shuffle_do`` (so the stream is consumed exactly as there), ``Sequential``'s the agent set's."""
        if self.activation_order != "Random":
            return list(range(len(self.players)))
        place = {id(player): i for i, player in enumerate(self.players)}
        order: list[int] = []
        self.agents.shuffle_do(lambda agent: order.append(place[id(agent)]))
        return order

    def turn_depth(self) -> int:
        """The longest chain of turns of one step (1 under ``Simultaneous``; ``Random``: of one fresh order)."""
        if self.activation_order == "Simultaneous":
            return 1
        return depth(dependencies(self.turn_order(), lambda i: self.around[i]))

    def _turns(self) -> None:
        """One agent at a time, in the example's order; a turn waits for its neighbours' earlier turns only."""
        order = self.turn_order()
        waits = dependencies(order, lambda i: self.around[i])
        self.depth += depth(waits)
        views: dict[int, View] = {}

        def observe(player: PDPlayer, turn: int) -> View:
            views[turn] = player.observe()
            return views[turn]

        def apply(player: PDPlayer, choice: str, turn: int) -> None:
            player.pending = choice
            self._count(views[turn], choice)
            player.step()
            player.advance()

        play_activations(self.players, order, waits, [self.decision_rng] * len(order), apply=apply, observe=observe)
        self.datacollector.collect(self)

    # --- measures and tables ---------------------------------------------------------
    def _count(self, view: View, choice: str) -> None:
        self.decisions += 1
        self.agreed += choice == MesaRule().decide(view, self.decision_rng)

    def _keep_round(self) -> None:
        for player in self.players:
            x, y = player.cell.coordinate
            self.history.append((self.round, player.unique_id, player.move, float(player.score), x, y))

    def summary(self) -> dict[str, Any]:
        """The finished game's row: the example's series at its end, the share cooperating, the mean score."""
        cooperating = sum(player.move == "C" for player in self.players)
        return {"rounds": self.round, "Cooperating_Agents": cooperating, "cooperation": cooperating / len(self.players),
                "mean_score": sum(float(p.score) for p in self.players) / len(self.players), "depth": self.depth,
                "mesa_agreement": self.agreed / self.decisions if self.decisions else 1.0}

    def agents_frame(self):
        """One row per agent and step (0 the start): its move (its ``state``, first), its score and its cell."""
        import pandas as pd

        frame = pd.DataFrame(self.history, columns=["round", "agent", "move", "score", "x", "y"])
        return frame.astype({"round": "int64", "agent": "int64", "move": "string", "score": "float64", "x": "int64",
                             "y": "int64"})


__all__ = ["PDPlayer", "PdGridModel", "example_arguments"]
