"""Mesa's spatial prisoner's dilemma as the core sees it: parameters, policies, design, tables, LLM support.

What the LLM decides: each agent's next move, C or D, where the example's rule decides it
(on the step's starting state under ``Simultaneous``, at the agent's turn under ``Random``
and ``Sequential``). What the example still decides: the grid, the random first moves, the
payoffs and scores, the activation order (``Random``'s shuffle from its own stream), and
the ``Cooperating_Agents`` series. Under ``Simultaneous`` a step's calls are in flight
together; under turns a call waits only for its neighbours' earlier turns. Either way LLM
agents answered by the stand-in's ``pd_grid:mesa`` play the ``mesa`` rule's game exactly.
The design's conditions are Mesa's own notebook experiment: the three activation orders.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llm_mesa import Game, LlmEstimate, LlmSupport, PolicyCatalog, StudyDesign, Table, categorical, continuous, count, share

from .parameters import NAME, PARAMETERS, REGIMES

PACKAGE = "llm_mesa.models.pd_grid"
TABLES = (
    Table("rounds", ("round",), "the example's DataCollector, one row per step (0 the start): Cooperating_Agents"),
    Table("agents", ("round", "agent"), "one row per agent and step: move (its state), score, its cell (x, y)"),
)
#: Mesa's notebook plays each activation order on its default grid
DESIGN = StudyDesign({regime.lower(): {"activation_order": regime} for regime in REGIMES},
                     {"activation": tuple(regime.lower() for regime in REGIMES)})


class PdGridGame(Game):
    """The spatial prisoner's dilemma from Mesa's examples, its agents' moves chosen by policies."""

    name = NAME
    summary = "Mesa's spatial prisoner's dilemma: agents on a grid cooperate or defect with their neighbours"
    parameters = PARAMETERS
    tables = TABLES
    design = DESIGN
    policies = PolicyCatalog(module=f"{PACKAGE}.policies",
                             lazy={"llm": (f"{PACKAGE}.llm_policy", "an LLM agent behind any OpenAI-compatible endpoint")})
    llm = LlmSupport(policy=f"{PACKAGE}.llm_policy:game_policy", behaviours=f"{PACKAGE}.behaviours")
    #: C and D in the colours of Mesa's own page (C blue, D red)
    state_scale = categorical("C", "D", palette={"C": "#1f77b4", "D": "#d62728"}, label="move")
    measures = {
        "Cooperating_Agents": count(label="cooperating agents"),
        "cooperation": share(label="share of agents cooperating"),
        "mean_score": continuous(label="mean score"),
        "depth": count(label="turns in a row (LLM wall time is depth x latency)"),
        "mesa_agreement": share(label="decisions as Mesa's rule"),
    }
    headline_measure = "cooperation"

    def build(self, parameters: Mapping[str, Any], policy: Any, seed: int) -> Any:
        from .model import PdGridModel

        return PdGridModel(policy, seed, **parameters)

    def table(self, model: Any, name: str) -> Any:
        if name == "agents":
            return model.agents_frame()
        return super().table(model, name)

    def estimate(self, parameters: Mapping[str, Any], endpoint: Any) -> LlmEstimate:
        """One call per agent and step; the prompt of an agent with 8 neighbours; the steps' turns one after
        another as the activation order chains them (a step's longest chain, of one fresh order under Random)."""
        from .llm_policy import messages
        from .model import PdGridModel
        from .parameters import payoff_table
        from .policies import View

        p = PARAMETERS.validate(parameters, complete=True)
        chain = PdGridModel("mesa", 0, **p).turn_depth()
        agents = p["width"] * p["height"]
        view = View(agent=agents, round=p["max_rounds"], move="C", score=12.8, neighbours=(("D", 11.2),) * 8,
                    payoffs=tuple(payoff_table(p).items()), activation_order=p["activation_order"], width=p["width"],
                    height=p["height"], torus=bool(p.get("torus", True)))
        prompt = "\n".join(m["content"] for m in messages(view))
        completion = endpoint.max_tokens or endpoint.max_completion_tokens or 10
        return LlmEstimate(calls=agents * p["max_rounds"], rounds=chain * p["max_rounds"],
                           prompt_tokens_per_call=max(1, round(len(prompt) / 4)),
                           completion_tokens_per_call=completion, may_stop_early=False)

    def outcome(self, row: Mapping[str, Any]) -> str:
        return f"{row.get('cooperation', float('nan')):.1%} cooperating after {row.get('rounds', '?')} steps"


GAME = PdGridGame()
