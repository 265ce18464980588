"""What a page shows of a game's model, as plain data: the seam between games and the explorer.

The explorer (and Mesa's own ``SolaraViz`` through llm-mesa's components) asks a
game's ``GameView`` (``view_of(game)``) for everything it draws: the controls, a model
built from their values, the network picture of a round, the per-round table and
its charts, one agent's details, banners and the round's messages; and the same of
a recorded run and of a sweep's games. A game never imports the explorer: it
describes (dataclasses, data frames, Vega-Lite dicts), the explorer draws. The
defaults here work for any game whose model keeps its agents in one of Mesa's
discrete spaces (a ``Network``, an orthogonal or hexagonal grid, any attribute of the
model; ``llm_mesa.views.spaces``), or in none (charts alone), each agent with a
``state`` (filled as the game's ``state_scale`` says it is), and records its rounds
with a ``DataCollector`` (charted as the game's ``measures`` say they are); a game
improves on them by subclassing ``GameView`` and giving it in
``Game.extensions.view`` (``"module:Class"``).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from llm_mesa import declared, play
from llm_mesa.views import charts as view_charts
from llm_mesa.views import controls as view_controls
from llm_mesa.views.agent_state import STATE_ATTRIBUTE, names_of, state_of
from llm_mesa.views.colours import NAMED_COLOURS, PALETTE
from llm_mesa.views.controls import GENERAL, ControlError
from llm_mesa.views.pictures import Fill, GridPicture, NetworkPicture, Picture, fill_of
from llm_mesa.views.snapshot import Banner, Snapshot
from llm_mesa.views.spaces import find_network, find_space, grid_picture, is_grid, space_agents

if TYPE_CHECKING:
    import pandas as pd
    from mesa import Model

    from llm_mesa.games import Game
    from llm_mesa.views.runs import Recording

#: the most agents' rows a tooltip carries details for (beyond it, the picture stays quick)
DETAILS_UP_TO = 2000
#: what one snapshot has read of a model already (its space, agents and their names): read once, not per piece
_reading = threading.local()


@contextlib.contextmanager
def one_reading() -> Iterator[None]:
    """Within the block, a model's space, agents and names are read once (a snapshot asks for them from its
    picture, its panel and its banners; a 50 x 50 grid's agents cost milliseconds each time)."""
    outer = getattr(_reading, "memo", None)
    _reading.memo = {} if outer is None else outer
    try:
        yield
    finally:
        _reading.memo = outer


def _remembered(kind: str, model: Any, read: Any) -> Any:
    memo = getattr(_reading, "memo", None)
    if memo is None:
        return read()
    key = (kind, id(model))
    if key not in memo:
        memo[key] = read()
    return memo[key]


class GameView:
    """The default view of a game: controls from its parameters, its model's network and rounds.

    Subclass it in the game's package (no solara, no explorer) and name the subclass
    in ``Game.extensions.view``; override only what the game improves.
    """

    #: what the controls call the agents' policy
    policy_control = "policy"
    #: the agent attribute a page fills nodes and cells by (agents of Mesa's own examples keep theirs under
    #: other names: a game's view subclass says ``state_attribute = "wealth"``); read by ``agent_state.state_of``
    state_attribute = STATE_ATTRIBUTE

    def __init__(self, game: Game) -> None:
        self.game = game
        self._policies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._parameters: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # what each model was built with

    # --- words ------------------------------------------------------------------------
    @property
    def title(self) -> str:
        return f"llm-mesa: {self.game.summary or self.game.name}"

    # --- controls and building --------------------------------------------------------
    def controls(self) -> dict[str, dict[str, Any]]:
        """The page's controls (Mesa ``model_params`` dicts): the parameters, policy, LLM endpoint, seed."""
        return view_controls.controls_of(self)

    def policy_choices(self) -> list[str]:
        """Policy specs offered: the game's rule configurations, its rule policies, ``llm`` if it has one."""
        return view_controls.policy_choices(self.game)

    def loopback_model(self) -> str:
        """The stand-in's model name the LLM controls start with (the game's first behaviour)."""
        return view_controls.loopback_model(self.game)

    def check(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Control values converted and checked like their controls; ``ControlError`` names the first bad one."""
        return view_controls.check_values(self.controls(), values, self.game.parameters)

    def query_values(self, search: str) -> tuple[dict[str, Any], dict[str, str]]:
        """A link's query string (``?n=500``) as control values, and a message for each bad one."""
        return view_controls.query_values(self.controls(), search, self.game.parameters)

    def make_policy(self, values: Mapping[str, Any], policy: str | None = None) -> Any:
        """The agents' policy from the controls: a rule spec, or the game's LLM policy (its endpoint asked first)."""
        return view_controls.make_policy(self, values, policy)

    def build_from(self, values: Mapping[str, Any], *, policy: str | None = None) -> Model:
        """A model from control values (the page's Reset); each error names its control."""
        checked = self.check(values)
        made = self.make_policy(checked, policy)
        parameters = {k: checked[k] for k in self.game.parameters.names if k in checked}
        model = view_controls.reported(self.controls(), lambda: self.build(parameters, made, checked.get("seed", 1)),
                                       self.game.parameters)
        if not isinstance(made, str):
            self._policies[model] = made
        try:
            self._parameters[model] = parameters
        except TypeError:  # a model that cannot be weakly referenced: its round limit is read from it instead
            pass
        return model

    def build(self, parameters: Mapping[str, Any], policy: Any, seed: int) -> Model:
        """The game's model (its own ``build``, parameters validated with defaults filled in)."""
        return play.make_model(self.game, parameters, policy, seed)

    def policy_of(self, model: Model) -> Any:
        """The LLM policy this view built ``model`` with, or None."""
        return self._policies.get(model)

    def uses_llm(self, model: Model) -> bool:
        """Do LLM agents play ``model`` (built by this view with an LLM policy, or any agent's policy an LLM's)?"""
        if self.policy_of(model) is not None:
            return True
        return any(getattr(getattr(a, "policy", None), "is_async", False) for a in getattr(model, "agents", ()))

    # --- one round of a live model --------------------------------------------------------
    def round_number(self, model: Model) -> int:
        """The round the model has played: its ``round`` (a Mesa model played through the adapter: the steps its
        hooks counted), else its DataCollector's rows after round 0."""
        from llm_mesa.adapter.hooks import HOOKS

        value = HOOKS[model].round if model in HOOKS else getattr(model, "round", None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        collector = getattr(model, "datacollector", None)
        if collector is not None:
            return max(len(collector.get_model_vars_dataframe()) - 1, 0)
        return 0

    def round_limit(self, model: Model) -> int | None:
        """The model's round limit: the value of the parameter the game marks ``round_limit`` (as the page built
        the model, else the model's attribute of that name), or None when the game declares none."""
        limit = next((p for p in self.game.parameters if p.round_limit), None)
        if limit is None:
            return None
        built = self._parameters.get(model, {}) if _weakly(model) else {}
        value = built.get(limit.name, getattr(model, limit.name, None))
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def round_label(self, model: Model) -> str:
        """The page's round line: "Round t of LIMIT", and why it ended once it has."""
        t, limit = self.round_number(model), self.round_limit(model)
        line = f"Round {t}" + (f" of {limit}" if limit is not None else "")
        if model.running:
            return line
        return line + (" (ended: the round limit)" if limit is not None and t >= limit else " (ended)")

    def rounds(self, model: Model) -> pd.DataFrame:
        """The per-round table the charts are drawn from (round 0 the start), numbers as floats."""
        return view_charts.numeric_rounds(declared.table(self.game, model, "rounds"))

    def charts(self, rounds: pd.DataFrame, *, current_round: int | None = None, last_round: int | None = None,
               dash: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        """(CSS class, Vega-Lite dict) of each chart, most important first. Default: the table's numeric columns."""
        return view_charts.round_charts(rounds, current_round=current_round, last_round=last_round, dash=dash,
                                        scales=view_charts.column_scales(rounds, self.game),
                                        first=declared.first_measure(self.game))

    def state_of(self, agent: Any) -> Any:
        """What a page fills an agent's node or cell by (None: no agent): ``agent_state.state_of``, the one
        route every page reads a state by."""
        return state_of(self, agent)

    def names(self, model: Model) -> list[Any]:
        """Each agent of ``agents(model)`` by its name in the game's tables (a network's node, else its
        ``unique_id``): the number the panel, the tooltips and the agent's own observation use."""
        def read() -> list[Any]:
            space = _remembered("space", model, lambda: find_space(model))
            nodes = list(space.G.nodes) if space is not None and hasattr(space, "G") else None
            return names_of(model, self.agents(model), nodes)

        return _remembered("names", model, read)

    def picture(self, model: Model) -> Picture | None:
        """The model's space at this round, each node or cell filled by its agents' ``state`` (as the game's
        ``state_scale`` says it is). None: the model keeps its agents in no Network or grid."""
        space = _remembered("space", model, lambda: find_space(model))
        if space is None:
            return None
        agents = self.agents(model)
        legend = {"fill": (self.game.state_scale.label if self.game.state_scale is not None else "") or "state"}
        common = {"round_number": self.round_number(model), "scale": self.game.state_scale, "legend": legend,
                  "key": id(model)}
        if is_grid(space):
            names = self.names(model)
            number = {id(a): names[i] for i, a in enumerate(agents)}
            picture = grid_picture(space, agents, self.state_of, common.pop("round_number"),
                                   details_of=lambda a: {"agent": number[id(a)], "policy": _policy_name(a)},
                                   details_up_to=DETAILS_UP_TO, names=tuple(names), **common)
            return replace(picture, domain=self._domain(model, picture.fill()))
        from llm_mesa.views.layout import drawing_layout

        graph = space.G
        nodes = list(graph.nodes)
        cells = [space[v] for v in nodes]
        own = getattr(model, "layout", None)  # a game's own drawing positions, if it keeps them
        positions = [_point(getattr(c, "position", None)) for c in cells]
        if isinstance(own, Mapping) and all(v in own for v in nodes):
            layout = {v: (float(own[v][0]), float(own[v][1])) for v in nodes}
        elif all(p is not None for p in positions):
            layout = dict(zip(nodes, positions))
        else:
            layout = drawing_layout(graph, model, seed=getattr(model, "seed", 0) or 0)
        states = [self.state_of(a) for a in agents]
        details = [{"policy": _policy_name(a)} for a in agents] if len(nodes) <= DETAILS_UP_TO else None
        picture = NetworkPicture(graph=graph, layout=layout, state=states, details=details, **common)
        return replace(picture, domain=self._domain(model, picture.fill()))

    @staticmethod
    def _domain(model: Model, fill: Fill) -> tuple[float, float] | None:
        """A continuous fill's range, kept on the model so that it only ever widens: a colour means the same
        number from round to round (a declared range never moves anyway)."""
        if not fill.numeric:
            return None
        kept = getattr(model, "_llm_mesa_domain", None)
        domain = fill.domain if kept is None else (min(kept[0], fill.domain[0]), max(kept[1], fill.domain[1]))
        try:
            model._llm_mesa_domain = domain
        except AttributeError:
            pass
        return domain

    def agents(self, model: Model) -> list[Any]:
        """The agents a panel selects among, by number (the network's node order when there is one, else
        the model's agents in the order of their ids)."""
        return _remembered("agents", model, lambda: space_agents(model, _remembered("space", model, lambda: find_space(model))))

    def agent_rows(self, model: Model, index: int) -> dict[str, str]:
        """One agent's panel: its state, policy, place, neighbours, what it observes and its last decision,
        field by field (``llm_mesa.views.agent_panel``)."""
        from llm_mesa.views.agent_panel import agent_rows

        return agent_rows(self, model, index)

    def banners(self, model: Model) -> list[Banner]:
        """The lines above the picture. Default: failed LLM calls so far, a game without agents, and its end:
        at its round limit (a warning: it was stopped), or by itself (done); a game that declares no round limit
        (``Parameter(round_limit=True)``) only says that it ended."""
        from llm_mesa.decisions import decision_fields, ledger_of

        out = []
        policy = self.policy_of(model)
        counted = decision_fields(model, [policy] if policy is not None else [])
        failed, decisions = counted["failed_decisions"], counted["decisions"]
        if failed:
            verdict = "; the game is invalid" if failed / decisions > ledger_of(model).failure_share else ""
            out.append(Banner("error", f"{failed} of {decisions} LLM decisions failed so far{verdict}", "llm-mesa-failures"))
        if not self.agents(model):
            out.append(Banner("warning", "No agents: the game was built without any (its parameters place nobody), "
                                         "so its measures describe nobody. Change them and press Reset.",
                              "llm-mesa-no-agents"))
        if not model.running:
            t, limit = self.round_number(model), self.round_limit(model)
            if limit is not None and t >= limit:
                out.append(Banner("warning", f"Stopped at round {t}, the round limit: the game had not ended by itself.",
                                  "llm-mesa-ended"))
            elif limit is None:  # the game declares no round limit: whether it was stopped or ended, it cannot say
                out.append(Banner("info", f"The game ended at round {t}.", "llm-mesa-ended"))
            elif self.agents(model):
                out.append(Banner("done", f"The game ended by itself at round {t}.", "llm-mesa-ended"))
        return out

    def messages(self, model: Model) -> pd.DataFrame | None:
        """This round's messages (a table), or None when the game has none."""
        return None

    def snapshot(self, model: Model, selected: int = 0) -> Snapshot:
        """Everything a page draws of ``model``'s current round (its agents read once for all of it)."""
        with one_reading():
            return self._snapshot(model, selected)

    def _snapshot(self, model: Model, selected: int) -> Snapshot:
        count = len(self.agents(model))
        chosen = min(max(int(selected), 0), max(count - 1, 0))
        rounds = self.rounds(model)
        rounds.attrs["llm"] = self.uses_llm(model)  # a chart of failed LLM decisions says nothing without LLM agents
        return Snapshot(round_number=self.round_number(model), label=self.round_label(model), running=bool(model.running),
                        rounds=rounds, picture=self.picture(model), banners=tuple(self.banners(model)),
                        agents=count, selected=chosen, agent=self.agent_rows(model, chosen) if count else {},
                        messages=self.messages(model), names=tuple(self.names(model)) if count else ())

    # --- recorded runs and sweeps ---------------------------------------------------------
    def recording(self, path: Any) -> Recording:
        """A run directory written by the game's ``--out`` (``llm-mesa GAME ... --out DIR``), to replay."""
        from llm_mesa.views.runs import open_run

        return open_run(self, path)

    def sweep_game(self, sweep: Any, condition: str, policy: str, seed: int) -> Recording:
        """One game of a sweep (``view_runs.SweepRun``), replayed from its kept tables or its seed."""
        from llm_mesa.views.runs import sweep_game

        return sweep_game(self, sweep, condition, policy, seed)

    def sweep_table(self, games: pd.DataFrame) -> pd.DataFrame:
        """The sweep browser's table, one row per condition x policy (games, mean and SD of each measure)."""
        return view_charts.sweep_table(games)

    def sweep_measures(self, games: pd.DataFrame) -> list[str]:
        """Columns of the games table worth a distribution, the headline first."""
        return view_charts.sweep_measures(games)


def view_of(game: Game) -> GameView:
    """What the explorer and Mesa's SolaraViz draw of ``game``'s models: its own ``GameView``
    subclass (``Game.extensions.view``, ``"module:Class"``), else the generic one."""
    if game.extensions.view is None:
        return GameView(game)
    from llm_mesa.games import load_target

    return load_target(game.extensions.view)(game)


def _point(position: Any) -> tuple[float, float] | None:
    """A cell's position as (x, y), or None (a network built without a layout keeps none)."""
    try:
        x, y = (float(c) for c in position)
    except (TypeError, ValueError):
        return None
    return x, y


def _weakly(model: Any) -> bool:
    """Can ``model`` key a weak dictionary (a Mesa model can; a stand-in object may not)?"""
    try:
        weakref.ref(model)
    except TypeError:
        return False
    return True


def _policy_name(agent: Any) -> str:
    policy = getattr(agent, "policy", None)
    if policy is None:
        return "-"
    spec = getattr(policy, "spec", None)
    return spec() if callable(spec) else str(getattr(policy, "name", policy))


__all__ = ["Banner", "ControlError", "DETAILS_UP_TO", "Fill", "GENERAL", "GameView", "GridPicture", "NAMED_COLOURS",
           "NetworkPicture", "PALETTE", "Picture", "Snapshot", "fill_of", "find_network", "find_space", "state_of", "view_of"]
