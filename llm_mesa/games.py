"""The game contract: what a game gives the core.

A game is a ``Game`` subclass in the game's own package, declared under the
entry-point group ``llm_mesa.games`` (``mygame = "mypackage.game:GAME"``) and
found by name through ``llm_mesa.registry``. The core (CLI shell, sweep engine,
dry run, analysis, report, explorer, loopback stand-in) reaches every game
through this contract alone and names none.

This module sits at the bottom of the house: it imports no command, page or
sweep module. What a game's extensions default to lives in the module that uses
them, as a function of the game: ``llm_mesa.views.view_of``,
``llm_mesa.game_cli.command_of``, ``llm_mesa.analysis.game_analysis``.

**Required** (a game that gives only these works in every command and page,
with generic output):

* ``name`` and ``parameters``: the one definition of the game's parameters
  (validation, command-line options, explorer controls, sweep axes);
* ``build(parameters, policy, seed)``: the Mesa model that plays one game. It
  steps with ``step()`` until ``running`` is False and records its rounds with a
  Mesa ``DataCollector``; the summary row and the ``rounds`` table derive from it.
  Its streams come from ``seed`` itself (``llm_mesa.seed_streams``), never from how
  Mesa seeds ``model.random``, so a seed plays one game on Mesa 3 and Mesa 4 alike.

**Optional**, each with a working default (see each member): the summary row and
tables (``summary_row``, ``table``, ``tables``), playing several games together
(``play_batch``, ``batch_size``), a game from a Mesa ``Scenario`` (``build_scenario``), named design cells (``design``), rule policies
and groups (``policies``), the LLM policy, its sampling defaults and stand-in
behaviours (``llm``), an estimate of LLM use for dry runs (``estimate``), the
statistics, report panels, explorer view and own subcommand (``extensions``).

Why an ABC with defaults rather than a Protocol: nearly every member is optional
and has a behaviour the core relies on; an ABC gives each a default that works, so a
game overrides only what it improves, and forgetting ``build`` fails when the
class is instantiated rather than in the middle of a sweep.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from llm_mesa.errors import InvalidGame, LlmMesaError
from llm_mesa.game_types import (
    ROUNDS,
    Extensions,
    GameResult,
    LlmEstimate,
    LlmSupport,
    PlayRequest,
    PolicyCatalog,
    Scale,
    StudyDesign,
    Table,
    infer_scale,
)
from llm_mesa.parameters import ParameterSet

if TYPE_CHECKING:
    import pandas as pd
    from mesa import Model

    from llm_mesa.llm.endpoint import Endpoint
    from llm_mesa.llm.store import ResponseStore
    from llm_mesa.policy import Policy

#: the most steps a model of a game that declares no round limit may take (``Game.step_limit``)
STEP_LIMIT = 100_000


class GameError(LlmMesaError):
    """An unknown game or a game that cannot be played as asked; the message names the fix."""


class RunawayGame(InvalidGame):
    """A model still running past its game's step limit: it never stops (exit status 3)."""


def load_target(target: str) -> Any:
    """``"module:attribute"`` (or a module) imported."""
    module, _, attribute = target.partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, attribute) if attribute else loaded


class Game(ABC):
    """What a game gives the core. See the module docstring for required and optional members."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    parameters: ClassVar[ParameterSet] = ParameterSet(())
    tables: ClassVar[tuple[Table, ...]] = (ROUNDS,)
    #: pandas types of summary-row columns that may be missing in some games
    row_types: ClassVar[Mapping[str, str]] = MappingProxyType({})
    policies: ClassVar[PolicyCatalog] = PolicyCatalog()
    design: ClassVar[StudyDesign] = StudyDesign()
    llm: ClassVar[LlmSupport] = LlmSupport()
    extensions: ClassVar[Extensions] = Extensions()
    #: what the agents' ``state`` is (the generic pages colour agents by it); None: read from its values
    state_scale: ClassVar[Scale | None] = None
    #: what each measure is, by column (of the ``rounds`` table and the summary row); the rest is read
    #: from the values (``infer_scale``)
    measures: ClassVar[Mapping[str, Scale]] = MappingProxyType({})
    #: the measure reports and sweep tables put first (None: the first declared measure, if any)
    headline_measure: ClassVar[str | None] = None

    # --- required -------------------------------------------------------------------
    @abstractmethod
    def build(self, parameters: Mapping[str, Any], policy: str | Policy | Sequence[str | Policy],
              seed: int) -> Model:
        """The Mesa model of one game with these (validated) parameters, agents' policy and seed."""

    def build_scenario(self, scenario: Any, policy: str | Policy | Sequence[str | Policy]) -> Model:
        """The model of the game a Mesa ``Scenario`` names (``Experiment.scenarios()``): its
        fields are the game's parameters, its ``seed`` the game's seed; the model keeps it."""
        from llm_mesa.mesa_versions import scenario_fields

        fields, seed = scenario_fields(scenario)
        model = self.build(self.parameters.validate(fields, complete=True), policy, seed)
        model.scenario = scenario
        return model

    # --- one game, to its end ---------------------------------------------------------
    def play(self, request: PlayRequest) -> GameResult:
        """Play one game to its end: its summary row and the tables asked for.

        Default: ``build`` it with the request's policy (the LLM policy when the
        request has an endpoint), step it until it stops, then ``summary_row`` and
        ``table``; an LLM policy's usage is added to the row.
        """
        policy: str | Policy = request.policy
        llm = None
        if request.endpoint is not None:
            llm = policy = self.llm_policy(request.endpoint, request.store)
        parameters = self.parameters.validate(request.parameters, complete=True)
        model = self.make_model(parameters, policy, request.seed)
        rounds = run_model(model, *self.step_limit(parameters))
        row = self.summary_row(model)
        row.setdefault("rounds", rounds)
        if llm is not None:
            row.setdefault("model", getattr(request.endpoint, "model", None))
            row.update(usage_fields(llm))
            self.judge(row, model, parameters, [llm])
        return GameResult(row, {name: self.table(model, name) for name in request.tables})

    def make_model(self, parameters: Mapping[str, Any], policy: Any, seed: int) -> Model:
        """``build``, with the ledger the game's LLM decisions are keyed and counted in (what the core
        plays, pages and commands included, always builds through)."""
        from llm_mesa.decisions import bind_game

        parameters = self.parameters.validate(parameters, complete=True)
        model = self.build(parameters, policy, seed)
        bind_game(model, self.key(parameters, seed), self.failure_share(parameters))
        return model

    def place(self, parameters: Mapping[str, Any], policy: Any, seed: int, placed: Mapping[Any, Policy]) -> Model:
        """The model of one game in which the agents ``placed`` names (as the game's tables name them: a
        network's nodes, else the agents' ids) play their own policy and every other agent ``policy``.

        How ``llm-mesa lab`` seats people among rule and LLM agents. Default: ``make_model``, then those
        agents' ``policy`` replaced, which is right for every game whose agents' policy is read when they
        decide (as the round runners read it); a game that fixes anything from its policies when it is
        built (a fast path, its key) overrides it and builds them in.
        """
        model = self.make_model(parameters, policy, seed)
        names = agent_names(model)
        unknown = [name for name in placed if name not in names.values()]
        if unknown:
            raise GameError(f"the {self.name} game has no agent {unknown[0]!r}; its agents are "
                            f"{_listed(sorted(names.values(), key=str))}")
        for agent, name in names.items():
            if name in placed:
                agent.policy = placed[name]
        return model

    def run_tables(self, model: Model) -> dict[str, pd.DataFrame]:
        """The tables a run folder holds (``llm-mesa GAME --out DIR``, ``llm-mesa lab --out DIR``): what a
        replay of the game reads back. Default: every table of ``tables``."""
        return {table.name: self.table(model, table.name) for table in self.tables}

    def key(self, parameters: Mapping[str, Any], seed: int) -> str:
        """The key of one game, which every sample key of its LLM calls carries: its name, parameters, seed."""
        from llm_mesa.decisions import game_key

        return game_key(self.name, parameters, seed)

    def failure_share(self, parameters: Mapping[str, Any]) -> float:
        """The share of failed LLM decisions above which a game with these parameters is invalid."""
        limit = self.llm.failure_share
        return float(parameters.get(limit, self.parameters[limit].default) if isinstance(limit, str) else limit)

    def judge(self, row: dict[str, Any], model: Model, parameters: Mapping[str, Any],
              policies: Sequence[Any] = ()) -> dict[str, Any]:
        """Add the game's decisions and failed decisions to ``row`` (where the game counted none itself)
        and mark it invalid when too many failed (``llm_mesa.decisions.judge``)."""
        from llm_mesa.decisions import decision_fields, judge

        for name, value in decision_fields(model, policies).items():
            row.setdefault(name, value)
        return judge(row, self.failure_share(parameters))

    def summary_row(self, model: Model) -> dict[str, Any]:
        """A finished game's summary row. Default: the model's ``summary()`` if it has one,
        else the last row of its DataCollector's model variables."""
        summary = getattr(model, "summary", None)
        if callable(summary):
            return dict(summary())
        rounds = self.table(model, "rounds")
        last = rounds.iloc[-1].to_dict() if len(rounds) else {}
        row = {k: _scalar(v) for k, v in last.items() if k != "round"}
        row["rounds"] = int(rounds["round"].iloc[-1]) if len(rounds) else 0
        return {k: v for k, v in row.items() if v is not None}

    def table(self, model: Model, name: str) -> pd.DataFrame:
        """One of the game's tables of a finished (or running) game.

        Default for ``rounds``: the DataCollector's model variables with a ``round``
        column (0 is the initial state); for ``agents``: its agent variables.
        """
        import pandas as pd

        collector = getattr(model, "datacollector", None)
        if collector is None:
            raise GameError(f"the {self.name} game's model has no DataCollector; give the game a table() "
                            f"for {name!r}")
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
        if name not in {t.name for t in self.tables}:
            raise GameError(f"the {self.name} game has no table {name!r}")
        return pd.DataFrame()

    def step_limit(self, parameters: Mapping[str, Any]) -> tuple[int, str]:
        """The most steps one game's model may take, and why: its round limit parameter's value and one
        step more (a model may notice its end in the step after its last round), else ``STEP_LIMIT``."""
        for parameter in self.parameters:
            if parameter.round_limit:
                rounds = parameters.get(parameter.name, parameter.default)
                return int(rounds) + 1, f"its round limit {parameter.name}={rounds}, and one step more"
        return STEP_LIMIT, ("llm-mesa's limit for a game that declares no round limit (mark one parameter "
                            "round_limit=True to set it)")

    def play_batch(self, requests: Sequence[PlayRequest]) -> list[GameResult]:
        """Several games to their ends, in order. Default: one by one."""
        return [self.play(request) for request in requests]

    def batch_size(self, request: PlayRequest) -> int:
        """How many games like ``request`` a sweep hands ``play_batch`` at once (1: each written when done)."""
        return 1

    def check(self, parameters: Mapping[str, Any], seed: int) -> None:
        """Build (not play) one game: bad input fails before a sweep starts.

        Default: ``build`` with the first rule configuration (or the game's first policy).
        """
        self.make_model(parameters, self.first_policy(), seed)

    def first_policy(self) -> str:
        """A rule policy of the game to build a game with when the policy does not matter."""
        for group in self.policy_groups.values():
            for spec in group.values():
                return spec
        raise GameError(f"the {self.name} game registers no rule policy; register one with "
                        "llm_mesa.register_policy(NAME, GAME)")

    # --- LLM agents -------------------------------------------------------------------
    def llm_policy(self, endpoint: Endpoint | Any, store: ResponseStore | None = None) -> Policy:
        """The game's LLM policy for ``endpoint`` (or a sweep's ``Population`` of endpoints), recording to ``store``."""
        if self.llm.policy is None:
            raise GameError(f"the {self.name} game has no LLM policy; use one of its rule policies")
        return load_target(self.llm.policy)(endpoint, store)

    def estimate(self, parameters: Mapping[str, Any], endpoint: Endpoint) -> LlmEstimate | None:
        """One game's LLM use at most (``llm-mesa sweep --dry-run``); None: the game cannot tell."""
        return None

    # --- words for people -------------------------------------------------------------
    def outcome(self, row: Mapping[str, Any]) -> str:
        """A finished game's outcome in a few words (progress lines)."""
        return f"{row.get('rounds', '?')} rounds"

    def describe(self, parameters: Mapping[str, Any]) -> str:
        """A condition's parameters in a few words (listings)."""
        return ", ".join(f"{k}={v}" for k, v in parameters.items()) or "defaults"

    def headline(self, games: pd.DataFrame, conditions: Sequence[str], policies: Sequence[str]) -> str | None:
        """The table printed at the end of a sweep; None (the default): the generic one, games and
        numeric means per condition and policy (``llm_mesa.analysis.generic.headline_table``)."""
        return None

    # --- policies and design cells ----------------------------------------------------
    @property
    def policy_groups(self) -> Mapping[str, Mapping[str, str]]:
        """Named policy sets; a game without any gets ``rules``: every registered rule policy."""
        if self.policies.groups:
            return self.policies.groups
        from llm_mesa.policy import registered_rule_policies

        return {"rules": {name: name for name in registered_rule_policies(self.name)}}

    def load_policies(self) -> None:
        """Register the game's rule policies."""
        if self.policies.module:
            importlib.import_module(self.policies.module)

    def resolve_conditions(self, selection: str | Sequence[str]) -> dict[str, dict[str, Any]]:
        """Condition names or group names (comma-separated) -> {name: parameters}."""
        items = [s.strip() for s in (selection.split(",") if isinstance(selection, str) else selection)]
        conditions, groups = self.design.conditions, self.design.groups
        chosen: dict[str, dict[str, Any]] = {}
        for item in filter(None, items):
            if item in groups:
                for name in groups[item]:
                    chosen.setdefault(name, dict(conditions[name]))
            elif item in conditions:
                chosen.setdefault(item, dict(conditions[item]))
            else:
                known = ", ".join([*groups, *conditions]) or "(none defined: use --set NAME=V1,V2)"
                raise GameError(f"unknown condition {item!r} of the {self.name} game; choose among: {known}")
        if not chosen:
            raise GameError(f"no {self.name} conditions given")
        return chosen

    def scale_of(self, column: str, values: Iterable[Any] = ()) -> Scale:
        """What ``column`` is: as the game declares it (``measures``), else read from its name and values."""
        declared = self.measures.get(column)
        return declared if declared is not None else infer_scale(column, values)

    @property
    def first_measure(self) -> str | None:
        """The headline measure: the one declared, else the first of ``measures``, else None."""
        return self.headline_measure or next(iter(self.measures), None)

    def table_spec(self, name: str) -> Table:
        for table in self.tables:
            if table.name == name:
                return table
        raise GameError(f"unknown table {name!r} of the {self.name} game; choose among: "
                        f"{', '.join(t.name for t in self.tables) or '(none)'}")

    def column_types(self) -> dict[str, str]:
        """Every column type the game declares, of its summary row and tables (for Parquet parts)."""
        types = dict(self.row_types)
        for table in self.tables:
            types.update(table.types)
        return types


def network_nodes(model: Model) -> dict[Any, Any]:
    """``unique_id -> node`` for a model whose agents sit one to a node of a Mesa ``Network``; else empty."""
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
    """Each agent of ``model`` with its name in the game's tables: its network node (``network_nodes``),
    else its ``unique_id``; in the order the model keeps them."""
    nodes = network_nodes(model)
    return {agent: nodes.get(agent.unique_id, agent.unique_id) for agent in model.agents}


def _listed(names: Sequence[Any], shown: int = 12) -> str:
    words = ", ".join(map(str, names[:shown]))
    return words + (f" and {len(names) - shown} more" if len(names) > shown else "")


def run_model(model: Model, limit: int = STEP_LIMIT, why: str = "llm-mesa's STEP_LIMIT") -> int:
    """Step ``model`` until it stops; the number of steps it took. A model still running after ``limit``
    steps never stops: ``RunawayGame`` (exit 3), before it grows without bound."""
    steps = 0
    while model.running:
        if steps >= limit:
            raise RunawayGame(f"the game's model was still running after {steps:,} steps ({why}): it never stops; "
                              "make its step() set running = False when the game ends")
        model.step()
        steps += 1
    return steps


def usage_fields(policy: Policy) -> dict[str, Any]:
    """An LLM policy's calls, tokens, cost and failures, as summary-row columns."""
    usage = getattr(policy, "usage", None)
    if usage is None:
        return {}
    from llm_mesa.llm.diagnosis import commonest_failure

    return {"calls": usage.calls, "prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "cached_tokens": usage.cached_tokens, "cost": usage.cost, "failed_calls": usage.failed_calls,
            "replayed_calls": usage.replayed, "failure_cause": commonest_failure(usage)}


def _scalar(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    return value if isinstance(value, (bool, int, float, str)) else None


__all__ = ["Extensions", "Game", "GameError", "GameResult", "LlmEstimate", "LlmSupport", "PlayRequest", "PolicyCatalog",
           "ROUNDS", "RunawayGame", "StudyDesign", "Table", "agent_names", "load_target", "run_model",
           "usage_fields"]
