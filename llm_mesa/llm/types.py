"""What one LLM call is and what it gave: the request and result types of the LLM layer.

In a module of their own, so that the client (which makes calls), the store (which
records and replays them) and the usage ledgers (which count them) all read the same
types without importing one another.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import asdict, dataclass
from typing import Any

#: the key of the game a call is made for, where the core built the game and a round runner made the
#: call (``llm_mesa.decisions``). A call whose sample key names no game (no ``g=``, a game that keys its
#: own calls by agent and round alone) is recorded under it too, so two games of a sweep never share an
#: answer; a key that names its game is left as it is, and so are calls made outside a core game.
GAME_SCOPE: ContextVar[str | None] = ContextVar("llm_mesa_game_scope", default=None)


@dataclass(slots=True)
class LLMRequest:
    """One call: chat ``messages`` or a raw ``prompt``, and how to record it."""

    messages: list[dict[str, str]] | None = None
    prompt: str | None = None
    #: JSON schema of the answer (structured output), or None for free text
    schema: dict[str, Any] | None = None
    #: distinct per agent, round and try, e.g. "g=ab12|agent=3|round=7|try=0"
    sample_key: str = ""
    #: hash of the prompt template, so an edited template never replays stale answers
    template_hash: str = ""
    #: free text for the record (e.g. "decide", "speak")
    purpose: str = ""
    schema_name: str = "answer"

    def with_reminder(self, reminder: str, suffix: str = "|retry=1") -> LLMRequest:
        """The same request with ``reminder`` added (a user message, or appended to the prompt)."""
        messages = prompt = None
        if self.messages is not None:
            messages = [*self.messages, {"role": "user", "content": reminder}]
        if self.prompt is not None:
            prompt = self.prompt + ("" if self.prompt.endswith("\n") else "\n") + reminder
        return LLMRequest(messages=messages, prompt=prompt, schema=self.schema,
                          sample_key=self.sample_key + suffix, template_hash=self.template_hash,
                          purpose=self.purpose, schema_name=self.schema_name)


@dataclass(slots=True)
class LLMResult:
    """What a call gave: text and usage, or the kind of failure (``error``)."""

    text: str = ""
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: service time: from the call's place under the server's limit to its answer (retries included)
    latency_s: float = 0.0
    model: str | None = None
    system_fingerprint: str | None = None
    #: None, or one of ERROR_KINDS
    error: str | None = None
    error_message: str = ""
    attempts: int = 0
    replayed: bool = False
    dialect: str | None = None
    #: time spent waiting for a place under the server's concurrency limit (not in ``latency_s``)
    queue_s: float = 0.0
    #: prompt tokens the server served from its prompt cache (``prompt_tokens_details.cached_tokens``)
    cached_tokens: int = 0
    #: the base URL that answered (one of the endpoint's, when it has several)
    server: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_record(self) -> dict[str, Any]:
        record = asdict(self)
        del record["replayed"]
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any], replayed: bool = False) -> LLMResult:
        known = {k: v for k, v in record.items() if k in _RESULT_FIELDS}  # tolerate older/newer records
        return cls(**{**known, "replayed": replayed})


_RESULT_FIELDS = frozenset(LLMResult.__dataclass_fields__)

_TEXT_FIELDS = ("text", "error_message")
_OPTIONAL_TEXT = ("finish_reason", "model", "system_fingerprint", "error", "dialect", "server")
_COUNTS = ("prompt_tokens", "completion_tokens", "cached_tokens", "attempts")


def checked_record(record: Any) -> dict[str, Any]:
    """A decoded answer record whose fields have the types an ``LLMResult`` holds, or ``ValueError``."""
    if not isinstance(record, dict):
        raise ValueError("not an answer record")
    for name in _TEXT_FIELDS:
        if not isinstance(record.get(name, ""), str):
            raise ValueError(f"{name} is not a text")
    for name in _OPTIONAL_TEXT:
        if not isinstance(record.get(name), (str, type(None))):
            raise ValueError(f"{name} is not a text")
    for name in _COUNTS:
        value = record.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} is not a count")
    for name in ("latency_s", "queue_s"):
        if isinstance(record.get(name, 0.0), bool) or not isinstance(record.get(name, 0.0), (int, float)):
            raise ValueError(f"{name} is not a number")
    return record


__all__ = ["GAME_SCOPE", "LLMRequest", "LLMResult", "checked_record"]
