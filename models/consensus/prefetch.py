"""Round 1 of a plain LLM game sent before the Mesa model exists, so its latency covers building it.

A short LLM game as a process pays, before its first call, for importing Mesa (with pandas,
pyarrow and scipy: ~0.8 s on 2 cores) and for building the model; a 5-round game at 1 s a
call cannot then stay within 1.15x of its 5 s bound. Round 1 needs none of it: every agent's
first observation follows from the game's set-up (graph, preferences, initial colours, key),
which ``setup.game_setup`` draws from the seed alone, with no Mesa in it. So ``start`` draws
the set-up, builds the round-1 observations and puts their LLM calls in flight on the
process's loop; the model is built meanwhile, and its first round takes the answers
(``ConsensusModel.adopt_first_round``) only where every agent's own observation equals the
one sent (else the calls are dropped and made again: never a wrong answer, at worst a slower
round). The pre-flight check overlaps as it does for any first call. Only the command line's
game is sent early (``cli.build_model``), as it is played at once.

Only the plain game is sent early: every agent on the one LLM policy of this package,
synchronous rounds, a drawn topology and preferences. Anything else is played as before.
"""

from __future__ import annotations

import concurrent.futures
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .observation import ConsensusObservation


@dataclass
class FirstRound:
    """Round 1's observations, in node order, and the calls answering them (a future of their decisions)."""

    observations: list[ConsensusObservation]
    decisions: concurrent.futures.Future


def start(parameters: Mapping[str, Any], policy: Any, seed: int | None, *, max_game_tokens: int | None = None,
          max_game_cost: float | None = None) -> FirstRound | None:
    """Put round 1's calls in flight for a plain LLM game (None: any other game, played as before).

    The command line's game only (``cli.build_model``): there the game is played at once. A page
    or a script that builds a model may never step it, and must not have paid for its round 1.
    """
    from .llm_policy import LLMConsensusPolicy

    if type(policy) is not LLMConsensusPolicy or seed is None or not isinstance(seed, int) or seed < 0:
        return None
    if parameters.get("update", "synchronous") != "synchronous" or parameters.get("assign") \
            or "graph" in parameters or parameters.get("preferences") == "explicit" \
            or not isinstance(parameters.get("initial", "preference"), str):
        return None
    from llm_mesa.llm.runtime import gather, get_loop

    from .setup import game_setup

    try:
        setup = game_setup(random.Random(seed), seed, seed, parameters=dict(parameters), policy=policy,
                           max_game_tokens=max_game_tokens, max_game_cost=max_game_cost)
    except Exception:  # noqa: BLE001 - whatever is wrong with the game, the model says it, in its own words
        return None
    observations = first_observations(setup)
    rng = random.Random(0)  # the LLM policy draws nothing from it
    coroutine = gather(*(policy.adecide(obs, rng) for obs in observations))
    import asyncio

    return FirstRound(observations, asyncio.run_coroutine_threadsafe(coroutine, get_loop()))


def first_observations(setup) -> list[ConsensusObservation]:
    """What each agent sees in round 1 (``ConsensusAgent.observe`` before any round was played)."""
    p, graph = setup.parameters, setup.graph
    n = graph.number_of_nodes()
    observations = []
    for v in range(n):
        neighbours = tuple(sorted(graph.neighbors(v)))
        obs = ConsensusObservation(
            agent_id=v, round=1, preference=setup.preferences[v], colour=setup.colours[v],
            neighbour_ids=neighbours, neighbour_colours=tuple(setup.colours[u] for u in neighbours),
            communication=p["communication"], direct_messages=p["direct_messages"],
            message_replaces_move=p["message_replaces_move"], label=p["label"], rounds_left=p["max_rounds"],
            max_rounds=p["max_rounds"], n_players=n, payoff_preferred=p["payoff_preferred"],
            payoff_other=p["payoff_other"], message_cost=p["message_cost"], prompt=p["prompt"],
            game_key=setup.game_key, history_rounds=p["history"], update=p["update"], activation=None)
        obs.diary, obs.inbox, obs.history = "", [], []
        observations.append(obs)
    return observations


__all__ = ["FirstRound", "first_observations", "start"]
