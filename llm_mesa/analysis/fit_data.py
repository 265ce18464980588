"""What ``llm-mesa fit`` reads: the recorded decisions of each policy in each condition of RUNS.

RUNS is any mix of, all of one game:

* a sweep's ``--out`` played with ``--tables agents`` (each policy of its grid, per condition);
* a run folder (``llm-mesa GAME --out DIR``): one game, its policy;
* a lab session's run folder (``llm-mesa lab --out DIR``): its seats are one policy, ``people``
  (their missed answers, the game's default action, left out), every other agent its own;
* a CSV file of people's decisions in the game's agents-table layout (``read_csv``;
  docs/fit.md): policy ``people`` unless a ``policy`` column says otherwise.

The game's ``PolicyCatalog.observed`` reader turns one game's tables into ``(agent, round,
observation, decision)``; decisions a table marks as failed (an LLM answer that could not be
read: the game played its fallback) or timed out are no decisions of the policy and are left
out. Runs, sessions and CSV games of equal parameters pool into one condition.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from llm_mesa import declared
from llm_mesa.analysis.checks import AnalysisError
from llm_mesa.analysis.fit_cells import PEOPLE, Cell, agent_column, decisions_of
from llm_mesa.analysis.fit_csv import csv_cells
from llm_mesa.games import Game

__all__ = ["read_runs"]

#: what names one game of a sweep in its tables
_SWEEP_KEY = ["condition", "policy", "seed"]


def _frames_by_game(frame: pd.DataFrame) -> dict[tuple, pd.DataFrame]:
    return {tuple(k): g for k, g in frame.groupby(_SWEEP_KEY, sort=False)} if not frame.empty else {}


def _sweep_cells(path: Path) -> tuple[Game, list[Cell]]:
    from llm_mesa.analysis.sweep_data import open_sweep
    from llm_mesa.registry import get_game
    from llm_mesa.sweep import read_sweep

    sweep = open_sweep(path)
    game = get_game(sweep.game)
    wanted = {t.name for t in game.tables} - {"rounds", "transcript"}  # what an observation may need
    kept = sorted(n for n in wanted if (path / n).is_dir()) if path.is_dir() else sorted(wanted)
    tables = {name: _frames_by_game(read_sweep(path, name)) for name in kept}
    if not tables.get("agents"):
        raise AnalysisError(f"{path} kept no agents table, where fit reads the decisions; play the sweep again with "
                            f"--tables agents (into a new --out)")
    conditions = (sweep.manifest.get("grid") or {}).get("conditions") or {}
    cells: dict[tuple[str, str], Cell] = {}
    rows: dict[tuple[str, str], list[dict]] = {}
    for row in sweep.games.to_dict("records"):
        condition, policy, seed = str(row["condition"]), str(row["policy"]), int(row["seed"])
        key = (condition, policy, seed)
        if key not in tables["agents"]:
            continue
        parameters = game.parameters.validate(conditions.get(condition, {}), complete=True)
        cell = cells.setdefault((condition, policy), Cell(game, condition, parameters, policy,
                                                          given=dict(conditions.get(condition, {}))))
        own = {name: frames[key] for name, frames in tables.items() if key in frames}
        cell.pairs += [(o, d) for _, _, o, d in decisions_of(game, own, parameters, seed, f"{path} ({condition}, {seed})")]
        rows.setdefault((condition, policy), []).append(row)
    for key, cell in cells.items():
        cell.games = pd.DataFrame(rows[key])
    return game, list(cells.values())


def _run_cells(path: Path) -> tuple[Game, list[Cell]]:
    from llm_mesa.registry import get_game
    from llm_mesa.views.runs import ReplayError, read_manifest, run_directory

    try:
        path, manifest = run_directory(path)
    except ReplayError as exc:
        raise AnalysisError(str(exc)) from None
    game = get_game(str(manifest["kind"]))
    summary = read_manifest(path / "summary.json") if (path / "summary.json").is_file() else {}
    seed = next((s for s in (manifest.get("seed"), summary.get("seed"), (manifest.get("parameters") or {}).get("seed"))
                 if isinstance(s, int) and not isinstance(s, bool)), None)
    if not isinstance(seed, int):
        raise AnalysisError(f"{path}: its manifest names no seed, from which fit rebuilds the game; write the run again")
    tables = {p.stem: pd.read_parquet(p) for p in sorted(path.glob("*.parquet"))}
    if "agents" not in tables:
        raise AnalysisError(f"{path} has no agents.parquet, where fit reads the decisions; write the run again with --out")
    parameters = game.parameters.validate({k: v for k, v in (manifest.get("parameters") or {}).items()
                                           if k in game.parameters.names}, complete=True)
    policy = str(manifest.get("policy") or summary.get("policy") or summary.get("policy_spec") or "?")
    decided = decisions_of(game, tables, parameters, seed, str(path))
    games = pd.DataFrame([{**summary, "seed": seed}])
    agents = tables["agents"]
    if "lab" not in manifest or "label" not in agents.columns:
        return game, [Cell(game, declared.describe(game, parameters), parameters, policy, [(o, d) for _, _, o, d in decided], games)]
    column = agent_column(agents)
    who = dict(zip(agents[column], agents["label"].astype(str)))
    specs = dict(zip(agents[column], agents["policy"].astype(str))) if "policy" in agents.columns else {}
    seats = sorted((a for a, label in who.items() if label == "human"), key=str)
    cells = {}
    for agent, _, observation, decision in decided:
        name = PEOPLE if who.get(agent) == "human" else specs.get(agent, policy)
        mine = seats if name == PEOPLE else [a for a in who if a not in seats]
        cell = cells.setdefault(name, Cell(game, declared.describe(game, parameters), parameters, name, games=games,
                                           others=policy if name == PEOPLE else PEOPLE, places={seed: mine}))
        cell.pairs.append((observation, decision))
    return game, list(cells.values())


def _pooled(cells: Iterable[Cell]) -> list[Cell]:
    """Cells of equal condition, parameters and policy as one (several runs or sessions of one design)."""
    out: dict[tuple[str, str, str], Cell] = {}
    for cell in cells:
        key = (cell.condition, json.dumps(cell.parameters, sort_keys=True, default=str), cell.policy)
        held = out.get(key)
        if held is None:
            out[key] = cell
            continue
        held.pairs += cell.pairs
        held.games = pd.concat([held.games, cell.games], ignore_index=True)
        if held.places is not None and cell.places is not None:
            held.places.update(cell.places)
    labels: dict[str, set[str]] = {}
    for condition, parameters, _ in out:
        labels.setdefault(condition, set()).add(parameters)
    for (condition, parameters, _), cell in out.items():  # one label, several designs: numbered apart
        if len(labels[condition]) > 1:
            cell.condition = f"{condition} #{sorted(labels[condition]).index(parameters) + 1}"
    return list(out.values())


def read_runs(paths: Sequence[str | os.PathLike[str]], game: str | None = None,
              edges: str | os.PathLike[str] | None = None) -> tuple[Game, list[Cell]]:
    """The game RUNS played and the recorded decisions of each of its policies, per condition."""
    if not paths:
        raise AnalysisError("no RUNS given; pass a sweep (--tables agents), a run folder, a lab session or a CSV file")
    found: list[tuple[Game, list[Cell]]] = []
    for given in paths:
        path = Path(given)
        if path.suffix.lower() == ".csv":
            found.append(csv_cells(path, game, edges))
        elif path.is_dir() and (path / "rounds.parquet").is_file():
            found.append(_run_cells(path))
        elif path.exists() or Path(str(path) + ".parts").exists():
            found.append(_sweep_cells(path))
        else:
            raise AnalysisError(f"no runs at {str(path)!r}; pass a sweep's --out, a run folder (--out of llm-mesa GAME "
                                "or llm-mesa lab) or a CSV file of decisions")
    games = {g.name for g, _ in found}
    if len(games) > 1:
        raise AnalysisError(f"RUNS mix games ({', '.join(sorted(games))}); fit one game's runs at a time")
    cells = _pooled(c for _, cs in found for c in cs)
    if not any(c.pairs for c in cells):
        raise AnalysisError(f"no recorded decision in {', '.join(map(str, paths))}; a sweep must keep --tables agents")
    return found[0][0], [c for c in cells if c.pairs]
