"""What a person in a seat is shown for one decision: the facts the agent's LLM prompt carries, as a page.

A page of facts, not the prompt's text: a person reads "your colour: red", not the rules'
instructions to a model about JSON. The facts come from the agent's observation, the very
object its LLM prompt is built from, and from nothing else: a seat never sees what another
agent may not (its preference, its diary, the messages sent to others).

A game's LLM policy may give ``facts(observation) -> Facts`` (this tree's games do);
every other game gets ``observation_facts``: the observation's fields by name,
in order, a list of records (a history) as a section of lines. Its first row names the
agent as the game's tables do ("You are: agent 17"), and an observation's own field that names
the agent (``agent``, ``index``, ...) is left out: an observation may count from 0 where
the tables count Mesa's ids from 1, and a page never says "agent 17" beside "agent: 16".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: an observation's fields a person has no use for: the core's bookkeeping (which call, which turn)
BOOKKEEPING = frozenset({"game_key", "activation", "round"})
#: an observation's fields that name the agent itself, in the observation's numbering (the first row names it)
SELF = frozenset({"agent", "agent_id", "unique_id", "id", "index", "node", "node_id", "me", "self"})
#: the longest text one fact shows
MAX_FACT_CHARS = 2000


@dataclass(frozen=True)
class Facts:
    """One decision's facts, as a seat's page shows them: what the agent would be told.

    Attributes:
        agent: The agent as the game's tables name it ("node 3").
        rows: Label and value of each fact, in order.
        sections: A title and its lines (a history, the messages received).
        round: The round being decided (None: not known).
        rounds: The game's round limit (None: not known).
        labels: The words the answer form uses for each field of the answer.
        choices: The values a field of the answer may take for this agent now, where the schema allows
            more (a private message's recipient: the agent's neighbours, not any number): the form offers
            only these, and an answer that names another is refused.
    """

    agent: str
    rows: tuple[tuple[str, str], ...] = ()
    sections: tuple[tuple[str, tuple[str, ...]], ...] = ()
    round: int | None = None
    rounds: int | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    choices: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    def heading(self) -> str:
        """The seat's round line.

        Returns:
            "Round N of M", "Round N" where the limit is not known, or nothing where the round is not.
        """
        if self.round is None:
            return ""
        return f"Round {self.round}" + (f" of {self.rounds}" if self.rounds else "")


def shown(value: Any) -> str:
    """A value as a person reads it: text as it is, numbers plainly, lists joined."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {shown(v)}" for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(shown(v) for v in value) or "none"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return "; ".join(f"{k.replace('_', ' ')} {shown(v)}" for k, v in _fields(value).items())
    text = "" if value is None else str(value)
    return text if len(text) <= MAX_FACT_CHARS else text[: MAX_FACT_CHARS - 1] + "…"


def observation_facts(observation: Any, agent: str, round_number: int | None = None,
                      rounds: int | None = None) -> Facts:
    """Any game's facts: each field of the observation (a dataclass, or any object's attributes) by name.

    A field holding a list of records (dataclasses or mappings: a history, an inbox) is a
    section, one line a record; the core's bookkeeping (``BOOKKEEPING``) is left out.
    """
    rows: list[tuple[str, str]] = [("You are", agent)]
    sections: list[tuple[str, tuple[str, ...]]] = []
    for name, value in _fields(observation).items():
        if name in BOOKKEEPING or name.startswith("_") or (name.lower() in SELF and _is_name(value)):
            continue
        label = name.replace("_", " ")
        if isinstance(value, (list, tuple)) and value and all(_is_record(v) for v in value):
            sections.append((label, tuple(shown(v) for v in value)))
        else:
            rows.append((label, shown(value)))
    if round_number is None:
        given = _fields(observation).get("round")
        round_number = given if isinstance(given, int) and not isinstance(given, bool) else None
    return Facts(agent, tuple(rows), tuple(sections), round_number, rounds)


def _is_name(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _is_record(value: Any) -> bool:
    return isinstance(value, Mapping) or (dataclasses.is_dataclass(value) and not isinstance(value, type))


def _fields(value: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return dict(value)
    try:
        return dict(vars(value))
    except TypeError:  # a value with no fields (a number, a text): the observation is itself the fact
        return {"observation": value}


__all__ = ["BOOKKEEPING", "Facts", "SELF", "observation_facts", "shown"]
