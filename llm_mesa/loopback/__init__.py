"""The loopback endpoint: an OpenAI-compatible stand-in server for tests and dry runs.

``LoopbackServer`` answers chat and raw completions with behaviours named by the
request's model (fixed/echo/scripted text, and those each installed game registers),
with seeded latency and fault injection and counters a test can read. It is
not a language model, and every answer says so in its ``system_fingerprint``.

Documented limits: a request body of at most ``MAX_BODY_BYTES`` (413 above),
arriving within ``DEFAULT_READ_TIMEOUT_S`` (408 after; both are options), nested
at most ``MAX_JSON_DEPTH`` deep (400), and injected delays of at most
``MAX_DELAY_S`` each (400).
"""

from llm_mesa.loopback.behaviours import (
    Behaviour,
    PromptNotUnderstood,
    PromptView,
    behaviours_of,
    count_tokens,
    listed_behaviours,
    register_behaviour,
)
from llm_mesa.loopback.faults import FAULT_KINDS, MAX_DELAY_S, FaultSettings, LoopbackError
from llm_mesa.loopback.protocol import MAX_JSON_DEPTH
from llm_mesa.loopback.server import DEFAULT_READ_TIMEOUT_S, MAX_BODY_BYTES, SYSTEM_FINGERPRINT, LoopbackServer

__all__ = [
    "Behaviour", "DEFAULT_READ_TIMEOUT_S", "FAULT_KINDS", "PromptNotUnderstood", "PromptView", "FaultSettings", "LoopbackError", "LoopbackServer",
    "MAX_BODY_BYTES", "MAX_DELAY_S", "MAX_JSON_DEPTH", "SYSTEM_FINGERPRINT",
    "behaviours_of", "count_tokens", "listed_behaviours", "register_behaviour",
]
