"""Update schemes: synchronous rounds, or agents that act one after another, exactly and fast.

A round under ``synchronous`` updating (``rounds.play_round``) has every agent decide
on the same state, then all apply together. Under the other schemes agents act in
turn, each seeing the state as it is at its turn, the moves and messages of the
agents before it in the round included:

* ``random-sequential``: every agent acts once a round, in a fresh random order;
* ``random-asynchronous``: N activations a round, each of an agent drawn uniformly
  with replacement (the discrete form of a Poisson clock per agent), so an agent may
  act twice in a round or not at all.

The order comes from a random stream of its own (``activation_stream``), so one seed
gives the same graph and preferences under every scheme (paired comparisons).

**Exact sequential semantics at parallel speed.** An activation depends only on the
earlier activations whose result it can see, or whose view its own result changes
(``related``: for a game on a graph, the neighbours for moves; the possible senders
for messages, everyone under global communication). ``play_activations`` starts every
activation whose dependencies are done at once (an LLM agent's call is then in flight
beside the others'), and lets the rest wait: the outcome equals a strictly one-at-a-time
run, because two activations that are not ordered see nothing of each other. Effects
a game records in order (messages in an inbox, rows of a transcript) carry their
activation index, so the order is the sequential one whatever finished first. The
dependency depth of a round (its longest chain) is what its wall time is bounded by:
``depth x latency`` instead of ``activations x latency``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from llm_mesa.decisions import turn_key
from llm_mesa.parameters import Parameter

if TYPE_CHECKING:  # a game's parameter module imports UPDATE: it stays free of Mesa
    from llm_mesa.rounds import PolicyAgent

UPDATE_SCHEMES = ("synchronous", "random-sequential", "random-asynchronous")
#: spawn key of the activation-order stream (never the game's own streams)
ACTIVATION_STREAM = 0xAC71_0A7E

#: the parameter every game with agents on a graph gives its definition (``--update``, ``--set update=...``)
UPDATE = Parameter("update", str, "synchronous",
                   "how agents take turns: synchronous rounds (all decide on one state, then all apply), "
                   "random-sequential (each agent once a round, in a fresh random order, seeing the moves before "
                   "it) or random-asynchronous (N activations a round, agents drawn with replacement)",
                   choices=UPDATE_SCHEMES, label="Update scheme")

#: the words a game's rules use to tell agents how turns are taken under each scheme
TURN_RULES = {
    "synchronous": "All players choose at the same time each round, seeing the same state; the choices are then "
                   "applied together.",
    "random-sequential": "Players take turns one after another in a random order that changes every round; each "
                         "player sees the moves and messages of the players who acted before it in the round.",
    "random-asynchronous": "Each round, players are called one at a time at random, some more than once and some not "
                           "at all; each sees the moves and messages of the players who acted before it.",
}


def activation_stream(seed: int) -> np.random.Generator:
    """The stream of activation orders of the game with this seed: its own, so that one seed plays the same graph
    and start under every scheme (paired comparisons).

    Args:
        seed: The game's seed.

    Returns:
        A numpy generator spawned from the seed with ``ACTIVATION_STREAM``.
    """
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(ACTIVATION_STREAM,)))


def turn_order(scheme: str, n: int, rng: np.random.Generator) -> list[int]:
    """The agents (by index) in the order they act this round.

    Args:
        scheme: ``random-sequential`` (each agent once, a fresh random order) or ``random-asynchronous`` (N
            activations, agents drawn with replacement).
        n: The number of agents.
        rng: The activation stream (``activation_stream``).

    Returns:
        The activations' agents, in order.

    Raises:
        ValueError: Another scheme (synchronous rounds take no order).
    """
    if scheme == "random-sequential":
        return rng.permutation(n).tolist()
    if scheme == "random-asynchronous":
        return rng.integers(0, n, size=n).tolist()
    raise ValueError(f"unknown update scheme {scheme!r}; choose one of: {', '.join(UPDATE_SCHEMES[1:])}")


def dependencies(order: Sequence[int], related: Callable[[int], Iterable[int]]) -> list[tuple[int, ...]]:
    """For each activation, the earlier activations it must wait for.

    Only the latest earlier activation of each related agent is named: it waits for its own predecessors.

    Args:
        order: The activations' agents, in order (``turn_order``).
        related: ``related(i)``, the agents whose results agent ``i`` can see, or that can see agent ``i``'s (the
            relation is taken both ways, so a later activation never changes what an earlier one is still reading).

    Returns:
        Per activation, the indices of the activations it waits for, ascending.
    """
    last: dict[int, int] = {}
    out: list[tuple[int, ...]] = []
    for k, agent in enumerate(order):
        waits = {last[j] for j in (agent, *related(agent)) if j in last}
        out.append(tuple(sorted(waits)))
        last[agent] = k
    return out


def depth(deps: Sequence[Sequence[int]]) -> int:
    """The longest chain of a round's activation graph: what its wall time is bounded by (depth x latency).

    Args:
        deps: Per activation, those it waits for (``dependencies``).

    Returns:
        The chain's length (0 for an empty round).
    """
    level: list[int] = []
    for waits in deps:
        level.append(1 + max((level[d] for d in waits), default=0))
    return max(level, default=0)


Apply = Callable[["PolicyAgent", Any, int], None]
Observe = Callable[["PolicyAgent", int], Any]


def _apply(agent: PolicyAgent, decision: Any, activation: int) -> None:
    agent.pending = decision
    agent.advance()


def _observe(agent: PolicyAgent, activation: int) -> Any:
    return agent.observe()


def play_activations(agents: Sequence[PolicyAgent], order: Sequence[int], deps: Sequence[Sequence[int]],
                     rngs: Sequence[Any], apply: Apply = _apply, observe: Observe = _observe) -> list[Any]:
    """Play one round's activations; each agent observes at its turn and applies its decision at once.

    Rule policies decide on the spot; when any policy is asynchronous (an LLM), every activation whose
    dependencies are done runs at once on the process's shared event loop, and the outcome is the
    one-at-a-time round's.

    Args:
        agents: The game's agents, indexed as ``order`` names them.
        order: The activations' agents, in order.
        deps: Per activation, those it waits for (``dependencies``).
        rngs: ``rngs[k]``, the random source of activation ``k``'s decision (drawn beforehand in activation
            order, so a rule run is the same however the calls overlap).
        apply: ``apply(agent, decision, k)`` applies one decision (default: ``pending`` then ``advance``).
        observe: ``observe(agent, k)`` builds activation ``k``'s observation (default: the agent's
            ``observe()``; a game whose prompt names the turn passes its own).

    Returns:
        The decisions, in activation order.
    """
    if not any(agents[i].policy.is_async for i in set(order)):
        decisions = []
        for k, i in enumerate(order):
            agent = agents[i]
            decisions.append(agent.policy.decide(observe(agent, k), rngs[k]))
            apply(agent, decisions[-1], k)
        return decisions
    from llm_mesa.llm.runtime import run_sync

    return run_sync(_concurrent(agents, order, deps, rngs, apply, observe))


async def _concurrent(agents: Sequence[PolicyAgent], order: Sequence[int], deps: Sequence[Sequence[int]],
                      rngs: Sequence[Any], apply: Apply, observe: Observe) -> list[Any]:
    from llm_mesa.decisions import Turn, as_turn

    done = [asyncio.Event() for _ in order]
    decisions: list[Any] = [None] * len(order)

    async def activation(k: int) -> None:
        for d in deps[k]:
            await done[d].wait()
        agent = agents[order[k]]
        observation = observe(agent, k)
        policy = agent.policy
        decisions[k] = await as_turn(Turn(agent, k), policy.adecide(observation, rngs[k])) if policy.is_async \
            else policy.decide(observation, rngs[k])
        apply(agent, decisions[k], k)
        done[k].set()

    tasks = [asyncio.ensure_future(activation(k)) for k in range(len(order))]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        raise
    return decisions


__all__ = ["ACTIVATION_STREAM", "TURN_RULES", "UPDATE", "UPDATE_SCHEMES", "turn_order", "activation_stream",
           "dependencies", "depth", "play_activations", "turn_key"]
