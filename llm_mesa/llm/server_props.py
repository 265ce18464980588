"""What a server says of itself, asked once when a run starts, so that a run card can quote it later.

A paper must name the model as it ran: the build of the server, the model file and its
quantisation, the context size. An OpenAI-compatible API says none of it, but llama.cpp's
``llama-server`` answers ``GET /props`` (at the server's root, beside ``/v1``) with its
``build_info``, ``model_path``, context (``default_generation_settings.n_ctx``), slots and chat
template; llm-mesa's stand-in (``llm-mesa serve``) answers the same route as itself.

The pre-flight check (``preflight_check``) asks it together with its other two requests, and
waits for it no longer than for the model list: a server without the route (most hosted APIs:
404) or with a malformed or slow answer is simply one that said nothing, never an error. What a
server said is kept here per base URL (``described``) for the process's manifests: a sweep's,
a game's run folder, a lab session's (``dialects.endpoint_manifest`` adds it as ``servers``).
A strict replay asks nothing, so its manifest says nothing new; the card reads earlier starts.
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from llm_mesa.llm import transport, wire

if TYPE_CHECKING:
    from llm_mesa.llm.endpoint import Endpoint

#: base URL -> what that server said of itself this process (``wire.parse_server_props``)
described: dict[str, dict[str, Any]] = {}
#: a GGUF file's quantisation as its name gives it (``gemma-3-270m-it-Q4_K_M.gguf``: Q4_K_M)
_QUANTISATION = re.compile(r"(?i)(?<![a-z0-9])((?:IQ|Q)\d(?:_[A-Z0-9]+)*|BF16|F16|F32)(?=\.gguf$|[-_.]|$)")
#: longest answer read (a /props holds the chat template: some kilobytes)
MAX_PROPS_BYTES = 256 * 1024


def props_url(base_url: str) -> str:
    """Where the server of ``base_url`` answers ``/props``: its root (``http://h:8080/v1`` -> ``http://h:8080/props``)."""
    parts = urlsplit(base_url.rstrip("/"))
    path = parts.path[:-len("/v1")] if parts.path.endswith("/v1") else parts.path
    return urlunsplit((parts.scheme, parts.netloc, f"{path}/props", "", ""))


async def ask(endpoint: Endpoint, client: Any) -> dict[str, Any] | None:
    """What the server of ``endpoint`` says of itself, or None (no such route, an error, a malformed answer).

    Whatever the server does (a refusal, a redirect, a header line too long to parse, a body that
    is not JSON), the answer is None and nothing is raised: what a server says of itself is
    optional, and asking it must never cost a run."""
    url = props_url(endpoint.base_url)
    try:
        route = transport.direct_route(endpoint, client, url, "get")
        status, _, content = await transport.send(client, route, "get", url, None, None, endpoint.timeout, 0,
                                                  min(endpoint.max_answer_bytes, MAX_PROPS_BYTES))
        return wire.parse_server_props(content, client.api_key) if status == 200 else None
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001 (see the docstring: any failure is a server that said nothing)
        return None


def remember(base_url: str, said: dict[str, Any] | None) -> None:
    """Keep what the server of ``base_url`` said (nothing when it said nothing)."""
    if said:
        described[base_url] = said


def servers_of(base_urls: Any) -> dict[str, dict[str, Any]]:
    """What each of these servers said of itself this process (those that said nothing left out)."""
    return {url: dict(described[url]) for url in base_urls if url in described}


def quantisation(model_path: str | None) -> str | None:
    """The quantisation a GGUF file's name states (Q4_K_M, Q8_0, IQ4_XS, F16...), or None."""
    if not model_path:
        return None
    found = _QUANTISATION.search(model_path.replace("\\", "/").rsplit("/", 1)[-1])
    return found.group(1).upper() if found else None


__all__ = ["MAX_PROPS_BYTES", "ask", "described", "props_url", "quantisation", "remember", "servers_of"]
