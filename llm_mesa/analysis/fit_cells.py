"""What ``llm-mesa fit`` weighs, per policy and condition of RUNS: a ``Cell`` of recorded decisions and its games.

One game's decisions come from the game's ``PolicyCatalog.observed`` reader (``decisions_of``);
those the tables mark as not the policy's own (a failed LLM answer, for which the game played
its fallback; a person's missed answer, a ``timeout``) are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from llm_mesa.analysis.checks import AnalysisError
from llm_mesa.game_hooks import loaded
from llm_mesa.games import Game

__all__ = ["PEOPLE", "Cell", "agent_column", "decisions_of"]

#: the policy name of people's decisions (a lab's seats, a CSV's rows)
PEOPLE = "people"
#: the columns that say a row's decision was not the policy's own
_NOT_DECIDED = ("failed", "timeout")


@dataclass
class Cell:
    """The recorded decisions of one policy of RUNS in one condition, and the games they come from.

    ``games``: one row per game (its seed and summary row: what the check compares); ``others``
    and ``places``: for decisions of some agents of a game (a lab's seats, a CSV's people), the
    policy of the other agents and, per seed, the agents this policy played (where the check
    plays a rule in their place; None: every agent was this policy's).
    """

    game: Game
    condition: str
    parameters: dict[str, Any]
    policy: str
    pairs: list[tuple[Any, Any]] = field(default_factory=list)
    games: pd.DataFrame = field(default_factory=pd.DataFrame)
    others: str | None = None
    places: dict[int, list[Any]] | None = None
    given: dict[str, Any] | None = None  # the parameters the condition names (a sweep's grid); None: those not default

    def condition_json(self) -> dict[str, Any]:
        """The condition's name and its parameters: as the sweep's grid gives them, else those not the game's defaults."""
        defaults = self.game.parameters.defaults()
        given = self.given if self.given is not None else \
            {k: v for k, v in self.parameters.items() if defaults.get(k) != v}
        return {"name": self.condition, **given}


def _reader(game: Game):
    if not game.policies.observed:
        raise AnalysisError(f"the {game.name} game does not say where its decisions are recorded "
                            "(PolicyCatalog.observed); fit one of the games that does")
    return loaded(game.policies.observed)  # a value, or "module:function"


def agent_column(frame: pd.DataFrame) -> str:
    return next((c for c in ("agent", "node") if c in frame.columns), "agent")


def _not_decided(agents: pd.DataFrame) -> set[tuple[Any, int]]:
    """(agent, round) of rows whose decision the game made for the agent (a failed answer, a missed one)."""
    column = agent_column(agents)
    out: set[tuple[Any, int]] = set()
    for name in _NOT_DECIDED:
        if name in agents.columns:
            marked = agents[name].map(lambda v: not pd.isna(v) and str(v).strip().lower() not in ("false", "0", "", "none"))
            rows = agents[marked.astype(bool)]
            out.update(zip(rows[column], rows["round"].astype(int)))
    return out


def decisions_of(game: Game, tables: Mapping[str, pd.DataFrame], parameters: Mapping[str, Any], seed: int,
                 where: str) -> list[tuple[Any, int, Any, Any]]:
    """One game's ``(agent, round, observation, decision)``, the decisions the game made for its agents left out."""
    skip = _not_decided(tables["agents"])
    try:
        return [(a, r, o, d) for a, r, o, d in _reader(game)(tables, parameters, seed) if (a, r) not in skip]
    except KeyError as exc:
        have = ", ".join(map(str, tables["agents"].columns))
        raise AnalysisError(f"{where}: no column {exc} in the agents table, which the {game.name} game reads its "
                            f"decisions from (it has: {have}); add it") from None
