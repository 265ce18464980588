"""Mesa's Boltzmann wealth model, its agents deciding through policies: give one unit, or keep it.

``BoltzmannModel`` subclasses the installed example's ``BoltzmannWealth`` and keeps all of
it: its scenario, its grid, where its agents start, its ``step`` (every agent in a fresh
random order moves to a random neighbouring cell, then gives), its Gini and its
DataCollector. What the game changes is whether an agent gives: its policy decides, at
the agent's own turn, on what the example's rule looks at there (its wealth after the
gifts of the agents before it, and its cellmates after its move).

The order is kept exactly, so an agent is asked only once every agent before it in the
step has moved and given: its cell and wealth are not known earlier, and every move
draws from the one stream the earlier gifts drew from. So a step's LLM calls go one at a
time (as many in a row as agents were asked), and LLM agents answered as Mesa's rule
would play exactly the ``mesa`` rule's game. An agent with no money or no company is not
asked (it has no choice).

With the ``mesa`` policy a seed plays exactly the example run directly with ``rng=seed``,
on Mesa 3.5 and on Mesa 4, each against its own example (the versions seed it differently).
"""

from __future__ import annotations

import random
from typing import Any

from mesa.examples.basic.boltzmann_wealth_model.agents import MoneyAgent
from mesa.examples.basic.boltzmann_wealth_model.model import BoltzmannScenario, BoltzmannWealth

from llm_mesa import Policy, decide_all, make_policy
from llm_mesa.mesa_versions import example_game_arguments, game_ended, track_rounds

from .parameters import EXAMPLE, NAME, PARAMETERS
from .policies import GIVE, MesaRule, View


class MoneyPlayer(MoneyAgent):
    """Mesa's money agent, whose giving comes from its policy. ``state`` is its wealth (what pages draw)."""

    policy: Policy
    pending: str | None = None

    @property
    def state(self) -> int:
        return self.wealth

    def cellmates(self) -> list[MoneyAgent]:
        return [a for a in self.cell.agents if a is not self]

    def observe(self) -> View:
        model: BoltzmannModel = self.model
        return View(agent=self.unique_id, round=model.round + 1, wealth=self.wealth,
                    cellmates=tuple(a.wealth for a in self.cellmates()), agents=model.num_agents,
                    width=model.grid.dimensions[0], height=model.grid.dimensions[1])

    def step(self) -> None:
        """Mesa's step: move, then give if it has money (to a random cellmate, if any). Here it is asked first."""
        self.move()
        self.pending = None
        if self.wealth > 0 and self.cellmates():
            self.pending = self.model.decide(self, self.observe())
            if self.pending == GIVE:
                self.give_money()


class BoltzmannModel(BoltzmannWealth):
    """One game of the Boltzmann wealth model (parameters: ``parameters.PARAMETERS``) with the agents' ``policy``."""

    def __init__(self, policy: str | Policy = "mesa", seed: int | None = None, *, rng: int | None = None,
                 scenario: Any = None, **parameters: Any) -> None:
        """Called as Mesa calls its example (``rng=``, ``scenario=``) or as a game (``seed``, parameters):
        ``example_game_arguments`` reads which."""
        seed, p = example_game_arguments(PARAMETERS, parameters, seed, rng, scenario)
        super().__init__(scenario=BoltzmannScenario(rng=seed, **{name: p[name] for name in EXAMPLE}))
        self.seed, self.parameters = seed, p
        self.max_rounds, self.round = p["max_rounds"], 0
        chosen = make_policy(policy, NAME)
        for player in self.agents:
            player.policy = chosen
        self.decision_rng = random.Random(seed)  # rule policies' own draws: never the example's stream
        self.gifts = self.decisions = self.agreed = self.depth = 0
        self.history: list[tuple[Any, ...]] = []
        self._keep_round()
        self.running = self.round < self.max_rounds
        track_rounds(self)  # Mesa 4's data recorders may record the rounds beside the DataCollector

    def register_agent(self, agent: Any) -> None:
        """Mesa's example builds its own agent class inside its ``__init__``; each one becomes this game's player
        as it registers, before anything sees it (the same id, the same place in the agent set, no draw)."""
        if type(agent) is MoneyAgent:
            agent.__class__ = MoneyPlayer
        super().register_agent(agent)

    def decide(self, player: MoneyPlayer, view: View) -> str:
        """One agent's choice at its turn (an LLM's call made now: the next turn depends on it)."""
        choice = decide_all([(player.policy, view)], self.decision_rng, [player])[0]
        self.decisions += 1
        self.depth += 1  # every decision waits for the one before it
        self.agreed += choice == MesaRule().decide(view, self.decision_rng)
        self.gifts += choice == GIVE
        return choice

    def step(self) -> None:
        """Mesa's own step (each agent's turn asks its policy), then the step limit."""
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
            self.history.append((self.round, player.unique_id, player.wealth, x, y, player.pending))

    def summary(self) -> dict[str, Any]:
        """The finished game's row: the example's Gini at its end, the gifts, the richest agent, who is broke."""
        wealth = [player.wealth for player in self.agents]
        return {"rounds": self.round, "Gini": float(self.gini), "gifts": self.gifts, "richest": max(wealth),
                "broke": sum(w == 0 for w in wealth) / len(wealth), "depth": self.depth,
                "mesa_agreement": self.agreed / self.decisions if self.decisions else 1.0}

    def agents_frame(self):
        """One row per agent and step (0 the start): its wealth (its ``state``, first), its cell, and its choice that
        step (when it was asked)."""
        import pandas as pd

        frame = pd.DataFrame(self.history, columns=["round", "agent", "Wealth", "x", "y", "choice"])
        return frame.astype({"round": "int64", "agent": "int64", "Wealth": "int64", "x": "int64", "y": "int64",
                             "choice": "string"})


__all__ = ["BoltzmannModel", "MoneyPlayer"]
