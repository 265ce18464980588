"""What a page shows of a game's model, as plain data: the seam between games and the explorer.

The explorer (and Mesa's own ``SolaraViz`` through llm-mesa's components) asks a
game's ``GameView`` (``view_of(game)``) for everything it draws: the controls, a model
built from their values, the network picture of a round, the per-round table and
its charts, one agent's details, banners and the round's messages; and the same of
a recorded run and of a sweep's games. A game never imports the explorer: it
describes (dataclasses, data frames, Vega-Lite dicts), the explorer draws. The
defaults here work for any game whose model keeps its agents on a Mesa ``Network``
(``mesa.discrete_space.Network``, any attribute of the model) with an ``agent.state``,
and records its rounds with a ``DataCollector``; a game improves on them by
subclassing ``GameView`` and giving it in ``Game.extensions.view`` (``"module:Class"``).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llm_mesa.views import charts as view_charts
from llm_mesa.views import controls as view_controls
from llm_mesa.views.controls import GENERAL, ControlError

if TYPE_CHECKING:
    import networkx as nx
    import pandas as pd
    from mesa import Model

    from llm_mesa.games import Game
    from llm_mesa.views.runs import Recording

#: the category colours of agents' states, in order (matplotlib's tab10)
#: states that name a colour are drawn in it (the palette's own shade of it)
NAMED_COLOURS = {"blue": "#1f77b4", "orange": "#ff7f0e", "green": "#2ca02c", "red": "#d62728", "purple": "#9467bd",
                 "brown": "#8c564b", "pink": "#e377c2", "grey": "#7f7f7f", "gray": "#7f7f7f", "yellow": "#bcbd22",
                 "cyan": "#17becf"}
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")
#: the most agents' rows a tooltip carries details for (beyond it, the picture stays quick)
DETAILS_UP_TO = 2000


@dataclass(frozen=True)
class NetworkPicture:
    """One round of a game on a graph, as a page draws it.

    ``state``: each node's category, in ``graph``'s node order (its fill; ``palette``
    maps categories to colours, the rest come from ``PALETTE``); ``ring``: an optional
    second category per node (drawn as its ring, e.g. a preference); ``flagged``:
    nodes drawn as squares (e.g. an agent whose neighbourhood disagrees); ``marked``:
    nodes drawn as ringed diamonds (e.g. flippers); ``details``: each node's tooltip
    rows; ``legend`` says what fill, ring, flagged and marked mean.
    """

    graph: nx.Graph
    layout: Mapping[Any, Sequence[float]]
    state: Sequence[str]
    round_number: int
    palette: Mapping[str, str] = field(default_factory=dict)
    ring: Sequence[str] | None = None
    flagged: Sequence[bool] | None = None
    marked: tuple[int, ...] = ()
    details: Sequence[Mapping[str, Any]] | None = field(default=None, compare=False)
    legend: Mapping[str, str] = field(default_factory=dict)
    key: Any = None  # tells one game from another (a redraw when it changes)

    def colours(self) -> dict[str, str]:
        """Every category drawn, with its colour: the game's own first, a state named like a colour in
        that colour, then the palette."""
        seen = list(dict.fromkeys([*self.palette, *self.state, *(self.ring or ())]))
        named = {c: NAMED_COLOURS[str(c).lower()] for c in seen if c not in self.palette and str(c).lower() in NAMED_COLOURS}
        taken = {*self.palette.values(), *named.values()}
        free = [c for c in PALETTE if c not in taken]
        out = {}
        for category in seen:
            out[category] = self.palette.get(category) or named.get(category) or (free.pop(0) if free else "#999999")
        return out


@dataclass(frozen=True)
class Banner:
    """A one-line status: ``kind`` is ``done``, ``warning``, ``info`` or ``error``; ``tag`` a CSS class."""

    kind: str
    text: str
    tag: str = ""


@dataclass(frozen=True)
class Snapshot:
    """Everything a page draws of one round, read at once (under the page's lock for a live game)."""

    round_number: int
    label: str
    running: bool
    rounds: pd.DataFrame
    picture: NetworkPicture | None
    banners: tuple[Banner, ...] = ()
    agents: int = 0  # how many agents the panel selects among (0: no panel)
    selected: int = 0
    agent: Mapping[str, str] = field(default_factory=dict)
    messages: pd.DataFrame | None = None
    messages_title: str = "Messages"


def _point(position: Any) -> tuple[float, float] | None:
    """A cell's position as (x, y), or None (a network built without a layout keeps none)."""
    try:
        x, y = (float(c) for c in position)
    except (TypeError, ValueError):
        return None
    return x, y


def find_network(model: Any) -> Any:
    """The model's ``mesa.discrete_space.Network`` (any attribute that is one), or None."""
    try:
        from mesa.discrete_space import Network
    except ImportError:  # pragma: no cover - every supported Mesa has it
        return None
    for value in vars(model).values():
        if isinstance(value, Network):
            return value
    return None


class GameView:
    """The default view of a game: controls from its parameters, its model's network and rounds.

    Subclass it in the game's package (no solara, no explorer) and name the subclass
    in ``Game.extensions.view``; override only what the game improves.
    """

    #: what the controls call the agents' policy
    policy_control = "policy"

    def __init__(self, game: Game) -> None:
        self.game = game
        self._policies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

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
        model = view_controls.reported(self.controls(), lambda: self.build(parameters, made, checked.get("seed", 1)))
        if not isinstance(made, str):
            self._policies[model] = made
        return model

    def build(self, parameters: Mapping[str, Any], policy: Any, seed: int) -> Model:
        """The game's model (its own ``build``, parameters validated with defaults filled in)."""
        return self.game.make_model(parameters, policy, seed)

    def policy_of(self, model: Model) -> Any:
        """The LLM policy this view built ``model`` with, or None."""
        return self._policies.get(model)

    # --- one round of a live model --------------------------------------------------------
    def round_number(self, model: Model) -> int:
        """The round the model has played: its ``round``, else its DataCollector's rows after round 0."""
        value = getattr(model, "round", None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        collector = getattr(model, "datacollector", None)
        if collector is not None:
            return max(len(collector.get_model_vars_dataframe()) - 1, 0)
        return 0

    def round_label(self, model: Model) -> str:
        """The page's round line: always "Round t", then what the game adds."""
        return f"Round {self.round_number(model)}" + ("" if model.running else " (the game has ended)")

    def rounds(self, model: Model) -> pd.DataFrame:
        """The per-round table the charts are drawn from (round 0 the start), numbers as floats."""
        return view_charts.numeric_rounds(self.game.table(model, "rounds"))

    def charts(self, rounds: pd.DataFrame, *, current_round: int | None = None, last_round: int | None = None,
               dash: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        """(CSS class, Vega-Lite dict) of each chart, most important first. Default: the table's numeric columns."""
        return view_charts.round_charts(rounds, current_round=current_round, last_round=last_round, dash=dash)

    def picture(self, model: Model) -> NetworkPicture | None:
        """The network at this round: each node filled by its agent's ``state``. None: the game has no graph."""
        network = find_network(model)
        if network is None:
            return None
        from llm_mesa.views.layout import drawing_layout

        graph = network.G
        nodes = list(graph.nodes)
        cells = [network[v] for v in nodes]
        own = getattr(model, "layout", None)  # a game's own drawing positions, if it keeps them
        positions = [_point(getattr(c, "position", None)) for c in cells]
        if isinstance(own, Mapping) and all(v in own for v in nodes):
            layout = {v: (float(own[v][0]), float(own[v][1])) for v in nodes}
        elif all(p is not None for p in positions):
            layout = dict(zip(nodes, positions))
        else:
            layout = drawing_layout(graph, model, seed=getattr(model, "seed", 0) or 0)
        agents = [next(iter(c.agents), None) for c in cells]
        states = [str(getattr(a, "state", "agent")) if a is not None else "empty" for a in agents]
        details = None
        if len(nodes) <= DETAILS_UP_TO:
            details = [{"policy": _policy_name(a)} for a in agents]
        return NetworkPicture(graph=graph, layout=layout, state=states, round_number=self.round_number(model),
                              details=details, legend={"fill": "the agent's state"}, key=id(model))

    def agents(self, model: Model) -> list[Any]:
        """The agents a panel selects among, by number (the network's node order when there is one)."""
        network = find_network(model)
        if network is not None:
            return [next(iter(network[v].agents), None) for v in network.G.nodes]
        return list(model.agents)

    def agent_rows(self, model: Model, index: int) -> dict[str, str]:
        """One agent's panel: its state, policy, neighbours, what it observes and its last decision."""
        return view_controls.agent_rows(self, model, index)

    def banners(self, model: Model) -> list[Banner]:
        """The lines above the picture. Default: the end of the game, and failed LLM calls so far."""
        from llm_mesa.decisions import decision_fields, ledger_of

        out = []
        policy = self.policy_of(model)
        counted = decision_fields(model, [policy] if policy is not None else [])
        failed, decisions = counted["failed_decisions"], counted["decisions"]
        if failed:
            verdict = "; the game is invalid" if failed / decisions > ledger_of(model).failure_share else ""
            out.append(Banner("error", f"{failed} of {decisions} LLM decisions failed so far{verdict}", "llm-mesa-failures"))
        if not model.running:
            out.append(Banner("done", f"The game ended at round {self.round_number(model)}.", "llm-mesa-ended"))
        return out

    def messages(self, model: Model) -> pd.DataFrame | None:
        """This round's messages (a table), or None when the game has none."""
        return None

    def snapshot(self, model: Model, selected: int = 0) -> Snapshot:
        """Everything a page draws of ``model``'s current round."""
        count = len(self.agents(model))
        chosen = min(max(int(selected), 0), max(count - 1, 0))
        return Snapshot(round_number=self.round_number(model), label=self.round_label(model), running=bool(model.running),
                        rounds=self.rounds(model), picture=self.picture(model), banners=tuple(self.banners(model)),
                        agents=count, selected=chosen, agent=self.agent_rows(model, chosen) if count else {},
                        messages=self.messages(model))

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


def _policy_name(agent: Any) -> str:
    policy = getattr(agent, "policy", None)
    if policy is None:
        return "-"
    spec = getattr(policy, "spec", None)
    return spec() if callable(spec) else str(getattr(policy, "name", policy))


__all__ = ["Banner", "ControlError", "DETAILS_UP_TO", "GENERAL", "GameView", "NetworkPicture", "PALETTE", "Snapshot",
           "find_network", "view_of"]
