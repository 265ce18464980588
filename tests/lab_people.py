"""Scripted people for the lab's fast tests: a thread per seat answers what its script says, round by round."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from llm_mesa.lab.seat import Seat


class Person:
    """Answers at ``seat``: ``script(round, facts) -> values`` (None: let the deadline pass), or
    ``(values, alternative)`` to answer in another form of the question (a message instead of a move)."""

    def __init__(self, seat: Seat, script: Callable[[int, Any], Mapping[str, Any] | None], alternative: int = 0):
        self.seat, self.script, self.alternative = seat, script, alternative
        self.seen: list[Any] = []  # the facts of every question put to this seat
        self.session = f"browser-{seat.number}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Person:
        self.session = self.seat.holder or self.session  # the browser that opened the seat already, if one did
        assert self.seat.claim(self.session), f"seat {self.seat.number} is not this person's"
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        last = None  # held, not its id: a freed question's id can come back as the next round's
        while not self._stop.is_set():
            question = self.seat.question
            if question is not None and question is not last:
                last = question
                self.seen.append(question.asked.facts)
                values = self.script(question.asked.facts.round, question.asked.facts)
                alternative = self.alternative
                if isinstance(values, tuple):
                    values, alternative = values
                if values is not None:
                    self.seat.submit(values, alternative, question=question.number, session=self.session)
            time.sleep(0.01)


def play(session, scripts: Mapping[int, Callable[[int, Any], Mapping[str, Any] | None]]) -> dict[int, Person]:
    """Play ``session`` to its end with one scripted person per seat number in ``scripts``."""
    people = {n: Person(session.seats[n - 1], script).start() for n, script in scripts.items()}
    try:
        session.play()
    finally:
        for person in people.values():
            person.stop()
    return people
