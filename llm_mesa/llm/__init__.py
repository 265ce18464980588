"""The LLM transport layer: endpoints, calls with retries, structured answers, usage, record/replay.

Every LLM policy goes through ``complete`` (one call) or ``ask`` (a structured
answer with one reminder retry), run on the process-wide loop of ``runtime``.
"""

from llm_mesa.llm.answers import Answer, ask, parse_json_answer
from llm_mesa.llm.client import LLMRequest, LLMResult, apreflight, complete, preflight
from llm_mesa.llm.dialects import negotiated_dialect
from llm_mesa.llm.endpoint import Endpoint, EndpointError, add_endpoint_arguments, endpoint_from_args
from llm_mesa.llm.runtime import gather, gather_sync, run_sync
from llm_mesa.llm.store import ReplayMiss, ResponseStore, StoreError
from llm_mesa.llm.usage import Usage

__all__ = [
    "Answer", "Endpoint", "EndpointError", "LLMRequest", "LLMResult", "ReplayMiss", "ResponseStore",
    "StoreError", "Usage", "add_endpoint_arguments", "apreflight", "ask", "complete", "endpoint_from_args",
    "gather", "gather_sync", "negotiated_dialect", "parse_json_answer", "preflight", "run_sync",
]
