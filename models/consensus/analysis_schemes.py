"""The update schemes side by side (issue 20): when the games hold more than one ``update``.

A sweep crossing ``--set update=synchronous,random-sequential``, or two sweeps analysed together
(``llm-mesa analyze DIR_RULES DIR_RULES_SEQUENTIAL``, the files ``consensus-study-rules.toml`` and
``consensus-study-rules-sequential.toml``), plays each condition under each scheme. Then every part
of the report keeps the schemes apart (``tag_schemes``: a condition is named with its scheme, as a
sweep axis names it), and ``scheme_comparison`` sets them side by side per condition and model: the
consensus rate (95 % Wilson interval), the mean rounds of the games that reached consensus, and the
pseudo-equilibrium share. The experiment files pair their seeds (``update`` is not in them), so
game k of a condition plays the same graph and start under each scheme: the comparison also counts,
over the pairs, the games only one scheme brought to consensus, with McNemar's exact test.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from scipy.stats import binomtest

from llm_mesa.update import UPDATE_SCHEMES

from .analysis_measures import _share_row

__all__ = ["base_condition", "format_scheme_lines", "scheme_comparison", "schemes_panel", "tag_schemes"]


def _schemes(games: pd.DataFrame) -> pd.Series:
    """Each game's scheme; a game recorded before the schemes existed was synchronous."""
    if "update" not in games.columns:
        return pd.Series("synchronous", index=games.index)
    return games["update"].fillna("synchronous").astype(str)


def tag_schemes(games: pd.DataFrame) -> pd.DataFrame:
    """The games with ``update`` filled in and, when more than one scheme is played, each condition named
    with its scheme (``ba-global|update=random-sequential``), so no part of the report pools schemes."""
    games = games.assign(update=_schemes(games))
    if games["update"].nunique() < 2:
        return games
    named = games["condition"].astype(str)
    untagged = ~named.str.contains("update=", regex=False)
    joiner = named.str.contains("|", regex=False).map({True: ",", False: "|"})
    games.loc[untagged, "condition"] = named[untagged] + joiner[untagged] + "update=" + games.loc[untagged, "update"]
    return games


def base_condition(condition: str) -> str:
    """The condition's name without its scheme: ``ba-none|update=random-sequential,n=20`` -> ``ba-none|n=20``."""
    name, _, axes = condition.partition("|")
    kept = [axis for axis in axes.split(",") if axis and not axis.startswith("update=")]
    return f"{name}|{','.join(kept)}" if kept else name


def scheme_comparison(games: pd.DataFrame) -> dict[str, Any]:
    """Per condition and model, each scheme's consensus rate, rounds and pseudo-equilibrium share, and the
    paired games' discordant outcomes (a dict with ``skipped`` when only one scheme was played)."""
    games = games.assign(update=_schemes(games))
    played = set(games["update"])
    schemes = [s for s in UPDATE_SCHEMES if s in played] + sorted(played - set(UPDATE_SCHEMES))
    if len(schemes) < 2:
        return {"skipped": f"one update scheme in these games ({schemes[0] if schemes else 'none'})"}
    games = games.assign(base=games["condition"].astype(str).map(base_condition))
    rows = []
    for (condition, model), cell in games.groupby(["base", "model"], sort=False):
        row: dict[str, Any] = {"condition": condition, "model": model}
        for scheme in schemes:
            sub = cell[cell["update"] == scheme]
            won = sub["consensus"].astype(bool)
            share = _share_row(int(won.sum()), len(sub)) if len(sub) else {"rate": None}
            pseudo = sub["pseudo_equilibrium"].astype(bool).mean() if len(sub) else None
            row.update({f"{scheme}:games": len(sub), f"{scheme}:consensus": share["rate"],
                        f"{scheme}:ci_low": share.get("ci_low"), f"{scheme}:ci_high": share.get("ci_high"),
                        f"{scheme}:rounds": float(sub.loc[won, "rounds"].mean()) if won.any() else None,
                        f"{scheme}:pseudo_equilibrium": None if pseudo is None else float(pseudo)})
        row.update(_paired(cell, schemes[0], schemes[1]))
        rows.append(row)
    return {"schemes": schemes, "rows": rows}


def _paired(cell: pd.DataFrame, first: str, second: str) -> dict[str, Any]:
    """Games of one seed under both schemes: how many only the first, or only the second, brought to consensus."""
    if "seed" not in cell.columns:
        return {"pairs": 0}
    a = cell[cell["update"] == first].drop_duplicates("seed").set_index("seed")["consensus"].astype(bool)
    b = cell[cell["update"] == second].drop_duplicates("seed").set_index("seed")["consensus"].astype(bool)
    common = a.index.intersection(b.index)
    a, b = a[common], b[common]
    only_first, only_second = int((a & ~b).sum()), int((~a & b).sum())
    discordant = only_first + only_second
    return {"pairs": len(common), f"only_{first}": only_first, f"only_{second}": only_second,
            "mcnemar_p": float(binomtest(only_first, discordant, 0.5).pvalue) if discordant else None}


def _cell(value: Any, digits: int = 2) -> str:
    return "-" if value is None or value != value else f"{value:.{digits}f}"


def format_scheme_lines(part: dict[str, Any]) -> list[str]:
    """The comparison as a text table: one row per condition and model, the schemes side by side."""
    if "skipped" in part:
        return []
    schemes = part["schemes"]
    first, second = schemes[0], schemes[1]
    lines = ["", "update schemes side by side (consensus rate [95 % CI], mean rounds to consensus, "
                 "pseudo-equilibrium share; paired seeds: games only one scheme brought to consensus, McNemar p):"]
    table = []
    for row in part["rows"]:
        shown = {"condition": row["condition"], "model": row["model"]}
        for s in schemes:
            shown[s] = (f"{_cell(row[f'{s}:consensus'])} [{_cell(row[f'{s}:ci_low'])}, {_cell(row[f'{s}:ci_high'])}]"
                        f" r {_cell(row[f'{s}:rounds'], 1)} pe {_cell(row[f'{s}:pseudo_equilibrium'])}"
                        f" (n {row[f'{s}:games']})")
        if row.get("pairs"):
            shown["paired"] = (f"{row['pairs']} pairs, only {first} {row[f'only_{first}']}, only {second} "
                               f"{row[f'only_{second}']}, p {_cell(row['mcnemar_p'], 3)}")
        table.append(shown)
    frame = pd.DataFrame(table).set_index(["condition", "model"])
    lines += ["  " + line for line in frame.to_string().splitlines()]
    return lines


def schemes_panel(report: dict[str, Any]):
    """The report's figure: per condition and model, each scheme's consensus rate with its interval."""
    from llm_mesa.analysis.figures import COLOURS, facets, interval_points, svg_text
    from llm_mesa.analysis.report_html import Panel

    part = report["update_schemes"]
    schemes, rows = part["schemes"], part["rows"]
    labels = list(dict.fromkeys(f"{r['condition']} · {r['model']}" for r in rows))
    series = {s: {f"{r['condition']} · {r['model']}": (r[f"{s}:consensus"], r[f"{s}:ci_low"], r[f"{s}:ci_high"])
                  for r in rows if r[f"{s}:consensus"] is not None} for s in schemes}
    figure, (ax,) = facets(1, cols=1, width=6.4, height=0.7 + 0.3 * len(labels))
    interval_points(ax, labels, series, xlabel="consensus rate",
                    colours={s: COLOURS[i % len(COLOURS)] for i, s in enumerate(schemes)})
    return Panel("Consensus rate by update scheme", svg_text(figure), pd.DataFrame(rows),
                 caption="Paired seeds: the same graphs and starts under each scheme.")
