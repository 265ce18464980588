"""The explorer's default LLM endpoint: the loopback stand-in, started on demand.

Typing ``loopback`` as the endpoint starts one ``LoopbackServer`` in this process
(on a free port, once) and points the game at it, so LLM agents work in the
explorer with no server and no network. It is a stand-in, not a model.
"""

from __future__ import annotations

import atexit
import threading

BUILTIN = "loopback"
_lock = threading.Lock()
_server = None


def resolve_endpoint(url: str) -> str:
    """``url`` itself, or the base URL of the in-process stand-in for ``loopback``."""
    global _server
    url = url.strip()
    if url != BUILTIN:
        return url
    with _lock:
        if _server is None:
            from llm_mesa.loopback.server import LoopbackServer

            server = LoopbackServer(port=0)
            server.__enter__()
            atexit.register(server.__exit__, None, None, None)
            _server = server
    return _server.base_url
