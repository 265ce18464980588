"""The sweep browser: open a sweep's results, filter them, look at the distributions, replay a game.

Open it with ``llm-mesa viz --sweep DIR`` (DIR written by ``llm-mesa sweep --out
DIR``), or type the directory into the page. It reads the sweep's tables only (no
game is played, no endpoint called): the consensus table (or SIGN's final
agreement), the distribution of any measure by policy and condition, the games
themselves; click a game in the distribution (or pick it in the list) to replay it
round by round with the replay viewer. Games replay when the sweep kept their
tables (``--tables agents,rounds``; a naming sweep needs ``rounds``).
"""

from __future__ import annotations

import os
from typing import Any

import pandas as pd
import solara

from .charts import VegaChart
from .cli import SWEEP_DIR_ENV
from .naming_charts import agreement_chart, outcomes_chart
from .network_chart import EMBED, VEGA_LITE
from .replay_app import RoundScrubber, RoundView
from .sweep_data import KEY, SweepView, SweepViewError, game_label

GAME_COLUMNS = ("condition", "policy", "seed", "consensus", "rounds", "stop_reason", "winner", "largest_component",
                "local_agreement", "failures", "agreement_final", "rounds_to_50")
DEFAULT_MEASURE = {"consensus": "rounds", "naming": "agreement_final"}


def distribution_spec(games: pd.DataFrame, measure: str, title: str | None = None) -> dict[str, Any]:
    """Every game as a point (x: the measure, row: its policy, colour: its condition); ticks: the means."""
    rows = []
    for record in games[[*KEY, measure]].to_dict("records"):
        value = record[measure]
        if value is None or pd.isna(value):
            continue
        rows.append({"condition": str(record["condition"]), "policy": str(record["policy"]), "seed": int(record["seed"]),
                     "value": float(value), "game": game_label(record["condition"], record["policy"], record["seed"])})
    y = {"field": "policy", "type": "nominal", "title": "policy"}
    x = {"field": "value", "type": "quantitative", "title": measure.replace("_", " ")}
    return {
        "$schema": VEGA_LITE, "width": "container", "height": {"step": 34},
        "title": {"text": title or f"Distribution of {measure.replace('_', ' ')} over games",
                  "subtitle": "one point per game (colour: condition) · black tick: the mean · click a game to replay it"},
        "autosize": {"type": "fit-x", "contains": "padding"}, "data": {"values": rows}, "usermeta": EMBED,
        "layer": [  # the ticks beneath: a click on a game reaches its point
            {"mark": {"type": "tick", "color": "black", "thickness": 2, "size": 26},
             "encoding": {"x": {"aggregate": "mean", "field": "value", "type": "quantitative"}, "y": y}},
            {"mark": {"type": "point", "filled": True, "size": 90, "opacity": 0.75, "cursor": "pointer"},
             "encoding": {"x": x, "y": y, "color": {"field": "condition", "type": "nominal",
                                                   "legend": {"orient": "bottom", "title": "condition"}},
                          "tooltip": [{"field": "game"}, {"field": "value", "title": measure, "format": ".4~f"}]}},
        ],
        "config": {"title": {"anchor": "start", "fontSize": 13}},
    }


@solara.component
def NamingReplay(view: SweepView, key: tuple[str, str, int]):
    round_number, set_round = solara.use_state(0)
    try:
        rounds = view.rounds_of(*key)
    except SweepViewError as exc:
        solara.Error(str(exc), classes=["llm-mesa-sweep-error"])
        return
    rounds = rounds[rounds["round"] >= 1] if (rounds["round"] >= 1).any() else rounds
    last = int(rounds["round"].max())
    shown = min(max(round_number, int(rounds["round"].min())), last)
    RoundScrubber(last, shown, set_round)
    row = rounds[rounds["round"] == shown].iloc[0]
    solara.Text(f"Round {shown} of {last}", classes=["llm-mesa-replay-round"], style={"font-weight": "bold"})
    solara.Info(f"Agreement {float(row['agreement']):.2f}; {float(row['held_share']):.0%} hold {row['top_held']}; "
                f"{int(row['distinct_held'])} names in use.", dense=True)
    with solara.Columns([1, 1], style={"align-items": "flex-start"}):
        VegaChart(agreement_chart(rounds, last_round=last, current_round=shown).to_dict(),
                  classes=["llm-mesa-naming-agreement"])
        VegaChart(outcomes_chart(rounds, last_round=last, current_round=shown).to_dict(),
                  classes=["llm-mesa-naming-outcomes"])


@solara.component
def ConsensusReplay(view: SweepView, key: tuple[str, str, int]):
    round_number, set_round = solara.use_state(0)
    game = solara.use_memo(lambda: _load_game(view, key), dependencies=[str(view.path), key])
    if isinstance(game, SweepViewError):
        solara.Error(str(game), classes=["llm-mesa-sweep-error"])
        return
    shown = min(round_number, game.last_round)
    RoundScrubber(game.last_round, shown, set_round)
    solara.Text(game.outcome_line())
    RoundView(game, shown)


def _load_game(view: SweepView, key):
    try:
        return view.recorded_game(*key)
    except SweepViewError as exc:
        return exc


@solara.component
def SweepBody(view: SweepView):
    conditions, set_conditions = solara.use_state(view.conditions)
    policies, set_policies = solara.use_state(view.policies)
    measures = view.measures()
    measure, set_measure = solara.use_state(DEFAULT_MEASURE.get(view.game, measures[0] if measures else ""))
    games = view.filtered(conditions, policies)
    labels = [game_label(*k) for k in zip(games["condition"], games["policy"], games["seed"])]
    chosen, set_chosen = solara.use_state(labels[0] if labels else "")

    def clicked(datum):
        if isinstance(datum, dict) and datum.get("game"):
            set_chosen(str(datum["game"]))

    with solara.Sidebar():
        with solara.Column(classes=["llm-mesa-sweep-filters"]):
            solara.SelectMultiple("Conditions", values=conditions, all_values=view.conditions,
                                  on_value=set_conditions, classes=["llm-mesa-sweep-conditions"])
            solara.SelectMultiple("Policies", values=policies, all_values=view.policies, on_value=set_policies,
                                  classes=["llm-mesa-sweep-policies"])
            if measures:
                solara.Select("Measure", values=measures, value=measure if measure in measures else measures[0],
                              on_value=set_measure)
    solara.Text(view.describe(), classes=["llm-mesa-sweep-summary"])
    if games.empty:
        solara.Warning("No game matches the filters: choose at least one condition and one policy.", dense=True)
        return
    heading = "Consensus (successes / games)" if view.game == "consensus" else "Final agreement (mean, SD over seeds)"
    solara.Markdown(f"#### {heading}")
    with solara.Div(classes=["llm-mesa-sweep-table"]):
        solara.DataFrame(view.headline(games), items_per_page=20)
    with solara.Columns([3, 2], style={"align-items": "flex-start"}):
        if measures:
            VegaChart(distribution_spec(games, measure if measure in measures else measures[0]),
                      classes=["llm-mesa-sweep-distribution"], on_click=clicked)
        with solara.Column(style={"min-width": "0"}):
            shown = [c for c in GAME_COLUMNS if c in games.columns]
            solara.DataFrame(games[shown], items_per_page=8)
    solara.Markdown("#### Replay one game")
    current = chosen if chosen in labels else labels[0]
    solara.Select("Game", values=labels, value=current, on_value=set_chosen, classes=["llm-mesa-sweep-game"])
    condition, policy, seed = [part.strip() for part in current.split("|")]
    key = (condition, policy, int(seed.removeprefix("seed ")))
    with solara.Column(classes=["llm-mesa-sweep-replay"]):
        if view.game == "consensus":
            ConsensusReplay(view, key)
        else:
            NamingReplay(view, key)


@solara.component
def Page():
    sweep_dir, set_sweep_dir = solara.use_state(os.environ.get(SWEEP_DIR_ENV, ""))

    def load():
        if not sweep_dir.strip():
            return None
        try:
            return SweepView.open(sweep_dir)
        except SweepViewError as exc:
            return exc

    loaded = solara.use_memo(load, dependencies=[sweep_dir])
    solara.Title("llm-mesa: sweep browser")
    with solara.Sidebar():
        solara.Markdown("### Browse a sweep")
        solara.InputText("Sweep directory (llm-mesa sweep --out DIR)", value=sweep_dir,
                         on_value=lambda v: set_sweep_dir(v.strip()), continuous_update=False,
                         classes=["llm-mesa-sweep-dir"])
    with solara.Column(style={"padding": "8px 16px"}, classes=["llm-mesa-page"]):
        if loaded is None:
            solara.Info("Type the directory of a sweep (llm-mesa sweep ... --out DIR) in the sidebar.")
        elif isinstance(loaded, SweepViewError):
            solara.Error(str(loaded), classes=["llm-mesa-sweep-error"])
        else:
            SweepBody(loaded)


__all__ = ["Page", "distribution_spec"]
