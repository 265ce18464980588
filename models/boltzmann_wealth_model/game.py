"""Mesa's Boltzmann wealth model as the core sees it: parameters, policies, tables, LLM support.

What the LLM decides: whether an agent with money and company gives one unit or keeps
it, at its own turn. What the example still decides: where agents start, the step's
random order, every move (a random neighbouring cell), which cellmate receives a gift, and
the Gini. The order is kept exactly: an agent is asked only after every agent before it
in the step has moved and given, so a step's LLM calls go one at a time (``depth`` counts
them), and LLM agents answered by the stand-in's ``boltzmann_wealth_model:mesa`` play the
``mesa`` rule's game, seed for seed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llm_mesa import Game, LlmEstimate, LlmSupport, PolicyCatalog, Table, continuous, count, share

from .parameters import NAME, PARAMETERS

PACKAGE = "llm_mesa.models.boltzmann_wealth_model"
TABLES = (
    Table("rounds", ("round",), "the example's DataCollector, one row per step (0 the start): Gini"),
    Table("agents", ("round", "agent"), "one row per agent and step: Wealth (its state), its cell (x, y) and its "
          "choice in that step (when it was asked)", types={"choice": "string"}),
)


class BoltzmannGame(Game):
    """The Boltzmann wealth model from Mesa's examples, its agents' gifts decided by policies."""

    name = NAME
    summary = "Mesa's Boltzmann wealth model: agents on a grid give one unit of money to a cellmate, or keep it"
    parameters = PARAMETERS
    tables = TABLES
    policies = PolicyCatalog(module=f"{PACKAGE}.policies",
                             lazy={"llm": (f"{PACKAGE}.llm_policy", "an LLM agent behind any OpenAI-compatible endpoint")})
    llm = LlmSupport(policy=f"{PACKAGE}.llm_policy:game_policy", behaviours=f"{PACKAGE}.behaviours")
    state_scale = count(unit="units", label="wealth")
    measures = {
        "Gini": continuous(0, 1, label="Gini coefficient of wealth"),
        "gifts": count(label="gifts"),
        "richest": count(unit="units", label="the richest agent's wealth"),
        "broke": share(label="agents with no money"),
        "depth": count(label="decisions in a row (each waits for the one before it)"),
        "mesa_agreement": share(label="decisions as Mesa's rule"),
    }
    headline_measure = "Gini"

    def build(self, parameters: Mapping[str, Any], policy: Any, seed: int) -> Any:
        from .model import BoltzmannModel

        return BoltzmannModel(policy, seed, **parameters)

    def table(self, model: Any, name: str) -> Any:
        if name == "agents":
            return model.agents_frame()
        return super().table(model, name)

    def estimate(self, parameters: Mapping[str, Any], endpoint: Any) -> LlmEstimate:
        """One call per agent and step at most (only an agent with money and company is asked), each after the
        one before it; the prompt of an agent sharing its cell with two others."""
        from .llm_policy import messages
        from .policies import View

        p = PARAMETERS.validate(parameters, complete=True)
        view = View(agent=p["n"], round=p["max_rounds"], wealth=3, cellmates=(1, 0), agents=p["n"], width=p["width"],
                    height=p["height"])
        prompt = "\n".join(m["content"] for m in messages(view))
        completion = endpoint.max_tokens or endpoint.max_completion_tokens or 12
        calls = p["n"] * p["max_rounds"]
        return LlmEstimate(calls=calls, rounds=calls,
                           prompt_tokens_per_call=max(1, round(len(prompt) / 4)),
                           completion_tokens_per_call=completion, may_stop_early=True)

    def outcome(self, row: Mapping[str, Any]) -> str:
        return f"Gini {row.get('Gini', float('nan')):.3f} after {row.get('rounds', '?')} steps"


GAME = BoltzmannGame()
