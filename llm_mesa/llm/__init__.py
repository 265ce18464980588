"""The LLM transport layer: endpoints, calls with retries, structured answers, usage, record/replay.

Every LLM policy goes through ``complete`` (one call) or ``ask`` (a structured
answer with one reminder retry), run on the process-wide loop of ``runtime``.
Imports are lazy: ``llm_mesa.llm.endpoint`` or ``recording`` load without openai,
which only the client needs.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Answer": "answers", "ask": "answers", "parse_json_answer": "answers",
    "LLMRequest": "types", "LLMResult": "types", "apreflight": "client", "complete": "client", "preflight": "client",
    "negotiated_dialect": "dialects",
    "Endpoint": "endpoint", "EndpointError": "endpoint", "add_endpoint_arguments": "endpoint",
    "endpoint_from_args": "endpoint",
    "gather": "runtime", "gather_sync": "runtime", "run_sync": "runtime",
    "ReplayMiss": "store", "ResponseStore": "store", "StoreError": "store",
    "Usage": "usage",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'llm_mesa.llm' has no attribute {name!r}")
    return getattr(importlib.import_module(f"llm_mesa.llm.{module}"), name)
