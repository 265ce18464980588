"""How to ask a server for JSON: the structured-output dialects and their negotiation.

Servers disagree: OpenAI and vLLM take ``response_format`` of type
``json_schema``; llama-cpp-python's server refuses that (HTTP 500, "Input should
be 'text' or 'json_object'") and takes ``{"type": "json_object", "schema": ...}``;
others take neither. In ``auto`` we try them in that order, switch at once when a
server names ``response_format`` in its refusal (a refusal is not a fault worth
retrying), and remember the dialect that worked per endpoint (base URL and
model) for the whole process. The prompt always describes the schema as well
("instructions"), so the last dialect still works.

No call goes out alone to find the dialect: the first round's calls are all
sent under the best one (``json_schema``) and each falls back on its own
refusal, so a server that takes ``json_schema`` (most do) answers round 1 in
one latency, not two. The price, on a server that refuses it, is one quick
refusal per call that went out before the first refusal came back (at most the
server's concurrency limit); calls sent after that start under the remembered
dialect. Concurrent refusals only ever move the remembered dialect forward.
A replayed answer sets the remembered dialect too (its stored row names the
dialect it was given under), so a replayed run's manifest says what was used.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llm_mesa.llm.endpoint import Endpoint

#: the order ``auto`` tries
FALLBACK_ORDER = ("json_schema", "json_object", "instructions")
#: dialect recorded for a request without a schema
PLAIN_TEXT = "text"

_negotiated: dict[tuple[str, str], str] = {}


def _key(endpoint: Endpoint) -> tuple[str, str]:
    return (endpoint.base_url, endpoint.model)


def negotiated_dialect(endpoint: Endpoint) -> str | None:
    """The dialect in use for schema requests (forced, or found by ``auto``; None before the first call)."""
    if endpoint.prompt_mode == "completion":
        return "instructions"
    if endpoint.dialect != "auto":
        return endpoint.dialect
    return _negotiated.get(_key(endpoint))


def starting_dialect(endpoint: Endpoint, has_schema: bool) -> str:
    """The dialect to try first for a request."""
    if not has_schema:
        return PLAIN_TEXT
    return negotiated_dialect(endpoint) or FALLBACK_ORDER[0]


def next_dialect(endpoint: Endpoint, refused: str) -> str | None:
    """After ``refused`` was rejected: the next one to try (None when forced or exhausted)."""
    if endpoint.dialect != "auto" or refused not in FALLBACK_ORDER[:-1]:
        return None
    following = FALLBACK_ORDER[FALLBACK_ORDER.index(refused) + 1]
    known = _negotiated.get(_key(endpoint))
    if known in FALLBACK_ORDER and FALLBACK_ORDER.index(known) > FALLBACK_ORDER.index(following):
        following = known  # a concurrent call of the round was refused further along already
    _negotiated[_key(endpoint)] = following
    return following


def remember_success(endpoint: Endpoint, dialect: str | None) -> None:
    """Record that ``dialect`` worked for a schema request (cheap: a dict write only when it changes)."""
    if (dialect in FALLBACK_ORDER and endpoint.dialect == "auto" and endpoint.prompt_mode == "chat"
            and _negotiated.get(_key(endpoint)) != dialect):
        _negotiated[_key(endpoint)] = dialect


def forget_negotiations() -> None:
    """Drop every cached dialect (tests; a server restarted with other options)."""
    _negotiated.clear()


def response_format(dialect: str, schema: dict[str, Any] | None, name: str = "answer") -> dict[str, Any] | None:
    """The ``response_format`` body field for ``dialect`` (None: send none)."""
    if schema is None or dialect in (PLAIN_TEXT, "instructions"):
        return None
    if dialect == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}
    if dialect == "json_object":
        return {"type": "json_object", "schema": schema}
    raise ValueError(f"unknown dialect {dialect!r}")


#: ``--compact-json``: llama.cpp's JSON grammar allows a newline and up to 20 tabs or spaces
#: wherever JSON allows whitespace, and llama-server lets whitespace through before the JSON
#: begins; a small base model fills both (Gemma 3 270M: 10 of 16 answers ran into 48 tokens,
#: some on tabs alone; with runs of 1-3 newlines banned, still 2.3 tokens of whitespace before
#: the ``{``, from runs of 4 newlines or 5-8 tabs, against 0.4 with these). llama-server takes
#: string keys in ``logit_bias`` and bans every token of each string (false), so every key is
#: a run of newlines or of tabs alone; nothing holding a space is, since a key like "\n " would
#: ban the lone space token that Gemma writes before a digit ("node 3"). Other servers refuse
#: string keys.
COMPACT_JSON_LOGIT_BIAS: dict[str, bool] = dict.fromkeys(
    ["\n" * k for k in range(1, 17)] + ["\t" * k for k in range(1, 21)], False)


def ban_list_id(bias: dict[str, bool]) -> str:
    """A short name for a ban list: what a recording's key holds for ``--compact-json``, so
    answers drawn under another list are never replayed as this one's."""
    return hashlib.sha256(json.dumps(sorted(bias)).encode()).hexdigest()[:12]


COMPACT_JSON_ID = ban_list_id(COMPACT_JSON_LOGIT_BIAS)


def is_response_format_refusal(status: int, body_text: str) -> bool:
    """A server saying it does not understand our ``response_format`` (not a transient fault)."""
    if status not in (400, 422, 500, 501):
        return False
    text = body_text.lower()
    return "response_format" in text or "json_schema" in text or "'json_object'" in text


def endpoint_manifest(endpoint: Endpoint) -> dict[str, Any]:
    """What a run's manifest says of an endpoint: every field (the key's variable name, never the key),
    the sampling parameters sent, the dialect negotiated, each server's concurrency limit so far and
    what each server said of itself (``server_props``)."""
    from dataclasses import fields

    out: dict[str, Any] = {}
    for f in fields(endpoint):
        value = getattr(endpoint, f.name)
        out[f.name] = list(value) if isinstance(value, tuple) else value
    out["sampling_params"] = endpoint.sampling_params()
    out["negotiated_dialect"] = negotiated_dialect(endpoint)
    from llm_mesa.llm.limits import limits_in_use

    out["concurrency_limits"] = limits_in_use(endpoint.base_urls)  # per server: the limit in use, what auto did
    from llm_mesa.llm.server_props import servers_of

    out["servers"] = servers_of(endpoint.base_urls)  # what each server said of itself at the pre-flight (/props)
    return out
