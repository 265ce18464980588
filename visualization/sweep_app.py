"""The sweep browser, for any game's sweep: filter its games, read its table and distributions, replay a game.

Open it with ``llm-mesa viz --sweep DIR`` (DIR written by ``llm-mesa sweep --out
DIR``), or type the directory into the page. It reads the sweep's tables only (no
endpoint is called): the game's table per condition x policy (``GameView.sweep_table``),
the distribution of any measure (one row per condition, one lane per policy, each
game a point, jittered within its lane, the mean a black tick), and the games
themselves; click a game in the distribution (or pick it in the list) to replay it
round by round (from its kept tables, or played again from its seed).
"""

from __future__ import annotations

import os
import zlib
from typing import Any

import pandas as pd
import solara

from llm_mesa.errors import LlmMesaError
from llm_mesa.registry import get_game
from llm_mesa.views import view_of
from llm_mesa.views.charts import EMBED, KEY, VEGA_LITE
from llm_mesa.views.sweeps import SWEEP_DIR_ENV, SweepGames, game_label

from .controls import page_view
from .replay_app import RecordingView
from .vega_widget import VegaChart

#: points drawn at most per distribution (a larger sweep shows an even sample, its means from every game)
MAX_POINTS = 3000


def _jitter(condition: str, policy: str, seed: int) -> float:
    """A fixed offset in 0..1 for one game (the same game always lands on the same spot)."""
    return (zlib.crc32(f"{condition}|{policy}|{seed}".encode()) % 1000) / 1000


def distribution_spec(games: pd.DataFrame, measure: str, conditions: list[str], policies: list[str]) -> dict[str, Any]:
    """One row per condition, one lane per policy in it, each game a jittered point; ticks: the means."""
    lanes = {p: i for i, p in enumerate(policies)}
    rows = []
    for record in games[[*KEY, measure]].to_dict("records"):
        value = record[measure]
        if value is None or pd.isna(value):
            continue
        condition, policy, seed = str(record["condition"]), str(record["policy"]), int(record["seed"])
        lane = lanes.get(policy, 0)
        rows.append({"condition": condition, "policy": policy, "seed": seed, "value": float(value),
                     "lane": lane + 0.2 + 0.6 * _jitter(condition, policy, seed), "middle": lane + 0.5,
                     "game": game_label(condition, policy, seed), "key": [condition, policy, seed]})
    means = (pd.DataFrame(rows).groupby(["condition", "policy"], sort=False)
             .agg(value=("value", "mean"), middle=("middle", "first"), games=("value", "size")).reset_index()
             .to_dict("records")) if rows else []
    shown = rows if len(rows) <= MAX_POINTS else rows[:: -(-len(rows) // MAX_POINTS)]
    band = max(24, 18 * len(policies))
    y = {"field": "condition", "type": "nominal", "title": None, "sort": conditions,
         "axis": {"labelLimit": 280, "labelFontSize": 11}}
    # lanes inset from the row's edges: no point sits on an axis or on the next row's line
    offset = {"type": "quantitative", "scale": {"domain": [0, max(len(policies), 1)], "range": [4, band - 4]}}
    colour = {"field": "policy", "type": "nominal", "sort": policies,
              "legend": {"orient": "bottom", "title": "policy", "columns": 3, "labelLimit": 0, "symbolLimit": 0}}
    values = [r["value"] for r in rows]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    pad = 0.04 * (high - low) if high > low else max(abs(high) * 0.1, 0.5)  # a point at the extreme stays inside
    x = {"field": "value", "type": "quantitative", "title": measure.replace("_", " "),
         "scale": {"domain": [low - pad, high + pad], "nice": False, "zero": False}}
    if values and all(float(v).is_integer() for v in values):  # whole numbers (rounds, agents): whole ticks
        x["axis"] = {"tickMinStep": 1, "format": "d"}
    size = max(30, min(90, 6000 // max(len(shown), 1)))
    return {
        "$schema": VEGA_LITE, "width": "container", "height": {"step": band},
        "title": {"text": f"{measure.replace('_', ' ')} over games",
                  "subtitle": [f"one row per condition, one lane per policy; each game a point ({len(rows)} games"
                               + (f", {len(shown)} drawn" if len(shown) < len(rows) else "") + ")",
                               "black tick: the mean of a condition x policy · click a game to replay it"]},
        "autosize": {"type": "fit-x", "contains": "padding"}, "usermeta": EMBED,
        "datasets": {"games": shown, "means": means},
        "layer": [  # the ticks beneath: a click on a game reaches its point
            {"data": {"name": "means"}, "mark": {"type": "tick", "color": "black", "thickness": 2,
                                                 "size": max(10, band / max(len(policies), 1) - 4)},
             "encoding": {"x": x, "y": y, "yOffset": {"field": "middle", **offset},
                          "tooltip": [{"field": "condition"}, {"field": "policy"}, {"field": "games"},
                                      {"field": "value", "title": f"mean {measure}", "format": ".4~f"}]}},
            {"data": {"name": "games"}, "mark": {"type": "point", "filled": True, "size": size, "opacity": 0.6,
                                                 "cursor": "pointer"},
             "encoding": {"x": x, "y": y, "yOffset": {"field": "lane", **offset}, "color": colour,
                          "tooltip": [{"field": "game"}, {"field": "value", "title": measure, "format": ".4~f"}]}},
        ],
        "config": {"title": {"anchor": "start", "fontSize": 13}, "view": {"stroke": "#eeeeee"}},
    }


#: the filters' chosen values scroll within a few lines: 30 conditions never fill the sidebar
FILTERS_CSS = (".llm-mesa-sweep-filters .v-select__selections { max-height: 7.5em; overflow-y: auto; }"
               ".llm-mesa-sweep-table td, .llm-mesa-sweep-table th { white-space: nowrap; }"
               # a wide table scrolls inside the page's column, never past its right edge
               ".llm-mesa-sweep-table, .llm-mesa-sweep-games { max-width: 100%; overflow-x: auto; }"
               ".llm-mesa-sweep-table .v-data-table__wrapper, .llm-mesa-sweep-games .v-data-table__wrapper "
               "{ overflow-x: auto; }")
#: what a cell shows where its table has no number (an SD of one game, a mean of none)
NO_VALUE = "–"


def shown_table(table: pd.DataFrame) -> pd.DataFrame:
    """The table as the page shows it: a missing number is a dash, never "NaN" (one game has no SD)."""
    return table.astype(object).where(table.notna(), NO_VALUE)


def varying_measures(games: pd.DataFrame, measures: list[str]) -> list[str]:
    """The measures whose games differ (a constant column has no distribution); the headline stays if none does."""
    varying = [m for m in measures if pd.to_numeric(games[m], errors="coerce").nunique(dropna=True) > 1]
    return varying or measures[:1]


def in_order(table: pd.DataFrame, sweep: SweepGames) -> pd.DataFrame:
    """The table's rows in the sweep's order of conditions, then policies (as its manifest lists them)."""
    if table.empty or not {"condition", "policy"} <= set(table.columns):
        return table
    rank = {c: i for i, c in enumerate(sweep.conditions)}
    lane = {p: i for i, p in enumerate(sweep.policies)}
    order = sorted(range(len(table)), key=lambda i: (rank.get(table["condition"].iloc[i], len(rank)),
                                                     lane.get(table["policy"].iloc[i], len(lane))))
    return table.iloc[order].reset_index(drop=True)


@solara.component
def GameReplay(view, sweep: SweepGames, key: tuple[str, str, int]):
    def load():
        try:
            return view.sweep_game(sweep, *key)
        except LlmMesaError as exc:
            return exc

    recording = solara.use_memo(load, dependencies=[str(sweep.path), key])
    if isinstance(recording, LlmMesaError):
        solara.Error(str(recording), classes=["llm-mesa-sweep-error"])
        return
    RecordingView(recording).key(recording.key)


@solara.component
def SweepBody(sweep: SweepGames):
    """The browser of one sweep; its filters belong to it (another directory starts afresh: keyed by path)."""
    view = solara.use_memo(lambda: view_of(get_game(sweep.game_name)), dependencies=[sweep.game_name])
    conditions, set_conditions = solara.use_state(sweep.conditions)
    policies, set_policies = solara.use_state(sweep.policies)
    measures = solara.use_memo(lambda: varying_measures(sweep.games, view.sweep_measures(sweep.games)),
                               dependencies=[str(sweep.path)])
    measure, set_measure = solara.use_state(measures[0] if measures else "")
    games = sweep.filtered(conditions, policies)
    keys = list(zip(games["condition"], games["policy"], games["seed"].astype(int)))
    labels = [game_label(*k) for k in keys]
    chosen, set_chosen = solara.use_state(0)

    def clicked(datum):
        if isinstance(datum, dict) and isinstance(datum.get("key"), list):
            wanted = (str(datum["key"][0]), str(datum["key"][1]), int(datum["key"][2]))
            if wanted in keys:
                set_chosen(keys.index(wanted))

    with solara.Sidebar():
        solara.Style(FILTERS_CSS)
        with solara.Column(classes=["llm-mesa-sweep-filters"]):
            solara.SelectMultiple("Conditions", values=conditions, all_values=sweep.conditions,
                                  on_value=set_conditions, classes=["llm-mesa-sweep-conditions"])
            solara.SelectMultiple("Policies", values=policies, all_values=sweep.policies, on_value=set_policies,
                                  classes=["llm-mesa-sweep-policies"])
            solara.Text(f"shown: {len(conditions)} of {len(sweep.conditions)} conditions, {len(policies)} of "
                        f"{len(sweep.policies)} policies", classes=["llm-mesa-sweep-shown"],
                        style={"font-size": "0.8em", "color": "#666"})
            if measures:
                solara.Select("Measure", values=measures, value=measure if measure in measures else measures[0],
                              on_value=set_measure, classes=["llm-mesa-sweep-measure"])
    solara.Text(sweep.describe(), classes=["llm-mesa-sweep-summary"])
    if games.empty:
        solara.Warning("No game matches the filters: choose at least one condition and one policy.", dense=True)
        return
    solara.Markdown(f"#### The {view.game.name} games per condition and policy")
    with solara.Div(classes=["llm-mesa-sweep-table"]):
        solara.DataFrame(shown_table(in_order(view.sweep_table(games), sweep)), items_per_page=20)
        solara.Text(f"each measure: mean ± SD over a cell's games (a yes/no measure: the share of its games; one "
                    f"game: its value); {NO_VALUE}: no value", style={"font-size": "0.8em", "color": "#666"})
    if measures:
        shown_conditions = [c for c in sweep.conditions if c in set(games["condition"])]
        shown_policies = [p for p in sweep.policies if p in set(games["policy"])]
        VegaChart(distribution_spec(games, measure if measure in measures else measures[0], shown_conditions,
                                    shown_policies), classes=["llm-mesa-sweep-distribution"], on_click=clicked)
    with solara.Details("The games", expand=False):
        with solara.Div(classes=["llm-mesa-sweep-games"]):
            solara.DataFrame(games, items_per_page=10)
    solara.Markdown("#### Replay one game")
    current = min(chosen, len(labels) - 1)
    solara.Select("Game", values=labels, value=labels[current], on_value=lambda v: set_chosen(labels.index(v)),
                  classes=["llm-mesa-sweep-game"])
    with solara.Column(classes=["llm-mesa-sweep-replay"]):
        GameReplay(view, sweep, keys[current]).key(f"{sweep.path}|{labels[current]}")


def open_sweep(path: str) -> SweepGames | LlmMesaError | None:
    if not path.strip():
        return None
    try:
        sweep = SweepGames.open(path)
        if not sweep.game_name:  # a sweep from before manifests named their game: the page's game
            sweep.manifest["game"] = page_view().game.name
        get_game(sweep.game_name)
        return sweep
    except LlmMesaError as exc:
        return exc


@solara.component
def Page():
    sweep_dir, set_sweep_dir = solara.use_state(os.environ.get(SWEEP_DIR_ENV, ""))
    loaded = solara.use_memo(lambda: open_sweep(sweep_dir), dependencies=[sweep_dir])
    solara.Title("llm-mesa: sweep browser")
    with solara.Sidebar():
        solara.Markdown("### Browse a sweep")
        solara.InputText("Sweep directory (llm-mesa sweep --out DIR)", value=sweep_dir,
                         on_value=lambda v: set_sweep_dir(v.strip()), continuous_update=False,
                         classes=["llm-mesa-sweep-dir"])
    with solara.Column(style={"padding": "8px 16px"}, classes=["llm-mesa-page"]):
        if loaded is None:
            solara.Info("Type the directory of a sweep (llm-mesa sweep ... --out DIR) in the sidebar.")
        elif isinstance(loaded, LlmMesaError):
            solara.Error(str(loaded), classes=["llm-mesa-sweep-error"])
        else:
            SweepBody(loaded).key(str(loaded.path))


__all__ = ["Page", "distribution_spec"]
