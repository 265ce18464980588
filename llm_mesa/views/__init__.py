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

import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llm_mesa.views import charts as view_charts
from llm_mesa.views import controls as view_controls
from llm_mesa.views.colours import NAMED_COLOURS, PALETTE
from llm_mesa.views.controls import GENERAL, ControlError
from llm_mesa.views.drawn import DETAILS_UP_TO, model_picture
from llm_mesa.views.pictures import Fill, GridPicture, NetworkPicture, Picture, fill_of
from llm_mesa.views.spaces import find_network, find_space, space_agents

if TYPE_CHECKING:
    import pandas as pd
    from mesa import Model

    from llm_mesa.games import Game
    from llm_mesa.views.runs import Recording

@dataclass(frozen=True)
class Banner:
    """A one-line status above a page's picture.

    Attributes:
        kind: ``done``, ``warning``, ``info`` or ``error`` (its colour).
        text: The line.
        tag: A CSS class, so that a test or a style can find it.
    """

    kind: str
    text: str
    tag: str = ""


@dataclass(frozen=True)
class Snapshot:
    """Everything a page draws of one round, read at once (under the page's lock for a live game).

    Attributes:
        round_number: The round played.
        label: The page's round line.
        running: Whether the game goes on.
        rounds: The per-round table the charts are drawn from.
        picture: The space at this round (None: the model keeps its agents in no space).
        banners: The status lines.
        agents: How many agents the panel selects among (0: no panel).
        selected: The selected agent's number.
        agent: The selected agent's panel, field -> text.
        messages: This round's messages, or None.
        messages_title: The messages table's title.
    """

    round_number: int
    label: str
    running: bool
    rounds: pd.DataFrame
    picture: Picture | None
    banners: tuple[Banner, ...] = ()
    agents: int = 0  # how many agents the panel selects among (0: no panel)
    selected: int = 0
    agent: Mapping[str, str] = field(default_factory=dict)
    messages: pd.DataFrame | None = None
    messages_title: str = "Messages"


class GameView:
    """The default view of a game: controls from its parameters, its model's network and rounds.

    Subclass it in the game's package (no solara, no explorer) and name the subclass
    in ``Game.extensions.view``; override only what the game improves.

    Args:
        game: The game whose models the view describes.
    """

    #: what the controls call the agents' policy
    policy_control = "policy"
    #: the agent attribute a page fills nodes and cells by (agents of Mesa's own examples keep theirs under
    #: other names: a game's view subclass says ``state_attribute = "wealth"``)
    state_attribute = "state"

    def __init__(self, game: Game) -> None:
        self.game = game
        self._policies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    # --- words ------------------------------------------------------------------------
    @property
    def title(self) -> str:
        """The page's title."""
        return f"llm-mesa: {self.game.summary or self.game.name}"

    # --- controls and building --------------------------------------------------------
    def controls(self) -> dict[str, dict[str, Any]]:
        """The page's controls: the parameters, the policy, the LLM endpoint and model, the seed.

        Returns:
            Name -> control, in Mesa's ``model_params`` format.
        """
        return view_controls.controls_of(self)

    def policy_choices(self) -> list[str]:
        """The policy specs the page offers.

        Returns:
            The game's rule configurations, its rule policies, and ``llm`` if it has an LLM policy.
        """
        return view_controls.policy_choices(self.game)

    def loopback_model(self) -> str:
        """The stand-in's model name the LLM controls start with.

        Returns:
            The game's first stand-in behaviour (``rule:majority-inertia``).
        """
        return view_controls.loopback_model(self.game)

    def check(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Control values converted and checked like their controls.

        Args:
            values: Control name -> value, as the page holds them.

        Returns:
            Name -> the converted value.

        Raises:
            ControlError: The first bad value, with its control and a message for the page.
        """
        return view_controls.check_values(self.controls(), values, self.game.parameters)

    def query_values(self, search: str) -> tuple[dict[str, Any], dict[str, str]]:
        """A link's query string as control values.

        Args:
            search: The query string (``?n=500&topology=caveman``).

        Returns:
            The good values by control, and a message for each bad one by control.
        """
        return view_controls.query_values(self.controls(), search, self.game.parameters)

    def make_policy(self, values: Mapping[str, Any], policy: str | None = None) -> Any:
        """The agents' policy from the controls.

        Args:
            values: The checked control values.
            policy: A policy spec that replaces the policy control's (a compare page's second panel).

        Returns:
            A rule policy spec, or the game's LLM policy (its endpoint asked first).
        """
        return view_controls.make_policy(self, values, policy)

    def build_from(self, values: Mapping[str, Any], *, policy: str | None = None) -> Model:
        """A model from control values (the page's Reset).

        Args:
            values: Control name -> value.
            policy: A policy spec that replaces the policy control's.

        Returns:
            The game's model, built.

        Raises:
            ControlError: A bad value, or a game that refused it; the error names its control.
        """
        checked = self.check(values)
        made = self.make_policy(checked, policy)
        parameters = {k: checked[k] for k in self.game.parameters.names if k in checked}
        model = view_controls.reported(self.controls(), lambda: self.build(parameters, made, checked.get("seed", 1)))
        if not isinstance(made, str):
            self._policies[model] = made
        return model

    def build(self, parameters: Mapping[str, Any], policy: Any, seed: int) -> Model:
        """The game's model (its own ``build``, parameters validated with defaults filled in).

        Args:
            parameters: The game's parameters.
            policy: A policy spec or a policy.
            seed: The game's seed.

        Returns:
            The model.
        """
        return self.game.make_model(parameters, policy, seed)

    def policy_of(self, model: Model) -> Any:
        """The LLM policy this view built a model with.

        Args:
            model: A model ``build_from`` made.

        Returns:
            The policy, or None (a rule spec, or a model of another view).
        """
        return self._policies.get(model)

    # --- one round of a live model --------------------------------------------------------
    def round_number(self, model: Model) -> int:
        """The round the model has played.

        Args:
            model: A game's model.

        Returns:
            Its ``round`` (for a Mesa model played through the adapter: the steps its hooks counted), else its
            DataCollector's rows after round 0.
        """
        from llm_mesa.adapter.hooks import HOOKS

        value = HOOKS[model].round if model in HOOKS else getattr(model, "round", None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        collector = getattr(model, "datacollector", None)
        if collector is not None:
            return max(len(collector.get_model_vars_dataframe()) - 1, 0)
        return 0

    def round_label(self, model: Model) -> str:
        """The page's round line.

        Args:
            model: A game's model.

        Returns:
            "Round t", then what the game adds (that it has ended).
        """
        return f"Round {self.round_number(model)}" + ("" if model.running else " (the game has ended)")

    def rounds(self, model: Model) -> pd.DataFrame:
        """The per-round table the charts are drawn from.

        Args:
            model: A game's model.

        Returns:
            One row a round (round 0 the start), numbers as floats.
        """
        return view_charts.numeric_rounds(self.game.table(model, "rounds"))

    def charts(self, rounds: pd.DataFrame, *, current_round: int | None = None, last_round: int | None = None,
               dash: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        """The charts of a per-round table. Default: its numeric columns, as the game's measures declare them.

        Args:
            rounds: The per-round table.
            current_round: The round a replay shows (a rule marks it).
            last_round: The game's last round (the x axis reaches it).
            dash: A column whose curve is drawn dashed.

        Returns:
            ``(CSS class, Vega-Lite dict)`` of each chart, most important first.
        """
        return view_charts.round_charts(rounds, current_round=current_round, last_round=last_round, dash=dash,
                                        scales=view_charts.column_scales(rounds, self.game),
                                        first=self.game.first_measure)

    def state_of(self, agent: Any) -> Any:
        """What a page fills an agent's node or cell by.

        Args:
            agent: An agent, or None (an empty cell).

        Returns:
            The game's declared ``Extensions.state`` of it, else its ``state_attribute``, or None.
        """
        if agent is None:
            return None
        declared = self.game.extensions.state
        if declared is not None:
            from llm_mesa.game_hooks import call

            return call(self.game, "state", declared, self.game, agent)
        return getattr(agent, self.state_attribute, None)

    def picture(self, model: Model) -> Picture | None:
        """The model's space at this round, each node or cell filled by its agents' state.

        Args:
            model: A game's model.

        Returns:
            A ``NetworkPicture`` or a grid picture, filled as the game's ``state_scale`` says; None when the
            model keeps its agents in no network or grid.
        """
        return model_picture(self, model)

    def agents(self, model: Model) -> list[Any]:
        """The agents a panel selects among, by number.

        Args:
            model: A game's model.

        Returns:
            The agents in the network's node order when there is one, else in the order of their ids.
        """
        return space_agents(model, find_space(model))

    def agent_rows(self, model: Model, index: int) -> dict[str, str]:
        """One agent's panel.

        Args:
            model: A game's model.
            index: The agent's number among ``agents(model)``.

        Returns:
            Field -> text: its state, policy, place, neighbours, what it observes and its last decision.
        """
        from llm_mesa.views.agent_panel import agent_rows

        return agent_rows(self, model, index)

    def banners(self, model: Model) -> list[Banner]:
        """The lines above the picture. Default: the end of the game, and failed LLM decisions so far.

        Args:
            model: A game's model.

        Returns:
            The banners, most important first.
        """
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
        """This round's messages.

        Args:
            model: A game's model.

        Returns:
            A table of them, or None when the game has none.
        """
        return None

    def snapshot(self, model: Model, selected: int = 0) -> Snapshot:
        """Everything a page draws of a model's current round, read at once.

        Args:
            model: A game's model.
            selected: The agent the panel shows (kept within range).

        Returns:
            The round's snapshot.
        """
        count = len(self.agents(model))
        chosen = min(max(int(selected), 0), max(count - 1, 0))
        return Snapshot(round_number=self.round_number(model), label=self.round_label(model), running=bool(model.running),
                        rounds=self.rounds(model), picture=self.picture(model), banners=tuple(self.banners(model)),
                        agents=count, selected=chosen, agent=self.agent_rows(model, chosen) if count else {},
                        messages=self.messages(model))

    # --- recorded runs and sweeps ---------------------------------------------------------
    def recording(self, path: Any) -> Recording:
        """A run directory written by the game's ``--out``, to replay.

        Args:
            path: The run directory (``llm-mesa GAME ... --out DIR``).

        Returns:
            The recording, round by round.
        """
        from llm_mesa.views.runs import open_run

        return open_run(self, path)

    def sweep_game(self, sweep: Any, condition: str, policy: str, seed: int) -> Recording:
        """One game of a sweep, to replay from its kept tables or its seed.

        Args:
            sweep: The sweep (``llm_mesa.views.runs.SweepRun``).
            condition: The game's condition.
            policy: The game's policy.
            seed: The game's seed.

        Returns:
            The recording, round by round.
        """
        from llm_mesa.views.runs import sweep_game

        return sweep_game(self, sweep, condition, policy, seed)

    def sweep_table(self, games: pd.DataFrame) -> pd.DataFrame:
        """The sweep browser's table.

        Args:
            games: The sweep's games, one row each.

        Returns:
            One row per condition x policy: games, and the mean and SD of each measure.
        """
        return view_charts.sweep_table(games)

    def sweep_measures(self, games: pd.DataFrame) -> list[str]:
        """The measures the sweep browser offers to draw as distributions.

        Args:
            games: The sweep's games, one row each.

        Returns:
            Column names, the headline measure first.
        """
        return view_charts.sweep_measures(games)


def view_of(game: Game) -> GameView:
    """What the explorer and Mesa's SolaraViz draw of a game's models.

    Args:
        game: An installed game.

    Returns:
        The game's own ``GameView`` subclass (``Game.extensions.view``), else the generic view.
    """
    if game.extensions.view is None:
        return GameView(game)
    from llm_mesa.games import load_target

    return load_target(game.extensions.view)(game)


__all__ = ["Banner", "ControlError", "DETAILS_UP_TO", "Fill", "GENERAL", "GameView", "GridPicture", "NAMED_COLOURS",
           "NetworkPicture", "PALETTE", "Picture", "Snapshot", "fill_of", "find_network", "find_space", "view_of"]
