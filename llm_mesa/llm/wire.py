"""What a server sends, and what it becomes here: the LLM layer's edge (see ``llm_mesa.boundary``).

A server's answer is read once, here, into validated values; nothing behind this
module reads a server's bytes, headers or JSON again:

* a body is read up to ``max_bytes`` (``Endpoint.max_answer_bytes``,
  ``--max-answer-bytes``) and no further (``read_body``): eight 50 MB answers held
  1.8 GB before;
* a completion (``parse_completion``) is JSON within the boundary's bounds (depth,
  valid UTF-8, finite numbers) of the OpenAI shape, its text a string, its usage
  whole numbers from 0 to ``MAX_TOKENS_PER_CALL`` (negative usage would undo a token
  budget, 1e999 would crash the count), its model names short strings; and every
  text in it has the endpoint's API key and anything shaped like a key or bearer
  token cut out (``redact``), since a server may echo a request's headers in a
  normal answer, which then lands in the transcript, the messages and the store;
* a model list (``parse_model_list``) is ``{"data": [{"id": ...}, ...]}``;
* a server's description of itself (``parse_server_props``, llama.cpp's ``GET /props``)
  keeps a few short texts and whole numbers, and the chat template's hash, not its text;
* ``Retry-After`` (``retry_after_s``) is a finite number of seconds >= 0 (the
  client caps it: ``client.RETRY_AFTER_CAP_S``).

What breaks a bound is ``Malformed``: the client counts the call as failed with
kind ``malformed`` and records it (the answer arrived; a rerun replays it).
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from dataclasses import dataclass
from typing import Any

from llm_mesa.boundary import Malformed, loads_json

#: default cap on one answer's body: a 128k-token completion is about 0.5 MB of JSON,
#: so 4 MiB is well above any real answer and still bounds 64 calls in flight to 256 MiB
MAX_ANSWER_BYTES = 4 * 1024 * 1024
#: usage above this many tokens in one call is absurd (an order of magnitude above the
#: largest context window offered) and makes the call a failed one
MAX_TOKENS_PER_CALL = 100_000_000
#: longest model name or system fingerprint kept from an answer (manifests list them)
MAX_NAME_CHARS = 200

_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")
_KEY_LIKE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{6,})")


def redact(text: str, key: str | None = None) -> str:
    """``text`` with the API key, and anything that looks like a bearer token or key, cut out."""
    if key and key in text:
        text = text.replace(key, "[redacted]")
    if "sk-" in text or "earer" in text or "EARER" in text:
        text = _KEY_LIKE.sub("[redacted]", _BEARER.sub(r"\1[redacted]", text))
    return text


@dataclass(frozen=True, slots=True)
class Completion:
    """A completion as it may be trusted: its text, why it ended, its usage and who served it."""

    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    model: str | None
    system_fingerprint: str | None


def _count(value: Any, name: str) -> int:
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS_PER_CALL:
        raise Malformed(f"usage {name} = {value!r} is not a count of tokens from 0 to {MAX_TOKENS_PER_CALL:,}")
    return value


def _name(value: Any, key: str | None) -> str | None:
    if not isinstance(value, str):
        return None
    return redact(value[:MAX_NAME_CHARS], key)


def parse_completion(content: bytes, chat: bool, key: str | None = None) -> Completion:
    """A completion body as a ``Completion``, or ``Malformed`` saying what is wrong with it."""
    data = loads_json(content)
    if not isinstance(data, dict):
        raise Malformed("the answer is not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise Malformed("the answer has no choices")
    choice = choices[0]
    if chat:
        message = choice.get("message")
        text = message.get("content") if isinstance(message, dict) else None
    else:
        text = choice.get("text")
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise Malformed(f"the answer's text is a JSON {type(text).__name__}, not a string")
    finish = choice.get("finish_reason")
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    prompt_tokens = _count(usage.get("prompt_tokens"), "prompt_tokens")
    completion_tokens = _count(usage.get("completion_tokens"), "completion_tokens")
    cached_tokens = _count(cached, "cached_tokens")
    if cached_tokens > prompt_tokens:
        raise Malformed(f"usage cached_tokens = {cached_tokens} is more than prompt_tokens = {prompt_tokens}")
    return Completion(redact(text, key), finish if isinstance(finish, str) else None, prompt_tokens,
                      completion_tokens, cached_tokens, _name(data.get("model"), key),
                      _name(data.get("system_fingerprint"), key))


def parse_model_list(content: bytes) -> list[str]:
    """The model ids of a ``/models`` answer, or ``Malformed``."""
    data = loads_json(content)
    listed = data.get("data") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        raise Malformed("it is not a model list ({\"data\": [...]})")
    return [m["id"][:MAX_NAME_CHARS] for m in listed if isinstance(m, dict) and isinstance(m.get("id"), str)]


def parse_server_props(content: bytes, key: str | None = None) -> dict[str, Any]:
    """What a server says of itself in a ``GET /props`` answer (llama.cpp's llama-server, the stand-in):
    its build, model file and alias, context size and slots, the SHA-256 of its chat template, and
    whether it is a stand-in; texts short and redacted, numbers whole. ``Malformed`` for anything that
    is not such an object, and for one that says none of it."""
    import hashlib

    data = loads_json(content)
    if not isinstance(data, dict):
        raise Malformed("it is not an object of server properties")
    settings = data.get("default_generation_settings")
    settings = settings if isinstance(settings, dict) else {}
    said: dict[str, Any] = {}
    for field, value in (("build", data.get("build_info")), ("model_path", data.get("model_path")),
                         ("model_alias", data.get("model_alias"))):
        if isinstance(value, str) and value.strip():
            said[field] = _name(value, key)
    for field, value in (("context", settings.get("n_ctx", data.get("n_ctx"))), ("slots", data.get("total_slots"))):
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_TOKENS_PER_CALL:
            said[field] = value
    template = data.get("chat_template")
    if isinstance(template, str) and template:
        said["chat_template_sha256"] = hashlib.sha256(template.encode()).hexdigest()
    if not said:
        raise Malformed("it names no build, model file, context or template")
    if data.get("stand_in") is True:
        said["stand_in"] = True
    return said


def retry_after_s(headers: Any) -> float | None:
    """Seconds a server asked us to wait (Retry-After seconds or HTTP date, or retry-after-ms), finite and >= 0."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value:
        seconds = _seconds(value, 1000)
        if seconds is not None:
            return seconds
    value = headers.get("retry-after")
    if not value:
        return None
    seconds = _seconds(value, 1)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return _finite(when.timestamp() - time.time())


def _seconds(text: str, per_second: float) -> float | None:
    try:
        return _finite(float(text) / per_second)
    except (TypeError, ValueError):
        return None


def _finite(seconds: float) -> float | None:
    if math.isnan(seconds):
        return None
    return max(0.0, seconds) if seconds != math.inf else math.inf


#: a duration as OpenAI-style rate-limit headers write it: "1s", "6m0s", "59.5s", "20ms", "1h2m" (or plain seconds)
_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?")


def rate_window(headers: Any, kind: str = "requests") -> tuple[int, float] | None:
    """``(remaining, seconds until reset)`` from ``x-ratelimit-remaining-KIND`` and ``x-ratelimit-reset-KIND``
    (KIND: requests or tokens), finite and >= 0; None when absent or unreadable."""
    if headers is None:
        return None
    remaining, reset = headers.get(f"x-ratelimit-remaining-{kind}"), headers.get(f"x-ratelimit-reset-{kind}")
    if remaining is None or reset is None or len(remaining) > 20 or len(reset) > 40:
        return None
    try:
        left = int(float(remaining))
    except (TypeError, ValueError, OverflowError):
        return None
    seconds = _seconds(reset.strip(), 1)
    if seconds is None:
        match = _DURATION.fullmatch(reset.strip())
        if match is None or not any(match.groups()):
            return None
        h, m, s, ms = (float(g) if g else 0.0 for g in match.groups())
        seconds = _finite(h * 3600 + m * 60 + s + ms / 1000)
    if seconds is None or left < 0:
        return None
    return left, seconds


class TooLarge(Malformed):
    """A body longer than the cap (reading stopped at the cap)."""


async def read_body(response: Any, max_bytes: int) -> bytes:
    """An aiohttp response's body, at most ``max_bytes`` of it; ``TooLarge`` past that."""
    declared = response.content_length
    if declared is not None and declared > max_bytes:
        raise TooLarge(f"an answer of {declared:,} bytes, above --max-answer-bytes {max_bytes:,}")
    chunks, size = [], 0
    async for chunk in response.content.iter_chunked(65536):
        size += len(chunk)
        if size > max_bytes:
            raise TooLarge(f"an answer of more than {max_bytes:,} bytes (--max-answer-bytes)")
        chunks.append(chunk)
    return b"".join(chunks)


def redirect_advice(base_url: str, path: str, headers: Any, key: str | None = None) -> str:
    """What a redirect answer means for ``--base-url``: where it points, and that it is not followed."""
    location = redact(str((headers or {}).get("location") or "")[:300], key)
    if not location:
        return "a redirect without a Location; llm-mesa follows no redirect: check --base-url"
    suggestion = location[: -len(path)] if location.endswith(path) else None
    hint = f"pass --base-url {suggestion} if that server is meant" if suggestion else "check --base-url"
    return f"redirected to {location}; llm-mesa follows no redirect (it would send the prompt there): {hint}"

__all__ = ["redirect_advice", "MAX_ANSWER_BYTES", "MAX_TOKENS_PER_CALL", "Completion", "Malformed", "TooLarge", "parse_completion",
           "parse_model_list", "rate_window", "read_body", "redact", "retry_after_s"]
