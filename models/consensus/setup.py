"""A consensus game's set-up, shared by the Mesa model and the batched engine.

Everything before the first round: validated parameters, the graph, who prefers
which colour, the initial colours, every agent's policy, the game's key and the
layout seed, all drawn from the game's ``random.Random`` in this order (the
model's ``random``: Mesa seeds it with the game's seed). The Mesa model builds
its agents on it; the batched engine plays many of them as arrays.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

from llm_mesa.graphs import build_topology, highest_degree_nodes, normalise_graph
from llm_mesa.parameters import ParameterError
from llm_mesa.policy import Policy, make_policy
from llm_mesa.prompt_templates import FILE_PREFIX

from . import game as _game  # noqa: F401  (its catalogue names the policies built by name here, llm included)
from .parameters import KEYED_WHEN_SET, PARAMETERS
from .preferences import assign_preferences
from .prompt_variants import TEMPLATES

PolicyLike = str | Policy
Assignment = Mapping[str, PolicyLike] | Sequence[PolicyLike] | Callable[[Any, int], PolicyLike]


class ConsensusConfigError(ParameterError):
    """An impossible game configuration; the message names the fix."""


@dataclass
class GameSetup:
    """What a game is before its first round."""

    graph: nx.Graph
    topology: str
    parameters: dict[str, Any]
    preferences: list[str]
    colours: list[str]
    policies: list[Policy]
    game_key: str
    layout_seed: int


def game_setup(rng: random.Random, seed: int | None, mesa_seed: Any = None, *,
               parameters: Mapping[str, Any] | None = None, graph: nx.Graph | None = None,
               policy: PolicyLike = "majority-inertia", assign: Assignment | None = None,
               explicit_preferences: Sequence[str] | None = None, initial_colours: Sequence[str] | None = None,
               max_game_tokens: int | None = None, max_game_cost: float | None = None, model: Any = None,
               drawn: GameSetup | None = None) -> GameSetup:
    """Validate a game's parameters and draw its set-up from ``rng`` (see ``ConsensusModel``).

    ``parameters``: any of the game's ``PARAMETERS`` (the rest take their defaults);
    ``initial_colours``: one colour per node instead of the ``initial`` design.
    ``drawn``: the set-up of a game with the same seed and the same drawing
    parameters (size, topology, preference design, initial colours), whose graph,
    preferences, colours and layout seed are taken instead of drawn again.
    """
    try:
        values = PARAMETERS.validate(dict(parameters or {}), complete=True)  # the game's one parameter definition
    except ParameterError as exc:
        raise ConsensusConfigError(str(exc)) from None
    if values["assign"] and assign is None:
        from .mixing import parse_assignment

        parse_assignment(values["assign"], "assign")  # its syntax, checked before any game is played
    if values["direct_messages"] and values["communication"] == "none":
        raise ConsensusConfigError("private messages need communication local or global; add --comm local")
    if values["ring_degree"] % 2:
        raise ConsensusConfigError(f"--ring-degree {values['ring_degree']} is odd: a ring links each node to as many "
                                   "neighbours on either side, so use an even number (e.g. 4)")
    n, topology, preferences = values["n"], values["topology"], values["preferences"]
    initial: str | Sequence[str] = values["initial"] if initial_colours is None else initial_colours
    if drawn is not None and (assign is not None or graph is not None):
        raise ValueError("a drawn set-up is reused only for games without assignments or a given graph")
    if drawn is not None:
        g = drawn.graph
    else:
        g = normalise_graph(graph) if graph is not None else build_topology(topology, n, rng, ws_k=values["ring_degree"])
    size = g.number_of_nodes()
    parameters = {**values, "n": size, "topology": "custom" if graph is not None else topology, "policy": _spec(policy),
                  "assign": _assignment_manifest(assign),
                  "minority": values["minority"] if preferences == "minority" else 0,
                  "initial": initial if isinstance(initial, str) else list(initial),
                  "max_game_tokens": max_game_tokens, "max_game_cost": max_game_cost, "seed": seed}
    if drawn is not None:
        prefs, colours = drawn.preferences, drawn.colours
    else:
        prefs = assign_preferences(g, preferences, rng, minority=values["minority"],
                                   minority_colour=values["minority_colour"], explicit=explicit_preferences)
        colours = _initial_colours(initial, prefs, rng)
    policies = _policies(g, policy, assign, prefs, rng, model)
    # The key of this game in call records: parameters and seed, with every agent's
    # policy by its identity (an LLM policy's model, not its server URL, so a
    # replay against a moved server still finds its calls).
    identity = {k: v for k, v in parameters.items() if k not in ("policy", "assign")
                and not (k in KEYED_WHEN_SET and v == PARAMETERS[k].default)}
    if str(identity["prompt"]).startswith(FILE_PREFIX):  # a template file by its content, wherever it lies: a
        identity["prompt"] = FILE_PREFIX + TEMPLATES.load(identity["prompt"]).hash  # copy restored elsewhere replays
    identity["policies"] = [p.identity() for p in policies]
    identity["mesa_seed"] = mesa_seed  # tells unseeded games apart
    game_key = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:16]
    # drawn now, so the layout never moves the game's stream
    layout_seed = drawn.layout_seed if drawn is not None else rng.getrandbits(32)
    return GameSetup(g, parameters["topology"], parameters, prefs, colours, policies, game_key, layout_seed)


def _initial_colours(initial, prefs: list[str], rng: random.Random) -> list[str]:
    if initial == "preference":
        return list(prefs)
    if initial == "random":
        return ["blue" if rng.random() < 0.5 else "red" for _ in prefs]
    if isinstance(initial, str):
        raise ConsensusConfigError(f"unknown initial colouring {initial!r}; choose preference, random, or give a list")
    colours = list(initial)
    if len(colours) != len(prefs) or any(c not in ("red", "blue") for c in colours):
        raise ConsensusConfigError(f"initial colours need {len(prefs)} entries, each red or blue")
    return colours


def _policies(graph: nx.Graph, default: PolicyLike, assign: Assignment | None, prefs: list[str],
              rng: random.Random, model: Any) -> list[Policy]:
    n = len(prefs)
    base = make_policy(default, "consensus")
    policies: list[Policy] = [base] * n
    if assign is None:
        return policies
    if callable(assign):
        return [make_policy(assign(model, v), "consensus") for v in range(n)]
    if not isinstance(assign, Mapping):
        specs = list(assign)
        if len(specs) != n:
            raise ConsensusConfigError(f"a per-node policy list needs {n} entries (got {len(specs)})")
        return [make_policy(s, "consensus") for s in specs]
    for selector, spec in assign.items():
        chosen = make_policy(spec, "consensus")
        for v in _select(graph, selector, prefs, rng):
            policies[v] = chosen
    return policies


def _select(graph: nx.Graph, selector: str, prefs: list[str], rng: random.Random) -> list[int]:
    n = len(prefs)
    kind, _, arg = selector.partition(":")

    def count(k: int) -> int:
        if not 0 <= k <= n:
            raise ConsensusConfigError(f"selector {selector!r} asks for {k} of {n} agents")
        return k

    try:
        if kind == "hubs":
            return highest_degree_nodes(graph, count(int(arg)))
        if kind == "random":
            return rng.sample(range(n), count(int(arg)))
        if kind == "nodes":
            nodes = [int(x) for x in arg.split(",") if x.strip()]
            bad = [v for v in nodes if not 0 <= v < n]
            if bad:
                raise ConsensusConfigError(f"selector {selector!r} names nodes outside 0..{n - 1}: {bad}")
            return nodes
        if kind in ("red", "blue") and not arg:
            return [v for v in range(n) if prefs[v] == kind]
        if kind == "all" and not arg:
            return list(range(n))
    except ValueError as exc:
        if isinstance(exc, ConsensusConfigError):
            raise
    raise ConsensusConfigError(f"bad agent selector {selector!r}; use hubs:K, random:K, nodes:1,2,3, red, blue or all")


def _spec(policy: PolicyLike) -> str:
    return policy.spec() if isinstance(policy, Policy) else str(policy)


def _assignment_manifest(assign) -> Any:
    if assign is None:
        return None
    if isinstance(assign, Mapping):
        return {k: _spec(v) for k, v in assign.items()}
    if callable(assign):
        return getattr(assign, "__name__", "callable")
    return [_spec(v) for v in assign]


__all__ = ["Assignment", "ConsensusConfigError", "GameSetup", "PolicyLike", "game_setup"]
