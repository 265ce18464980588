"""Mesa's Schelling segregation model as the core sees it: parameters, policies, tables, LLM support.

What the LLM decides: whether an agent stays or moves, each step, on the grid as it is at
the start of the step (all of a step's calls at once). What the example still decides:
the grid, who lives where at the start and of which type, where a mover lands (a random
empty cell), the order of the moves, who is happy (its ``assign_state``), and when the game
ends (everyone happy, or ``max_rounds``). The ``mesa`` policy is the example's own rule
(move when unhappy): with it a seed plays the example run with ``rng=seed``, and LLM agents
answered by the stand-in's ``schelling:mesa`` play that very game.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llm_mesa import Game, LlmEstimate, LlmSupport, PolicyCatalog, Table, categorical, continuous, count, share

from .parameters import NAME, PARAMETERS

PACKAGE = "llm_mesa.models.schelling"
TABLES = (
    Table("rounds", ("round",), "the example's DataCollector, one row per step (0 the start): happy, pct_happy, "
          "population, minority_pct"),
    Table("agents", ("round", "agent"), "one row per agent and step: agent_type (its state), happy, its cell (x, y) "
          "and the choice it made in that step"),
)


class SchellingGame(Game):
    """Schelling's segregation model from Mesa's examples, its agents' moves decided by policies."""

    name = NAME
    summary = "Mesa's Schelling segregation model: agents of two types stay or move on a grid"
    parameters = PARAMETERS
    tables = TABLES
    policies = PolicyCatalog(module=f"{PACKAGE}.policies",
                             lazy={"llm": (f"{PACKAGE}.llm_policy", "an LLM agent behind any OpenAI-compatible endpoint")})
    llm = LlmSupport(policy=f"{PACKAGE}.llm_policy:game_policy", behaviours=f"{PACKAGE}.behaviours")
    #: the agent's type, in the colours of Mesa's own Schelling page (0 blue, 1 orange)
    state_scale = categorical(0, 1, palette={0: "#1f77b4", 1: "#ff7f0e"}, label="agent type (1: the minority)")
    measures = {
        "happy": count(label="happy agents"),
        "pct_happy": continuous(0, 100, unit="%", label="happy agents"),
        "population": count(label="agents"),
        "minority_pct": continuous(0, 100, unit="%", label="type-1 agents"),
        "moves": count(label="moves"),
        "segregation": share(label="share of neighbours of one's own type"),
        "mesa_agreement": share(label="decisions as Mesa's rule"),
    }
    headline_measure = "pct_happy"

    def build(self, parameters: Mapping[str, Any], policy: Any, seed: int) -> Any:
        from .model import SchellingModel

        return SchellingModel(policy, seed, **parameters)

    def table(self, model: Any, name: str) -> Any:
        if name == "agents":
            return model.agents_frame()
        return super().table(model, name)

    def estimate(self, parameters: Mapping[str, Any], endpoint: Any) -> LlmEstimate:
        """One call per agent and step at most (the game ends once everyone is happy); the prompt of an agent."""
        from .llm_policy import messages
        from .policies import View

        p = PARAMETERS.validate(parameters, complete=True)
        agents = max(1, round(p["width"] * p["height"] * p["density"]))
        side = 2 * p["radius"] + 1
        view = View(agent=agents, round=p["max_rounds"], type=1, similar=side * side // 2, other=side * side // 2,
                    empty=10, happy=False, homophily=p["homophily"], radius=p["radius"], width=p["width"],
                    height=p["height"], agents=agents)
        prompt = "\n".join(m["content"] for m in messages(view))
        completion = endpoint.max_tokens or endpoint.max_completion_tokens or 12
        return LlmEstimate(calls=agents * p["max_rounds"], rounds=p["max_rounds"],
                           prompt_tokens_per_call=max(1, round(len(prompt) / 4)),
                           completion_tokens_per_call=completion, may_stop_early=True)

    def outcome(self, row: Mapping[str, Any]) -> str:
        happy = f"{row.get('pct_happy', float('nan')):.1f}% happy"
        if row.get("settled"):
            return f"everyone happy after {row.get('rounds', '?')} steps"
        return f"{happy} after {row.get('rounds', '?')} steps"


GAME = SchellingGame()
