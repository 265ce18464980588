"""One lab: a game in which some agents are people, its seats and host, and what its pages may show.

The session holds the game and everything its pages read, so that a page never touches
the model while a round is being played: after every round the game thread takes a
``Snapshot`` of the whole game for the host page, and a seat's page reads only its own
``Seat`` (the question open there, built from that agent's observation alone).

Tokens: one per seat and one for the host, each 256 bits from ``secrets``, compared in
constant time (``admit``). A seat is held by the first browser session that opens it; a
reload of that browser resumes it, any other is refused (the token is used up), and so is
a seat the host gave to ``--policy`` by starting without it. The host may issue a seat a
new link (``reissue``: a person whose browser crashed): the old token then opens nothing,
and whoever opens the new one holds the seat, with its answers so far.

A link is read as mail and chat programs leave it: any other query parameter (``utm_source``,
``fbclid``, a parameter with no value) is ignored; only ``seat`` and ``host`` are read.

The game starts when every seat has been opened, or when the host presses Start, which
gives the seats nobody opened to the agents' policy (the game is built again before its
first round, from the same seed, with those agents on it).
"""

from __future__ import annotations

import random
import secrets
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from llm_mesa import declared, play
from llm_mesa.errors import LlmMesaError
from llm_mesa.games import agent_names
from llm_mesa.lab.asking import check_seatable, facts_of, human_endpoint
from llm_mesa.lab.seat import Seat, SeatAnswer, SeatPolicy

if TYPE_CHECKING:
    from llm_mesa.games import Game
    from llm_mesa.llm.store import ResponseStore
    from llm_mesa.views import Snapshot

#: bytes of randomness in a token (256 bits; URL-safe text of 43 characters)
TOKEN_BYTES = 32
#: a token longer than this is refused unread
MAX_TOKEN_CHARS = 128
#: a link's query longer than this is refused unread (a token and any tracking a mail program adds fit easily)
MAX_QUERY_CHARS = 8192
WAITING, PLAYING, ENDED, STOPPED = "waiting", "playing", "ended", "stopped"


class LabError(LlmMesaError):
    """A lab that cannot be held as asked; the message names the fix."""


@dataclass(frozen=True)
class Shown:
    """The host's picture in the tables' names: ``names[i]`` is the agent the picture numbers ``i``; ``people``
    the seats among them, by the picture's number (so the host sees which nodes are people)."""

    names: list[Any]
    people: dict[int, Seat]


def seat_label(words: str, name: Any) -> str:
    """How a seat's page names its agent: the game's words ("node 3") where they end in the tables' name of it,
    else ``agent NAME``: one numbering on every page, the tables'."""
    return words if str(words).split()[-1:] == [str(name)] else f"agent {name}"


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def round_limit(game: Game, parameters: Mapping[str, Any]) -> int | None:
    """The game's round limit, where one whole-number parameter names it (``...rounds``); else None."""
    found = [p.name for p in game.parameters if p.kind is int and p.name.endswith("rounds")]
    return int(parameters[found[0]]) if len(found) == 1 and found[0] in parameters else None


def choose_agents(names: Sequence[Any], count: int, given: Sequence[Any] | None, seed: int) -> list[Any]:
    """The agents the seats seat: those ``given`` (checked), else ``count`` drawn from a stream of the seed's own
    (never the game's), in the game's order."""
    if given:
        unknown = [g for g in given if g not in names]
        if unknown:
            shown = ", ".join(map(str, list(names)[:12])) + (" ..." if len(names) > 12 else "")
            raise LabError(f"--seat-agents names {unknown[0]!r}, which is no agent of this game (its agents: {shown})")
        if len(set(given)) != len(given):
            raise LabError("--seat-agents names an agent twice; give each seated agent once")
        if len(given) != count:
            raise LabError(f"--seat-agents names {len(given)} agents for --seats {count}; give one agent a seat")
        chosen = set(given)
    else:
        if not 1 <= count <= len(names):
            raise LabError(f"--seats {count}: the game has {len(names)} agents; seat from 1 to {len(names)}")
        chosen = set(random.Random(f"llm-mesa lab seats {seed}").sample(list(names), count))
    return [name for name in names if name in chosen]


class LabSession:
    """The game of one lab, its seats (``seats``), its host token and its state, for every page at once.

    Args:
        game: the game (any registered one whose LLM policy can say what it asks).
        parameters: its parameters (validated here, defaults filled in).
        policy: every other agent's policy (a rule spec, or the game's LLM policy object), or a mix: a
            list of them, which split the agents into equal blocks in the game's order (as ``A + B`` does in
            a sweep), the seats then taken out of their blocks.
        seed: the game's seed.
        seats: how many seats; ``seat_agents`` which agents (by the game's tables' names; default drawn).
        deadline: seconds a question stays open.
        store: where the people's answers are recorded (or, replaying, read: no person is asked).
    """

    def __init__(self, game: Game, parameters: Mapping[str, Any], policy: Any, seed: int, seats: int, *,
                 seat_agents: Sequence[Any] | None = None, deadline: float = 30.0,
                 store: ResponseStore | None = None) -> None:
        self.game, self.seed, self.store = game, int(seed), store
        self.parts = list(policy) if isinstance(policy, (list, tuple)) else [policy]
        self.parameters = game.parameters.validate(parameters, complete=True)
        if not deadline > 0:
            raise LabError(f"--deadline {deadline}: give the seconds a round stays open, more than 0")
        self.deadline = float(deadline)
        self.asker = declared.llm_policy(game, human_endpoint(), None)  # what a seat is asked: the game's LLM policy's question
        check_seatable(game.name, self.asker)
        self.rounds = round_limit(game, self.parameters)
        probe = play.make_model(game, self.parameters, self.parts[0], seed)
        self.host_token = new_token()
        self._changes = threading.Condition()
        self.version = 0
        self.state = WAITING
        self.message = ""
        self.playing_round = 0
        self.answers: list[SeatAnswer] = []
        self.row: dict[str, Any] = {}  # the finished game's summary row
        self._outcome = ""
        names = list(agent_names(probe).values())
        block = max(1, len(names) // len(self.parts))
        self._mix = {name: self.parts[min(i // block, len(self.parts) - 1)] for i, name in enumerate(names)
                     if i >= block}
        self.seats = [Seat(i + 1, agent, new_token(), self.changed)
                      for i, agent in enumerate(choose_agents(names, seats, seat_agents, seed))]
        self.model = self._build()
        by_name = {name: agent for agent, name in agent_names(self.model).items()}
        for seat in self.seats:  # how its page names the agent: the game's facts' words, the tables' number
            observe = getattr(by_name[seat.agent], "observe", None)  # a Mesa model's agents observe only as they decide
            words = facts_of(self.asker, observe(), seat.agent, 0, self.rounds).agent if callable(observe) \
                else f"agent {seat.agent}"
            seat.label = seat_label(words, seat.agent)
        #: the address the links start with (``urls``), for a link the host issues anew
        self.base = ""
        from llm_mesa.views import view_of

        self.view = view_of(game)
        self.snapshot: Snapshot = self.view.snapshot(self.model)
        self.shown = self._shown()

    # --- who may see what ------------------------------------------------------------------
    def admit(self, query: str, session: str) -> Seat | str | None:
        """The seat (or ``"host"``) a page's query string (``?seat=TOKEN``, ``?host=TOKEN``) opens for browser
        session ``session``; None for a wrong or used-up token. Every token is compared, in constant time."""
        if len(query) > MAX_QUERY_CHARS:
            return None
        given: dict[str, str] = {}
        for name, value in parse_qsl(query.split("#", 1)[0].lstrip("?")):  # the first of each; any other ignored
            given.setdefault(name, value)
        seat_token, host_token = given.get("seat", ""), given.get("host", "")
        if len(seat_token) > MAX_TOKEN_CHARS or len(host_token) > MAX_TOKEN_CHARS:
            return None
        found = [seat for seat in self.seats if seat.matches(seat_token)]
        is_host = secrets.compare_digest(self.host_token.encode(), host_token.encode())
        if is_host:
            return "host"
        if found and found[0].claim(session):
            return found[0]
        return None

    def urls(self, base: str) -> list[tuple[str, str]]:
        """Each seat's link and the host's, as the lab prints them (``seat N``, ``host``)."""
        self.base = base = base.rstrip("/")
        return [(f"seat {s.number}", self.link(s)) for s in self.seats] + [("host", f"{base}/?host={self.host_token}")]

    def link(self, seat: Seat) -> str:
        return f"{self.base}/?seat={seat.token}"

    def reissue(self, seat: Seat) -> str:
        """The host's new link for ``seat`` (its person's browser crashed, or the link was lost): the old link
        and every page opened with it hold nothing any more; the seat's answers stay with it."""
        seat.reissue(new_token())
        return self.link(seat)

    # --- changes, for the pages ---------------------------------------------------------------
    def changed(self) -> None:
        """Something a page shows changed; a seat opened by its last person starts the game."""
        with self._changes:
            if self.state == WAITING and all(s.joined for s in self.seats):
                self.state = PLAYING
            self.version += 1
            self._changes.notify_all()

    def wait(self, seen: int, timeout: float) -> int:
        """Block until the version moves past ``seen`` (or ``timeout`` seconds); the version now."""
        with self._changes:
            self._changes.wait_for(lambda: self.version != seen, timeout=timeout)
            return self.version

    def counting(self) -> bool:
        """Is a countdown running at some seat (the pages tick each second)?"""
        return any(s.question is not None for s in self.seats)

    # --- the game ---------------------------------------------------------------------------
    def start(self) -> None:
        """The host's Start: the game begins, with the seats nobody opened given to the agents' policy."""
        with self._changes:
            if self.state != WAITING:
                return
            for seat in self.seats:
                seat.close_if_empty()
            self.state = PLAYING
            self.version += 1
            self._changes.notify_all()

    def open_seats(self) -> list[Seat]:
        return [s for s in self.seats if not s.closed]

    @property
    def llm_policies(self) -> list[Any]:
        """The agents' LLM policies (those that keep a usage ledger), for the summary's use and verdict."""
        return [p for p in self.parts if getattr(p, "usage", None) is not None]

    def _build(self) -> Any:
        placed = dict(self._mix)
        placed.update({seat.agent: SeatPolicy(seat, self.asker, self.deadline, self.store, rounds=self.rounds,
                                              answered=self.answers.append) for seat in self.open_seats()})
        return play.place(self.game, self.parameters, self.parts[0], self.seed, placed)

    def play(self) -> None:
        """Wait for the start, then play every round to the end (the lab's main thread).

        A round is played as the game plays it: the seats' questions open together with the LLM
        agents' calls and close when every seat has answered or at the deadline.
        """
        with self._changes:
            while self.state == WAITING:
                self._changes.wait(timeout=0.5)  # a timed wait, so Ctrl-C reaches this thread
        if any(seat.closed for seat in self.seats):
            self.model = self._build()  # before round 1, from the same seed: the empty seats on --policy
            self._take_snapshot()
        try:
            while self.model.running and self.state == PLAYING:
                with self._changes:
                    self.playing_round = self.view.round_number(self.model) + 1
                self.changed()
                self.model.step()
                self._take_snapshot()
        except BaseException as exc:
            self.stop(f"the game stopped: {exc}" if isinstance(exc, LlmMesaError) else "the game stopped")
            raise
        row = declared.summary_row(self.game, self.model)
        with self._changes:
            self.row, self._outcome = row, declared.outcome(self.game, row)
            if self.state == PLAYING:
                self.state = ENDED
        self.changed()

    def stop(self, message: str) -> None:
        """End the lab where it is (an interrupt, a failed round): pages say so, open questions close."""
        with self._changes:
            if self.state in (WAITING, PLAYING):
                self.state, self.message = STOPPED, message
        for seat in self.seats:
            seat.cancel()
        self.changed()

    def _take_snapshot(self) -> None:
        snapshot, shown = self.view.snapshot(self.model), self._shown()
        with self._changes:
            self.snapshot, self.shown = snapshot, shown

    def _shown(self) -> Shown:
        """The picture's agents (by its numbers) as the tables name them, and which of them are people."""
        names = agent_names(self.model)
        drawn = [names.get(agent) for agent in self.view.agents(self.model)]
        seats = {seat.agent: seat for seat in self.seats}
        return Shown(drawn, {i: seats[name] for i, name in enumerate(drawn) if name in seats})

    # --- words for the pages ----------------------------------------------------------------
    def status(self) -> str:
        """The lab's state in one line (the host page's, and what a seat reads between rounds)."""
        if self.state == WAITING:
            joined = sum(s.joined for s in self.seats)
            return f"Waiting for people: {joined} of {len(self.seats)} seats opened."
        if self.state == STOPPED:
            return self.message or "The lab has stopped."
        if self.state == ENDED:
            return f"The game has ended after {self.view.round_number(self.model)} rounds."
        limit = f" of {self.rounds}" if self.rounds else ""
        return f"Round {self.playing_round}{limit} is being played."

    def outcome(self) -> str:
        """The finished game's outcome in a few words (the game's own), once it has ended."""
        return self._outcome if self.state == ENDED else ""

    @property
    def timeouts(self) -> int:
        return sum(a.timeout for a in self.answers)


__all__ = ["ENDED", "LabError", "LabSession", "PLAYING", "STOPPED", "Shown", "WAITING", "choose_agents", "new_token",
           "round_limit", "seat_label"]
