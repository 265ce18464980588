"""What a page draws of one round, as plain values: the round's snapshot and its status lines.

A module of its own so that every view module can name them without importing the package that
draws them (``llm_mesa.views``, which imports those modules).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from llm_mesa.views.pictures import Picture


@dataclass(frozen=True)
class Banner:
    """A one-line status: ``kind`` is ``done``, ``warning``, ``info`` or ``error``; ``tag`` a CSS class."""

    kind: str
    text: str
    tag: str = ""


@dataclass(frozen=True)
class Snapshot:
    """Everything a page draws of one round, read at once (under the page's lock for a live game)."""

    round_number: int
    label: str
    running: bool
    rounds: pd.DataFrame
    picture: Picture | None
    banners: tuple[Banner, ...] = ()
    agents: int = 0  # how many agents the panel selects among (0: no panel)
    selected: int = 0  # the selected agent's place among them (0..agents-1)
    names: tuple = ()  # each agent's name in the game's tables (what the panel and tooltips call it)
    agent: Mapping[str, str] = field(default_factory=dict)
    messages: pd.DataFrame | None = None
    messages_title: str = "Messages"


__all__ = ["Banner", "Snapshot"]
