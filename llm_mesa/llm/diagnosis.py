"""Why a game's LLM decisions failed, in words that name the cause and the fix.

"8 of 8 decisions failed" says what happened, not what to do. A ledger knows why
each call failed (``Usage.failures`` by kind, ``Usage.outcomes`` for answers that
arrived but decided nothing); ``diagnose`` turns the commonest cause into the line
a user can act on: a refused key names the variable it was read from and
``--api-key-env``, a redirect names ``--base-url``, answers cut off name the token
limit.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from llm_mesa.llm.usage import Usage

#: failure kind (a call's ``LLMResult.error``, or a decision's outcome) -> its cause and fix
CAUSES: dict[str, str] = {
    "auth": "the server refused the API key read from the environment variable {env} (HTTP 401/403); put a valid "
            "key there, or name the variable that holds one with --api-key-env",
    "not_found": "the server does not know the model or the route (HTTP 404); check --model and --base-url "
                 "(it usually ends in /v1)",
    "redirect": "the server redirects its completions route, and llm-mesa follows no redirect; pass the URL it "
                "points to as --base-url if that server is meant",
    "connection": "the server could not be reached (connections refused or dropped); check that it is up and "
                  "--base-url",
    "timeout": "the server did not answer within --timeout; give a larger --timeout, or a lower --concurrency",
    "rate_limit": "the server kept rate-limiting (HTTP 429) through every retry; lower --concurrency or raise "
                  "--max-attempts",
    "server": "the server kept failing (HTTP 5xx) through every retry; see the server's log",
    "malformed": "the server's answers were malformed (not an OpenAI completion, absurd usage, text that is not "
                 "UTF-8, or larger than --max-answer-bytes); see the server's log",
    "bad_request": "the server refused the requests (HTTP 4xx); check --extra-body, --dialect and the sampling options",
    "truncated": "the answers were cut off by the token limit; raise --max-tokens-per-call",
    "parse_failure": "the answers could not be read as decisions, even after a reminder; try another --model or "
                     "--dialect",
}


def _counts(usages: Iterable[Usage]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for usage in usages:
        for kind, n in usage.failures.items():
            counts[kind] = counts.get(kind, 0) + n
        for outcome in ("truncated", "parse_failure"):
            counts[outcome] = counts.get(outcome, 0) + int(usage.outcomes.get(outcome) or 0)
    return {kind: n for kind, n in counts.items() if n and kind in CAUSES}


def commonest_failure(usages: Usage | Iterable[Usage] | None) -> str | None:
    """The kind (a key of ``CAUSES``) of the ledgers' commonest failure, or None when nothing failed: a game's
    row keeps it as ``failure_cause``, so that a sweep can tell one cause from many (its circuit breaker)."""
    if usages is None:
        return None
    counts = _counts([usages] if isinstance(usages, Usage) else list(usages))
    return max(counts.items(), key=lambda item: item[1])[0] if counts else None


def diagnose(usage: Usage | None, endpoints: Iterable[Any] = ()) -> str | None:
    """The commonest cause of the ledger's failures and its fix, or None when nothing failed."""
    if usage is None:
        return None
    counts = _counts([usage])
    if not counts:
        return None
    kind, count = max(counts.items(), key=lambda item: item[1])
    env = ", ".join(sorted({getattr(e, "api_key_env", "") for e in endpoints} - {""})) or "named by --api-key-env"
    every = "every call" if kind in usage.failures and count == usage.calls else f"{count} calls"
    if kind in ("truncated", "parse_failure"):
        every = f"{count} answers"
    return f"{every}: {CAUSES[kind].format(env=env)}"


__all__ = ["CAUSES", "commonest_failure", "diagnose"]
