"""The loopback endpoint: an OpenAI-compatible stand-in server for tests and dry runs.

``LoopbackServer`` answers chat and raw completions with behaviours named by the
request's model (fixed/echo/scripted text, and those each installed game registers),
with seeded latency and fault injection and counters a test can read. It is
not a language model, and every answer says so in its ``system_fingerprint``.
"""

from llm_mesa.loopback.behaviours import count_tokens, listed_behaviours, register_behaviour
from llm_mesa.loopback.faults import FAULT_KINDS, FaultSettings, LoopbackError
from llm_mesa.loopback.server import SYSTEM_FINGERPRINT, LoopbackServer

__all__ = [
    "FAULT_KINDS", "FaultSettings", "LoopbackError", "LoopbackServer", "SYSTEM_FINGERPRINT",
    "count_tokens", "listed_behaviours", "register_behaviour",
]
