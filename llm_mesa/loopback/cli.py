"""Start the loopback endpoint: an OpenAI-compatible stand-in for tests and dry runs.

It is not a language model. The request's model name picks a behaviour:
``fixed?text=hi``, ``scripted``, ``echo``, and those the installed games register
(``rule:majority-inertia?inertia=0.2``...; the server lists them all when it starts);
fault settings may ride along in the name (``echo?p429=0.1&latency=0.05``) or be
set server-wide with the flags below.

Example:
  llm-mesa serve --port 8765 --latency 0.05 --p429 0.02
  llm-mesa GAME --policy llm --base-url http://127.0.0.1:8765/v1 --model rule:majority-inertia
"""

from __future__ import annotations

import argparse
import sys

from llm_mesa.loopback.behaviours import listed_behaviours
from llm_mesa.loopback.faults import FAULT_KINDS, FaultSettings
from llm_mesa.loopback.server import DEFAULT_READ_TIMEOUT_S, MAX_BODY_BYTES, SYSTEM_FINGERPRINT, LoopbackServer

DEFAULT_PORT = 8765

_FAULT_FLAGS: tuple[tuple[str, str], ...] = (
    ("latency", "seconds before each answer"),
    ("jitter", "extra uniform delay in [0, JITTER) seconds"),
    ("p429", "probability of HTTP 429 with Retry-After"),
    ("retry_after", "seconds announced in Retry-After"),
    ("p500", "probability of HTTP 500"),
    ("ptimeout", "probability of sleeping TIMEOUT_S before answering"),
    ("timeout_s", "how long a 'timeout' fault sleeps"),
    ("pmalformed", "probability of an answer that is not a valid answer"),
    ("pdrop", "probability of closing the connection without answering"),
    ("ptruncate", "probability of a cut answer with finish_reason 'length'"),
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default %(default)s)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help="port to bind; 0 picks a free one (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of answers and fault draws (default %(default)s)")
    defaults = FaultSettings()
    faults = parser.add_argument_group("server-wide latency and faults (a model name's own "
                                       "?key=value parameters override them)")
    for name, help_text in _FAULT_FLAGS:
        faults.add_argument("--" + name.replace("_", "-"), dest=name, type=float,
                            default=getattr(defaults, name),
                            help=f"{help_text} (default %(default)s)")
    faults.add_argument("--fail-first", dest="fail_first", type=int, default=0,
                        help="the first N requests of each distinct prompt fail with --fault")
    faults.add_argument("--fault", choices=FAULT_KINDS, default=defaults.fault,
                        help="fault kind of --fail-first (default %(default)s)")
    parser.add_argument("--script", metavar="FILE",
                        help="JSON list of answers for model 'scripted', or {model name: list}")
    limits = parser.add_argument_group("limits on what a client may hold")
    limits.add_argument("--max-body-bytes", type=int, default=MAX_BODY_BYTES, metavar="N",
                        help="largest request body; a larger one is refused with 413 (default %(default)s)")
    limits.add_argument("--read-timeout", type=float, default=DEFAULT_READ_TIMEOUT_S, metavar="SECONDS",
                        help="time a request body may take to arrive (else 408); also how long an idle "
                             "connection stays open (default %(default)s)")
    parser.add_argument("--reject-json-schema", action="store_true",
                        help="refuse response_format json_schema as llama-cpp-python does (HTTP 500)")
    parser.add_argument("--require-api-key", metavar="KEY",
                        help="answer 401 unless 'Authorization: Bearer KEY' is sent")


def run(args: argparse.Namespace) -> int:
    settings = {name: getattr(args, name) for name, _ in _FAULT_FLAGS}
    server = LoopbackServer(host=args.host, port=args.port, seed=args.seed, script=args.script,
                            reject_json_schema=args.reject_json_schema,
                            require_api_key=args.require_api_key,
                            max_body_bytes=args.max_body_bytes, read_timeout=args.read_timeout,
                            fail_first=args.fail_first, fault=args.fault, **settings)

    def announce(ready: LoopbackServer) -> None:
        print(f"loopback endpoint ({SYSTEM_FINGERPRINT}, a stand-in, not a language model) "
              f"serving at {ready.base_url}")
        print("behaviours (the request's model name):")
        for model, summary in listed_behaviours().items():
            print(f"  {model:24s} {summary}")
        print("add ?key=value parameters to a model name, e.g. fixed?text=hi&latency=0.1&p429=0.1")
        print("Ctrl-C stops it.", flush=True)

    try:
        server.serve_forever(on_ready=announce)
    except KeyboardInterrupt:
        print("loopback endpoint stopped", file=sys.stderr)
    return 0
