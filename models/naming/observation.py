"""What a naming-game speaker sees and what it answers.

The lexicon, the three modes of the SIGN study and the two small records that cross
the policy seam: ``NamingObservation`` (what a speaker may see) and ``Utterance``
(what it said, the name the decoder read from it, and what that cost).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from llm_mesa.errors import LlmMesaError

Mode = Literal["nl", "nl-sw", "schema"]
MODES: tuple[str, ...] = ("nl", "nl-sw", "schema")

#: how a message was turned into a name (or not):
#: ``schema`` first reply matched the schema; ``retry`` the reminder's reply matched;
#: ``salvage`` free-text decoding after a failed retry; ``text`` an NL/NL-SW message
#: that named exactly one lexicon name (NL has no schema and no retry); ``none`` no name.
OUTCOMES: tuple[str, ...] = ("schema", "retry", "salvage", "text", "none")

DEFAULT_LEXICON_SIZE = 12


class NamingConfigError(LlmMesaError):
    """Bad naming-game input; the message is one line that names the fix."""


def lexicon(size: int = DEFAULT_LEXICON_SIZE) -> tuple[str, ...]:
    """The names ``C1``..``C{size}``, in index order (the order that breaks ties)."""
    if size < 1:
        raise NamingConfigError(f"lexicon size {size} must be at least 1")
    return tuple(f"C{k}" for k in range(1, size + 1))


def name_index(name: str) -> int:
    """``"C7"`` -> 7: the order used for lowest-index tie breaks."""
    return int(name[1:])


def is_schema_mode(mode: str) -> bool:
    return mode == "schema"


@dataclass(frozen=True, slots=True)
class NamingObservation:
    """One agent's view when it is asked to speak: nothing more.

    ``memory`` is the agent's FIFO window of partner names, oldest first. The authors'
    prompt does not show it (memory acts through the update rule), but speakers may read it.
    ``attempt`` is 0 for the first reply and 1 for the schema reminder.
    """

    agent_id: int
    round: int
    name: str
    mode: str
    lexicon: tuple[str, ...]
    memory: tuple[str, ...] = ()
    attempt: int = 0
    #: identifies the game (parameters and seed) in record/replay sample keys
    game_key: str = ""
    #: the wording of the prompt an LLM speaker is given (``prompts.TEMPLATES``: a variant or file:PATH)
    prompt: str = "study"


@dataclass(slots=True)
class Utterance:
    """A speaker's turn: its replies (first, then the reminder's), the decoded name, the cost."""

    name: str | None
    outcome: str
    replies: list[str] = field(default_factory=list)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
