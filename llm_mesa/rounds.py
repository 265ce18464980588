"""Synchronous rounds: every agent decides on the same state, then all apply.

Rule policies answer at once, in agent order, from the model's rng (so a rule
run is reproducible bit for bit). Async policies (LLM agents) are gathered
together on the process's shared event loop, so all of a round's calls are in
flight at once, bounded only by each endpoint's concurrency limit.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from llm_mesa.policy import Policy


def decide_all(requests: Sequence[tuple[Policy, Any]], rng: random.Random) -> list[Any]:
    """Decisions for ``(policy, observation)`` pairs, in the same order."""
    decisions: list[Any] = [None] * len(requests)
    waiting: list[int] = []
    for i, (policy, observation) in enumerate(requests):
        if policy.is_async:
            waiting.append(i)
        else:
            decisions[i] = policy.decide(observation, rng)
    if waiting:
        from llm_mesa.llm.runtime import gather_sync

        answers = gather_sync([requests[i][0].adecide(requests[i][1], rng) for i in waiting])
        for i, answer in zip(waiting, answers):
            decisions[i] = answer
    return decisions
