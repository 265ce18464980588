"""What ``analyze`` and ``report`` give any game: its measures per condition and model, drawn as they are.

A game that brings no statistics of its own still gets, for every condition and
model (the LLM model, or the rule configuration), every numeric column of its
summary row summarised: mean, SD, median, range and a 95 % t interval of the mean;
and every boolean (true/false) column as a share with its 95 % Wilson interval.
What each column is comes from the game (``Game.measures``: a share, a count, a
continuous measure and its range; else read from the values), so an interval never
leaves what the measure can be (no rounds below 0 or above the round limit), the
game's headline measure comes first, and a column that holds one value in every game
is named once, in words, instead of drawn. ``report`` draws each measure with its
intervals beside its table: along the sweep's parameter when the conditions differ by
numbers (a quantitative axis), else one row per condition; and, where the sweep kept
its ``rounds`` tables, every per-round measure as curves per condition and model,
the mean and a band (``generic_curves``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from llm_mesa import declared
from llm_mesa.analysis.proportions import wilson_interval
from llm_mesa.game_types import Scale, infer_scale, share

if TYPE_CHECKING:
    from llm_mesa.games import Game

#: columns of a sweep's games table that are its keys or the engine's, not the game's measures
NOT_MEASURES = ("condition", "policy", "seed", "sweep", "model", "wall_s")
#: most columns summarised (a summary row of hundreds of counters is cut, and says so)
MAX_COLUMNS = 40


def measure_columns(games: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(numeric columns, boolean columns) of a games table, in its order; keys and timings left out."""
    numeric, boolean = [], []
    for column in games.columns:
        if column in NOT_MEASURES or column.endswith("_s"):
            continue
        values = games[column].dropna()
        if values.empty:
            continue
        if pd.api.types.is_bool_dtype(values) or set(values.unique()) <= {True, False} and values.dtype == object:
            boolean.append(column)
        elif pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            numeric.append(column)
    return numeric, boolean


def constant_columns(games: pd.DataFrame, columns: Sequence[str]) -> dict[str, Any]:
    """The columns that hold one value in every game (their value), in ``columns``' order."""
    out = {}
    for column in columns:
        values = games[column].dropna()
        if len(values) and values.nunique() == 1 and len(values) == len(games):
            first = values.iloc[0]
            out[column] = first.item() if hasattr(first, "item") else first
    return out


def condition_columns(games: pd.DataFrame, columns: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Columns that each condition fixes: one value in every game of a condition (whatever its model or seed),
    another in another condition (the network's size of each design cell, say). Only where the sweep played
    several seeds: with one, any column could look fixed."""
    if "seed" not in games.columns or games["seed"].nunique() < 2 or "condition" not in games.columns:
        return {}
    out = {}
    for column in columns:
        grouped = games.groupby("condition", sort=False)[column]
        if games[column].notna().all() and (grouped.nunique() == 1).all() and games[column].nunique() > 1:
            out[column] = {str(k): (v.item() if hasattr(v, "item") else v) for k, v in grouped.first().items()}
    return out


def _mean_row(values: pd.Series, bounds: tuple[float | None, float | None] = (None, None)) -> dict[str, Any]:
    x = pd.to_numeric(values, errors="coerce").dropna().to_numpy(dtype=float)
    n = len(x)
    if n == 0:
        return {"n": 0, "mean": None, "sd": None, "median": None, "min": None, "max": None, "low": None, "high": None}
    mean = float(x.mean())
    sd = float(x.std(ddof=1)) if n > 1 else None
    half = None
    if sd is not None:
        from scipy.stats import t

        half = float(t.ppf(0.975, n - 1) * sd / math.sqrt(n))
    low, high = (None, None) if half is None else (mean - half, mean + half)
    bottom, top = bounds  # the interval stays within what the measure can be
    if low is not None and bottom is not None:
        low = max(low, bottom)
    if high is not None and top is not None:
        high = min(high, top)
    return {"n": n, "mean": mean, "sd": sd, "median": float(np.median(x)), "min": float(x.min()),
            "max": float(x.max()), "low": low, "high": high}


def _share_row(values: pd.Series) -> dict[str, Any]:
    x = values.dropna().astype(bool)
    n, k = len(x), int(x.sum())
    low, high = wilson_interval(k, n) if n else (None, None)
    return {"n": n, "true": k, "share": k / n if n else None, "low": low, "high": high}


def summaries(games: pd.DataFrame, by: Sequence[str] = ("condition", "model"), *,
              scales: Mapping[str, Scale] | None = None, parameters: Mapping[str, Mapping[str, Any]] | None = None,
              first: Sequence[str] = (), skip: Sequence[str] = ()) -> dict[str, Any]:
    """Per group of ``by`` and measure: the rows of the generic report (``first`` measures first, ``skip`` left
    out; each interval within its measure's range, a bound named after a parameter read from the condition's)."""
    numeric, boolean = measure_columns(games)
    listed = [c for c in (*numeric, *boolean) if c not in skip]
    listed.sort(key=lambda c: (c not in first, list(first).index(c) if c in first else 0))
    shown = listed[:MAX_COLUMNS]
    rows: list[dict[str, Any]] = []
    for keys, group in games.groupby(list(by), sort=False, dropna=False):
        cell = dict(zip(by, (str(k) for k in (keys if isinstance(keys, tuple) else (keys,)))))
        own = (parameters or {}).get(cell.get("condition", ""), {})
        for column in shown:
            if column in boolean:
                rows.append({**cell, "measure": column, "kind": "share", **_share_row(group[column])})
            else:
                scale = (scales or {}).get(column)
                bounds = scale.bounds(own) if scale is not None else (None, None)
                rows.append({**cell, "measure": column, "kind": "mean", **_mean_row(group[column], bounds)})
    return {"numeric": [c for c in shown if c in numeric], "boolean": [c for c in shown if c in boolean],
            "order": shown, "left_out": len(listed) - len(shown), "rows": rows}


def _game_of(sweep: Any) -> Game | None:
    """The sweep's game, to read its declarations (None: a game no longer installed; the values speak alone)."""
    from llm_mesa import registry
    from llm_mesa.errors import LlmMesaError

    try:
        return registry.get_game(sweep.game)
    except LlmMesaError:
        return None


def scale_of(game: Game | None, column: str, values: pd.Series, boolean: bool = False) -> Scale:
    """What a column is: as the game declares it, a share for yes/no values, else read from its values."""
    given = game.measures.get(column) if game is not None else None
    if given is not None:
        return given
    return share(label=column.replace("_", " ")) if boolean else infer_scale(column, pd.unique(values))


def condition_parameters(sweep: Any, game: Game | None) -> dict[str, dict[str, Any]]:
    """Every condition's parameters (the sweeps' manifests), the game's defaults filled in."""
    defaults = game.parameters.defaults() if game is not None else {}
    out: dict[str, dict[str, Any]] = {}
    for manifest in sweep.manifests:
        for name, values in ((manifest.get("grid") or {}).get("conditions") or {}).items():
            out.setdefault(str(name), {**defaults, **dict(values or {})})
    return out


def numeric_axis(parameters: Mapping[str, Mapping[str, Any]], conditions: Sequence[str]) -> dict[str, Any] | None:
    """The sweep's numeric axis: when every parameter that differs between the conditions is a number, the one
    with most values (its value per condition; the others name each line), else None."""
    chosen = [parameters[c] for c in conditions if c in parameters]
    if len(chosen) < 2 or len(chosen) < len(conditions):
        return None
    names = list(dict.fromkeys(k for p in chosen for k in p))
    varying = [k for k in names if len({repr(p.get(k)) for p in chosen}) > 1]
    if not varying or not all(isinstance(p.get(k), (int, float)) and not isinstance(p.get(k), bool)
                              for k in varying for p in chosen):
        return None
    axis = max(varying, key=lambda k: (len({p[k] for p in chosen}), -varying.index(k)))
    others = [k for k in varying if k != axis]
    return {"parameter": axis, "values": {c: parameters[c][axis] for c in conditions},
            "others": {c: ", ".join(f"{k}={parameters[c][k]:g}" for k in others) for c in conditions}}


def analyze(sweep: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """The generic report over a ``SweepData``: games per cell, every measure's summary and per-round curves."""
    from llm_mesa.analysis.generic_curves import per_round

    game = _game_of(sweep)
    games = sweep.games
    numeric, boolean = measure_columns(games)
    constant = constant_columns(games, [*numeric, *boolean])
    fixed = condition_columns(games, [c for c in [*numeric, *boolean] if c not in constant])
    scales = {c: scale_of(game, c, games[c].dropna(), c in boolean) for c in [*numeric, *boolean]}
    named = list(game.measures) if game is not None else []
    headline = declared.first_measure(game) if game is not None else None
    first = [c for c in dict.fromkeys([headline, *named]) if c]
    parameters = condition_parameters(sweep, game)
    conditions = sweep.ordered("condition")
    rounds = sweep.table("rounds")
    if rounds is not None:
        flags = [c for c in rounds.columns if pd.api.types.is_bool_dtype(rounds[c])]
        round_scales = {c: scale_of(game, c, rounds[c].dropna(), c in flags) for c in rounds.columns
                        if pd.api.types.is_numeric_dtype(rounds[c]) or c in flags}
    else:
        round_scales = {}
    return {"games": len(games), "conditions": conditions, "models": sweep.ordered("model"),
            "summaries": summaries(games, scales=scales, parameters=parameters, first=first,
                                   skip=[*constant, *fixed]),
            "constant": constant, "by_condition": fixed, "headline": headline,
            "measures": {c: {"kind": v.kind, "label": v.label, "unit": v.unit} for c, v in
                         {**round_scales, **scales}.items()},
            "axis": numeric_axis(parameters, conditions),
            "curves": per_round(rounds, games, round_scales, parameters, headline)}


def _cell(row: Mapping[str, Any]) -> str:
    if row["kind"] == "share":
        if row["share"] is None:
            return "-"
        return f"{row['share']:.3f} [{row['low']:.3f}, {row['high']:.3f}] (n={row['n']})"
    if row["mean"] is None:
        return "-"
    sd = "" if row["sd"] is None else f" ± {row['sd']:.3g}"
    return f"{row['mean']:.4g}{sd} (n={row['n']})"


def summary_frame(report: Mapping[str, Any], measure: str) -> pd.DataFrame:
    """One measure's table: condition (rows) x model (columns), each cell as text."""
    rows = [r for r in report["summaries"]["rows"] if r["measure"] == measure]
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame([{"condition": r["condition"], "model": r["model"], "value": _cell(r)} for r in rows])
    table = frame.pivot(index="condition", columns="model", values="value").rename_axis(columns=None)
    return table.reindex(index=[c for c in report["conditions"] if c in table.index],
                         columns=[m for m in report["models"] if m in table.columns])


def constant_words(constant: Mapping[str, Any]) -> str:
    """Columns with one value in every game, in a sentence ("n is 38, edges 76 and k 2 in every game")."""
    parts = [f"{k} {'is ' if i == 0 else ''}{_value(v)}" for i, (k, v) in enumerate(constant.items())]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{listed} in every game (not drawn)"


def fixed_words(fixed: Mapping[str, Mapping[str, Any]]) -> str:
    """Columns each condition fixes, in a sentence."""
    names = list(fixed)
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    verb = "is" if len(names) == 1 else "are"
    return f"{listed} {verb} set by the condition (one value in all its games, whatever the model or seed; not drawn)"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value:g}" if isinstance(value, float) else str(value)


def format_report(report: Mapping[str, Any]) -> str:
    """The generic report as text: one table per measure (shares with Wilson 95 % intervals)."""
    s = report["summaries"]
    lines = [f"{report['games']} games; conditions: {', '.join(report['conditions'])}; "
             f"models: {', '.join(report['models'])}",
             "numeric measures: mean ± SD (n); booleans: share [95% Wilson interval] (n)"]
    if report.get("constant"):
        lines.append(constant_words(report["constant"]))
    if report.get("by_condition"):
        lines.append(fixed_words(report["by_condition"]))
    if report.get("axis"):
        lines.append(f"the conditions differ by {report['axis']['parameter']}: `llm-mesa report` draws each measure "
                     "along it")
    for measure in s.get("order") or [*s["numeric"], *s["boolean"]]:
        lines += ["", f"{measure}:", summary_frame(report, measure).to_string()]
    if s["left_out"]:
        lines.append(f"\n({s['left_out']} more columns not summarised; read them with llm_mesa.sweep.read_sweep)")
    curves = report.get("curves") or {}
    if curves.get("measures"):
        lines.append(f"\nper-round curves (in `llm-mesa report`): {', '.join(curves['measures'])}")
    elif curves.get("missing"):
        lines.append(f"\nno per-round curves: {curves['missing']}")
    return "\n".join(lines)


def headline_table(games: pd.DataFrame) -> str:
    """The end of a sweep for a game without a headline of its own: games and the first measures' means."""
    if games.empty:
        return "(no games)"
    numeric, boolean = measure_columns(games)
    chosen = (boolean + numeric)[:4]
    grouped = games.groupby(["condition", "policy"], sort=False)
    table = pd.DataFrame({"games": grouped.size()})
    for column in chosen:
        table[column] = grouped[column].mean(numeric_only=False).astype(float).round(3)
    return "games and means per condition and policy:\n" + table.to_string()


def measure_title(report: Mapping[str, Any], measure: str) -> str:
    """What a heading calls a measure: the label the game declares, with its unit, else its column's words."""
    words = (report.get("measures") or {}).get(measure) or {}
    return (words.get("label") or measure.replace("_", " ")) + (f" ({words['unit']})" if words.get("unit") else "")


def report_panels(sweep: Any, report: Mapping[str, Any]) -> list[Any]:
    """The headline measure, its per-round curves and every other measure's, then each other summary measure
    (each figure beside its table), then the columns that hold one value in every game, named."""
    from llm_mesa.analysis.generic_curves import curve_table, draw_curves
    from llm_mesa.analysis.generic_figures import draw_measure
    from llm_mesa.analysis.report_html import Panel, drawn

    s = report["summaries"]
    measures = s.get("order") or [*s["numeric"], *s["boolean"]]
    summary_panels = []
    for measure in measures:
        share_kind = measure in s["boolean"]
        kind = "share of games, 95% Wilson interval" if share_kind else "mean per game, 95% t interval"
        heading = ("share [95% Wilson interval] (n)" if share_kind else "mean ± SD (n)") + \
            ": conditions by row, models by column"
        along = f", along {report['axis']['parameter']}" if report.get("axis") else ", per condition and model"

        def panel(measure: str = measure, kind: str = kind, heading: str = heading, along: str = along) -> Panel:
            named = measure_title(report, measure)
            return Panel(named, draw_measure(report, measure), summary_frame(report, measure).reset_index(),
                         caption=f"{named} (column {measure}): {kind}{along}", table_title=heading)

        summary_panels.append(drawn(measure_title(report, measure), panel))
    curve_panels = []
    curves = report.get("curves") or {}
    for measure in curves.get("measures") or []:
        words = (report.get("measures") or {}).get(measure) or {}
        scale = Scale(words.get("kind") or "continuous", label=words.get("label") or "", unit=words.get("unit") or "")
        if sweep is not None:
            game = _game_of(sweep)
            scale = (game.measures.get(measure) if game is not None else None) or scale

        def curve(measure: str = measure, scale: Scale = scale) -> Panel:
            named = measure_title(report, measure)
            return Panel(f"{named} per round", draw_curves(curves, measure, scale, report["conditions"],
                                                           report["models"]),
                         curve_table(curves, measure, report["conditions"], report["models"]),
                         caption=f"{named} per round (column {measure}): the mean over a cell's games each round, its 95% t band "
                                 "within the measure's range; a game that ended holds its last state"
                                 + (" (this column counts a round's events: 0 after a game's end)"
                                    if measure in (curves.get("events") or []) else "")
                                 + "; dotted where fewer than half the cell's games are still playing",
                         table_title="games, and the measure at the start and at each game's end")

        curve_panels.append(drawn(f"{measure_title(report, measure)} per round", curve))
    headline = report.get("headline")
    lead = [p for p, m in zip(summary_panels, measures) if m == headline]
    panels = [*lead, *curve_panels, *[p for p, m in zip(summary_panels, measures) if m != headline]]
    if report.get("by_condition"):
        fixed = report["by_condition"]
        table = pd.DataFrame({"condition": report["conditions"],
                              **{c: [_value(fixed[c].get(k, "")) for k in report["conditions"]] for c in fixed}})
        panels.append(Panel("Set by the condition", None, table, caption=fixed_words(fixed),
                            table_title="each condition's value, the same in every game of it"))
    if report.get("constant"):
        table = pd.DataFrame({"column": list(report["constant"]),
                              "value in every game": [_value(v) for v in report["constant"].values()]})
        panels.append(Panel("Constant in every game", None, table, caption=constant_words(report["constant"]),
                            table_title="columns with one value in every game"))
    if not measures and not curve_panels:
        from llm_mesa.analysis.figures import skipped_figure

        reason = "the games' summary rows hold no numeric or true/false column that differs between games"
        panels.insert(0, Panel("Summary", skipped_figure("Summary", reason), None, skipped=reason))
    return panels


__all__ = ["analyze", "condition_columns", "condition_parameters", "constant_columns", "constant_words", "fixed_words",
           "format_report", "headline_table", "measure_columns", "measure_title", "numeric_axis", "report_panels",
           "scale_of", "summaries", "summary_frame"]
