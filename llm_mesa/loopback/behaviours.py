"""What the loopback endpoint answers: behaviours named by the request's ``model``.

A model name is a behaviour spec, ``NAME`` or ``NAME?param=value&param=value``
(URL query syntax; values may be %-escaped). Parameters that are fault settings
(``latency``, ``p429``, ``fail_first``...) go to the fault layer; the rest belong
to the behaviour. Behaviours:

* ``rule:<policy spec>`` reads the consensus prompt and answers as that rule
  policy of the project would (``rule:majority-inertia?inertia=0``,
  ``rule:stubborn``, ``rule:voter``); ``talk`` (default 0.3) is the chance of
  sending a message when the prompt allows messages, ``dm`` (default 0.3) the
  chance that such a message is private when private messages are allowed.
* ``naming:echo``, ``naming:noisy?p=0.3``, ``naming:babble``: SIGN speakers.
* ``fixed?text=...``, ``random`` (a random consensus answer), ``scripted``
  (answers in order from a script), ``echo`` (the last user message).

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from llm_mesa.loopback.faults import FaultSettings, LoopbackError
from llm_mesa.models.consensus.observation import ConsensusObservation
from llm_mesa.policy import Policy, PolicyError, available_policies, make_policy

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
    """One answering strategy; built once per distinct model name and cached."""

    #: canonical name for stats and the model list, e.g. ``"rule:majority-inertia"``
    kind: str = "behaviour"
    #: True when answers are JSON objects (then response_format schemas shape them)
    json_answer: bool = False
    #: True when the answer draws from the per-request rng (else none is built)
    uses_rng: bool = False

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


def _probability(params: dict[str, str], key: str, default: float, where: str) -> float:
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


def _refuse_leftovers(params: dict[str, str], where: str, known: str) -> None:
    if params:
        raise LoopbackError(f"unknown parameter(s) {', '.join(sorted(params))} in model {where!r}; "
                            f"this behaviour takes: {known or 'no parameters'} "
                            f"(plus fault settings: {', '.join(FaultSettings.names())})")


# ---- consensus game

# Matched against lower-cased text: case-sensitive patterns keep the regex engine's
# fast literal-prefix search, which re.IGNORECASE would disable.
_PREFERRED = re.compile(r"your preferred colou?r\s*:\s*(red|blue)\b")
_CURRENT = re.compile(r"your current colou?r\s*:\s*(red|blue)\b")
_NEIGHBOURS = re.compile(r"your neighbou?rs?['\u2019]?s? current colou?rs?\s*:[ \t]*([^\n]*)")
_NEIGHBOUR_PAIR = re.compile(r"(\d+)\s*:\s*(red|blue)\b")
_ROUND = re.compile(r"round\s*:\s*(\d+)\s*of\s*(\d+)")
_COMMUNICATION = re.compile(r"communication\s*:\s*(none|local|global)\b")
_PRIVATE = re.compile(r"private messages\s*:\s*allowed\b")
_AGENT_ID = re.compile(r"you are (?:agent|node|player)\s+(\d+)")


def _last(pattern: re.Pattern[str], *texts: str) -> re.Match[str] | None:
    """The last match in the first text that has one."""
    for text in texts:
        match = None
        for match in pattern.finditer(text):
            pass
        if match is not None:
            return match
    return None


def read_consensus_prompt(prompt: PromptView) -> ConsensusObservation:
    """Rebuild the observation a consensus prompt shows (regexes, tolerant of extra text)."""
    texts = (prompt.last_user.lower(), prompt.full.lower())
    preferred = _last(_PREFERRED, *texts)
    current = _last(_CURRENT, *texts)
    if preferred is None or current is None:
        missing = "Your preferred colour: red" if preferred is None else "Your current colour: blue"
        raise PromptNotUnderstood(
            f"the consensus prompt has no line like {missing!r}; the rule behaviours read "
            "'Your preferred colour', 'Your current colour', 'Your neighbours' current colours' "
            "and 'Round: t of T' lines")
    ids: list[int] = []
    colours: list[str] = []
    neighbours = _last(_NEIGHBOURS, *texts)
    if neighbours is not None:
        for node, colour in _NEIGHBOUR_PAIR.findall(neighbours.group(1)):
            ids.append(int(node))
            colours.append(colour)
    round_match = _last(_ROUND, *texts)
    round_now, round_limit = (int(round_match.group(1)), int(round_match.group(2))) if round_match else (0, 0)
    communication = _last(_COMMUNICATION, *texts)
    agent = _last(_AGENT_ID, texts[0])
    return ConsensusObservation(
        agent_id=int(agent.group(1)) if agent else -1,
        round=round_now,
        preference=preferred.group(1),  # type: ignore[arg-type]
        colour=current.group(1),  # type: ignore[arg-type]
        neighbour_ids=tuple(ids),
        neighbour_colours=tuple(colours),  # type: ignore[arg-type]
        communication=communication.group(1) if communication else "none",
        direct_messages=_last(_PRIVATE, *texts) is not None,
        rounds_left=max(round_limit - round_now, 0),
    )


#: malformed consensus answers: none of them parses as JSON
_CONSENSUS_MALFORMED = (
    '{"colour": "{c}", "reason": "I think',
    "I will choose {c} this round.",
    '{"colour": purple}',
    "colour={c}",
)


class _ConsensusBehaviour(Behaviour):
    json_answer = True
    uses_rng = True

    def malformed(self, prompt: PromptView, rng: random.Random) -> str:
        return rng.choice(_CONSENSUS_MALFORMED).replace("{c}", rng.choice(("red", "blue")))


class RuleBehaviour(_ConsensusBehaviour):
    """Answers the consensus prompt as one of the project's rule policies would."""

    def __init__(self, policy_spec: str, params: dict[str, str], model: str):
        self.talk = _probability(params, "talk", 0.3, model)
        self.dm = _probability(params, "dm", 0.3, model)
        name, _, inline = policy_spec.partition(":")
        pieces = [p for p in inline.split(",") if p] + [f"{k}={v}" for k, v in params.items()]
        spec = name + (":" + ",".join(pieces) if pieces else "")
        try:
            self.policy: Policy = make_policy(spec, game="consensus")
        except PolicyError as exc:
            if name not in available_policies("consensus"):
                raise BehaviourNotFound(str(exc)) from None
            raise LoopbackError(f"model {model!r}: {exc}") from None
        if self.policy.is_async:
            raise LoopbackError(f"model {model!r}: {name!r} is not a rule policy; "
                                "the loopback endpoint answers only as rule policies")
        self.kind = f"rule:{name}"

    def answer(self, prompt: PromptView, rng: random.Random | None) -> dict[str, Any]:
        assert rng is not None
        obs = read_consensus_prompt(prompt)
        decision = self.policy.decide(obs, rng)
        colour = decision.colour
        n_blue = sum(c == "blue" for c in obs.neighbour_colours)
        n_red = len(obs.neighbour_colours) - n_blue
        message, message_to = decision.message, decision.message_to
        may_broadcast = obs.communication in ("local", "global")
        if message is None and (may_broadcast or obs.direct_messages) and rng.random() < self.talk:
            private = obs.direct_messages and obs.neighbour_ids and (
                not may_broadcast or rng.random() < self.dm)
            if private:
                message_to = obs.neighbour_ids[int(rng.random() * len(obs.neighbour_ids))]
                message = f"Neighbour {message_to}, I hold {colour}; please switch to {colour}."
            elif colour == obs.colour:
                message = f"I am staying {colour}; please switch to {colour}."
            else:
                message = f"I am switching to {colour}; let us all pick {colour}."
        kept = "kept" if colour == obs.colour else "switched to"
        return {
            "colour": colour,
            "reason": decision.reason or (
                f"{self.policy.spec()}: {n_red} red and {n_blue} blue neighbours, so {colour}"),
            "diary": decision.diary or (
                f"Round {obs.round}: {kept} {colour}; neighbours {n_red} red, {n_blue} blue."),
            "message": message,
            "message_to": message_to,
        }


class RandomBehaviour(_ConsensusBehaviour):
    """A fair coin as a consensus answer; needs no particular prompt."""

    kind = "random"

    def answer(self, prompt: PromptView, rng: random.Random | None) -> dict[str, Any]:
        assert rng is not None
        colour = "blue" if rng.random() < 0.5 else "red"
        return {"colour": colour, "reason": "a coin flip (loopback stand-in)",
                "diary": f"flipped a coin: {colour}", "message": None, "message_to": None}


# ---- naming game (SIGN)

_NAMING_NAME = re.compile(r"Your current proposed name is\s+([^\s.,;]+)", re.I)
_NAMING_SCHEMA = re.compile(r"(?:Reply|Follow) EXACTLY one line(?: as)?\s*:\s*@say", re.I)
_NAME_NUMBER = re.compile(r"(\D*)(\d+)$")


def _naming_state(prompt: PromptView) -> tuple[str, bool]:
    """(current name, schema mode) read from a SIGN prompt."""
    name = _last(_NAMING_NAME, prompt.last_user, prompt.full)
    if name is None:
        raise PromptNotUnderstood("the naming prompt has no line like 'Your current proposed name "
                                  "is C3.'; the naming behaviours read that line")
    schema = _last(_NAMING_SCHEMA, prompt.last_user, prompt.full) is not None
    return name.group(1), schema


def _another_name(name: str) -> str:
    match = _NAME_NUMBER.match(name)
    if match is None:
        return "C1" if name != "C1" else "C2"
    return f"{match.group(1) or 'C'}{int(match.group(2)) % 12 + 1}"


def _well_formed_line(name: str, schema: bool) -> str:
    return f"@say {{name: {name}}} | keeping my name" if schema else f"I propose the name {name}."


class NamingEcho(Behaviour):
    """Says its current name, in the form the prompt asks for."""

    kind = "naming:echo"

    def answer(self, prompt: PromptView, rng: random.Random | None) -> str:
        return _well_formed_line(*_naming_state(prompt))

    def malformed(self, prompt: PromptView, rng: random.Random) -> str:
        return _naming_malformed(prompt, rng)


def _naming_malformed(prompt: PromptView, rng: random.Random) -> str:
    """A line that fails the schema: one name without @say, two names, or none."""
    try:
        name, schema = _naming_state(prompt)
    except PromptNotUnderstood:
        name, schema = "C1", True
    other = _another_name(name)
    variants = [f"{name} or {other}, hard to choose.", "I would rather not say."]
    if schema:
        variants.append(f"My name is {name}, as before.")  # salvageable by free-text decoding
    return rng.choice(variants)


class NamingNoisy(Behaviour):
    """Like echo, but with probability ``p`` a malformed line (retry/salvage/None all occur)."""

    kind = "naming:noisy"
    uses_rng = True

    def __init__(self, params: dict[str, str], model: str):
        self.p = _probability(params, "p", 0.3, model)

    def answer(self, prompt: PromptView, rng: random.Random | None) -> str:
        assert rng is not None
        name, schema = _naming_state(prompt)
        if rng.random() < self.p:
            return _naming_malformed(prompt, rng)
        return _well_formed_line(name, schema)

    def malformed(self, prompt: PromptView, rng: random.Random) -> str:
        return _naming_malformed(prompt, rng)


_BABBLE = (
    "La la la, what a lovely day.",
    "Names are overrated; I will not choose one.",
    "Hello there! Nice to meet you.",
    "@say nothing | I prefer silence.",
)


class NamingBabble(Behaviour):
    """Never names anything: every decode ends in None."""

    kind = "naming:babble"
    uses_rng = True

    def answer(self, prompt: PromptView, rng: random.Random | None) -> str:
        assert rng is not None
        return rng.choice(_BABBLE)


# ---- plain behaviours


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

#: model names the endpoint lists, with what each does
BEHAVIOUR_SUMMARIES: dict[str, str] = {
    "naming:echo": "SIGN speaker: says its current name in the requested form",
    "naming:noisy": "SIGN speaker: like echo, malformed with probability p (default 0.3)",
    "naming:babble": "SIGN speaker: never names anything",
    "fixed": "always the text given as ?text=...",
    "random": "a random consensus JSON answer",
    "scripted": "answers in order from a script (--script FILE or POST /v1/control/script)",
    "echo": "returns the last user message",
}


def listed_behaviours() -> dict[str, str]:
    """Every model name worth listing: rule policies first, then the rest."""
    rules = {f"rule:{name}": f"consensus rule policy: {summary}"
             for name, summary in available_policies("consensus").items() if name != "llm"}
    return {**rules, **BEHAVIOUR_SUMMARIES}


def split_model_name(model: str) -> tuple[str, dict[str, str]]:
    """``"naming:noisy?p=0.3&latency=0.1"`` -> ``("naming:noisy", {"p": "0.3", "latency": "0.1"})``."""
    name, _, query = model.partition("?")
    try:
        params = dict(parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)))
    except ValueError:
        raise LoopbackError(f"model {model!r}: write parameters as NAME?key=value&key=value") from None
    return name.strip(), params


def build_behaviour(model: str, defaults: FaultSettings,
                    book: ScriptBook) -> tuple[Behaviour, FaultSettings]:
    """The behaviour a model name asks for, and its fault settings."""
    name, params = split_model_name(model)
    fault_names = set(FaultSettings.names())
    fault_params = {k: v for k, v in params.items() if k in fault_names}
    own = {k: v for k, v in params.items() if k not in fault_names}
    settings = defaults.with_overrides(fault_params, where=f" in model {model!r}")
    behaviour: Behaviour
    simple: dict[str, Callable[[], Behaviour]] = {
        "naming:echo": NamingEcho, "naming:babble": NamingBabble, "random": RandomBehaviour,
        "echo": EchoBehaviour,
    }
    if name.startswith("rule:"):
        behaviour = RuleBehaviour(name[len("rule:"):], own, model)
        own = {}
    elif name in simple:
        behaviour = simple[name]()
        _refuse_leftovers(own, model, "")
    elif name == "naming:noisy":
        behaviour = NamingNoisy(own, model)
        _refuse_leftovers(own, model, "p")
    elif name == "fixed":
        behaviour = FixedBehaviour(own, model)
        _refuse_leftovers(own, model, "text")
    elif name == "scripted":
        own.pop("key", None)  # only tells scripts apart: "scripted?key=alice"
        behaviour = ScriptedBehaviour(book, model)
        _refuse_leftovers(own, model, "key")
    else:
        raise BehaviourNotFound(f"the loopback endpoint has no behaviour {name!r}; use one of: "
                                f"{', '.join(listed_behaviours())} (GET /v1/models lists them)")
    return behaviour, settings
