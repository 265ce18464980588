"""Before a game: does the endpoint answer, serve the model and take the key? One bounded check.

Three requests go out together, not one after the other: ``GET /models``, a
1-token completion on the route the game will use, and ``GET /props`` (what the
server says of itself, for the run's manifest: ``server_props``). The completion
decides (it is what the game's calls will meet: a refused key, an unknown model, a
redirect, an HTML page); the model list only names what the server offers when the
model is unknown, and ``/props`` is kept when it answered in time. So the check
costs one latency, not three, and it is bounded in all by the endpoint's
``timeout`` (``--timeout``), reads included: a ``/models`` that drips one byte at a
time cannot hold it longer.

A malformed or failed ``/models`` answer (not JSON, the wrong shape, a redirect,
too large) is a warning, and the game goes on: the route the game uses has just
answered properly, many servers implement the listing loosely or not at all, and
refusing a working server for its optional route would stop users who can do
nothing about it; the warning says what was wrong in case a proxy is in the way.
What the completion meets is one line that names the fix, and exit status 2.

When it runs (``schedule``): a command line starts the check as soon as it knows
the endpoint, in the background, so it overlaps the command's start-up (imports,
building the model); the game's first calls go out without waiting for it, and
their results are kept (recorded, counted, used) only once its verdict is in
(``passed``), so round 1 costs one latency, not the check's and then its own. An
endpoint that fails the check stops the game with the check's line before
anything is kept. Replaying a recording
(``lazy``: ``--replay-fill``, a resumed sweep) starts it only when a call misses the
recording: a rerun that the recording answers in full contacts nothing. A strict
replay makes no call and no check.
"""

from __future__ import annotations

import asyncio
import warnings

from llm_mesa.errors import LlmMesaWarning
from llm_mesa.llm import server_props, transport, wire
from llm_mesa.llm.endpoint import Endpoint, EndpointError
from llm_mesa.llm.store import ResponseStore

#: the most a listing is shown in an error line
SHOWN_MODELS = 20


class PreflightWarning(LlmMesaWarning):
    """The endpoint's model list was malformed or failed; the game goes on."""


async def apreflight(endpoint: Endpoint, store: ResponseStore | None = None) -> list[str]:
    """Check that the endpoint answers and serves the model; returns the models it lists.

    Raises ``EndpointError`` with one line that names the fix. Skipped (returns []) in
    strict replay, which makes no calls. An endpoint with several servers checks them
    all at once.
    """
    if store is not None and store.mode == "replay":
        return []
    if len(endpoint.base_urls) > 1:  # every server of the model must answer
        found = await asyncio.gather(*(apreflight(endpoint.for_server(url), store) for url in endpoint.base_urls))
        return found[-1]
    client = transport.get_client(endpoint)  # raises for a missing key on a remote URL
    loop = asyncio.get_running_loop()
    deadline = loop.time() + endpoint.timeout
    listing = loop.create_task(_attempt(endpoint, client, "get", "/models", None))
    props = loop.create_task(server_props.ask(endpoint, client))
    started = loop.time()
    try:
        probe = await _attempt(endpoint, client, "post", *_probe(endpoint))  # bounded by the timeout itself
        # the listing only names what is offered: for an unknown model it may take what is left of the
        # bound, otherwise as long again as the test call took (a healthy server's list is in by then);
        # what the server says of itself, as long again as the test call took
        grace = max(0.05, loop.time() - started)
        if not listing.done():
            wait = deadline - loop.time() if _needs_listing(probe) else grace
            await asyncio.wait([listing], timeout=max(0.0, min(wait, deadline - loop.time())))
        if not props.done():
            await asyncio.wait([props], timeout=max(0.0, min(started + 2 * grace - loop.time(), deadline - loop.time())))
    finally:
        for task in (listing, props):
            if not task.done():  # a slow or dripping answer never holds the game: the probe has decided
                task.cancel()
    models = listing.result() if listing.done() and not listing.cancelled() else None
    listed = _listed(endpoint, models, warn=False)
    _judge_probe(endpoint, client.api_key, probe, listed)  # a failed check is one line: no warning beside it
    if props.done() and not props.cancelled() and props.exception() is None:
        server_props.remember(endpoint.base_url, props.result())
    return _listed(endpoint, models, warn=True) or []


def _needs_listing(probe) -> bool:
    """Does the probe's answer want the model list (an unknown model, to say what is offered)?"""
    return isinstance(probe, tuple) and probe[0] == 404


def _probe(endpoint: Endpoint) -> tuple[str, dict]:
    chat = endpoint.prompt_mode == "chat"
    body: dict = {"model": endpoint.model, "max_tokens": 1}
    body.update({"messages": [{"role": "user", "content": "ping"}]} if chat else {"prompt": "ping"})
    return ("/chat/completions" if chat else "/completions"), body


async def _attempt(endpoint: Endpoint, client, method: str, path: str, body: dict | None):
    """(status, headers, body), or the ``transport.Failure``/``wire.Malformed`` that stood for them."""
    route = transport.direct_route(endpoint, client, path, method)
    payload = transport.json_bytes(body) if body is not None and route is not None else None
    try:
        return await transport.send(client, route, method, path, body, payload, endpoint.timeout, 0,
                                    endpoint.max_answer_bytes)
    except (transport.Failure, wire.Malformed) as exc:
        return exc


def _listed(endpoint: Endpoint, models, warn: bool) -> list[str] | None:
    """The models ``/models`` lists, or None (unsupported, failed or malformed: see the module's notes,
    and a warning when ``warn``)."""
    where = f"{endpoint.base_url}/models"
    _warn = _warning if warn else _quiet
    if models is None or isinstance(models, transport.Failure):
        return None  # the completion's answer says whether the server is there
    if isinstance(models, wire.Malformed):
        _warn(f"{where} answered with {models}; going on, as its completion route answers")
        return None
    status, headers, content = models
    if 300 <= status < 400:
        _warn(f"{where}: HTTP {status}, {_redirect(endpoint, '/models', headers)}")
        return None
    if status >= 400:
        return None  # many servers have no listing: not worth a line
    try:
        return wire.parse_model_list(content)
    except wire.Malformed as exc:
        _warn(f"{where} answered with something that is not a model list ({exc}); going on, as its "
              "completion route answers")
        return None


def _warning(message: str) -> None:
    warnings.warn(PreflightWarning(message), stacklevel=3)


def _quiet(message: str) -> None:
    pass


def _redirect(endpoint: Endpoint, path: str, headers) -> str:
    return wire.redirect_advice(endpoint.base_url, path, headers)


def _judge_probe(endpoint: Endpoint, key: str | None, probe, listed: list[str] | None) -> None:
    """Raise the one line that the 1-token completion's answer calls for (none when it worked)."""
    url, model = endpoint.base_url, endpoint.model
    if isinstance(probe, transport.Failure):
        if probe.kind == "timeout":
            raise EndpointError(f"{url} did not answer a 1-token test call within --timeout {endpoint.timeout:g} s; "
                                "check that the server is up (or give a larger --timeout)")
        hint = "start one with `llm-mesa serve`" if endpoint.is_loopback else "check the URL and that the server is up"
        raise EndpointError(f"cannot reach the LLM endpoint {url} ({probe.message.split(':')[0]}); {hint}")
    if isinstance(probe, wire.Malformed):
        raise EndpointError(f"{url} answered a test call with {probe}; check the server and --base-url "
                            "(it usually ends in /v1)")
    status, headers, content = probe
    if status < 300:
        try:
            wire.parse_completion(content, endpoint.prompt_mode == "chat", key)
        except wire.Malformed as exc:
            start = wire.redact(content[:60].decode("utf-8", "replace").strip().replace("\n", " "), key)
            what = "something that is not an OpenAI completion" if str(exc).startswith(("not JSON", "the answer")) \
                else f"a malformed completion ({exc})"
            raise EndpointError(f"{url} answered a test call with {what} ({start!r}...); check the server and "
                                "--base-url (it usually ends in /v1)") from None
        return
    if status < 400:
        raise EndpointError(f"{url}: HTTP {status} on a 1-token test call, "
                            + _redirect(endpoint, "/chat/completions" if endpoint.prompt_mode == "chat"
                                        else "/completions", headers))
    if status in (401, 403):
        raise auth_refused(endpoint, status)
    if status == 404:
        if listed and model not in listed:
            raise EndpointError(f"model {model!r} is not served by {url}; it offers: {offered(listed)} "
                                "(pass one with --model)")
        raise EndpointError(f"{url} does not know model {model!r} (HTTP 404); check --model and --base-url "
                            "(it usually ends in /v1)" + _said(content, key))
    if status in (400, 422):
        message, param = _refusal(content, key)
        if param == "model":  # the model name itself is refused (a bad parameter of it): every call would be
            raise EndpointError(f"{url} refused model {model!r} (HTTP {status}): {message}; check --model")
        return  # the model answered (it only disliked the 1-token probe)
    if status == 429:
        return  # busy: the calls back off
    body = wire.redact(content[:4096].decode("utf-8", "replace"), key)[:150]
    raise EndpointError(f"{url} refused a 1-token test call to {model!r} (HTTP {status}): {body}")


def offered(listed: list[str]) -> str:
    """The models a server lists, the first ``SHOWN_MODELS`` of them, saying how many more there are."""
    shown = ", ".join(map(str, listed[:SHOWN_MODELS]))
    more = len(listed) - SHOWN_MODELS
    return shown + (f" and {more} more (GET /models lists them all)" if more > 0 else "")


def _refusal(content: bytes, key: str | None) -> tuple[str, str | None]:
    """An OpenAI-style error body's message and ``param`` (vLLM's top-level form too), redacted."""
    import json

    try:
        data = json.loads(content[:16384])
    except (ValueError, UnicodeDecodeError):
        data = None
    error = data.get("error", data) if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return wire.redact(content[:150].decode("utf-8", "replace"), key), None
    message, param = error.get("message"), error.get("param")
    return (wire.redact(str(message)[:400], key) if message is not None else "",
            param if isinstance(param, str) else None)


def _said(content: bytes, key: str | None) -> str:
    message = _refusal(content, key)[0]
    return f"; the server said: {message}" if message else ""


def auth_refused(endpoint: Endpoint, status: int) -> EndpointError:
    """The line for a refused key: which variable held it, and how to name another."""
    return EndpointError(f"{endpoint.base_url} refused the API key (HTTP {status}) read from the environment variable "
                         f"{endpoint.api_key_env}; put a valid key there, or name the variable that holds one "
                         "with --api-key-env")


class _Gate:
    """The pre-flight of one endpoint on one loop: started at once, or by the first live call (``lazy``)."""

    __slots__ = ("lazy", "task")

    def __init__(self, endpoint: Endpoint, lazy: bool) -> None:
        self.lazy = lazy
        self.task: asyncio.Task | None = None
        if not lazy:
            self.start(endpoint)

    def start(self, endpoint: Endpoint) -> asyncio.Task:
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(apreflight(endpoint))
            # its verdict is raised by the calls that await it; one that no call awaited is not an orphan
            self.task.add_done_callback(lambda task: task.cancelled() or task.exception())
        return self.task


scheduled: dict[Endpoint, _Gate] = {}


def schedule(endpoint: Endpoint, *, lazy: bool = False) -> None:
    """Start ``endpoint``'s pre-flight in the background (``lazy``: at its first live call);
    its live calls wait for the verdict, and an endpoint that fails it raises its
    ``EndpointError`` from them (the game stops with that one line)."""
    from llm_mesa.llm.runtime import run_sync

    for url in endpoint.base_urls:  # a missing key is known at once: before the game is built
        endpoint.for_server(url).api_key()

    async def register() -> None:
        if endpoint not in scheduled:
            scheduled[endpoint] = _Gate(endpoint, lazy)

    run_sync(register())


async def passed(endpoint: Endpoint) -> None:
    """Wait for ``endpoint``'s scheduled pre-flight (starting a lazy one); raises what it raised."""
    gate = scheduled.get(endpoint)
    if gate is None:
        return
    task = gate.start(endpoint)
    if not task.done():
        await asyncio.shield(task)  # one call cancelled (its round failed) must not cancel the others' check
    task.result()


def forget_scheduled() -> None:
    """Drop every scheduled check (tests; a command that plays again against a restarted server)."""
    scheduled.clear()


def preflight(endpoint: Endpoint, store: ResponseStore | None = None) -> list[str]:
    """Blocking ``apreflight`` on the shared loop (for CLIs and model constructors)."""
    from llm_mesa.llm.runtime import run_sync

    return run_sync(apreflight(endpoint, store))


__all__ = ["PreflightWarning", "apreflight", "auth_refused", "forget_scheduled", "passed", "preflight", "schedule"]
