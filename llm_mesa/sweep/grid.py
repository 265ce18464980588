"""A sweep's grid: conditions x axes x policies x seeds, each named so it can resume.

A *condition* is a name and a set of game parameters. It comes from the game's
named conditions (``--conditions``), crossed with any axes given as
``--set NAME=V1,V2`` (validated against the game's one parameter definition),
so ``--conditions study --set n=12,24`` names ``schema-5|n=12`` and so on.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llm_mesa import declared
from llm_mesa.games import Game
from llm_mesa.llm.dialects import endpoint_manifest
from llm_mesa.llm.endpoint import shared_concurrency
from llm_mesa.parameters import ParameterError
from llm_mesa.policy import make_policy, parse_policy_spec

from .output import SweepError

#: a sweep of more seeds per cell than this is refused before anything runs
MAX_SEEDS = 1_000_000
#: the most conditions (named conditions x axis values) one grid may cross into
MAX_CONDITIONS = 100_000
#: what an LLM spec may say about where and how calls are made (not part of its label)
TRANSPORT_FIELDS = ("base_url", "api_key_env", "concurrency", "timeout", "max_attempts", "max_answer_bytes", "price")


def build_conditions(game: Game, selection: str | Sequence[str] | Mapping[str, Mapping[str, Any]] | None,
                     axes: Sequence[str] | Mapping[str, Sequence[Any]] = (),
                     options: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """{condition name: validated game parameters} for the named conditions crossed with the axes."""
    try:
        if isinstance(selection, Mapping):
            base = {str(k): dict(v) for k, v in selection.items()}
        elif selection:
            base = declared.resolve_conditions(game, selection)
        else:
            base = {"": {}}
        if isinstance(axes, Mapping):
            parsed = {name: [game.parameters[name].convert(v) for v in values] for name, values in axes.items()}
        else:
            parsed = dict(game.parameters.parse_axis(text) for text in axes)
        fixed = game.parameters.validate(dict(options or {}))
        cells = len(base) * math.prod(len(values) for values in parsed.values())
        if cells > MAX_CONDITIONS:
            raise SweepError(f"the grid crosses into {cells:,} conditions, above the limit of {MAX_CONDITIONS:,}; "
                             "give fewer values to the axes, or split the sweep")
        out: dict[str, dict[str, Any]] = {}
        for name, parameters in base.items():
            # a library caller may pass model keywords beyond the parameter definition
            # (explicit preferences, a graph): the game's check builds the model with them
            extra = {k: v for k, v in parameters.items() if k not in game.parameters}
            known = {k: v for k, v in parameters.items() if k in game.parameters}
            for values in itertools.product(*parsed.values()):
                point = dict(zip(parsed, values))
                label = "|".join(filter(None, [name, ",".join(f"{k}={v}" for k, v in point.items())])) or "default"
                out[label] = {**game.parameters.validate({**known, **point, **fixed}), **extra}
    except ParameterError as exc:
        raise SweepError(str(exc)) from None
    for name, parameters in out.items():
        if game.policies.parameter in parameters or "rng" in parameters or "seed" in parameters:
            raise SweepError(f"condition {name!r} sets the policy or the seed; those belong to the sweep's grid")
    return out


def same_games(game: Game, conditions: Mapping[str, Mapping[str, Any]],
               seeds_of: Mapping[str, Sequence[int]]) -> list[list[str]]:
    """Groups of conditions that are one game under several names: the same parameters once the game's
    defaults fill them in, and a seed in common (each pair would play, record and key the same calls).

    Found from the design alone, before any game is built: a sweep refuses them (``SweepSpec.of``) rather
    than pay for a game twice and then fail on its own recording.
    """
    by_parameters: dict[str, list[str]] = {}
    for name, parameters in conditions.items():
        declared = {k: v for k, v in parameters.items() if k in game.parameters}
        complete = {**game.parameters.validate(declared, complete=True),
                    **{k: v for k, v in parameters.items() if k not in game.parameters}}
        by_parameters.setdefault(json.dumps(complete, sort_keys=True, default=str), []).append(name)
    groups = []
    for names in by_parameters.values():
        while len(names) > 1:
            first, *rest = names
            same = [n for n in rest if _share_a_seed(seeds_of[first], seeds_of[n])]
            if same:
                groups.append([first, *same])
            names = [n for n in rest if n not in same]
    return groups


def _share_a_seed(a: Sequence[int], b: Sequence[int]) -> bool:
    derived = getattr(a, "derivation", None), getattr(b, "derivation", None)
    if None not in derived:  # seeds derived from a hash: alike when derived alike (none read), else distinct
        return derived[0] == derived[1] and len(a) > 0 and len(b) > 0
    return a is b or not set(a).isdisjoint(b)


def resolve_seeds(seeds: int | str | Iterable[int]) -> list[int]:
    """``30`` -> 0..29; ``"1-30"`` -> 1..30; ``"1,5,9"`` or a list as given (repeats dropped)."""
    if isinstance(seeds, bool):
        raise SweepError("seeds must be a count, a range A-B or a list of integers")
    if isinstance(seeds, str):
        text = seeds.strip()
        try:
            if "-" in text.lstrip("-") and "," not in text:
                first, _, last = text.partition("-")
                if int(last) - int(first) >= MAX_SEEDS:
                    raise SweepError(f"--seeds {seeds!r} spans more than {MAX_SEEDS:,} seeds; split the sweep")
                values = list(range(int(first), int(last) + 1))
            elif "," in text:
                values = [int(s) for s in text.split(",") if s.strip()]
            else:
                values = None
                count = int(text)
        except ValueError:
            raise SweepError(f"--seeds {seeds!r}: give a count (30), a range (1-30) or a list (1,5,9)") from None
        if values is None:
            return resolve_seeds(count)
    elif isinstance(seeds, int):
        if seeds < 1:
            raise SweepError(f"seeds must be at least 1 game per cell (got {seeds})")
        if seeds > MAX_SEEDS:
            raise SweepError(f"{seeds:,} seeds is above the limit of {MAX_SEEDS:,}; split the sweep")
        values = list(range(seeds))
    else:
        values = [int(s) for s in seeds]
    if len(values) > MAX_SEEDS:
        raise SweepError(f"{len(values):,} seeds is above the limit of {MAX_SEEDS:,}; split the sweep")
    values = list(dict.fromkeys(values))
    if not values:
        raise SweepError("no seeds given; pass e.g. --seeds 30")
    if min(values) < 0:
        raise SweepError(f"seeds must be non-negative integers (got {min(values)})")
    return values


def policy_label(spec: str) -> str:
    """The name a policy spec goes by in results.

    LLM specs keep what shapes the answers (model, sampling) and lose where and how
    calls are made (URL, key variable, concurrency, timeouts, price), so a sweep
    resumed against a moved server still finds its games.
    """
    name, kwargs = parse_policy_spec(spec)
    if name != "llm":
        return spec.strip()
    kept = {k: v for k, v in kwargs.items() if k not in TRANSPORT_FIELDS}
    return "llm" + (":" + ",".join(f"{k}={v}" for k, v in kept.items()) if kept else "")


def resolve_policies(game: Game, policies: str | Sequence[str] | Mapping[str, Any]) -> dict[str, Any]:
    """Labels and what they stand for: a rule spec, an LLM spec, or an ``Endpoint``.

    A string is ``;``-separated (specs contain commas). A group name of the game
    (``rules``) stands for its configurations; a configuration name for its spec.
    """
    if isinstance(policies, Mapping):
        return dict(policies)
    items = [p.strip() for p in (policies.split(";") if isinstance(policies, str) else policies)]
    configurations = {label: spec for group in declared.policy_groups(game).values() for label, spec in group.items()}
    chosen: dict[str, Any] = {}
    for item in items:
        if not item:
            continue
        if item in declared.policy_groups(game):
            for label, spec in declared.policy_groups(game)[item].items():
                chosen.setdefault(label, spec)
        elif item in configurations:
            chosen.setdefault(item, configurations[item])
        else:
            chosen.setdefault(policy_label(item), item)
    if not chosen:
        raise SweepError("no policies given; pass e.g. --policies rules or --policies 'majority-inertia:inertia=0.5;voter'")
    return chosen


def llm_endpoint(spec: str, base: Any = None):
    """The ``Endpoint`` an ``llm[:k=v,...]`` spec describes, on top of ``base`` (an Endpoint or None)."""
    from llm_mesa.llm.endpoint import endpoint_with_options

    return endpoint_with_options(base, parse_policy_spec(spec)[1], repr(spec))


#: how a policy spec names a mixed population: "A + B" (the agents split into equal blocks)
POPULATION_SEPARATOR = " + "


@dataclass(frozen=True)
class Population:
    """A mixed population: the game's agents split into equal blocks, in agent order, one per part.

    Each part is a rule policy spec or an ``Endpoint`` (an LLM); the SIGN study's
    6 + 6 population of two models is ``llm:model=A + llm:model=B`` at N = 12.
    """

    parts: tuple[Any, ...]

    @property
    def endpoints(self) -> tuple[Any, ...]:
        return tuple(p for p in self.parts if not isinstance(p, str))

    @property
    def concurrency(self) -> int | str:
        return shared_concurrency(e.concurrency for e in self.endpoints)

    @property
    def price(self) -> Any:
        return next((e.price for e in self.endpoints if e.price is not None), None)

    def manifest(self) -> dict[str, Any]:
        return {"population": [p if isinstance(p, str) else endpoint_manifest(p) for p in self.parts]}


def population_parts(spec: str) -> list[str]:
    """The parts of an ``A + B`` spec (one part for a plain spec)."""
    return [part.strip() for part in spec.split(POPULATION_SEPARATOR)] if POPULATION_SEPARATOR in spec else [spec]


def plan_policy(game: Game, label: str, target: Any, endpoint: Any) -> tuple[str, Any]:
    """(spec, endpoint-or-None) for one policy; checks it builds, before any game runs."""
    from llm_mesa.policy import Policy

    if isinstance(target, (list, tuple, Population)) or (isinstance(target, str) and POPULATION_SEPARATOR in target):
        parts = target.parts if isinstance(target, Population) else \
            population_parts(target) if isinstance(target, str) else tuple(target)
        if not game.policies.populations:
            raise SweepError(f"policy {label!r}: the {game.name} game plays one policy per game; mix policies "
                             "agent by agent with the game's own options (e.g. --assign)")
        planned = [plan_policy(game, label, part, endpoint) for part in parts]
        spec = POPULATION_SEPARATOR.join(s if ep is None else f"llm:model={ep.model}" for s, ep in planned)
        if all(ep is None for _, ep in planned):
            return spec, None
        return spec, Population(tuple(s if ep is None else ep for s, ep in planned))
    if isinstance(target, Policy):
        raise SweepError(f"policy {label!r}: give a spec string (or an Endpoint for LLM agents), "
                         "not a Policy object, so that worker processes can rebuild it")
    if type(target).__name__ == "Endpoint":
        return "llm", target
    spec = str(target)
    if parse_policy_spec(spec)[0] == "llm":
        return "llm", llm_endpoint(spec, endpoint)
    make_policy(spec, game)  # raises PolicyError that names the fix
    return spec, None


def policy_manifest(endpoint: Any) -> dict[str, Any]:
    """What a sweep's manifest says of an LLM policy's endpoint, or of a mixed population's parts."""
    return endpoint.manifest() if isinstance(endpoint, Population) else endpoint_manifest(endpoint)


def grid_policy_entry(spec: str, endpoint: Any) -> Any:
    if endpoint is None:
        return spec
    if isinstance(endpoint, Population):
        return {"population": [p if isinstance(p, str) else grid_policy_entry("llm", p) for p in endpoint.parts]}
    manifest = endpoint_manifest(endpoint)
    return {"llm": {k: manifest[k] for k in ("model", "sampling_params", "dialect", "prompt_mode")}}


def check_same_grid(previous: dict[str, Any] | None, grid: dict[str, Any], extend: bool) -> dict[str, Any]:
    """The grid to record: a resumed sweep's own, or (``extend``) the union of both.

    A grid that asks for games outside the one the directory was started with is
    refused unless extended on purpose, so two studies never mix in one directory.
    """
    if not previous:
        return grid
    old = previous.get("grid", {})
    old_seeds, new_seeds = old.get("seeds", []), grid["seeds"]
    if isinstance(old_seeds, list) and isinstance(new_seeds, list):
        more_seeds = bool(set(new_seeds) - set(old_seeds))
    else:
        as_map = lambda seeds, conds: seeds if isinstance(seeds, dict) else dict.fromkeys(conds, seeds)  # noqa: E731
        o, n = as_map(old_seeds, old.get("conditions", {})), as_map(new_seeds, grid["conditions"])
        more_seeds = any(set(v) - set(o.get(c, [])) for c, v in n.items())
    new = [f"condition(s) {', '.join(sorted(set(grid['conditions']) - set(old.get('conditions', {}))))}"
           if set(grid["conditions"]) - set(old.get("conditions", {})) else "",
           f"policy(ies) {', '.join(sorted(set(grid['policies']) - set(old.get('policies', {}))))}"
           if set(grid["policies"]) - set(old.get("policies", {})) else "",
           "seeds" if more_seeds else ""]
    new = [n for n in new if n]
    if not new:
        return {**old, "game": grid.get("game", old.get("game"))}
    if not extend:
        raise SweepError(f"this directory holds another grid: {'; '.join(new)} are new to it; choose a new --out "
                         "directory, or add --extend to add them to this sweep")
    merged = dict(grid)
    merged["conditions"] = {**old.get("conditions", {}), **grid["conditions"]}
    merged["policies"] = {**old.get("policies", {}), **grid["policies"]}
    if isinstance(old_seeds, list) and isinstance(new_seeds, list):
        merged["seeds"] = sorted(set(old_seeds) | set(new_seeds))
    return merged


def check_grid_unchanged(previous: dict[str, Any] | None, grid: dict[str, Any]) -> None:
    """A resumed sweep must mean the same thing by each condition and policy name."""
    if not previous:
        return
    if not str(previous.get("kind", "")).endswith("-sweep"):
        raise SweepError("this directory holds a single game's run (written by --out of a game command), not a "
                         "sweep; choose a new --out directory")
    old = previous.get("grid", {})
    if previous.get("game") != grid.get("game"):
        raise SweepError(f"this directory holds a {previous.get('game') or 'another'} sweep; choose a new --out directory")
    for section, what in (("conditions", "condition"), ("policies", "policy")):
        for name, value in grid[section].items():
            before = old.get(section, {}).get(name)
            if before is not None and json.loads(json.dumps(before, default=str)) != json.loads(json.dumps(value, default=str)):
                raise SweepError(f"{what} {name!r} was defined differently when this sweep started; "
                                 "choose a new --out directory (or restore the old definition)")
