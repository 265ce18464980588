"""A sweep's design, resolved and checked once: what the engine plays.

``SweepSpec`` is the one value that passes a sweep from whoever describes it (the
command line, an experiment file, a script calling ``run_sweep``) to the engine:
the game, its conditions with validated parameters, each condition's seeds, the
policies (rule specs, endpoints, mixed populations), the tables to keep, how the
games are executed and recorded, the budget, and what the manifest should say of
where the design came from. Building one checks everything that can be checked
before a game is played; the engine then only plays.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_mesa.games import Game
from llm_mesa.registry import default_game, get_game

from .columns import SweepError
from .experiment import DerivedSeeds
from .grid import build_conditions, plan_policy, resolve_policies, resolve_seeds, same_games
from .options import MAX_GAMES, MAX_WORKERS, Execution

STORE_MODES = ("auto", "record", "replay", "replay-fill", "off")


@dataclass(frozen=True)
class SweepSpec:
    """Every game of a sweep and how to play it (build with ``SweepSpec.of``)."""

    game: Game
    out: Path
    conditions: dict[str, dict[str, Any]]
    seeds: dict[str, list[int]]
    #: label -> (spec, endpoint or population or None): what each policy of the grid stands for
    policies: dict[str, tuple[str, Any]]
    tables: tuple[str, ...] = ()
    execution: Execution = field(default_factory=Execution)
    store: Path | None = None
    store_mode: str = "auto"
    budget: Mapping[str, float] = field(default_factory=dict)
    experiment: Mapping[str, Any] | None = None
    extend: bool = False
    command: tuple[str, ...] = ()
    compact: bool = True
    check_endpoints: bool = True
    #: the seeds as given, when one list serves every condition (the manifest keeps it so)
    shared_seeds: list[int] | None = None

    @classmethod
    def of(cls, conditions: str | Sequence[str] | Mapping[str, Mapping[str, Any]] | None,
           policies: str | Sequence[str] | Mapping[str, Any],
           seeds: int | str | Iterable[int] | Mapping[str, Sequence[int]],
           out: str | os.PathLike[str], *, game: str | Game | None = None,
           axes: Sequence[str] | Mapping[str, Sequence[Any]] = (), fixed: Mapping[str, Any] | None = None,
           tables: Sequence[str] = (), endpoint: Any = None, execution: Execution | None = None,
           store: str | os.PathLike[str] | None = None, store_mode: str = "auto",
           budget: Mapping[str, float] | None = None, **rest: Any) -> SweepSpec:
        """Resolve and check a sweep's design (see ``run_sweep`` for the arguments)."""
        game = game if isinstance(game, Game) else get_game(game) if game else default_game(option="game=")
        known = {t.name: t for t in game.tables}
        bad = sorted(set(tables) - set(known))
        if bad:
            raise SweepError(f"unknown table(s) {', '.join(bad)} of the {game.name} game; choose among: "
                             f"{', '.join(known) or '(none: the summary row only)'}")
        wanted = list(tables)
        for name in tables:
            wanted += [t for t in known[name].needs if t in known]
        if store_mode not in STORE_MODES:
            raise SweepError(f"unknown store mode {store_mode!r}; choose one of: {', '.join(STORE_MODES)}")
        built = build_conditions(game, conditions, axes, fixed)
        planned = {label: plan_policy(game, label, target, endpoint)
                   for label, target in resolve_policies(game, policies).items()}
        shared = None
        if isinstance(seeds, Mapping):
            missing = sorted(set(built) - set(seeds))
            if missing:
                raise SweepError(f"no seeds given for condition(s) {', '.join(missing)}")
            seeds_of = {c: seeds[c] if isinstance(seeds[c], DerivedSeeds) else resolve_seeds(list(seeds[c]))
                        for c in built}
        else:
            shared = resolve_seeds(seeds)
            seeds_of = dict.fromkeys(built, shared)
        _refuse_same_games(game, built, seeds_of, rest.get("experiment"))
        return cls(game=game, out=Path(out), conditions=built, seeds=seeds_of, policies=planned,
                   tables=tuple(dict.fromkeys(wanted)), execution=execution or Execution(),
                   store=None if store is None else Path(store), store_mode=store_mode, budget=_budget(budget),
                   shared_seeds=shared, **rest)

    @property
    def endpoints(self) -> dict[str, Any]:
        """Label -> endpoint (or population) of the LLM policies."""
        return {label: ep for label, (_, ep) in self.policies.items() if ep is not None}

    @property
    def games_total(self) -> int:
        return sum(len(s) for s in self.seeds.values()) * len(self.policies)

    def check_playable(self) -> None:
        """Refuse a grid above ``MAX_GAMES`` before a game is listed (a dry run counts any grid)."""
        total = self.games_total
        if total > MAX_GAMES:
            raise SweepError(f"this sweep has {total:,} games, above the limit of {MAX_GAMES:,} games a sweep; "
                             "split it (fewer repetitions, seeds, conditions or policies a sweep; --dry-run "
                             "counts any size)")


def _refuse_same_games(game: Game, conditions: Mapping[str, Mapping[str, Any]], seeds_of: Mapping[str, Sequence[int]],
                       experiment: Mapping[str, Any] | None) -> None:
    """Refuse, before any call, a grid in which two condition names are one game (``grid.same_games``).

    Why refuse rather than play each game once: the names are the researcher's design. Playing one of
    them under both names would present one game as two conditions' results; playing it under one name
    would drop a condition from the tables without a word. Either way the analysis would compare a
    condition with itself. The line names the clash and a grid that keeps one name of each.
    """
    groups = same_games(game, conditions, seeds_of)
    if not groups:
        return
    def listed(names: Sequence[str]) -> str:
        return ", ".join(names[:-1]) + " and " + names[-1]

    first, *others = groups
    clash = f"conditions {listed(first)} are one game"
    if others:
        clash += f" (so are {'; '.join(listed(g) for g in others[:3])}{'; and more' if len(others) > 3 else ''})"
    dropped = {name for group in groups for name in group[1:]}
    kept = [name for name in conditions if name not in dropped]
    where = f"in {experiment['path']}'s conditions" if experiment and experiment.get("path") else \
        f"with --conditions {','.join(kept)}" if len(kept) <= 12 else "with --conditions"
    raise SweepError(f"{clash} once the parameters given apply (equal parameters and seeds): keep one "
                     f"name of each {where}, or change the parameter that makes them equal")


def _budget(budget: Mapping[str, float] | None) -> dict[str, float]:
    checked = {}
    for key, value in (budget or {}).items():
        if key not in ("max_tokens", "max_cost"):
            raise SweepError(f"unknown budget {key!r}; use max_tokens or max_cost")
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < float("inf")):
            raise SweepError(f"--{key.replace('_', '-')} must be a positive finite number (got {value})")
        checked[key] = float(value)
    return checked


def game_of(name: str | None) -> Game:
    """The game a sweep plays: the one named, or the only one installed."""
    return get_game(name) if name else default_game()


__all__ = ["Execution", "MAX_GAMES", "MAX_WORKERS", "STORE_MODES", "SweepSpec", "game_of"]
