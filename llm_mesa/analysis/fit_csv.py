"""People's own decisions as a CSV file, read for ``llm-mesa fit`` and the report (the layout: docs/fit.md).

One row per agent and round, in the game's agents-table layout (``llm-mesa sweep --game GAME
--list`` names its columns): ``seed`` and ``round`` (whole numbers; round 0 is the start, each
game needs it), the game's agent column (``node`` or ``agent``) and the columns its decisions
are read from (a colour, a preference: docs/fit.md). Optional: ``game`` (else
``--game``), ``condition`` (a name), ``policy`` (default ``people``), any of the game's
parameters (fixed within a condition; the rest take their defaults), ``failed``/``timeout``
(true: the decision was not the person's). The network: ``--edges FILE.csv`` (``seed``,
``source``, ``target``, and ``condition`` when the file has conditions), else the game's own
network, rebuilt from the parameters and seed. Every fault is one line that names the fix.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from llm_mesa import declared
from llm_mesa.analysis.checks import AnalysisError
from llm_mesa.analysis.fit_cells import PEOPLE, Cell, decisions_of
from llm_mesa.errors import LlmMesaError
from llm_mesa.games import Game

__all__ = ["csv_cells", "read_table"]

_LAYOUT = "see docs/fit.md for the layout"


def read_table(path: Path, what: str) -> pd.DataFrame:
    """A CSV file as text columns, refused in one line when it cannot be read or holds no row."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=True, skipinitialspace=True)
    except FileNotFoundError:
        raise AnalysisError(f"no file {str(path)!r}; give the CSV file of {what}") from None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise AnalysisError(f"{path} cannot be read as a CSV file of {what} ({str(exc).splitlines()[0]}); {_LAYOUT}") \
            from None
    frame.columns = [str(c).strip() for c in frame.columns]
    if frame.empty:
        raise AnalysisError(f"{path} holds no rows of {what}; {_LAYOUT}")
    return frame


def _whole(frame: pd.DataFrame, column: str, path: Path) -> pd.Series:
    if column not in frame.columns:
        raise AnalysisError(f"{path} has no {column!r} column; every row needs its game's seed and round ({_LAYOUT})")
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = values.isna() | (values < 0) | (values % 1 != 0)
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0])
        raise AnalysisError(f"{path} row {row + 2}: {column} is {frame[column].iloc[row]!r}; give a whole number from 0")
    return values.astype(int)


def _game(frame: pd.DataFrame, given: str | None, path: Path) -> Game:
    from llm_mesa.registry import get_game

    named = sorted(frame["game"].dropna().unique()) if "game" in frame.columns else []
    if len(named) > 1:
        raise AnalysisError(f"{path} holds several games ({', '.join(named)}); give one game's decisions a file")
    name = given or (named[0] if named else None)
    if not name:
        raise AnalysisError(f"{path} names no game; add a 'game' column or pass --game GAME")
    if named and given and named[0] != given:
        raise AnalysisError(f"{path} is a {named[0]} file but --game says {given}; drop one of them")
    return get_game(name)


def _parameters(frame: pd.DataFrame, game: Game, condition: str, path: Path) -> dict[str, Any]:
    given = {}
    for column in (c for c in frame.columns if c in game.parameters.names):
        values = frame[column].dropna().unique()
        if len(values) > 1:
            raise AnalysisError(f"{path}: {column} takes several values ({', '.join(map(str, values[:3]))}) in condition "
                                f"{condition!r}; a condition's parameters are fixed: tell the designs apart with a "
                                "'condition' column")
        if len(values):
            given[column] = values[0]
    try:
        return game.parameters.validate(given, complete=True)
    except LlmMesaError as exc:
        raise AnalysisError(f"{path}{f', condition {condition!r}' if condition else ''}: {exc}") from None


def _edges(edges: str | os.PathLike[str] | None) -> pd.DataFrame | None:
    if edges is None:
        return None
    path = Path(edges)
    frame = read_table(path, "a network's edges")
    for column in ("seed", "source", "target"):
        frame[column] = _whole(frame, column, path) if column == "seed" else _integers(frame, column, path)
    return frame


def _integers(frame: pd.DataFrame, column: str, path: Path) -> pd.Series:
    if column not in frame.columns:
        raise AnalysisError(f"{path} has no {column!r} column; an edges file needs seed, source and target")
    return _whole(frame, column, path)


def csv_cells(path: Path, game_name: str | None, edges: str | os.PathLike[str] | None) -> tuple[Game, list[Cell]]:
    """Cells of a CSV file's decisions: one per condition and policy."""
    frame = read_table(path, "decisions")
    game = _game(frame, game_name, path)
    frame["seed"], frame["round"] = _whole(frame, "seed", path), _whole(frame, "round", path)
    frame["policy"] = frame["policy"].fillna(PEOPLE) if "policy" in frame.columns else PEOPLE
    if "condition" not in frame.columns:
        frame["condition"] = None
    network = _edges(edges)
    cells: dict[tuple[str, str], Cell] = {}
    for condition, rows in frame.groupby(frame["condition"].fillna(""), sort=False):
        parameters = _parameters(rows, game, condition, path)
        label = condition or declared.describe(game, parameters)
        for seed, played in rows.groupby("seed", sort=True):
            if not (played["round"] == 0).any():
                raise AnalysisError(f"{path}: game {seed} of condition {label!r} has no round 0 (the start, from which "
                                    "round 1 was decided); add its rows")
            tables = {"agents": played.reset_index(drop=True)}
            if network is not None:
                mine = network[network["seed"] == seed]
                if condition and "condition" in network.columns:
                    mine = mine[mine["condition"] == condition]
                if mine.empty:
                    raise AnalysisError(f"{edges} has no edge of game {seed}{f' in {condition!r}' if condition else ''}; "
                                        "give every game's network, or no --edges to rebuild it from the seed")
                tables["edges"] = mine.reset_index(drop=True)
            column = next((c for c in ("agent", "node") if c in played.columns), None)
            duplicated = played.duplicated(["round", column]) if column else pd.Series(False)
            if duplicated.any():
                row = played[duplicated].iloc[0]
                raise AnalysisError(f"{path}: agent {row[column]} has two rows in round {row['round']} of game {seed}; "
                                    "keep one row per agent and round")
            policy_of = dict(zip(played[column], played["policy"])) if column else {}
            for agent, _, observation, decision in decisions_of(game, tables, parameters, int(seed), str(path)):
                policy = str(policy_of.get(str(agent), policy_of.get(agent, PEOPLE)))
                cells.setdefault((label, policy), Cell(game, label, parameters, policy)).pairs.append((observation, decision))
    return game, list(cells.values())
