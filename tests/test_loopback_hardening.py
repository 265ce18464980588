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
import socket
import time

import pytest

from llm_mesa.loopback import LoopbackServer
from llm_mesa.loopback.protocol import MAX_JSON_DEPTH

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
