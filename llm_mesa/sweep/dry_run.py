"""What a sweep would cost, before a cent is spent: ``llm-mesa sweep ... --dry-run``.

Nothing here contacts an endpoint. Each game says, from its own parameters and
prompt templates, how many LLM calls one game makes at most and how long a
prompt is (``LlmSupport.estimate``); this module multiplies out the grid, prices the
tokens and times the sweep at the latency and concurrency the user states:
``time = max(rounds x latency x games / games in flight, calls x latency / concurrency)``.
Tokens are counted as characters / 4, the usual figure for English under BPE
tokenizers; a game that stops early (e.g. once its agents agree) costs less than the bound.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llm_mesa import declared
from llm_mesa.games import Game
from llm_mesa.llm.endpoint import shared_concurrency
from llm_mesa.llm.limits import AUTO_START

CHARS_PER_TOKEN = 4


def approx_tokens(text: str) -> int:
    """Tokens of ``text`` at most, as a tokenizer splits it: about four characters a token in prose, but a word or a
    mark a token at the least where the text is short words, numbers and lists ("C1, C7, C12": one each), where the
    four-character reading undercounts (a name list read 30 tokens for 32)."""
    pieces = len(re.findall(r"\w+|[^\w\s]", text))
    return max(1, round(len(text) / CHARS_PER_TOKEN), pieces)


@dataclass
class SweepEstimate:
    games: int
    llm_games: int
    calls: int
    rounds: int  # summed over LLM games: the rounds one after another
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    time_s: float | None
    bounded: bool  # True when games may stop early, so the figures are upper bounds
    #: LLM games whose game gives no estimate (``LlmSupport.estimate`` is None): not in the figures
    unknown_games: int = 0


def estimate_sweep(game: Game, conditions: Mapping[str, Mapping[str, Any]], seeds_of: Mapping[str, Sequence[int]],
                   plan: Mapping[str, tuple[str, Any]], *, latency_s: float = 1.0, games_in_flight: int = 1,
                   price: tuple[float, float] | None = None) -> SweepEstimate:
    """The grid's LLM calls, tokens, cost and time (``plan``: label -> (spec, endpoint or None)).

    Work is linear in the grid's description (conditions x policies), not in its
    games: each condition's estimate is multiplied by its number of seeds.
    """
    games = sum(len(seeds_of[c]) for c in conditions) * len(plan)
    llm_games = calls = rounds = prompt = completion = unknown = 0
    bounded = False
    concurrency = None
    for _, endpoint in plan.values():
        if endpoint is None:
            continue
        concurrency = shared_concurrency([endpoint.concurrency] + ([] if concurrency is None else [concurrency]))
        if price is None and endpoint.price is not None:
            price = endpoint.price
        for name, parameters in conditions.items():
            k = len(seeds_of[name])
            llm_games += k
            one = declared.estimate(game, parameters, getattr(endpoint, "endpoints", (endpoint,))[0])
            if one is None:
                unknown += k
                continue
            calls += k * one.calls
            rounds += k * one.rounds
            prompt += k * one.calls * one.prompt_tokens_per_call
            completion += k * one.calls * one.completion_tokens_per_call
            bounded = bounded or one.may_stop_early
    cost = None if price is None else (prompt * price[0] + completion * price[1]) / 1e6
    time_s = None
    if llm_games > unknown:
        # auto: bounded by the games in flight alone, as if it grew to what they ask (the server's limit is unknown)
        time_s = max(rounds * latency_s / max(1, min(games_in_flight, llm_games)),
                     0.0 if concurrency == "auto" else calls * latency_s / max(1, concurrency or 1))
    return SweepEstimate(games, llm_games, calls, rounds, prompt, completion, cost, time_s, bounded, unknown)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def format_estimate(estimate: SweepEstimate, *, latency_s: float, games_in_flight: int,
                    concurrency: int | str | None, game_name: str = "") -> str:
    bound = "at most " if estimate.bounded else ""
    lines = [f"games: {estimate.games:,}"]
    if not estimate.llm_games:
        lines.append("LLM calls: 0 (rule policies only; nothing is sent anywhere)")
        return "\n".join(lines)
    lines.append(f"LLM games: {estimate.llm_games:,}")
    if estimate.unknown_games == estimate.llm_games:
        lines.append(f"calls, tokens, cost and time: unknown (the {game_name} game gives no estimate of its LLM use; "
                     "LlmSupport(estimate=...))")
        return "\n".join(lines)
    if estimate.unknown_games:
        lines.append(f"note: {estimate.unknown_games:,} LLM games have no estimate and are not counted below")
    lines += [
        f"calls: {bound}{estimate.calls:,}" + (" (a game may stop early)" if estimate.bounded else ""),
        f"prompt tokens: {bound}{estimate.prompt_tokens:,}",
        f"completion tokens: {bound}{estimate.completion_tokens:,}",
        "cost: " + ("unknown; give --price PROMPT,COMPLETION (per 1M tokens)" if estimate.cost is None
                    else f"{bound}{estimate.cost:,.2f} (at the given price per 1M tokens)"),
        f"time: about {_duration(estimate.time_s)} at {latency_s:g} s a call, {games_in_flight} "
        f"game{'s' if games_in_flight != 1 else ''} in flight, "
        f"concurrency {concurrency}" + (f" (starts at {AUTO_START} and grows to what the server takes: a lower bound)"
                                        if concurrency == "auto" else ""),
    ]
    return "\n".join(lines)


__all__ = ["SweepEstimate", "approx_tokens", "estimate_sweep", "format_estimate"]
