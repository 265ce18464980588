"""One synchronous round, the same for every game.

observe -> decide -> advance: every agent builds its observation from the same
state, every policy decides (rule policies at once, in agent order, from the
model's rng, so a rule run is reproducible bit for bit; LLM policies gathered
together on the process's shared event loop, so all of a round's calls are in
flight at once, bounded only by each endpoint's concurrency limit), and only
then does every agent apply its decision. If one LLM call of a round fails for
good, the round's other calls are cancelled (no call is paid for or recorded
after the round has failed).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from mesa import Agent

from llm_mesa.policy import Policy


class PolicyAgent(Agent):
    """A Mesa agent whose step is split around its policy's decision.

    A game's agent says what it may see (``observe``) and how it applies a
    decision (``advance``, reading ``pending``); ``play_round`` does the rest.
    Mix it in after Mesa's own agent classes, e.g.
    ``class Player(FixedAgent, PolicyAgent)``.

    Attributes:
        policy: The agent's policy (agents of one game may hold different ones).
        pending: The decision ``play_round`` gave it this round, which ``advance`` applies.
    """

    policy: Policy
    pending: Any = None

    def observe(self) -> Any:
        """What the agent sees now: the observation its policy decides on (the game's own type)."""
        raise NotImplementedError(f"{type(self).__name__} must say what it observes")

    def advance(self) -> None:
        """Apply ``pending``, the decision taken (None where an LLM decision failed, unless the policy says else)."""
        raise NotImplementedError(f"{type(self).__name__} must say how it applies a decision")


def decide_all(requests: Sequence[tuple[Policy, Any]], rng: random.Random,
               agents: Sequence[Agent] | None = None) -> list[Any]:
    """Decisions for ``(policy, observation)`` pairs: rule policies at once, in order, LLM policies together.

    Args:
        requests: ``(policy, observation)`` pairs.
        rng: Where rule policies draw from (the model's stream, so a rule run is reproducible bit for bit).
        agents: Whose decision each pair is, one per pair, so that an LLM decision is keyed and counted for its
            agent and game (``llm_mesa.decisions``).

    Returns:
        The decisions, in the pairs' order.
    """
    decisions: list[Any] = [None] * len(requests)
    waiting: list[int] = []
    for i, (policy, observation) in enumerate(requests):
        if policy.is_async:
            waiting.append(i)
        else:
            decisions[i] = policy.decide(observation, rng)
    if waiting:
        from llm_mesa.llm.runtime import gather_sync

        pending = [requests[i][0].adecide(requests[i][1], rng) for i in waiting]
        if agents is not None:
            from llm_mesa.decisions import Turn, as_turn

            pending = [as_turn(Turn(agents[i]), decision) for i, decision in zip(waiting, pending, strict=True)]
        answers = gather_sync(pending)
        for i, answer in zip(waiting, answers, strict=True):
            decisions[i] = answer
    return decisions


def play_round(agents: Sequence[PolicyAgent], rng: random.Random, *, advance: bool = True) -> list[Any]:
    """One synchronous round: every agent observes, all decide together, then all apply.

    Args:
        agents: The agents, in the order their rule policies draw.
        rng: Where rule policies draw from.
        advance: Apply the decisions (``advance`` each agent); False leaves them in ``pending``.

    Returns:
        The decisions, in agent order; each agent gets exactly its own (``pending``).
    """
    decisions = decide_all([(agent.policy, agent.observe()) for agent in agents], rng, agents)
    for agent, decision in zip(agents, decisions, strict=True):
        agent.pending = decision
    if advance:
        for agent in agents:
            agent.advance()
    return decisions


__all__ = ["PolicyAgent", "decide_all", "play_round"]
