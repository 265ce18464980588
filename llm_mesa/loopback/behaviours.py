"""What the loopback endpoint answers: behaviours named by the request's ``model``.

A model name is a behaviour spec, ``NAME`` or ``NAME?param=value&param=value``
(URL query syntax; values may be %-escaped). Parameters that are fault settings
(``latency``, ``p429``, ``fail_first``...) go to the fault layer; the rest belong
to the behaviour. The core's own behaviours answer any prompt:

* ``fixed?text=...`` (always that text), ``echo`` (the last user message),
* ``scripted`` (answers in order from a script; ``scripted?key=NAME`` keeps
  another script).

Every installed game adds the behaviours that read its own prompts: it names a
module in ``Game.llm.behaviours`` that calls ``register_behaviour`` when
imported, and the registry imports those modules the first time behaviours are
listed or built (``GET /v1/models`` lists them all).

Every answer is computed from a per-request rng seeded by a hash of the server
seed, the request's ``seed`` field and the prompt, so a run is reproducible.

Tokens are counted as word pieces: each run of letters/digits/underscore is one
token and each other non-space character is one token (``\\w+|[^\\w\\s]``). It is
cheap, deterministic and of the same order as a BPE count for English text; it
is not any real model's tokenizer.
"""

from __future__ import annotations

import functools
import json
import random
import re
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from llm_mesa.loopback.faults import FaultSettings, LoopbackError

# ---------------------------------------------------------------- tokens

_TOKEN_PIECE = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Word-piece count: runs of word characters, plus each punctuation mark."""
    return len(_TOKEN_PIECE.findall(text))


#: the same count, remembered for texts that recur (rules sent with every request)
count_tokens_cached = functools.lru_cache(maxsize=4096)(count_tokens)


def cut_to_tokens(text: str, limit: int) -> tuple[str, bool]:
    """The text up to its ``limit``-th token, and whether anything was cut."""
    if limit <= 0:
        return "", bool(text)
    for index, match in enumerate(_TOKEN_PIECE.finditer(text), start=1):
        if index == limit:
            end = match.end()
            return text[:end], end < len(text.rstrip())
    return text, False


# ---------------------------------------------------------------- errors


class BehaviourNotFound(LoopbackError):
    """The model name names no behaviour (answered as HTTP 404 model_not_found)."""


class BadModelName(LoopbackError):
    """The model name's behaviour cannot be built as given: an unknown or bad parameter (answered as
    HTTP 400 with ``param`` "model", before any prompt is read, so the pre-flight's 1-token call meets it)."""

    param = "model"


class PromptNotUnderstood(LoopbackError):
    """The prompt lacks the lines a behaviour reads (answered as HTTP 400)."""


class ScriptExhausted(LoopbackError):
    """A scripted model has given all its answers (answered as HTTP 400)."""


# ---------------------------------------------------------------- prompts


@dataclass(slots=True)
class PromptView:
    """The parts of a request that behaviours read."""

    last_user: str  # last user message (chat) or the raw prompt (completions)
    full: str       # every message's text, joined (rules often sit in the system message)
    chat: bool


# ---------------------------------------------------------------- behaviours


class Behaviour:
    """One answering strategy; built once per distinct model name and cached.

    A registered class is built as ``cls(params, model)`` (see ``register_behaviour``):
    it pops the ``?key=value`` parameters it reads from ``params``.
    """

    #: canonical name for stats and the model list, e.g. ``"fixed"``
    kind: str = "behaviour"
    #: True when answers are JSON objects (then response_format schemas shape them)
    json_answer: bool = False
    #: True when the answer draws from the per-request rng (else none is built)
    uses_rng: bool = False
    #: {schema property: answer key} read when a response_format schema names a key
    #: the answer spells differently (e.g. an American spelling of the answer's key)
    schema_aliases: Mapping[str, str] = {}

    def __init__(self, params: dict[str, str] | None = None, model: str = ""):
        """A behaviour without parameters ignores both."""

    def answer(self, prompt: PromptView, rng: random.Random | None) -> str | dict[str, Any]:
        raise NotImplementedError

    def malformed(self, prompt: PromptView, rng: random.Random) -> str:
        """A 200 answer whose text is not a valid answer (fault ``malformed``)."""
        return rng.choice(_GENERIC_MALFORMED)


_GENERIC_MALFORMED = (
    "Sure! Here is my answer:",
    "I am not sure what you are asking.",
    '{"answer": ',
)


def probability_param(params: dict[str, str], key: str, default: float, where: str) -> float:
    """Pop the probability ``key`` from a model name's parameters (``default`` if absent)."""
    raw = params.pop(key, None)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise LoopbackError(f"{key}={raw!r} in model {where!r} must be a probability in [0, 1]")
    return value


def last_match(pattern: re.Pattern[str], *texts: str) -> re.Match[str] | None:
    """The last match of ``pattern`` in the first of ``texts`` that has one."""
    for text in texts:
        last = deque(pattern.finditer(text), maxlen=1)
        if last:
            return last[0]
    return None


def _refuse_leftovers(params: dict[str, str], where: str, known: str) -> None:
    if params:
        raise BadModelName(f"unknown parameter(s) {', '.join(sorted(params))} in model {where!r}; "
                            f"this behaviour takes: {known or 'no parameters'} "
                            f"(plus fault settings: {', '.join(FaultSettings.names())})")


# ---------------------------------------------------------------- the core's own behaviours


class FixedBehaviour(Behaviour):
    """Always the same text (``fixed?text=...``; default ``ok``)."""

    kind = "fixed"

    def __init__(self, params: dict[str, str], model: str):
        self.text = params.pop("text", "ok")

    def answer(self, prompt: PromptView, rng: random.Random | None) -> str:
        return self.text


class EchoBehaviour(Behaviour):
    """Returns the last user message (or the raw prompt) unchanged."""

    kind = "echo"

    def answer(self, prompt: PromptView, rng: random.Random | None) -> str:
        return prompt.last_user


class ScriptBook:
    """Scripted answers per model name, handed out in order (thread-safe)."""

    def __init__(self) -> None:
        self._answers: dict[str, list[str]] = {}
        self._cursor: dict[str, int] = {}
        self._lock = threading.Lock()

    def load(self, script: Any, where: str = "script") -> None:
        """Add scripts: a JSON list (for model ``scripted``) or {model name: list}."""
        if isinstance(script, list):
            script = {"scripted": script}
        if not isinstance(script, dict) or not all(isinstance(v, list) for v in script.values()):
            raise LoopbackError(f"{where}: give a JSON list of answers, or an object mapping "
                                "model names (e.g. 'scripted') to lists of answers")
        with self._lock:
            for model, answers in script.items():
                self._answers[str(model)] = [a if isinstance(a, str) else json.dumps(a) for a in answers]
                self._cursor[str(model)] = 0

    def rewind(self) -> None:
        with self._lock:
            self._cursor = dict.fromkeys(self._answers, 0)

    def next_answer(self, model: str) -> str:
        with self._lock:
            answers = self._answers.get(model)
            if answers is None:
                raise ScriptExhausted(f"no script for model {model!r}; give one with --script FILE "
                                      "or POST it to /v1/control/script")
            cursor = self._cursor[model]
            if cursor >= len(answers):
                raise ScriptExhausted(f"the script for model {model!r} is used up after "
                                      f"{len(answers)} answers; POST more to /v1/control/script")
            self._cursor[model] = cursor + 1
            return answers[cursor]

    def remaining(self) -> dict[str, int]:
        with self._lock:
            return {m: len(a) - self._cursor[m] for m, a in self._answers.items()}


class ScriptedBehaviour(Behaviour):
    """Answers taken in order from the script keyed by the full model name.

    A string answer is the text itself; any other JSON value is sent as its JSON text.
    """

    kind = "scripted"

    def __init__(self, book: ScriptBook, model: str):
        self.book = book
        self.model = model

    def answer(self, prompt: PromptView, rng: random.Random | None) -> str:
        return self.book.next_answer(self.model)


# ---------------------------------------------------------------- registry

#: builds a behaviour from a model name's own parameters: ``factory(params, model)``,
#: or ``factory(rest, params, model)`` for a prefix (``rest`` is the name after it)
BehaviourFactory = Callable[..., Behaviour]


@dataclass(frozen=True, slots=True)
class _Registered:
    factory: BehaviourFactory
    summary: str
    params: str
    listing: Callable[[], Mapping[str, str]] | None
    core: bool


_REGISTRY: dict[str, _Registered] = {}  # exact names, and prefixes (ending in ":")
_games_loaded = False
_load_lock = threading.RLock()


def register_behaviour(name: str, factory: BehaviourFactory, summary: str = "", *, params: str = "",
                       listing: Callable[[], Mapping[str, str]] | None = None) -> None:
    """Answer the model name ``name`` with behaviours built by ``factory``.

    A name ending in ``":"`` is a prefix: it answers every name that starts with it
    (the longest registered prefix wins; an exact name beats any prefix), and its
    factory is called as ``factory(rest, params, model)`` with ``rest`` the name
    after the prefix; otherwise as ``factory(params, model)``. ``params`` holds the
    model name's own ``?key=value`` parameters (not the fault settings): the factory
    pops those it reads, and any left over are refused with a message that lists
    the ``params`` given here (comma-separated). ``summary`` is the line ``GET /v1/models`` shows;
    ``listing`` gives a prefix's names and summaries to list instead of the prefix.
    A game calls this when its ``Game.llm.behaviours`` module is imported.
    """
    _register(name, factory, summary, params, listing, core=False)


def _register(name: str, factory: BehaviourFactory, summary: str, params: str,
              listing: Callable[[], Mapping[str, str]] | None, core: bool) -> None:
    if not name or name != name.strip() or "?" in name:
        raise LoopbackError(f"behaviour name {name!r} must be non-empty, without spaces around it or '?'")
    summary = summary or ((getattr(factory, "__doc__", None) or "").strip().split("\n")[0])
    with _load_lock:
        _REGISTRY[name] = _Registered(factory, summary, params, listing, core)


def load_game_behaviours(refresh: bool = False) -> None:
    """Register every installed game's behaviours, once: the game registry imports their modules and gives those
    declared as values."""
    global _games_loaded
    if _games_loaded and not refresh:
        return
    with _load_lock:
        if _games_loaded and not refresh:
            return
        from llm_mesa.registry import game_behaviours

        for kind, factory in game_behaviours().items():  # modules registered theirs as they were imported
            register_behaviour(kind, factory)
        _games_loaded = True


def behaviours_of(module: str) -> dict[str, str]:
    """The model names registered by ``module`` (a game's ``llm.behaviours``), prefixes by their listing."""
    load_game_behaviours()
    with _load_lock:
        entries = [(n, e) for n, e in _REGISTRY.items() if getattr(e.factory, "__module__", None) == module]
    named: dict[str, str] = {}
    for name, entry in entries:
        named.update(entry.listing() if entry.listing is not None else {name: entry.summary})
    return named


def listed_behaviours() -> dict[str, str]:
    """Every model name worth listing, with what it does: the games' first, then the core's."""
    load_game_behaviours()
    with _load_lock:
        entries = list(_REGISTRY.items())
    listed: dict[str, str] = {}
    for core in (False, True):
        for name, entry in entries:
            if entry.core is core:
                listed.update(entry.listing() if entry.listing is not None else {name: entry.summary})
    return listed


def split_model_name(model: str) -> tuple[str, dict[str, str]]:
    """``"fixed?text=hi&latency=0.1"`` -> ``("fixed", {"text": "hi", "latency": "0.1"})``."""
    name, _, query = model.partition("?")
    try:
        params = dict(parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)))
    except ValueError:
        raise LoopbackError(f"model {model!r}: write parameters as NAME?key=value&key=value") from None
    return name.strip(), params


def _find(name: str) -> tuple[str, _Registered] | None:
    """The registered name or longest prefix answering ``name``."""
    with _load_lock:
        entry = _REGISTRY.get(name)
        if entry is not None and not name.endswith(":"):
            return name, entry
        prefixes = [k for k in _REGISTRY if k.endswith(":") and name.startswith(k) and len(name) > len(k)]
        if not prefixes:
            return None
        prefix = max(prefixes, key=len)
        return prefix, _REGISTRY[prefix]


def build_behaviour(model: str, defaults: FaultSettings,
                    book: ScriptBook) -> tuple[Behaviour, FaultSettings]:
    """The behaviour a model name asks for, and its fault settings."""
    name, params = split_model_name(model)
    fault_names = set(FaultSettings.names())
    fault_params = {k: v for k, v in params.items() if k in fault_names}
    own = {k: v for k, v in params.items() if k not in fault_names}
    try:
        settings = defaults.with_overrides(fault_params, where=f" in model {model!r}")
    except LoopbackError as exc:
        raise BadModelName(str(exc)) from None
    if name == "scripted":  # the only behaviour holding server state: the server's scripts
        own.pop("key", None)  # only tells scripts apart: "scripted?key=alice"
        behaviour: Behaviour = ScriptedBehaviour(book, model)
        _refuse_leftovers(own, model, "key")
        return behaviour, settings
    load_game_behaviours()
    found = _find(name)
    if found is None:  # a game registered in this process since the behaviours were loaded: look once more
        load_game_behaviours(refresh=True)
        found = _find(name)
    if found is None:
        raise BehaviourNotFound(f"the loopback endpoint has no behaviour {name!r}; use one of: "
                                f"{', '.join(listed_behaviours())} (GET /v1/models lists them)")
    registered_as, entry = found
    try:
        if registered_as.endswith(":"):
            behaviour = entry.factory(name[len(registered_as):], own, model)
        else:
            behaviour = entry.factory(own, model)
    except (BehaviourNotFound, BadModelName):
        raise
    except LoopbackError as exc:
        raise BadModelName(str(exc)) from None
    except (ValueError, TypeError, KeyError, ArithmeticError) as exc:  # a behaviour refusing a parameter's value
        raise BadModelName(f"model {model!r}: {exc}; this behaviour takes: {entry.params or 'no parameters'}") from None
    _refuse_leftovers(own, model, entry.params)
    return behaviour, settings


def _scripted_placeholder(params: dict[str, str], model: str) -> Behaviour:
    raise AssertionError("build_behaviour builds 'scripted' itself")  # pragma: no cover


_register("fixed", FixedBehaviour, "always the text given as ?text=...", "text", None, core=True)
_register("scripted", _scripted_placeholder,
          "answers in order from a script (--script FILE or POST /v1/control/script)", "key", None, core=True)
_register("echo", EchoBehaviour, "returns the last user message", "", None, core=True)
