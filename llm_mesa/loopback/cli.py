"""Start the loopback endpoint: an OpenAI-compatible stand-in for tests and dry runs.

It is not a language model. The request's model name picks a behaviour:
``fixed?text=hi``, ``scripted``, ``echo``, and those the installed games register
(``rule:majority-inertia?inertia=0.2``...; the server lists them all when it starts);
fault settings may ride along in the name (``echo?p429=0.1&latency=0.05``) or be
set server-wide with the flags below.

Example:
  llm-mesa serve --port 8765 --latency 0.05 --p429 0.02
  LOOPBACK_KEY=... llm-mesa serve --require-api-key-env LOOPBACK_KEY
  llm-mesa GAME --policy llm --base-url http://127.0.0.1:8765/v1 --model rule:majority-inertia
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from llm_mesa.loopback.behaviours import listed_behaviours
from llm_mesa.loopback.faults import FAULT_KINDS, FaultSettings, LoopbackError
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
    faults.add_argument("--capacity", type=int, default=0, metavar="K",
                        help="answer 429 (with --retry-after) above K calls in flight, as a full server does "
                             "(default 0: no limit)")
    faults.add_argument("--slowdown", type=float, default=0.0,
                        help="with --capacity: latency x (1 + SLOWDOWN x calls in flight / K), a loaded server "
                             "(default %(default)s)")
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
    keys = parser.add_argument_group("API key", "read from the environment or a file: a key on the command "
                                     "line is visible to every user in the process list")
    keys.add_argument("--require-api-key-env", metavar="NAME",
                      help="answer 401 unless 'Authorization: Bearer KEY' is sent, KEY being the value "
                           "of the environment variable NAME")
    keys.add_argument("--require-api-key-file", metavar="PATH",
                      help="the same, KEY being the one line of the file PATH")
    keys.add_argument("--require-api-key", metavar="KEY", help=argparse.SUPPRESS)  # refused: see _api_key


def _api_key(args: argparse.Namespace) -> str | None:
    """The key clients must send, from --require-api-key-env or --require-api-key-file (or None)."""
    if args.require_api_key is not None:
        raise LoopbackError("--require-api-key would show the key to every user in the process list; put it "
                            "in an environment variable and give --require-api-key-env NAME, or in a file "
                            "only you can read and give --require-api-key-file PATH")
    name, path = args.require_api_key_env, args.require_api_key_file
    if name is not None and path is not None:
        raise LoopbackError("give --require-api-key-env or --require-api-key-file, not both")
    if name is not None:
        key = os.environ.get(name, "").strip()
        if not key:
            raise LoopbackError(f"the environment variable {name} given to --require-api-key-env is unset "
                                "or empty; export the key in it")
        return key
    if path is not None:
        try:
            key = Path(path).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise LoopbackError(f"cannot read the API key file {path} ({reason}); check "
                                "--require-api-key-file") from None
        if not key or "\n" in key or "\r" in key:
            raise LoopbackError(f"the API key file {path} is empty or holds more than one line; "
                                "write the key alone on one line")
        return key
    return None


def run(args: argparse.Namespace) -> int:
    settings = {name: getattr(args, name) for name, _ in _FAULT_FLAGS}
    server = LoopbackServer(host=args.host, port=args.port, seed=args.seed, script=args.script,
                            reject_json_schema=args.reject_json_schema,
                            require_api_key=_api_key(args),
                            max_body_bytes=args.max_body_bytes, read_timeout=args.read_timeout,
                            fail_first=args.fail_first, fault=args.fault, capacity=args.capacity,
                            slowdown=args.slowdown, **settings)

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
