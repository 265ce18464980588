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


class LabStoreError(SeatError):
    """A lab's store that holds no answer for this game (another lab's), or holds one already; the message names a
    fix the lab takes (never ``--replay-fill``: a lab's people cannot answer again)."""


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
        return answer_words(self.answer)


def answer_words(answer: str | None) -> str:
    """An answer's JSON text as a person reads it back (None: the deadline passed)."""
    if answer is None:
        return "no answer (the deadline passed: the game's default was played)"
    try:
        given = json.loads(answer)
    except ValueError:
        return answer
    said = [f"{name.replace('_', ' ')} {value}" for name, value in given.items() if value not in ("", None)]
    return ", ".join(said) or "an empty answer"


@dataclass
class OpenQuestion:
    """The question a seat is answering now, and when it closes (``time.monotonic`` seconds).

    ``number`` is the question's identity at its seat (1, 2, ... in the order they were put):
    a page's form carries the number of the question it shows, and ``Seat.submit`` takes an
    answer only for that very question, so a click on a form that was shown for an earlier
    question (a second tab, a page not yet redrawn) is refused, never recorded for the next.
    """

    number: int
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

    Thread-safe: the game asks on the LLM event loop, the pages answer from their own threads.
    ``claim`` binds the seat to the first browser session that opens it; a reload of that
    browser (or a second tab of it) resumes it, any other browser is refused (the token is
    used up). ``reissue`` gives the seat a new token and frees it: the old link and every
    page opened with it hold nothing any more, and the first browser to open the new link
    holds the seat, its answers so far with it.
    """

    number: int
    agent: Any
    token: str = field(repr=False)  # never in a message or a log
    changed: Callable[[], None] = field(default=lambda: None, repr=False)
    #: the agent as its page names it ("node 3", the name the game's tables give it)
    label: str = ""
    holder: str | None = field(default=None, repr=False)
    closed: bool = False  # given to --policy when the host started without it
    question: OpenQuestion | None = None
    answers: list[SeatAnswer] = field(default_factory=list)
    #: is a page of the holder's browser connected now (the pages say so), and since when (``time.time()``)
    connected: bool = False
    since: float | None = None
    #: how many times the host issued the seat a new link
    reissued: int = 0
    _asked: int = 0
    #: each answered question's answer, by its number (a second tab's answer to it is told which one counts)
    _answered: dict[int, str] = field(default_factory=dict, repr=False)
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

    def holds(self, session: str) -> bool:
        """Does browser session ``session`` hold the seat now (not after a new link was issued to another)?"""
        holder = self.holder
        return holder is not None and hmac.compare_digest(holder, session)

    def reissue(self, token: str) -> None:
        """The host's new link: ``token`` replaces the old one, and the seat waits for whoever opens it."""
        with self._lock:
            if self.closed:
                raise SeatError(f"seat {self.number} was given to the agents' policy; it has no link to issue")
            self.token, self.holder = token, None
            self.reissued += 1
            self.connected, self.since = False, time.time()
        self.changed()

    def seen(self, connected: bool) -> None:
        """The pages' word on the holder's connection; a change is timed and shown."""
        with self._lock:
            if connected == self.connected:
                return
            self.connected, self.since = connected, time.time()
        self.changed()

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
        with self._lock:
            self._asked += 1
            question = OpenQuestion(self._asked, asked, opened, opened + deadline, loop.create_future(), loop)
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

    def submit(self, values: Mapping[str, Any], alternative: int = 0, *, question: int, session: str) -> str:
        """The person's answer to question number ``question``, from a page of browser session ``session``.

        Checked against the form and the game's decoder; returns the answer's JSON text.
        ``FormError`` for an answer that does not fit; ``SeatError`` (the person is shown why)
        when the browser no longer holds the seat, or when ``question`` is not the question
        open now (it closed, or was answered, perhaps in another tab): such an answer is never
        recorded, in particular not for the question that opened after it.
        """
        with self._lock:
            if not self.holds(session):
                raise SeatError("Not recorded: this page no longer holds the seat (the host issued a new link for "
                                "it). Ask the host for your seat's link.")
            open_now = self.question
            if question in self._answered:
                raise SeatError(f"Not recorded: this question was already answered ({answer_words(self._answered[question])}"
                                "), in another tab of this browser or just before; one answer a question counts.")
            if open_now is None or open_now.number != question or open_now.future.done():
                raise SeatError("Not recorded: that answer was for a question that has closed. "
                                + ("Answer the question shown now." if open_now is not None and open_now.answer is None
                                   else "Your next question shows here when your turn comes."))
            text = open_now.asked.form.answer(values, alternative)
            if open_now.asked.decode(text) is None:
                raise FormError("the game does not read this answer as a decision; choose again")
            open_now.answer = self._answered[question] = text
            taken = time.monotonic() - open_now.opened
            open_now.loop.call_soon_threadsafe(_resolve, open_now.future, (text, taken))
        self.changed()
        return text


def not_recorded(path: Any, what: str) -> LabStoreError:
    """A lab's replay that meets a decision its store never recorded: the fix is the recorded lab's own options
    (a lab never calls for what is missing: its people cannot answer again)."""
    return LabStoreError(f"{path} holds no answer for {what}: it recorded a lab with other options; replay with the "
                         "command that lab printed when it ended (its run folder's manifest.json, lab.replay): the same "
                         "--game, --set, --seed, --policy and --seat-agents")


def recorded_before(path: Any, what: str) -> LabStoreError:
    return LabStoreError(f"{path} already holds an answer for {what} (a lab was recorded into it before): replay it "
                         f"with --replay {path}, or record to a new file with --record FILE")


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
        round_number = round_of(turn.agent.model)
        asked = asked_of(self.asker, observation, self.seat.agent, round_number, self.rounds)
        recorded = await self._recorded(asked, f"{self.seat.label}'s decision in round {round_number}"
                                        + (f", turn {turn.activation}" if turn.activation is not None else ""))
        if recorded is not None:
            text, taken = recorded
        else:
            text, taken = await self.seat.ask(asked, self.deadline)
            self._record(asked, text, taken)
        answer = SeatAnswer(self.seat.number, self.seat.agent, round_number, turn.activation, text,
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

    async def _recorded(self, asked: Asked, what: str) -> tuple[str | None, float] | None:
        """The answer the store holds for this decision (``what``, in words; replaying), or None: ask the person."""
        store = self.store
        if store is None or store.mode == "off":
            return None
        key = asked.key(self.endpoint)
        result = await asyncio.to_thread(store.get, key)
        if store.mode == "record":
            if result is not None:
                raise recorded_before(store.path, what)
            return None
        if result is None:
            if store.mode == "replay":
                raise not_recorded(store.path, what)
            return None  # replay-fill: this one the person answers
        if result.error is not None and result.error != NO_ANSWER:
            raise SeatError(f"{asked.request.sample_key} is recorded as a failed call ({result.error}), not a "
                            "person's answer; replay the store the lab recorded")
        return (None if result.error == NO_ANSWER else result.text), result.latency_s

    def _record(self, asked: Asked, text: str | None, taken: float) -> None:
        if self.store is not None and self.store.records:
            self.store.put(asked.key(self.endpoint), asked.identity(self.endpoint),
                           asked.result(text, taken, self.deadline))


__all__ = ["LabStoreError", "OpenQuestion", "Seat", "SeatAnswer", "SeatError", "SeatPolicy", "answer_words", "not_recorded",
           "recorded_before"]
