"""A study written down once: an experiment file (TOML) that ``llm-mesa sweep FILE`` plays.

One study a file, flat in ``experiments/``::

    game = "GAME"                       # which game (required)
    description = "..."                 # one line, shown in reports
    repetitions = 30                    # games per cell (required)
    seed = 0                            # the study's seed: every game's seed derives from it
    conditions = ["study"]              # the game's named conditions or groups (default: one of defaults)
    policies = ["rules"]                # specs, configuration names or groups; or a table label = spec
    tables = ["agents"]                 # per-game tables to keep besides the summary row

    [parameters]                        # fixed for every game (any game parameter)
    NAME = VALUE

    [axes]                              # crossed with every condition (any game parameter)
    n = [12, 24]

    [llm]                               # the endpoint and sampling of "llm" policies
    base_url = "http://127.0.0.1:8000/v1"
    model = "qwen2.5-3b"
    temperature = 0.7

    [budget]                            # reaching one stops the sweep in a resumable state
    max_tokens = 50_000_000
    max_cost = 100.0

    [execution]                         # how, not what: never part of a game's identity
    processes = 2
    games_in_flight = 30

Seeds derive from (condition, repetition) alone: a hash of the condition's game
parameters (those the game marks ``in_seed``), the repetition number and the study's ``seed``. So an LLM sweep and its
rule baseline play identical graphs and preferences (paired comparisons), the order
of the grid does not matter, and extending a grid changes no existing game.
Every key is checked on load: an unknown key or a bad value is one line that names
the key and its table.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_mesa.boundary import read_toml_file
from llm_mesa.errors import LlmMesaError
from llm_mesa.games import Game, GameError
from llm_mesa.llm.endpoint import ENDPOINT_OPTIONS, check_endpoint_values
from llm_mesa.registry import game_names, get_game

from .grid import build_conditions
from .options import Execution
from .output import SweepError

#: the largest repetitions per cell an experiment may ask for
MAX_REPETITIONS = 1_000_000
TOP_LEVEL = ("game", "description", "repetitions", "seed", "conditions", "policies", "tables",
             "parameters", "axes", "llm", "budget", "execution")
#: the [llm] keys: the Endpoint's fields (one list with the command line's endpoint options)
LLM_KEYS = tuple(o.name for o in ENDPOINT_OPTIONS)
BUDGET_KEYS = ("max_tokens", "max_cost")
EXECUTION_KEYS = ("processes", "games_in_flight", "batch_size", "executor")


class ExperimentError(SweepError):
    """An experiment file that cannot be played as written; the message names the key and the fix."""


def derived_seed(parameters: Mapping[str, Any], repetition: int, study_seed: int = 0) -> int:
    """The seed of one game: from its condition's parameters and its repetition alone.

    63 bits of SHA-256 over the canonical JSON of the parameters, the repetition and
    the study's seed; no policy, model or grid position enters it.
    """
    text = json.dumps({"parameters": dict(parameters), "repetition": int(repetition), "study": int(study_seed)},
                      sort_keys=True, default=str)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


class DerivedSeeds(Sequence[int]):
    """One condition's seeds, ``derived_seed(parameters, r, study_seed)`` for each repetition ``r``,
    computed when read. Distinct in practice: 63-bit hashes, no two equal among millions."""

    def __init__(self, parameters: Mapping[str, Any], repetitions: int, study_seed: int = 0) -> None:
        self.parameters, self.repetitions, self.study_seed = dict(parameters), repetitions, study_seed

    def __len__(self) -> int:
        return self.repetitions

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.repetitions))]
        if not -self.repetitions <= index < self.repetitions:
            raise IndexError(index)
        return derived_seed(self.parameters, index % self.repetitions, self.study_seed)

    @property
    def derivation(self) -> str:
        """What the seeds derive from: two conditions' seeds are alike exactly when this is."""
        return json.dumps({"parameters": self.parameters, "study": self.study_seed}, sort_keys=True, default=str)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and len(other) == len(self) and list(other) == list(self)

    def __repr__(self) -> str:
        return f"DerivedSeeds({self.repetitions} repetitions, study seed {self.study_seed})"


@dataclass
class Experiment:
    """A validated experiment file."""

    name: str
    game: Game
    description: str
    repetitions: int
    seed: int
    conditions: dict[str, dict[str, Any]]
    policies: dict[str, str]
    tables: list[str]
    llm: dict[str, Any] = field(default_factory=dict)
    budget: dict[str, float] = field(default_factory=dict)
    execution: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None

    def seeds(self) -> dict[str, DerivedSeeds]:
        """Each condition's seeds, one per repetition (see ``derived_seed``), derived when read:
        a dry run of millions of games counts them without deriving one. Parameters the game marks
        ``in_seed=False`` stay out of them."""
        def seeded(parameters: dict[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in parameters.items() if k not in self.game.parameters or self.game.parameters[k].in_seed}

        return {name: DerivedSeeds(seeded(parameters), self.repetitions, self.seed)
                for name, parameters in self.conditions.items()}

    def record(self) -> dict[str, Any]:
        """What the manifest keeps of the file: where it was, what it said, and a hash of its text."""
        text = self.path.read_bytes() if self.path is not None and self.path.exists() else b""
        return {"name": self.name, "path": None if self.path is None else str(self.path),
                "sha256": hashlib.sha256(text).hexdigest() if text else None, "description": self.description,
                "repetitions": self.repetitions, "seed": self.seed}

    @property
    def games(self) -> int:
        return len(self.conditions) * len(self.policies) * self.repetitions

    def scenarios(self) -> list[Any]:
        """The file's cells as Mesa 4 ``Scenario``s: one per condition and repetition (Mesa 4 only).

        Each holds the condition's game parameters, the game's ``seed`` (the one the
        sweep plays it with, also its ``rng``) and the ``condition``'s name;
        ``scenario_id`` is the condition's place in the file, ``replication_id`` the
        repetition. ``llm_mesa.play.build_scenario(game, scenario, policy)`` builds the game the sweep plays.
        """
        from llm_mesa.mesa_versions import scenario_class

        scenario = scenario_class()
        seeds = self.seeds()
        return [scenario(rng=seed, scenario_id=index, replication_id=repetition, condition=name, seed=seed,
                         **parameters)
                for index, (name, parameters) in enumerate(self.conditions.items())
                for repetition, seed in enumerate(seeds[name])]


def _where(table: str | None, key: str) -> str:
    return f"{key!r}" if table is None else f"{key!r} in [{table}]"


def _check_keys(data: Mapping[str, Any], allowed: tuple[str, ...], table: str | None) -> None:
    for key in data:
        if key not in allowed:
            raise ExperimentError(f"unknown key {_where(table, key)}; allowed: {', '.join(allowed)}")


def _table(data: Mapping[str, Any], name: str, allowed: tuple[str, ...] | None = None) -> dict[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, Mapping):
        raise ExperimentError(f"{name!r} must be a table ([{name}]), not {type(value).__name__}")
    if allowed is not None:
        _check_keys(value, allowed, name)
    return dict(value)


def _positive_number(value: Any, key: str, table: str | None, integer: bool = False) -> Any:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    if ok and integer:
        ok = float(value).is_integer()
    if not ok:
        kind = "a positive whole number" if integer else "a positive finite number"
        raise ExperimentError(f"{_where(table, key)} must be {kind} (got {value!r})")
    return int(value) if integer else float(value)


def _strings(value: Any, key: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ExperimentError(f"{key!r} must be a list of names, e.g. {key} = [\"...\"]")
    return list(value)


def parse_experiment(data: Mapping[str, Any], name: str = "experiment", path: Path | None = None) -> Experiment:
    """Validate a parsed experiment file (see the module doc for its keys)."""
    _check_keys(data, TOP_LEVEL, None)
    game_name = data.get("game")
    if not isinstance(game_name, str):
        raise ExperimentError(f"the file needs a top-level game = \"NAME\" (one of: {', '.join(game_names())})")
    try:
        game = get_game(game_name)
    except GameError as exc:
        raise ExperimentError(str(exc)) from None
    if "repetitions" not in data:
        raise ExperimentError("the file needs repetitions = K (games per cell, e.g. 30)")
    repetitions = _positive_number(data["repetitions"], "repetitions", None, integer=True)
    if repetitions > MAX_REPETITIONS:
        raise ExperimentError(f"'repetitions' = {repetitions:,} is above the limit of {MAX_REPETITIONS:,}")
    seed = data.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ExperimentError(f"'seed' must be a non-negative whole number (got {seed!r})")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise ExperimentError("'description' must be a text")

    parameters = _table(data, "parameters")
    axes = _table(data, "axes")
    for key, values in axes.items():
        if not isinstance(values, list) or not values:
            raise ExperimentError(f"{_where('axes', key)} must be a non-empty list of values, e.g. {key} = [1, 2]")
    for table, values in (("parameters", parameters), ("axes", axes)):
        for key in values:
            if key not in game.parameters:
                raise ExperimentError(f"unknown key {_where(table, key)}: not a parameter of the {game.name} game; "
                                      f"choose among: {', '.join(game.parameters.names)}")
    conditions_selection = _strings(data["conditions"], "conditions") if "conditions" in data else None
    try:
        conditions = build_conditions(game, conditions_selection, axes, parameters)
    except (SweepError, GameError) as exc:
        raise ExperimentError(str(exc)) from None

    raw_policies = data.get("policies", ["rules"])
    if isinstance(raw_policies, Mapping):
        if not all(isinstance(v, str) for v in raw_policies.values()):
            raise ExperimentError("[policies] maps a label to a policy spec, e.g. mi = \"majority-inertia:inertia=0.2\"")
        policies: Any = dict(raw_policies)
    else:
        policies = ";".join(_strings(raw_policies, "policies"))
    from .grid import resolve_policies

    resolved = resolve_policies(game, policies)

    tables = _strings(data.get("tables", []), "tables")
    kept = [t.name for t in game.tables]
    bad = sorted(set(tables) - set(kept))
    if bad:
        raise ExperimentError(f"unknown table(s) {', '.join(bad)} in 'tables'; the {game.name} game keeps: "
                              f"{', '.join(kept) or '(none: the summary row only)'}")
    llm = _table(data, "llm", LLM_KEYS)
    try:
        llm = check_endpoint_values(llm, "[llm]")
    except LlmMesaError as exc:
        raise ExperimentError(str(exc)) from None
    budget = _table(data, "budget", BUDGET_KEYS)
    for key, value in budget.items():
        budget[key] = _positive_number(value, key, "budget", integer=key == "max_tokens")
    execution = _table(data, "execution", EXECUTION_KEYS)
    for key in ("processes", "games_in_flight", "batch_size"):
        if key in execution:
            execution[key] = _positive_number(execution[key], key, "execution", integer=True)
    try:
        Execution(**execution)
    except SweepError as exc:
        raise ExperimentError(f"[execution]: {exc}") from None
    return Experiment(name=name, game=game, description=description, repetitions=repetitions, seed=seed,
                      conditions=conditions, policies={k: str(v) for k, v in resolved.items()}, tables=tables,
                      llm=llm, budget=budget, execution=execution, path=path)


def load_experiment(path: str | os.PathLike[str]) -> Experiment:
    """Read and validate an experiment file; bad input is one ``ExperimentError`` line."""
    path = Path(path)
    if not path.exists():
        raise ExperimentError(f"no experiment file {str(path)!r}; see experiments/ for examples")
    try:
        data = read_toml_file(path, "an experiment file", fix="see experiments/ for examples")
    except LlmMesaError as exc:
        raise ExperimentError(str(exc)) from None
    return parse_experiment(data, name=path.stem, path=path)


__all__ = ["DerivedSeeds", "Experiment", "ExperimentError", "derived_seed", "load_experiment", "parse_experiment"]
