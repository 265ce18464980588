"""The decisions a naming game recorded, as ``llm-mesa fit`` weighs them: what each speaker saw, what it said.

Read from the ``agents`` table: per agent and round the name it holds after the round
(round 0: the one drawn), its ``partner`` (none: it did not speak) and ``said``, the name its
message was read as (none: it named nothing). A speaker's decision in round ``r`` is what it
said; what it saw is its name after round ``r - 1`` and its memory, rebuilt as the game keeps
it: the last K names its partners were read as saying, before round ``r`` (K the game's memory).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any

import pandas as pd

from .model import validate
from .observation import NamingObservation, lexicon


def _text(value: Any) -> str | None:
    return None if value is None or pd.isna(value) or str(value).strip() == "" else str(value)


def _whole(value: Any) -> int | None:
    text = _text(value)
    return None if text is None else int(float(text))


def observed(tables: Mapping[str, pd.DataFrame], parameters: Mapping[str, Any],
             seed: int) -> Iterator[tuple[int, int, NamingObservation, str | None]]:
    """``(agent, round, observation, name said)`` for every speaker of every round of one game."""
    p = validate({k: v for k, v in parameters.items() if k != "seed"})
    names = lexicon(p["lexicon_size"])
    agents = tables["agents"]
    rows = sorted(zip((int(r) for r in agents["round"]), (int(a) for a in agents["agent"]), map(_text, agents["name"]),
                      map(_whole, agents["partner"]), map(_text, agents["said"])), key=lambda row: row[:2])
    by_round: dict[int, list[tuple]] = {}
    for row in rows:
        by_round.setdefault(row[0], []).append(row)
    memories: dict[int, deque[str]] = {}
    held: dict[int, str | None] = {}
    for r in sorted(by_round):
        said = {agent: own for _, agent, _, _, own in by_round[r]}
        heard: dict[int, str | None] = {}
        for _, agent, _, partner, own in by_round[r]:
            memory = memories.setdefault(agent, deque(maxlen=p["memory"]))
            if r > 0 and partner is not None and held.get(agent) is not None:
                yield agent, r, NamingObservation(agent, r, held[agent], p["mode"], names, tuple(memory)), own
            if partner is not None:
                heard[agent] = said.get(partner)
        for agent, name in heard.items():
            if name is not None and p["memory"] > 0:
                memories[agent].append(name)
        held.update((agent, name) for _, agent, name, _, _ in by_round[r])
