"""The loopback endpoint holds up against hostile or broken clients, over real sockets.

Deeply nested JSON is a 400, not a 500; a body over the cap is a 413 before it is
read; a client that sends headers and then stalls or trickles its body is cut off
(408) after the read timeout, and one that never finishes its headers is
disconnected; injected delays are capped; ``serve`` refuses an impossible port and
never takes the API key on its command line.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llm_mesa import cli
from llm_mesa.loopback import LoopbackServer
from llm_mesa.loopback.faults import MAX_DELAY_S
from llm_mesa.loopback.protocol import MAX_JSON_DEPTH
from llm_mesa.loopback.server import DEFAULT_READ_TIMEOUT_S, MAX_BODY_BYTES

CHAT = "/v1/chat/completions"


def post(server: LoopbackServer, body: bytes, path: str = CHAT, timeout: float = 10.0,
         headers: dict[str, str] | None = None) -> tuple[int, dict]:
    """POST raw bytes; (status, parsed JSON error or answer)."""
    connection = http.client.HTTPConnection(server.host, server.port, timeout=timeout)
    try:
        connection.request("POST", path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()


def chat_body(model: str = "echo", **extra) -> dict:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], **extra}


def raw_exchange(server: LoopbackServer, head: bytes, body_pieces=(), pause: float = 0.0,
                 wait: float = 10.0) -> tuple[bytes, float]:
    """Send ``head``, then each body piece after ``pause`` seconds; read until the server
    closes the connection (or ``wait`` seconds pass). Returns what came back and when it ended."""
    start = time.monotonic()
    received = b""
    with socket.create_connection((server.host, server.port), timeout=wait) as sock:
        sock.sendall(head)
        for piece in body_pieces:
            time.sleep(pause)
            try:
                sock.sendall(piece)
            except OSError:  # the server has hung up on us: good
                break
        sock.settimeout(max(wait - (time.monotonic() - start), 0.1))
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except TimeoutError:
            pass
        except ConnectionResetError:
            pass
    return received, time.monotonic() - start


def head_for(server: LoopbackServer, length: int | None, path: str = CHAT) -> bytes:
    size = f"Content-Length: {length}\r\n" if length is not None else "Transfer-Encoding: chunked\r\n"
    return (f"POST {path} HTTP/1.1\r\nHost: {server.host}:{server.port}\r\n"
            f"Content-Type: application/json\r\n{size}\r\n").encode()


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(seed=1) as running:
        yield running


# ------------------------------------------------------------ nested JSON


@pytest.mark.parametrize("path", [CHAT, "/v1/completions", "/v1/control/script"])
def test_deeply_nested_json_is_a_400_not_a_500(server, path):
    deep = b'{"model": "echo", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    status, answer = post(server, deep, path)
    assert status == 400, answer
    assert "nested" in answer["error"]["message"]


def test_nesting_just_over_the_documented_depth_is_refused_and_just_under_is_served(server):
    def nested(depth: int) -> bytes:  # the body object is level 1, each list one more
        return json.dumps(chat_body(seed=None, user=None)).replace(
            '"user": null', '"user": ' + "[" * (depth - 1) + "]" * (depth - 1)).encode()

    status, answer = post(server, nested(MAX_JSON_DEPTH + 1))
    assert status == 400 and str(MAX_JSON_DEPTH) in answer["error"]["message"]
    status, answer = post(server, nested(MAX_JSON_DEPTH))
    assert status == 200, answer


def test_a_deeply_nested_script_file_is_one_clear_error(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="nested deeper than"):
        LoopbackServer(script=deep)


# ------------------------------------------------------------ body size


def test_a_body_over_the_cap_is_a_413(server):
    assert MAX_BODY_BYTES == 1024 * 1024
    padding = "x" * (MAX_BODY_BYTES + 1)
    status, answer = post(server, json.dumps(chat_body(user=padding)).encode())
    assert status == 413
    assert str(MAX_BODY_BYTES) in answer["error"]["message"]
    status, _ = post(server, json.dumps(chat_body(user="x" * (MAX_BODY_BYTES - 1000))).encode())
    assert status == 200


def test_a_huge_declared_body_is_refused_before_it_is_sent(server):
    """The server answers 413 on the headers alone; it does not wait for 1 GB."""
    reply, took = raw_exchange(server, head_for(server, 1024 ** 3) + b'{"model": "echo"', wait=10)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert took < 5


def test_the_body_cap_is_an_option_and_holds_for_chunked_bodies():
    with LoopbackServer(max_body_bytes=2000) as small:
        status, _ = post(small, json.dumps(chat_body(user="x" * 1500)).encode())
        assert status == 200
        status, answer = post(small, json.dumps(chat_body(user="x" * 2500)).encode())
        assert status == 413 and "2000" in answer["error"]["message"]
        piece = b"x" * 1000
        chunks = [f"{len(piece):x}\r\n".encode() + piece + b"\r\n"] * 5 + [b"0\r\n\r\n"]
        reply, _ = raw_exchange(small, head_for(small, None), chunks)
        assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    with pytest.raises(ValueError, match="max_body_bytes"):
        LoopbackServer(max_body_bytes=0)


# ------------------------------------------------------------ slow clients


def test_a_stalled_body_is_cut_off_after_the_read_timeout():
    assert DEFAULT_READ_TIMEOUT_S == 30
    with LoopbackServer(read_timeout=0.5) as server:
        reply, took = raw_exchange(server, head_for(server, 100) + b'{"model": ', wait=10)
        assert reply.startswith(b"HTTP/1.1 408"), reply[:200]
        assert b"read timeout" in reply and b"Connection: close" in reply
        assert took < 5  # answered and hung up, not held for the client's 10 s
        assert server.stats()["rejected"] == {"read_timeout": 1}


def test_a_trickling_body_is_cut_off_after_the_read_timeout_in_total():
    """One byte every 0.1 s never stalls for long, yet the body must arrive within the timeout."""
    with LoopbackServer(read_timeout=0.5) as server:
        reply, took = raw_exchange(server, head_for(server, 200), [b" "] * 60, pause=0.1, wait=10)
    assert reply.startswith(b"HTTP/1.1 408"), reply[:200]
    assert took < 5


def test_a_connection_that_never_finishes_its_headers_is_closed():
    with LoopbackServer(read_timeout=0.5) as server:
        reply, took = raw_exchange(server, f"POST {CHAT} HTTP/1.1\r\nHost: x\r\n".encode(), wait=10)
    assert reply == b"" and took < 5


def test_the_read_timeout_must_be_a_positive_number():
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="read_timeout"):
            LoopbackServer(read_timeout=bad)


# ------------------------------------------------------------ injected latency


@pytest.mark.parametrize("setting", ["latency", "jitter", "timeout_s"])
def test_injected_delays_above_the_cap_are_refused_with_a_400_naming_it(server, setting):
    assert MAX_DELAY_S == 60
    started = time.monotonic()
    status, answer = post(server, json.dumps(chat_body(f"echo?{setting}=1e9")).encode())
    assert status == 400 and time.monotonic() - started < 5
    message = answer["error"]["message"]
    assert setting in message and "60" in message
    status, _ = post(server, json.dumps(chat_body(f"echo?{setting}=0")).encode())
    assert status == 200
    with pytest.raises(ValueError, match="60"):
        LoopbackServer(**{setting: 61})


# ------------------------------------------------------------ the serve command


@pytest.mark.parametrize("port", ["99999", "65536", "-1"])
def test_serve_on_an_impossible_port_is_one_error_line_and_exit_2(capsys, port):
    status = cli.main(["serve", "--port", port])
    err = capsys.readouterr().err
    assert status == 2
    assert len(err.strip().splitlines()) == 1, err
    assert "--port" in err and "65535" in err and "Traceback" not in err


def test_serve_refuses_the_key_on_its_command_line(capsys):
    assert cli.main(["serve", "--port", "0", "--require-api-key", "sesame"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "--require-api-key-env" in err and "--require-api-key-file" in err and "sesame" not in err


def test_serve_refuses_a_missing_key(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("LLM_MESA_TEST_UNSET_KEY", raising=False)
    assert cli.main(["serve", "--port", "0", "--require-api-key-env", "LLM_MESA_TEST_UNSET_KEY"]) == 2
    assert "LLM_MESA_TEST_UNSET_KEY" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.write_text("\n")
    assert cli.main(["serve", "--port", "0", "--require-api-key-file", str(empty)]) == 2
    assert "empty" in capsys.readouterr().err
    assert cli.main(["serve", "--port", "0", "--require-api-key-file", str(tmp_path / "absent")]) == 2
    assert "absent" in capsys.readouterr().err


def test_serve_options_reach_the_server():
    import argparse

    from llm_mesa.loopback import cli as serve_cli

    parser = argparse.ArgumentParser()
    serve_cli.configure(parser)
    args = parser.parse_args([])
    assert (args.max_body_bytes, args.read_timeout) == (MAX_BODY_BYTES, DEFAULT_READ_TIMEOUT_S)
    args = parser.parse_args(["--max-body-bytes", "5000", "--read-timeout", "2.5"])
    assert (args.max_body_bytes, args.read_timeout) == (5000, 2.5)


@pytest.mark.parametrize("source", ["env", "file"])
def test_serve_reads_the_key_from_the_environment_or_a_file(tmp_path, source):
    key = "sesame-" + os.urandom(4).hex()
    env = {**os.environ}
    if source == "env":
        env["LLM_MESA_TEST_KEY"] = key
        option = ["--require-api-key-env", "LLM_MESA_TEST_KEY"]
    else:
        key_file = tmp_path / "key"
        key_file.write_text(key + "\n")
        option = ["--require-api-key-file", str(key_file)]
    process = subprocess.Popen([sys.executable, "-m", "llm_mesa.cli", "serve", "--port", "0", *option],
                               stdout=subprocess.PIPE, text=True, env=env)
    try:
        url = re.search(r"http://127\.0\.0\.1:(\d+)/v1", process.stdout.readline())
        assert url
        port = int(url.group(1))
        assert key not in Path(f"/proc/{process.pid}/cmdline").read_bytes().decode(errors="replace")

        def status_with(auth: str | None) -> int:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            try:
                connection.request("GET", "/v1/models", headers={"Authorization": auth} if auth else {})
                return connection.getresponse().status
            finally:
                connection.close()

        assert status_with(None) == 401
        assert status_with("Bearer wrong") == 401
        assert status_with(f"Bearer {key}") == 200
    finally:
        process.terminate()
        process.wait(timeout=30)
