"""The key of a recorded LLM call: what determines its answer, hashed.

The key is a SHA-256 over canonical JSON of what determines an answer: model,
sampling parameters, requested dialect, prompt mode, prompt template hash,
messages or prompt, and the sample key (agent, round, try), so identical prompts
of different agents still get their own samples and an edited template never
replays stale answers. API keys are never part of a request here. A row holds
the key as its 32 bytes (older rows: 64 hex digits).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from llm_mesa.llm.dialects import COMPACT_JSON_ID
from llm_mesa.llm.types import GAME_SCOPE, LLMRequest

if TYPE_CHECKING:
    from llm_mesa.llm.endpoint import Endpoint


def request_identity(endpoint: Endpoint, request: LLMRequest) -> dict[str, Any]:
    """What determines an answer (and nothing secret): the hashed part of a request."""
    return {
        "model": endpoint.model,
        "sampling": endpoint.sampling_params(),
        "dialect": endpoint.dialect if request.schema is not None else "text",
        "prompt_mode": endpoint.prompt_mode,
        "template_hash": request.template_hash,
        "messages": request.messages,
        "prompt": request.prompt,
        "schema": request.schema,
        "sample_key": request.sample_key,
        # only where it can be sent (with a schema); absent when off, so older keys hold; which
        # whitespace is banned, when on
        **({"compact_json": COMPACT_JSON_ID} if endpoint.compact_json and request.schema is not None else {}),
        **({"game_scope": scope} if (scope := GAME_SCOPE.get()) and "g=" not in request.sample_key else {}),
    }


def request_key(identity: dict[str, Any]) -> str:
    """The key of a call: SHA-256 (64 hex digits) of its identity as canonical JSON."""
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def stored_key(key: str) -> bytes | str:
    """A key as a row holds it: its 32 bytes (a hex key of another shape, as it is)."""
    try:
        return bytes.fromhex(key) if len(key) == 64 else key
    except ValueError:
        return key


def key_text(stored: bytes | str) -> str:
    """A row's key as the hex digits ``request_key`` gives (rows before BLOB keys hold them as text)."""
    return stored.hex() if isinstance(stored, bytes) else stored


__all__ = ["key_text", "request_identity", "request_key", "stored_key"]
