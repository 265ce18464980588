"""``llm-mesa local``: start llama-server(s) with Gemma 3 270M, print where, stop on a signal.

``--servers K`` starts K servers of the one model and prints their base URLs
comma-separated, as ``--base-url`` takes them. Ctrl-C, SIGTERM and SIGHUP (a closed
terminal) stop them all; the servers also die with this process if it is killed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from contextlib import ExitStack
from pathlib import Path

from llm_mesa.local_server import DEFAULT_N_CTX, DEFAULT_STARTUP_TIMEOUT, LocalModelServer, LocalServerError, ensure_model_file, llama_server_binary


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=0,
                        help="loopback port to listen on (default 0: a free one; with --servers K, the first of K)")
    parser.add_argument("--servers", type=_server_count, default="auto",
                        help="start K servers of the same model; their base URLs print comma-separated, as --base-url "
                             f"takes them (default auto: one server per core, at most {MAX_AUTO_SERVERS}, the cores shared out)")
    parser.add_argument("--parallel", type=int, default=4,
                        help="slots per server decoding together (default %(default)s: batched decoding pays off even on 2 CPU cores)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="where the model file goes (default $LLM_MESA_CACHE or ~/.cache/llm-mesa)")
    parser.add_argument("--n-ctx", type=int, default=DEFAULT_N_CTX, help="context window in tokens, per slot")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads per server (default: all cores, shared out among --servers)")
    parser.add_argument("--startup-timeout", type=float, default=DEFAULT_STARTUP_TIMEOUT,
                        help="seconds to wait for the server to answer")
    parser.add_argument("--log", type=Path, default=None,
                        help="copy the server's output here and keep it (default: none is written)")
    parser.add_argument("--prepare-only", action="store_true",
                        help="assemble the model file into the cache, check the server binary and exit (e.g. in a CI install step)")


#: On a CPU, servers scale better than threads for a small model: one llama-server decodes
#: its slots' tokens in turn, and here it ran as fast with one thread as with two, while two
#: single-threaded servers answered 1.2x faster than one with both cores
#: (benchmarks/bench_local_model.py). The cap bounds memory (~0.5 GB a server) and the URL list.
MAX_AUTO_SERVERS = 4


def auto_servers() -> int:
    """How many servers ``llm-mesa local`` starts by default on this machine."""
    return max(1, min(os.cpu_count() or 1, MAX_AUTO_SERVERS))


def _server_count(text: str) -> int:
    if text == "auto":
        return auto_servers()
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of servers; give K >= 1 or auto") from None


def _say(*parts: str, err: bool = False) -> None:
    """Print, unless the terminal is gone (after SIGHUP a write can fail: the stop must go on)."""
    with contextlib.suppress(OSError, ValueError):
        print(*parts, file=sys.stderr if err else sys.stdout, flush=True)


def run(args: argparse.Namespace) -> int:
    """Start the server(s), print where they are, serve until Ctrl-C, SIGTERM or SIGHUP."""
    if args.prepare_only:
        path = ensure_model_file(args.cache_dir)
        print(f"model file: {path}")
        print(f"server: {llama_server_binary()}")
        return 0
    if args.servers < 1:
        raise LocalServerError(f"--servers must be at least 1, not {args.servers}")
    threads = args.threads if args.threads is not None else max(1, (os.cpu_count() or 1) // args.servers)
    servers = [LocalModelServer(args.port + i if args.port else 0, cache_dir=args.cache_dir, n_ctx=args.n_ctx,
                                n_threads=threads, startup_timeout=args.startup_timeout, parallel=args.parallel,
                                log_path=(args.log.with_name(f"{args.log.stem}-{i}{args.log.suffix}")
                                          if args.log and args.servers > 1 else args.log))
               for i in range(args.servers)]
    stop_requested = threading.Event()
    signals = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, lambda *_: stop_requested.set()) for sig in signals}
    try:
        with ExitStack() as stack:
            for server in servers:
                stack.enter_context(server)
                if stop_requested.is_set():
                    return 0
            urls = ",".join(server.base_url for server in servers)
            _say(f"base_url: {urls}")
            _say(f"model: {servers[0].model}")
            # one-line JSON: the model otherwise pads answers with whitespace up to their token limit
            _say(f"use with: --base-url {urls} --model {servers[0].model} --compact-json")
            pids = ", ".join(str(server.process.pid) for server in servers if server.process)
            _say(f"(llama-server pid {pids}; Ctrl-C stops it)")
            while not stop_requested.wait(0.5):
                for server in servers:
                    if not server.running:
                        code = server.process.returncode if server.process else None
                        _say(f"llm-mesa local: error: the server on {server.base_url} stopped by itself "
                             f"(status {code}): {server._last_line()}", err=True)
                        return 1
            _say("stopping the local model server", err=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
