"""Mesa's Schelling model, its agents deciding through policies: move or stay.

``SchellingModel`` subclasses the installed example's ``Schelling`` and keeps all of it:
its scenario, its grid, its agents' placement and types, its happiness rule
(``assign_state``), its ``step`` (a random order of agents, each moving to a random empty
cell, then happiness assigned to all) and its DataCollector (``happy``, ``pct_happy``,
``population``, ``minority_pct``). What the game changes is who decides whether an agent
moves: before Mesa's step runs, every agent's policy decides on the grid as it is at the
start of the step (the example's own rule decides on that state too: the happiness
assigned at the end of the last step), all of them at once, so an LLM population's calls
of a step are in flight together; then Mesa's step moves those that chose to move.

With the ``mesa`` policy a seed plays exactly the example run directly with ``rng=seed``
(the same DataCollector series), on Mesa 3.5 and on Mesa 4 alike, each against its own
example: the two versions seed the example differently, so one seed plays two different
games on the two versions.
"""

from __future__ import annotations

import random
from typing import Any

from mesa.examples.basic.schelling.agents import SchellingAgent
from mesa.examples.basic.schelling.model import Schelling, SchellingScenario

from llm_mesa import Policy, decide_all, make_policy
from llm_mesa.mesa_versions import example_game_arguments, game_ended, track_rounds

from .parameters import EXAMPLE, NAME, PARAMETERS
from .policies import MOVE, STAY, MesaRule, View


class SchellingPlayer(SchellingAgent):
    """Mesa's Schelling agent, whose move comes from its policy. ``state`` is its type (what pages draw)."""

    policy: Policy
    pending: str = STAY

    @property
    def state(self) -> int:
        return self.type

    def observe(self) -> View:
        """Its type and its neighbourhood now (the cells within its radius), with the rules' numbers."""
        model: SchellingModel = self.model
        around = self.cell.get_neighborhood(radius=self.radius)
        neighbours = list(around.agents)
        similar = sum(n.type == self.type for n in neighbours)
        return View(agent=self.unique_id, round=model.round + 1, type=self.type, similar=similar,
                    other=len(neighbours) - similar, empty=len(around) - len(neighbours), happy=self.happy,
                    homophily=self.homophily, radius=self.radius, width=model.grid.dimensions[0],
                    height=model.grid.dimensions[1], agents=len(model.agents))

    def step(self) -> None:
        """Mesa's step moves an unhappy agent to a random empty cell; this one moves when its policy chose to
        (a full grid has no empty cell: then it stays)."""
        if self.pending == MOVE and self.model.has_room:
            self.cell = self.model.grid.select_random_empty_cell()


class SchellingModel(Schelling):
    """One game of Schelling's model (parameters: ``parameters.PARAMETERS``) with the agents' ``policy``."""

    def __init__(self, policy: str | Policy = "mesa", seed: int | None = None, *, rng: int | None = None,
                 scenario: Any = None, **parameters: Any) -> None:
        """Called as Mesa calls its example (``rng=``, ``scenario=``) or as a game (``seed``, parameters):
        ``example_game_arguments`` reads which."""
        seed, p = example_game_arguments(PARAMETERS, parameters, seed, rng, scenario)
        super().__init__(scenario=SchellingScenario(rng=seed, **{name: p[name] for name in EXAMPLE}))
        self.seed, self.parameters = seed, p
        self.max_rounds, self.round = p["max_rounds"], 0
        chosen = make_policy(policy, NAME)
        for player in self.agents:
            player.policy = chosen
        self.has_room = len(self.agents) < len(self.grid.all_cells)
        self.decision_rng = random.Random(seed)  # rule policies' own draws: never the example's stream
        self.moves = self.decisions = self.agreed = 0
        self.history: list[tuple[Any, ...]] = []
        self._keep_round()
        self.running = self.running and self.round < self.max_rounds
        track_rounds(self)  # Mesa 4's data recorders may record the rounds beside the DataCollector

    def register_agent(self, agent: Any) -> None:
        """Mesa's example builds its own agent class inside its ``__init__``; each one becomes this game's player
        as it registers, before anything sees it (the same id, the same place in the agent set, no draw)."""
        if type(agent) is SchellingAgent:
            agent.__class__ = SchellingPlayer
        super().register_agent(agent)

    def step(self) -> None:
        """Every policy decides on the grid as it is, all at once; then Mesa's own step plays the moves."""
        players = list(self.agents)
        views = [player.observe() for player in players]
        choices = decide_all([(player.policy, view) for player, view in zip(players, views)], self.decision_rng, players)
        rule = MesaRule()
        for player, view, choice in zip(players, views, choices):
            player.pending = choice
            self.agreed += choice == rule.decide(view, self.decision_rng)
        self.decisions += len(players)
        self.moves += sum(choice == MOVE for choice in choices) if self.has_room else 0
        super().step()
        self.round += 1
        self._keep_round()
        self.running = self.running and self.round < self.max_rounds
        if not self.running:
            game_ended(self)

    # --- measures and tables ---------------------------------------------------------
    def _keep_round(self) -> None:
        for player in self.agents:
            x, y = player.cell.coordinate
            self.history.append((self.round, player.unique_id, player.type, player.happy, x, y,
                                 player.pending if self.round else None))

    def segregation(self) -> float:
        """The mean share of an agent's neighbours that are of its type (agents with neighbours)."""
        shares = []
        for player in self.agents:
            neighbours = list(player.cell.get_neighborhood(radius=player.radius).agents)
            if neighbours:
                shares.append(sum(n.type == player.type for n in neighbours) / len(neighbours))
        return sum(shares) / len(shares) if shares else 0.0

    def summary(self) -> dict[str, Any]:
        """The finished game's row: the example's series at its end, whether everyone is happy, the moves."""
        last = self.datacollector.get_model_vars_dataframe().iloc[-1]
        return {"rounds": self.round, "settled": bool(self.happy == len(self.agents)), "happy": int(last["happy"]),
                "pct_happy": float(last["pct_happy"]), "population": int(last["population"]),
                "minority_pct": float(last["minority_pct"]), "moves": self.moves,
                "segregation": self.segregation(),
                "mesa_agreement": self.agreed / self.decisions if self.decisions else 1.0}

    def agents_frame(self):
        """One row per agent and step (0 the start): its type (its ``state``, first), happiness, cell and the choice
        it made that step."""
        import pandas as pd

        frame = pd.DataFrame(self.history, columns=["round", "agent", "agent_type", "happy", "x", "y", "choice"])
        return frame.astype({"round": "int64", "agent": "int64", "agent_type": "int64", "happy": "bool", "x": "int64",
                             "y": "int64", "choice": "string"})


__all__ = ["SchellingModel", "SchellingPlayer"]
