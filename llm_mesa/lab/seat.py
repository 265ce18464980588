"""A person's seat: one more asynchronous policy, deciding in parallel with the LLM and rule agents.

``SeatPolicy.adecide`` is what an LLM agent's decision is, with a person in place of the
model: it builds the question the game's LLM policy would send for this agent, round and
turn (``asking.asked_of``: its facts, its answer form, its sample key), puts it to the
person at the seat (``Seat``, which a page shows and answers), waits for the answer or the
deadline, and returns the game's decision: the person's answer read by the game's own
decoder, or, for a missed deadline, the game's default action (``failed``), counted as a
**timeout**, never as a failed LLM decision.

Every answer is recorded in the store under the very key an LLM decision of that agent
would have (model ``human``): a missed one as a failure of kind ``no_answer``. So the game
replays exactly without the people, by a seat replaying its answers (``llm-mesa lab
--replay``) or by the game's LLM policy on ``human_endpoint()`` (``llm:model=human``; a
missed answer then replays as a failed call, whose decision is the same default).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llm_mesa.decisions import current_turn, round_of
from llm_mesa.errors import LlmMesaError
from llm_mesa.lab.asking import HUMAN, NO_ANSWER, Asked, asked_of, human_endpoint
from llm_mesa.lab.form import FormError
from llm_mesa.policy import Policy

if TYPE_CHECKING:
    import random

    from llm_mesa.llm.store import ResponseStore


class SeatError(LlmMesaError):
    """A seat's answer that cannot be taken (a closed round, a recording that does not replay); the message says why."""


@dataclass
class SeatAnswer:
    """One decision of a seat: the round and turn, the answer's JSON text (None: missed), how long it took."""

    seat: int
    agent: Any
    round: int
    activation: int | None
    answer: str | None
    response_s: float
    timeout: bool

    def words(self) -> str:
        """The answer as a person reads it back: its fields that say something ("colour red")."""
        if self.answer is None:
            return "no answer (the deadline passed: the game's default was played)"
        try:
            given = json.loads(self.answer)
        except ValueError:
            return self.answer
        said = [f"{name.replace('_', ' ')} {value}" for name, value in given.items() if value not in ("", None)]
        return ", ".join(said) or "an empty answer"


@dataclass
class OpenQuestion:
    """The question a seat is answering now, and when it closes (``time.monotonic`` seconds)."""

    asked: Asked
    opened: float
    closes: float
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop
    answer: str | None = None

    def left(self) -> float:
        return max(0.0, self.closes - time.monotonic())


@dataclass
class Seat:
    """One seat of a lab: its number, the agent it seats, its token, who holds it, what it is asked now.

    Thread-safe: the game asks on the LLM event loop, the page answers from its own thread.
    ``claim`` binds the seat to the first browser session that opens it; a reload of that
    browser resumes it, any other browser is refused (the token is used up).
    """

    number: int
    agent: Any
    token: str
    changed: Callable[[], None] = lambda: None
    #: the agent as its page names it ("node 3": the game's facts say how)
    label: str = ""
    holder: str | None = None
    closed: bool = False  # given to --policy when the host started without it
    question: OpenQuestion | None = None
    answers: list[SeatAnswer] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def matches(self, token: str) -> bool:
        """Is ``token`` this seat's? Compared in constant time."""
        return hmac.compare_digest(self.token.encode(), token.encode())

    def claim(self, session: str) -> bool:
        """Take the seat for browser session ``session`` (True), or refuse it: taken by another, or closed."""
        with self._lock:
            if self.closed or (self.holder is not None and not hmac.compare_digest(self.holder, session)):
                return False
            first = self.holder is None
            self.holder = session
        if first:
            self.changed()
        return True

    def close_if_empty(self) -> bool:
        """Give the seat to the agents' policy if nobody has opened it (the host started without it)."""
        with self._lock:
            if self.holder is None:
                self.closed = True
            return self.closed

    def cancel(self) -> None:
        """Close the open question at once (the lab stops): the round does not wait for it."""
        with self._lock:
            question = self.question
        if question is not None:
            question.loop.call_soon_threadsafe(_cancel, question.future)

    @property
    def joined(self) -> bool:
        return self.holder is not None

    @property
    def timeouts(self) -> int:
        return sum(a.timeout for a in self.answers)

    def last_answer(self) -> SeatAnswer | None:
        return self.answers[-1] if self.answers else None

    async def ask(self, asked: Asked, deadline: float) -> tuple[str | None, float]:
        """Put ``asked`` to the person; their answer's JSON text and seconds taken, or (None, deadline)."""
        loop = asyncio.get_running_loop()
        opened = time.monotonic()
        question = OpenQuestion(asked, opened, opened + deadline, loop.create_future(), loop)
        with self._lock:
            self.question = question
        self.changed()
        try:
            text, taken = await asyncio.wait_for(asyncio.shield(question.future), deadline)
        except TimeoutError:
            text, taken = None, deadline
        finally:
            with self._lock:
                self.question = None
                raced = question.answer  # taken just as the deadline passed: the person was told it counts
            if not question.future.done():
                question.future.cancel()
            self.changed()
        return (raced, deadline) if text is None and raced is not None else (text, taken)

    def submit(self, values: Mapping[str, Any], alternative: int = 0) -> str:
        """The person's answer (from the page's thread): checked against the form and the game's decoder.

        Returns the answer's JSON text; ``FormError`` for an answer that does not fit,
        ``SeatError`` when no question is open (the round closed, or it was answered).
        """
        with self._lock:
            question = self.question
            if question is None or question.future.done() or question.answer is not None:
                raise SeatError("no question is open at this seat now (the round has closed or was answered)")
            text = question.asked.form.answer(values, alternative)
            if question.asked.decode(text) is None:
                raise FormError("the game does not read this answer as a decision; choose again")
            question.answer = text
            taken = time.monotonic() - question.opened
            question.loop.call_soon_threadsafe(_resolve, question.future, (text, taken))
        self.changed()
        return text


def _resolve(future: asyncio.Future, value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _cancel(future: asyncio.Future) -> None:
    if not future.done():
        future.cancel()


class SeatPolicy(Policy):
    """The policy of a seated agent: a person answers what the game's LLM policy would ask (see the module).

    Args:
        seat: the seat its person answers at.
        asker: the game's LLM policy on ``human_endpoint()`` (what it asks, its default action, its facts).
        deadline: seconds a question stays open.
        store: where answers are recorded, or replayed from (``replays``: no person is asked).
        describe: the agent's name and the round limit, for the facts of a game that gives none.
        answered: called with each ``SeatAnswer`` (the lab's record of the people's answers).
    """

    name = HUMAN
    is_async = True

    def __init__(self, seat: Seat, asker: Any, deadline: float, store: ResponseStore | None = None, *,
                 rounds: int | None = None, answered: Callable[[SeatAnswer], None] = lambda answer: None) -> None:
        self.seat, self.asker, self.deadline, self.store = seat, asker, float(deadline), store
        self.rounds, self.answered = rounds, answered
        self.endpoint = human_endpoint()
        # the observation an LLM agent is given, history and messages included where the game keeps them for one
        self.needs_history = bool(getattr(asker, "needs_history", False))
        self.reads_messages = bool(getattr(asker, "reads_messages", False))

    def spec(self) -> str:
        return HUMAN

    def identity(self) -> str:
        """An LLM agent's on the ``human`` endpoint: a game keyed by its agents' policies keys a seated
        game as the one its LLM policy replays (``llm:model=human``)."""
        return f"llm:model={HUMAN}"

    def decide(self, observation: Any, rng: random.Random) -> Any:  # pragma: no cover - the round runners await adecide
        raise SeatError("a seat decides through adecide (the round runners await it)")

    async def adecide(self, observation: Any, rng: random.Random) -> Any:
        turn = current_turn()
        if turn is None:
            raise SeatError("a seat decides for an agent: play it through the round runners (llm_mesa.play_round)")
        asked = asked_of(self.asker, observation, self.seat.agent, round_of(turn.agent.model), self.rounds)
        recorded = await self._recorded(asked)
        if recorded is not None:
            text, taken = recorded
        else:
            text, taken = await self.seat.ask(asked, self.deadline)
            self._record(asked, text, taken)
        answer = SeatAnswer(self.seat.number, self.seat.agent, round_of(turn.agent.model), turn.activation, text,
                            round(taken, 3), text is None)
        self.seat.answers.append(answer)
        self.answered(answer)
        if text is None:
            return asked.default
        decision = asked.decode(text)
        if decision is None:
            raise SeatError(f"the answer recorded for {asked.request.sample_key} no longer decodes: the game changed "
                            "since it was recorded; play the lab again")
        return decision

    async def _recorded(self, asked: Asked) -> tuple[str | None, float] | None:
        """The answer the store holds for this decision (replaying), or None: ask the person."""
        store = self.store
        if store is None or store.mode == "off":
            return None
        key = asked.key(self.endpoint)
        result = await asyncio.to_thread(store.get, key)
        if store.mode == "record":
            if result is not None:
                raise store.already_recorded(asked.request.sample_key)
            return None
        if result is None:
            if store.mode == "replay":
                raise store.miss(key, asked.request.sample_key)
            return None  # replay-fill: this one the person answers
        if result.error is not None and result.error != NO_ANSWER:
            raise SeatError(f"{asked.request.sample_key} is recorded as a failed call ({result.error}), not a "
                            "person's answer; replay the store the lab recorded")
        return (None if result.error == NO_ANSWER else result.text), result.latency_s

    def _record(self, asked: Asked, text: str | None, taken: float) -> None:
        if self.store is not None and self.store.records:
            self.store.put(asked.key(self.endpoint), asked.identity(self.endpoint),
                           asked.result(text, taken, self.deadline))


__all__ = ["OpenQuestion", "Seat", "SeatAnswer", "SeatError", "SeatPolicy"]
