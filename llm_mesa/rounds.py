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
    Mix it in before Mesa's own agent classes, e.g.
    ``class Player(FixedAgent, PolicyAgent)``.
    """

    policy: Policy
    pending: Any = None

    def observe(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must say what it observes")

    def advance(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} must say how it applies a decision")


def decide_all(requests: Sequence[tuple[Policy, Any]], rng: random.Random,
               agents: Sequence[Agent] | None = None) -> list[Any]:
    """Decisions for ``(policy, observation)`` pairs, in the same order.

    ``agents`` (one per pair) says whose decision each is, so that an LLM decision is
    keyed and counted for its agent and game (``llm_mesa.decisions``).
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
    """Observe, decide together, then (``advance``) apply together; returns the decisions.

    Every agent gets exactly its own decision (``pending``), in agent order.
    """
    decisions = decide_all([(agent.policy, agent.observe()) for agent in agents], rng, agents)
    for agent, decision in zip(agents, decisions, strict=True):
        agent.pending = decision
    if advance:
        for agent in agents:
            agent.advance()
    return decisions


__all__ = ["PolicyAgent", "decide_all", "play_round"]
