"""Observations and decisions of binary-opinion games on networks (red or blue).

These are what a consensus-game policy sees and answers. Colours are the strings
``"red"`` and ``"blue"``; measures work on 0/1 arrays where 1 is blue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .parameters import PARAMETERS

#: an observation's rules default to the game's, as its one parameter definition gives them
_DEFAULT = PARAMETERS.defaults()

Colour = Literal["red", "blue"]
COLOURS: tuple[Colour, Colour] = ("red", "blue")
BLUE = 1
RED = 0


def colour_code(colour: str) -> int:
    """``"blue"`` -> 1, ``"red"`` -> 0."""
    return 1 if colour == "blue" else 0


def colour_name(code: int) -> Colour:
    return "blue" if code else "red"


def other(colour: str) -> Colour:
    return "red" if colour == "blue" else "blue"


@dataclass(slots=True)
class RoundRecord:
    """One past round as an agent remembers it: the colours after it and the messages received in it.

    ``current`` marks a record of the round being played (what an agent acting after others in
    its round could see of their moves, under an update scheme that is not synchronous); the
    synchronous game never makes one.
    """

    round: int
    own_colour: Colour
    neighbour_colours: dict[int, Colour]
    messages: list["Message"]
    current: bool = False


@dataclass(slots=True)
class Message:
    """A message an agent sent; ``to`` is None for a broadcast to its audience."""

    sender: int
    round: int
    text: str
    to: int | None = None
    #: the turn that sent it, under an update scheme in which agents take turns (None: synchronous rounds)
    activation: int | None = None


@dataclass(slots=True)
class ConsensusObservation:
    """What one agent may see at the start of a round: nothing more.

    ``history`` and ``inbox`` are filled only for policies that read them
    (``Policy.needs_history``), so rule agents on large graphs pay nothing.
    """

    agent_id: int
    round: int
    preference: Colour
    colour: Colour
    neighbour_ids: tuple[int, ...]
    neighbour_colours: tuple[Colour, ...]
    communication: str = _DEFAULT["communication"]  # none | local | global
    direct_messages: bool = _DEFAULT["direct_messages"]
    message_replaces_move: bool = _DEFAULT["message_replaces_move"]  # a message instead of a move (the study), or with it
    label: str = _DEFAULT["label"]  # what the rules call the other players: "llm" or "human"
    #: the last ``history_rounds`` rounds (the game's ``history`` parameter), oldest first
    history: list[RoundRecord] = field(default_factory=list)
    history_rounds: int = _DEFAULT["history"]
    inbox: list[Message] = field(default_factory=list)  # the messages received last round
    diary: str = ""
    rounds_left: int = 0
    max_rounds: int = _DEFAULT["max_rounds"]
    n_players: int = _DEFAULT["n"]  # the game's rules, as the model was built: players and payoffs
    payoff_preferred: float = _DEFAULT["payoff_preferred"]
    payoff_other: float = _DEFAULT["payoff_other"]
    message_cost: float = _DEFAULT["message_cost"]  # taken from the payoff for each message the agent sends
    prompt: str = _DEFAULT["prompt"]  # the wording of the rules an LLM agent is given (PROMPT_VARIANTS)
    game_key: str = ""  # identifies the game (parameters and seed) in sample keys
    update: str = _DEFAULT["update"]  # how turns are taken (llm_mesa.UPDATE_SCHEMES): the rules say so
    activation: int | None = None  # the turn being taken (None under synchronous rounds): it names the call

    def blue_share(self) -> float:
        """Share of neighbours holding blue (0.0 with no neighbours)."""
        n = len(self.neighbour_colours)
        return self.neighbour_colours.count("blue") / n if n else 0.0


@dataclass(slots=True)
class ConsensusDecision:
    """A colour for the next round, and, for talking policies, the rest.

    ``message_to`` is None for the audience of the communication mode (the
    neighbours, or everyone), or a neighbour's id for a private message.
    ``failed`` marks a decision that fell back because the policy could not
    answer (a call or parse failure); the colour is then the current one.
    The accounting fields stay zero for rule policies; the model sums them per
    agent, round and game.
    """

    colour: Colour
    reason: str = ""
    message: str | None = None
    message_to: int | None = None
    diary: str | None = None
    failed: str | None = None
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0  # service time of its calls; waits for a concurrency slot are in queue_s
    queue_s: float = 0.0
    cached_tokens: int = 0  # prompt tokens the server took from its prompt cache
    server: str | None = None  # the base URL that answered (an endpoint may have several)
    cost: float = 0.0
    raw: str = ""  # the answer text an LLM gave
    outcome: str = ""  # e.g. "ok", "retry_ok", "parse_failure", "truncated", "call_failure"
