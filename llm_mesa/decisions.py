"""LLM decisions: the core's part of every LLM agent's turn, for any game.

A game says what to ask a model for one agent's decision (a ``Question``: its chat messages or raw prompt, the
answer's JSON schema, how to read an answer) and what a failed decision becomes; the core does the rest, the same
for every game:

* it **keys** the call by the game, the agent, the round and (under turns) the activation, so no two decisions of
  a sweep ever share a recorded answer and a replay hands each game its own answers (``sample_key``);
* it **calls** through the endpoint's client with one reminder on an unreadable answer (``llm_mesa.llm.ask``),
  recording to or replaying from the store;
* it **counts** every decision and every failed one in the game's ledger (``ledger_of(model)``), and **judges**
  the game: one whose failed decisions exceed the game's allowed share is invalid (exit status 3 on the command
  line, a marked row in a sweep), whatever its own summary holds (``judge``).

Where the core learns the agent, the round and the activation: the round runners (``llm_mesa.play_round``,
``decide_all`` given the agents, ``play_activations``) say which agent each decision is for (a context variable,
so the calls of a round, gathered together, each see their own); a game that steps its agents itself says it with
``deciding(agent)``. The round is the model's step count (Mesa's ``model.steps``, 1 in the first step), the agent
its ``unique_id``, the game its key (``bind_game``: set by the core when it builds a game, from the game's name,
parameters and seed).

A game written before this API, whose policy calls ``llm_mesa.llm.ask`` with keys of its own, keeps working: its
keys are honoured, and its decisions are counted from the outcomes its usage ledger holds (``fields_from_usage``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llm_mesa.errors import LlmMesaError
from llm_mesa.policy import Policy

if TYPE_CHECKING:
    from mesa import Agent, Model

    from llm_mesa.llm.answers import Answer
    from llm_mesa.llm.endpoint import Endpoint
    from llm_mesa.llm.store import ResponseStore
    from llm_mesa.llm.types import LLMRequest
    from llm_mesa.llm.usage import Usage

#: the share of failed decisions a game allows when it declares none (``LlmSupport.failure_share``)
DEFAULT_FAILURE_SHARE = 0.1
#: the outcomes of ``llm_mesa.llm.ask`` that decide nothing
FAILED_OUTCOMES = ("call_failure", "parse_failure", "truncated")
DEFAULT_REMINDER = "Answer only with the JSON object the rules ask for, and nothing else."


class DecisionError(LlmMesaError):
    """A decision asked for in a way the core cannot key (no agent); the message names the fix."""


@dataclass(frozen=True)
class Question[T]:
    """What a game asks a model for one agent's decision.

    Attributes:
        decode: Turns an answer's text into the game's decision (None: the answer decides nothing, and gets one
            ``reminder``).
        messages: The chat messages sent, what is the same for every agent first (the rules), so servers cache it.
        prompt: The same as one raw completion prompt, for a server in completion mode.
        schema: The answer's JSON schema (structured output where the server has it).
        reminder: What an unreadable answer is asked again with.
        template_hash: Changes whenever the prompt's wording does, so an edited prompt never replays stale answers.
        schema_name: The schema's name, where a server asks for one.
    """

    decode: Callable[[str], T | None]
    messages: Sequence[Mapping[str, str]] | None = None
    prompt: str | None = None
    schema: Mapping[str, Any] | None = None
    reminder: str = DEFAULT_REMINDER
    template_hash: str = ""
    schema_name: str = "decision"
    #: a reply cut off by the token limit gets the reminder too (useful where the schema bounds the text)
    retry_truncated: bool = False
    #: the call's sample key, for a game that keys its calls itself (its own game key and agent names, so
    #: its recordings keep replaying); None, the default: the core keys it by the turn (``sample_key``)
    sample_key: str | None = None


@dataclass(slots=True)
class Decided[T]:
    """A decision, as ``decide`` gives it.

    Attributes:
        value: The decoded decision (None when it failed).
        outcome: How it was obtained (``ok``, ``retry_ok``, or a kind of failure).
        answer: The call's answer and its calls, tokens and timings.
    """

    value: T | None
    outcome: str
    answer: Answer | None = None

    @property
    def ok(self) -> bool:
        """True when the answer was read (at once, or after the reminder)."""
        return self.outcome in ("ok", "retry_ok")


@dataclass
class DecisionLedger:
    """One game's LLM decisions, counted by the core whatever the game counts itself.

    Attributes:
        game_key: The key every call of the game carries.
        failure_share: The share of failed decisions above which the game is invalid.
        decisions: Decisions asked of a model so far.
        failed: How many of them failed.
        outcomes: How many of each outcome.
    """

    game_key: str
    failure_share: float = DEFAULT_FAILURE_SHARE
    decisions: int = 0
    failed: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    #: True when the core built the game and gave it this key (``bind_game``), not a key made up on demand
    bound: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, outcome: str) -> None:
        """Count one decision of this outcome (thread-safe: a round's calls finish on the event loop's thread)."""
        with self._lock:
            self.decisions += 1
            self.failed += outcome in FAILED_OUTCOMES
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    def fields(self) -> dict[str, int]:
        """The summary row's columns: decisions asked of a model, and how many failed."""
        return {"decisions": self.decisions, "failed_decisions": self.failed}


@dataclass(frozen=True)
class Turn:
    """Whose decision is being made: what its call's key is made of.

    Attributes:
        agent: The agent deciding.
        activation: Its place in the round under turns (an agent may act twice), else None.
        round: The round, where the caller knows it better than the model's step count (a decision asked before
            the model's own step runs), else None.
    """

    agent: Agent
    activation: int | None = None
    round: int | None = None


_turn: ContextVar[Turn | None] = ContextVar("llm_mesa_turn", default=None)
_ledgers: weakref.WeakKeyDictionary[Any, DecisionLedger] = weakref.WeakKeyDictionary()
_ledgers_lock = threading.Lock()


def turn_key(game_key: str, agent: int, round_number: int, activation: int | None) -> str:
    """A decision's sample key: no two decisions of a sweep share one.

    Args:
        game_key: The game's key (``game_key``).
        agent: The agent, as its game names it.
        round_number: The round.
        activation: Under turns, its place in the round, since an agent may act twice (``random-asynchronous``).

    Returns:
        ``g=...|agent=...|round=...`` (and ``|act=...``): a synchronous key is the one games recorded before turns
        existed, so their recordings replay.
    """
    key = f"g={game_key}|agent={agent}|round={round_number}"
    return key if activation is None else f"{key}|act={activation}"


def game_key(name: str, parameters: Mapping[str, Any], seed: Any) -> str:
    """The key of one game, from its ``name``, ``parameters`` and ``seed``.

    Returns:
        16 hex digits of the three.
    """
    identity = json.dumps({"game": name, "parameters": dict(parameters), "seed": seed}, sort_keys=True, default=str)
    return hashlib.sha256(identity.encode()).hexdigest()[:16]


def bind_game(model: Model, key: str, failure_share: float = DEFAULT_FAILURE_SHARE) -> DecisionLedger:
    """Give ``model`` the ledger its decisions are keyed (``key``, the game's) and counted in, judged against
    ``failure_share``: the core does, when it builds a game. Returns the ledger."""
    ledger = DecisionLedger(key, failure_share, bound=True)
    with _ledgers_lock:
        _ledgers[model] = ledger
    return ledger


def ledger_of(model: Model) -> DecisionLedger:
    """The ledger of ``model``, a Mesa model (one made for a model the core did not build, keyed by its class and
    seed)."""
    with _ledgers_lock:
        ledger = _ledgers.get(model)
        if ledger is None:
            ledger = _ledgers[model] = DecisionLedger(game_key(type(model).__qualname__, {}, getattr(model, "_seed", None)))
    return ledger


def round_of(model: Model) -> int:
    """The round a decision is made in: the model's step count (Mesa counts a step before it runs it)."""
    steps = getattr(model, "steps", None)
    if isinstance(steps, int) and not isinstance(steps, bool):
        return steps
    return int(getattr(model, "time", 0))


def sample_key(turn: Turn) -> str:
    """The sample key (``turn_key``) of ``turn``'s decision, from its model, agent, round and activation."""
    model = turn.agent.model
    number = turn.round if turn.round is not None else round_of(model)
    return turn_key(ledger_of(model).game_key, turn.agent.unique_id, number, turn.activation)


@contextlib.contextmanager
def deciding(agent: Agent, activation: int | None = None) -> Iterator[Turn]:
    """Decisions made inside are ``agent``'s, for a game that steps its agents itself.

    Args:
        agent: The agent deciding.
        activation: Its place in the round under turns.

    Yields:
        The turn.
    """
    turn = Turn(agent, activation)
    token = _turn.set(turn)
    try:
        yield turn
    finally:
        _turn.reset(token)


async def as_turn[T](turn: Turn, decision: Any) -> T:
    """Await ``decision`` as ``turn``'s: the round runners wrap each one, so calls gathered together each see
    their own turn.

    A game the core built also scopes the calls of a policy that keys its own (``GAME_SCOPE``).

    Args:
        turn: Whose decision.
        decision: A policy's ``adecide`` coroutine.

    Returns:
        The decision.
    """
    from llm_mesa.llm.types import GAME_SCOPE

    token = _turn.set(turn)
    with _ledgers_lock:
        ledger = _ledgers.get(turn.agent.model)
    scope = GAME_SCOPE.set(ledger.game_key if ledger is not None and ledger.bound else None)
    try:
        return await decision
    finally:
        GAME_SCOPE.reset(scope)
        _turn.reset(token)


def current_turn() -> Turn | None:
    """Whose decision is being made here, or None outside a round runner and ``deciding``."""
    return _turn.get()


def request_of(question: Question, turn: Turn | None = None) -> LLMRequest:
    """The call ``question`` is sent as: what an LLM decision of that agent is recorded under, whoever answers it
    (the lab records a person's answer under it, so a replay needs neither the person nor a model).

    Args:
        question: What the game asks.
        turn: Whose decision (default: the current one).

    Returns:
        The request: its messages or prompt, schema, sample key and template hash.

    Raises:
        DecisionError: No turn is known and the question carries no key of its own.
    """
    from llm_mesa.llm.types import LLMRequest

    turn = turn if turn is not None else _turn.get()
    if question.sample_key is None and turn is None:
        raise DecisionError("an LLM decision needs its agent: decide from a policy that the round runners call "
                            "(llm_mesa.play_round, play_activations), or inside `with llm_mesa.deciding(agent):`")
    return LLMRequest(messages=[dict(m) for m in question.messages] if question.messages is not None else None,
                      prompt=question.prompt, schema=dict(question.schema) if question.schema is not None else None,
                      sample_key=question.sample_key or sample_key(turn), template_hash=question.template_hash,
                      purpose="decide", schema_name=question.schema_name)


async def decide[T](question: Question[T], *, endpoint: Endpoint, store: ResponseStore | None = None,
                    usage: Usage | None = None, agent: Agent | None = None,
                    activation: int | None = None) -> Decided[T]:
    """Ask ``endpoint`` for one agent's decision: keyed, recorded, counted in its game's ledger.

    Args:
        question: What to ask.
        endpoint: Where and how to call.
        store: The record/replay store (None: not recorded).
        usage: The ledger of calls, tokens and cost to add to.
        agent: Whose decision (default: the current turn's).
        activation: Its place in the round under turns.

    Returns:
        The decision (its value None when it failed) and how it was obtained.
    """
    from llm_mesa.llm.answers import ask

    turn = Turn(agent, activation) if agent is not None else _turn.get()
    request = request_of(question, turn)
    answer = await ask(endpoint, request, question.decode, question.reminder, store=store, usage=usage,
                       retry_truncated=question.retry_truncated)
    if turn is not None:
        ledger_of(turn.agent.model).record(answer.outcome)
    return Decided(answer.value if answer.ok else None, answer.outcome, answer)


class LLMPolicy(Policy):
    """The base of a game's LLM policy: the game says what to ask and what a failure becomes.

    Subclass it in the game, register it (``register_policy("llm", GAME)``) and give
    ``question(observation)``; ``failed(observation)`` is the decision a failed one
    becomes (default None: the game's ``advance`` keeps the agent as it is). One policy
    object serves every agent of a game: it holds no agent's state.

    Args:
        endpoint: where and how to call (or ``base_url``/``model`` and endpoint options as
            keywords, as ``make_policy("llm:base_url=...,model=...", GAME)`` passes them).
        store: the record/replay store (None: calls are not recorded).
    """

    name = "llm"
    is_async = True

    def __init__(self, endpoint: Endpoint | None = None, store: ResponseStore | None = None,
                 **endpoint_options: Any) -> None:
        from llm_mesa.llm.endpoint import Endpoint
        from llm_mesa.llm.usage import Usage

        self.endpoint = endpoint or Endpoint.from_url_and_env(
            endpoint_options.pop("base_url", None), endpoint_options.pop("model", None), **endpoint_options)
        self.store = store
        self.usage = Usage(self.game or "llm")
        #: the template hashes of the questions asked, for the run's manifest (a run card quotes them)
        self.template_hashes: set[str] = set()

    def question(self, observation: Any) -> Question:
        """What to ask a model for the decision on ``observation`` (the game's own type); the one method to give.

        Returns:
            The question: its messages, schema, how to read an answer and its template hash.
        """
        raise NotImplementedError(f"{type(self).__name__} must say what it asks (question)")

    def failed(self, observation: Any) -> Any:
        """The decision a failed one becomes (the core has counted it).

        Args:
            observation: What the agent saw.

        Returns:
            None by default: the agent keeps what it holds, where the game's ``advance`` reads None so.
        """
        return None

    async def adecide(self, observation: Any, rng: random.Random) -> Any:
        """The decision: the question asked, its answer read, else ``failed(observation)``."""
        question = self.question(observation)
        self.template_hashes.add(question.template_hash)
        decided = await decide(question, endpoint=self.endpoint, store=self.store, usage=self.usage)
        return decided.value if decided.ok else self.failed(observation)

    def manifest(self) -> dict[str, Any]:
        """What a run's manifest says of this policy.

        Returns:
            Its endpoint (and what the server said of itself), its store, its calls (with the models and
            fingerprints that answered) and its template hashes.
        """
        from llm_mesa.llm.dialects import endpoint_manifest

        return {"endpoint": endpoint_manifest(self.endpoint), "store": None if self.store is None else self.store.manifest(),
                "usage": self.usage.as_dict(), "prompt_template_hashes": sorted(self.template_hashes)}

    def params(self) -> dict[str, Any]:
        return {"base_url": self.endpoint.base_url, "model": self.endpoint.model}

    def identity(self) -> str:
        return f"llm:model={self.endpoint.model}"


# --- the verdict ----------------------------------------------------------------------------


def fields_from_usage(usage: Usage | None) -> dict[str, int]:
    """``decisions`` and ``failed_decisions`` from a usage ledger's outcomes (a policy that calls ``ask`` itself;
    None: nothing counted)."""
    outcomes = getattr(usage, "outcomes", None) or {}
    return {"decisions": int(sum(outcomes.values())), "failed_decisions": int(sum(outcomes.get(o, 0) for o in FAILED_OUTCOMES))}


def decision_fields(model: Model, policies: Sequence[Any] = ()) -> dict[str, int]:
    """A finished game's ``decisions`` and ``failed_decisions``: its model's ledger's, else its LLM ``policies``'
    usage summed."""
    with _ledgers_lock:
        ledger = _ledgers.get(model)
    if ledger is not None and ledger.decisions:
        return ledger.fields()
    counted = {"decisions": 0, "failed_decisions": 0}
    for policy in {id(p): p for p in policies if getattr(p, "usage", None) is not None}.values():
        for key, value in fields_from_usage(policy.usage).items():
            counted[key] += value
    return counted


def judge(row: dict[str, Any], failure_share: float) -> dict[str, Any]:
    """The verdict on a game's row.

    Args:
        row: A summary row with ``decisions`` and ``failed_decisions``, changed in place.
        failure_share: The share of failed decisions allowed.

    Returns:
        ``row``, with ``invalid`` True when its failed decisions exceed that share of its decisions (or the game
        said so itself).
    """
    decisions = row.get("decisions") or 0
    failed = row.get("failed_decisions") or 0
    over = bool(decisions) and failed / decisions > failure_share
    row["invalid"] = bool(row.get("invalid")) or over
    return row


__all__ = ["DEFAULT_FAILURE_SHARE", "Decided", "DecisionError", "DecisionLedger", "LLMPolicy", "Question", "Turn",
           "as_turn", "bind_game", "decide", "decision_fields", "deciding", "fields_from_usage", "game_key", "judge",
           "ledger_of", "request_of", "round_of", "sample_key", "turn_key"]
