"""Per-round curves of any game's ``rounds`` table, per condition and model: the mean and a band.

For every measure of the table (a numeric or yes/no column that is not the same in
every row), each round's mean over the games of a cell and its 95 % t interval, kept
within what the measure can be (its declared range, ``Game.measures``; a share 0..1, a
count from 0). Every game counts at every round up to the cell's longest: a game that
ended holds its last state (a share, a level), and adds 0 to a column that counts a
round's events (``Scale.events``: moves, failed decisions). The line turns dotted where
fewer than half of a cell's games are still playing; the table beside the figure says
how many played to the last round.
"""

from __future__ import annotations

import math
import textwrap
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from llm_mesa.game_types import Scale

#: most rounds drawn per curve (a longer game is sampled evenly, its last round kept)
MAX_POINTS = 200
#: most conditions drawn as facets of one figure (the rest are in the table)
MAX_FACETS = 12
GAME_KEY = ["sweep", "condition", "policy", "seed"]


def _interval(mean: np.ndarray, sd: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from scipy.stats import t

    with np.errstate(invalid="ignore", divide="ignore"):
        half = np.where(n > 1, t.ppf(0.975, np.maximum(n - 1, 1)) * sd / np.sqrt(np.maximum(n, 1)), np.nan)
    return mean - half, mean + half


def _mean(values: np.ndarray) -> float:
    """The mean of the values that are numbers; NaN where none is (a measure no game of the cell reported),
    without numpy's warning on the user's terminal."""
    kept = values[~np.isnan(values)]
    return float(kept.mean()) if len(kept) else math.nan


def _sampled(rounds: Sequence[int]) -> list[int]:
    rounds = sorted(rounds)
    if len(rounds) <= MAX_POINTS:
        return rounds
    step = math.ceil(len(rounds) / MAX_POINTS)
    kept = rounds[::step]
    return kept if kept[-1] == rounds[-1] else [*kept, rounds[-1]]


def per_round(rounds: pd.DataFrame | None, games: pd.DataFrame, scales: Mapping[str, Scale],
              parameters: Mapping[str, Mapping[str, Any]], headline: str | None = None) -> dict[str, Any]:
    """The curves of every measure of the sweeps' ``rounds`` tables (JSON-ready), or why there are none."""
    if rounds is None or rounds.empty or "round" not in rounds.columns:
        return {"missing": "the sweep kept no rounds table: sweep with --tables rounds for per-round curves"}
    keys = [k for k in GAME_KEY if k in rounds.columns and k in games.columns]
    frame = rounds.merge(games[[*keys, "model"]].drop_duplicates(keys), on=keys, how="inner")
    measures, constant = [], {}
    for column in rounds.columns:
        if column in (*GAME_KEY, "round", "model") or not (pd.api.types.is_numeric_dtype(frame[column])
                                                            or pd.api.types.is_bool_dtype(frame[column])):
            continue
        values = frame[column].dropna()
        if values.empty:
            continue
        if values.nunique() == 1:
            constant[column] = values.iloc[0].item() if hasattr(values.iloc[0], "item") else values.iloc[0]
            continue
        measures.append(column)
    measures.sort(key=lambda c: c != headline)
    if not measures:
        return {"missing": "no column of the rounds table changes from round to round or game to game",
                "constant": constant}
    frame = frame.assign(round=frame["round"].astype(int)).astype({c: float for c in measures})
    events = [c for c in measures if c in scales and scales[c].events]
    rows, series = [], []
    for (condition, model), part in frame.groupby(["condition", "model"], sort=False):
        part = part.sort_values("round")
        finished = part.groupby(keys, sort=False)["round"].max()
        horizon = list(range(int(part["round"].min()), int(finished.max()) + 1))
        kept = _sampled(horizon)
        playing = (finished.to_numpy()[None, :] >= np.array(kept)[:, None]).sum(axis=1)  # games still playing
        series.append({"condition": str(condition), "model": str(model), "games": int(len(finished)),
                       "last_round": int(finished.max()), "to_the_end": int((finished == finished.max()).sum()),
                       "median_rounds": float(finished.median())})
        own = parameters.get(str(condition), {})
        ends = series[-1].setdefault("ends", {})
        cube = _padded(part, keys, measures, horizon, [c in events for c in measures])
        values = cube[:, [r - horizon[0] for r in kept], :]
        with warnings.catch_warnings():  # a round with one game has no SD (its band is left out)
            warnings.simplefilter("ignore", RuntimeWarning)
            means, sds = np.nanmean(values, axis=0), np.nanstd(values, axis=0, ddof=1)
        counts = np.sum(~np.isnan(values), axis=0)
        last = part.loc[part.groupby(keys, sort=False)["round"].idxmax()]
        for j, column in enumerate(measures):
            low, high = _interval(means[:, j], sds[:, j], counts[:, j])
            bottom, top = scales[column].bounds(own) if column in scales else (None, None)
            low = np.maximum(low, bottom) if bottom is not None else low
            high = np.minimum(high, top) if top is not None else high
            for r, m, lo, hi, k in zip(kept, means[:, j], low, high, playing):
                rows.append({"condition": str(condition), "model": str(model), "measure": column, "round": int(r),
                             "n": int(k), "mean": float(m), "low": None if np.isnan(lo) else float(lo),
                             "high": None if np.isnan(hi) else float(hi)})
            finals = last[column].dropna().to_numpy(dtype=float)
            with np.errstate(invalid="ignore"):  # an infinite value (a ratio over 0) has no spread: no interval, and no warning
                spread = finals.std(ddof=1) if len(finals) > 1 else np.nan
            e_low, e_high = _interval(np.array([_mean(finals)]), np.array([spread]), np.array([len(finals)]))
            e_low = float(max(e_low[0], bottom)) if bottom is not None and not np.isnan(e_low[0]) else e_low[0]
            e_high = float(min(e_high[0], top)) if top is not None and not np.isnan(e_high[0]) else e_high[0]
            start = _mean(cube[:, 0, j])
            ends[column] = {"start": None if np.isnan(start) else start,
                            "end": float(finals.mean()) if len(finals) else None,
                            "low": None if np.isnan(e_low) else float(e_low),
                            "high": None if np.isnan(e_high) else float(e_high)}
    return {"measures": measures, "constant": constant, "events": events, "series": series, "rows": rows}


def _padded(part: pd.DataFrame, keys: Sequence[str], measures: Sequence[str], horizon: Sequence[int],
            events: Sequence[bool]) -> np.ndarray:
    """(game, round, measure) values of one cell over ``horizon``; after a game's last round a level holds its
    last value and an events column is 0."""
    game = part.groupby(list(keys), sort=False).ngroup().to_numpy()
    start = horizon[0]
    at = part["round"].to_numpy(dtype=int) - start
    cube = np.full((int(game.max()) + 1, len(horizon), len(measures)), np.nan)
    cube[game, at, :] = part[list(measures)].to_numpy(dtype=float)
    finished = np.full(cube.shape[0], -1)
    np.maximum.at(finished, game, at)
    after = np.arange(len(horizon))[None, :] > finished[:, None]  # (game, round): the game had ended
    seen = np.where(~np.isnan(cube), np.arange(len(horizon))[None, :, None], 0)
    np.maximum.accumulate(seen, axis=1, out=seen)  # each round: the latest round with a value
    held = np.take_along_axis(cube, seen, axis=1)
    for j, is_events in enumerate(events):
        cube[:, :, j] = np.where(after, 0.0 if is_events else held[:, :, j], cube[:, :, j])
    return cube


def _fmt(value: Any) -> str:
    return "" if value is None else f"{value:.4g}"


def curve_table(curves: Mapping[str, Any], measure: str, conditions: Sequence[str] = (),
                models: Sequence[str] = ()) -> pd.DataFrame:
    """Per condition and model (in the report's order): games, how many played to the last round, and the
    measure at the start and at each game's end."""
    def rank(s: Mapping[str, Any]) -> tuple[int, int]:
        return (list(conditions).index(s["condition"]) if s["condition"] in conditions else len(conditions),
                list(models).index(s["model"]) if s["model"] in models else len(models))

    out = []
    for s in sorted(curves["series"], key=rank):
        end = s["ends"][measure]
        interval = f" [{_fmt(end['low'])}, {_fmt(end['high'])}]" if end["low"] is not None else ""
        out.append({"condition": s["condition"], "model": s["model"], "games": s["games"],
                    "rounds (median)": s["median_rounds"], "to the last round": f"{s['to_the_end']} of {s['games']}",
                    "at round 0": _fmt(end["start"]), "at each game's end (95% t)": _fmt(end["end"]) + interval})
    return pd.DataFrame(out)


def draw_curves(curves: Mapping[str, Any], measure: str, scale: Scale, conditions: Sequence[str],
                models: Sequence[str]) -> str:
    """Small multiples, one per condition: each model's mean per round (line) and 95 % t band (SVG text)."""
    from llm_mesa.analysis.figures import svg_text

    return svg_text(curves_figure(curves, measure, scale, conditions, models))


def curves_figure(curves: Mapping[str, Any], measure: str, scale: Scale, conditions: Sequence[str],
                  models: Sequence[str]):
    """``draw_curves``'s figure, its title wrapped within the figure's width (two panels are narrow)."""
    from llm_mesa.analysis.figures import COLOURS, facets, legend_outside

    rows = pd.DataFrame([r for r in curves["rows"] if r["measure"] == measure])
    shown = [c for c in conditions if c in set(rows["condition"])][:MAX_FACETS]
    games = {(s["condition"], s["model"]): s["games"] for s in curves["series"]}
    figure, axes = facets(len(shown), cols=3 if len(shown) > 4 else len(shown) or 1, width=3.3 if len(shown) > 1
                          else 6.0, height=2.5 if len(shown) > 1 else 3.0)
    colours = {m: COLOURS[i % len(COLOURS)] for i, m in enumerate(models)}
    low, high = scale.bounds()
    title = (scale.label or measure.replace("_", " ")) + (f" ({scale.unit})" if scale.unit else "")
    handles = {}
    for ax, condition in zip(axes, shown):
        for model in models:
            part = rows[(rows["condition"] == condition) & (rows["model"] == model)].sort_values("round")
            if part.empty:
                continue
            colour = colours[model]
            band = part[["round", "low", "high"]].astype(float).dropna()  # no band where one game has no spread
            if not band.empty:
                ax.fill_between(band["round"], band["low"], band["high"], color=colour, alpha=0.18, linewidth=0)
            many = part["n"] >= games[(condition, model)] / 2  # n: the games still playing
            (line,) = ax.plot(part["round"][many], part["mean"][many], color=colour, linewidth=1.5, label=model)
            if (~many).any():  # fewer than half the games still playing: dotted
                tail = part[part["round"] >= part["round"][many].max()] if many.any() else part
                ax.plot(tail["round"], tail["mean"], color=colour, linewidth=1.0, linestyle=":")
            handles[model] = line
        ax.set_title(condition, fontsize=8)
        ax.set_xlabel("round", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if scale.kind == "share":
            ax.set_ylim(-0.03, 1.03)
        elif low is not None and high is not None:
            pad = 0.03 * (high - low)
            ax.set_ylim(low - pad, high + pad)
        elif low is not None:
            ax.set_ylim(bottom=low)
    if axes:
        axes[0].set_ylabel(title, fontsize=7)
    if len(shown) == 1:
        legend_outside(axes[0])
    elif handles:
        figure.legend(list(handles.values()), list(handles), loc="outside lower center", ncol=min(len(handles), 4),
                      fontsize=7, frameon=False)
    words = f"{title} per round: mean over the games (an ended game at its last state), 95% t band"
    chars = max(40, int(figure.get_figwidth() * 72 / 5.2))  # about 5.2 points a character at 9 pt: within the figure
    figure.suptitle("\n".join(textwrap.wrap(words, chars)), fontsize=9)
    return figure


__all__ = ["MAX_FACETS", "curve_table", "curves_figure", "draw_curves", "per_round"]
