"""What a game declares, read the same way by every command and page, with the core's default for what it leaves out.

A ``Game`` is a declaration (``llm_mesa.games``): its name, parameters, ``build``, tables, measures, policies,
LLM support, design and extensions. Everything the core needs to *know* about a game is read here, as functions of
the game: its tables and summary row, the scale of a measure, its policies and conditions, its LLM policy and
estimate, and the words people read (outcome, describe, headline). What it needs to *do* with a game (build, play,
judge) is in ``llm_mesa.play``.

Each reader honours, in order: a method a game written before hooks were values overrides (with a
``DeprecationWarning`` that names the hook's new place, ``llm_mesa.game_hooks``), the game's declared hook, then the
core's default (the ``default_*`` functions). A hook that raises is one line that names the game and the hook.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from llm_mesa.errors import GameError
from llm_mesa.game_hooks import call, called
from llm_mesa.game_types import LlmEstimate, Scale, Table, infer_scale

if TYPE_CHECKING:
    import pandas as pd
    from mesa import Model

    from llm_mesa.policy import Policy


# --- tables and the summary row ------------------------------------------------------------------

def summary_row(game: Any, model: Model) -> dict[str, Any]:
    """A finished game's summary row.

    Args:
        game: The game.
        model: Its model, played.

    Returns:
        ``Extensions.summary``'s row, else the model's ``summary()``, else the last row of its ``rounds`` table.
    """
    found, row = called(game, "summary_row", model)
    if found:
        return dict(row)
    return default_summary_row(game, model)


def default_summary_row(game: Any, model: Model) -> dict[str, Any]:
    """``summary_row`` without an older game's own override (what its ``super()`` call gets)."""
    hook = game.extensions.summary
    if hook is not None:
        return dict(call(game, "summary", hook, game, model))
    summary = getattr(model, "summary", None)
    if callable(summary):
        return dict(call(game, "model summary()", summary))
    rounds = table(game, model, "rounds")
    last = rounds.iloc[-1].to_dict() if len(rounds) else {}
    row = {k: _scalar(v) for k, v in last.items() if k != "round"}
    row["rounds"] = int(rounds["round"].iloc[-1]) if len(rounds) else 0
    return {k: v for k, v in row.items() if v is not None}


def table(game: Any, model: Model, name: str) -> pd.DataFrame:
    """One of the game's tables of a finished (or running) game.

    Args:
        game: The game.
        model: Its model.
        name: The table's name (``Table.name``).

    Returns:
        The table as its ``Table.read`` reads it, else the core's default (``default_table``).
    """
    found, frame = called(game, "table", model, name)
    if found:
        return frame
    return default_table(game, model, name)


def default_table(game: Any, model: Model, name: str) -> pd.DataFrame:
    """A table read the core's way, for a game that declares no reader for it.

    Args:
        game: The game.
        model: Its model.
        name: ``rounds``: the DataCollector's model variables with a ``round`` column (0 the initial state);
            ``agents``: its agent variables, each agent named as the game's tables name it (``agent_names``).

    Returns:
        The table (empty for a declared one the core cannot read; ``GameError``: no DataCollector, no such table).
    """
    import pandas as pd

    spec = next((t for t in game.tables if t.name == name), None)
    if spec is not None and spec.read is not None:
        return call(game, f"table {name!r} reader", spec.read, model)
    collector = getattr(model, "datacollector", None)
    if name in ("rounds", "agents") and collector is None:
        raise GameError(f"the {game.name} game's model has no DataCollector; declare how its {name!r} table is read: "
                        f"Table({name!r}, ..., read=...)")
    if name == "rounds":
        frame = collector.get_model_vars_dataframe().reset_index(drop=True)
        if "round" in frame.columns:  # the game counts its rounds itself
            return frame
        return frame.assign(round=range(len(frame)))[["round", *frame.columns]]
    if name == "agents":
        frame = collector.get_agent_vars_dataframe().reset_index()
        frame = frame.rename(columns={frame.columns[0]: "round", frame.columns[1]: "agent"})
        frame["round"] = frame["round"].astype(int)  # Mesa indexes rows by model.time, a float
        nodes = network_nodes(model)
        if nodes:  # agents on a network are named as its nodes are (the edges table's ids)
            frame["agent"] = frame["agent"].map(nodes)
        return frame
    if spec is None:
        raise GameError(f"the {game.name} game has no table {name!r}")
    return pd.DataFrame()


def run_tables(game: Any, model: Model) -> dict[str, pd.DataFrame]:
    """The tables a run folder holds (``llm-mesa GAME --out DIR``, ``llm-mesa lab``): what a replay reads back.

    Args:
        game: The game.
        model: Its model, played.

    Returns:
        Each table by name: ``Extensions.run_tables``'s, else every table the game declares.
    """
    found, tables = called(game, "run_tables", model)
    if found:
        return dict(tables)
    if game.extensions.run_tables is not None:
        return dict(call(game, "run_tables", game.extensions.run_tables, game, model))
    return {spec.name: table(game, model, spec.name) for spec in game.tables}


def table_spec(game: Any, name: str) -> Table:
    """The declared ``Table`` named ``name``; a ``GameError`` listing the game's tables when there is none."""
    for spec in game.tables:
        if spec.name == name:
            return spec
    raise GameError(f"unknown table {name!r} of the {game.name} game; choose among: "
                    f"{', '.join(t.name for t in game.tables) or '(none)'}")


def column_types(game: Any) -> dict[str, str]:
    """Every column type the game declares, of its summary row and tables, so that Parquet parts agree.

    Args:
        game: The game.

    Returns:
        Column name -> pandas type: ``row_types``, then each table's ``types``.
    """
    types = dict(game.row_types)
    for spec in game.tables:
        types.update(spec.types)
    return types


def scale_of(game: Any, column: str, values: Iterable[Any] = ()) -> Scale:
    """What ``column`` is, so that pages and reports draw it as what it is.

    Args:
        game: The game.
        column: A column of the summary row or the ``rounds`` table.
        values: Its values, read when the game declares nothing.

    Returns:
        The declared ``Scale`` (``measures``), else one read from the column's name and values.
    """
    declared = game.measures.get(column)
    return declared if declared is not None else infer_scale(column, values)


def first_measure(game: Any) -> str | None:
    """The headline measure: the one declared, else the first of ``measures``, else None."""
    return game.headline_measure or next(iter(game.measures), None)


# --- policies and design cells -----------------------------------------------------------------

def load_policies(game: Any, spec: str | None = None) -> None:
    """Import the modules that register the game's policies, so that its model finds them by name.

    Args:
        game: The game.
        spec: A policy spec; the policies it mentions that the game imports only when asked for (``llm`` in
            ``"llm + other"``) are imported too.
    """
    found, _ = called(game, "load_policies")
    if found:
        return
    catalogue = game.policies
    if catalogue.module:
        importlib.import_module(catalogue.module)
    if spec:
        from llm_mesa.policy import policy_names_in

        for name in policy_names_in(spec):
            lazy = catalogue.lazy.get(name)
            if lazy is not None:
                importlib.import_module(lazy[0])


def policy_groups(game: Any) -> Mapping[str, Mapping[str, str]]:
    """Named policy sets, for sweeps (``--policies rules``).

    Args:
        game: The game.

    Returns:
        Group -> label -> spec: the game's ``PolicyCatalog.groups``, else ``rules``, every rule policy it has.
    """
    if game.policies.groups:
        return game.policies.groups
    from llm_mesa.policy import rule_policy_names

    load_policies(game)
    return {"rules": {name: name for name in rule_policy_names(game)}}


def first_policy(game: Any) -> str:
    """A rule policy of the game to build a game with when the policy does not matter (a check, a dry run).

    Args:
        game: The game.

    Returns:
        The first spec of its first policy group (a ``GameError`` when it has no rule policy).
    """
    for group in policy_groups(game).values():
        for spec in group.values():
            return spec
    raise GameError(f"the {game.name} game has no rule policy; declare one: PolicyCatalog(rules={{NAME: Policy}})")


def make_policy(game: Any, spec: str | Policy) -> Policy:
    """The policy ``spec`` names among the game's.

    Args:
        game: The game.
        spec: ``NAME[:key=value,...]``, or a policy (passed through).

    Returns:
        The policy: its catalogue's values first, then those registered by name (``PolicyError`` when unknown).
    """
    from llm_mesa.policy import make_policy as build

    load_policies(game, spec if isinstance(spec, str) else None)
    return build(spec, game)


def resolve_conditions(game: Any, selection: str | Sequence[str]) -> dict[str, dict[str, Any]]:
    """The design cells a selection names.

    Args:
        game: The game.
        selection: Condition or group names, comma-separated or as a list.

    Returns:
        Condition name -> its parameters, in the selection's order, each once (``GameError`` for an unknown name).
    """
    items = [s.strip() for s in (selection.split(",") if isinstance(selection, str) else selection)]
    conditions, groups = game.design.conditions, game.design.groups
    chosen: dict[str, dict[str, Any]] = {}
    for item in filter(None, items):
        if item in groups:
            for name in groups[item]:
                chosen.setdefault(name, dict(conditions[name]))
        elif item in conditions:
            chosen.setdefault(item, dict(conditions[item]))
        else:
            known = ", ".join([*groups, *conditions]) or "(none defined: use --set NAME=V1,V2)"
            raise GameError(f"unknown condition {item!r} of the {game.name} game; choose among: {known}")
    if not chosen:
        raise GameError(f"no {game.name} conditions given")
    return chosen


# --- LLM agents ---------------------------------------------------------------------------------

def llm_policy(game: Any, endpoint: Any, store: Any = None) -> Policy:
    """The game's LLM policy.

    Args:
        game: The game.
        endpoint: An ``Endpoint``, or a sweep's ``Population`` of endpoints (agents split among several).
        store: The record/replay store its calls go through (None: not recorded).

    Returns:
        The policy ``LlmSupport.policy`` makes (a ``GameError`` when the game has none).
    """
    found, policy = called(game, "llm_policy", endpoint, store)
    if found:
        return policy
    factory = game.llm.policy
    if factory is None:
        raise GameError(f"the {game.name} game has no LLM policy; use one of its rule policies")
    return call(game, "LLM policy", factory, endpoint, store)


def estimate(game: Any, parameters: Mapping[str, Any], endpoint: Any) -> LlmEstimate | None:
    """One game's LLM use at most, for ``llm-mesa sweep --dry-run`` and budgets.

    Args:
        game: The game.
        parameters: Its parameters.
        endpoint: The endpoint (its token limits bound a completion).

    Returns:
        ``LlmSupport.estimate``'s ``LlmEstimate``; None when the game declares none (it cannot tell).
    """
    found, value = called(game, "estimate", parameters, endpoint)
    if found:
        return value
    hook = game.llm.estimate
    return None if hook is None else call(game, "estimate", hook, game, parameters, endpoint)


def behaviours(game: Any) -> Mapping[str, Any]:
    """The stand-in server's behaviours for the game's prompts.

    Args:
        game: The game.

    Returns:
        Kind -> factory, as ``LlmSupport.behaviours`` declares them (a module that registers its own is imported).
    """
    declared = game.llm.behaviours
    if declared is None:
        return {}
    if isinstance(declared, str):
        importlib.import_module(declared)
        return {}
    return dict(declared)


# --- words for people ---------------------------------------------------------------------------

def outcome(game: Any, row: Mapping[str, Any]) -> str:
    """A finished game's outcome in a few words, for progress lines.

    Args:
        game: The game.
        row: Its summary row.

    Returns:
        ``Extensions.outcome``'s words, else the rounds played.
    """
    found, words = called(game, "outcome", row)
    if found:
        return words
    hook = game.extensions.outcome
    return call(game, "outcome", hook, game, row) if hook is not None else f"{row.get('rounds', '?')} rounds"


def describe(game: Any, parameters: Mapping[str, Any]) -> str:
    """A condition's parameters in a few words, for listings (``sweep --list``).

    Args:
        game: The game.
        parameters: The condition's parameters.

    Returns:
        ``Extensions.describe``'s words, else ``k=v`` pairs (``defaults`` for none).
    """
    found, words = called(game, "describe", parameters)
    if found:
        return words
    hook = game.extensions.describe
    if hook is not None:
        return call(game, "describe", hook, game, parameters)
    return ", ".join(f"{k}={v}" for k, v in parameters.items()) or "defaults"


def headline(game: Any, games: pd.DataFrame, conditions: Sequence[str], policies: Sequence[str]) -> str | None:
    """The table printed at the end of a sweep.

    Args:
        game: The game.
        games: The sweep's rows, one a game.
        conditions: The conditions' names, in order.
        policies: The policies' labels, in order.

    Returns:
        ``Extensions.headline``'s table as text; None: the generic one (``llm_mesa.analysis.generic``).
    """
    found, words = called(game, "headline", games, conditions, policies)
    if found:
        return words
    hook = game.extensions.headline
    return None if hook is None else call(game, "headline", hook, game, games, conditions, policies)


# --- agents' names ------------------------------------------------------------------------------

def network_nodes(model: Model) -> dict[Any, Any]:
    """Where agents sit one to a node of a Mesa ``Network``, the node is their name.

    Args:
        model: A Mesa model.

    Returns:
        ``unique_id`` -> node; empty unless every agent holds a node of its own.
    """
    from mesa.discrete_space import Network

    if not any(isinstance(value, Network) for value in vars(model).values()):
        return {}
    nodes = {}
    for agent in model.agents:
        cell = getattr(agent, "cell", None)
        if cell is None or getattr(cell, "coordinate", None) is None:
            return {}
        nodes[agent.unique_id] = cell.coordinate
    return nodes if len(set(nodes.values())) == len(nodes) else {}


def agent_names(model: Model) -> dict[Any, Any]:
    """Each agent's one name in the game's tables, pages, seats and prompts.

    Args:
        model: A Mesa model.

    Returns:
        Agent -> its network node (``network_nodes``), else its ``unique_id``, in the order the model keeps them.
    """
    nodes = network_nodes(model)
    return {agent: nodes.get(agent.unique_id, agent.unique_id) for agent in model.agents}


def _scalar(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    return value if isinstance(value, (bool, int, float, str)) else None


__all__ = ["agent_names", "behaviours", "column_types", "default_summary_row", "default_table", "describe", "estimate",
           "first_measure", "first_policy", "headline", "llm_policy", "load_policies", "make_policy", "network_nodes",
           "outcome", "policy_groups", "resolve_conditions", "run_tables", "scale_of", "summary_row", "table",
           "table_spec"]
