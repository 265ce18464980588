"""The colouring report's figures: the headline (solved, and how fast) beside Kearns et al. (2006), then
structure and information, then every measure as any game's report draws it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from llm_mesa.analysis import Panel, drawn, figures, generic

from .analysis import people_row

#: the generic panel of the headline measure, drawn (with the paper) first here
HEADLINE_MEASURE = "solved"


def _published_table(report: Mapping[str, Any]) -> pd.DataFrame:
    p = report["published"]
    return pd.DataFrame([{"experiments": p["experiments"], "solved": p["solved"],
                          "share": round(p["solved"] / p["experiments"], 3), "limit_s": p["limit_s"],
                          "mean_s": p["mean_s"], "median_s": p["median_s"], "source": p["source"]}])


def _beside_people(rows: list[dict[str, Any]], report: Mapping[str, Any]) -> pd.DataFrame:
    """Our settings' rows, then the study's people as published (their source named in its column)."""
    return pd.DataFrame([{**r, "source": "ours"} for r in rows] + [people_row(report["published"])])


def _no_study_games(title: str, report: Mapping[str, Any]) -> Panel | None:
    if report["headline"]:
        return None
    reason = "no game was played on the study's six graphs at N = 38 (llm-mesa sweep --game colouring --list)"
    return Panel(title, figures.skipped_figure(title, reason), None, skipped=reason, published=_published_table(report))


def solved_panel(report: Mapping[str, Any]) -> Panel:
    title = "Solved within the round limit, the six graphs pooled, beside Kearns et al. (2006)"
    if (empty := _no_study_games(title, report)) is not None:
        return empty
    p = report["published"]
    rows = report["headline"]
    people = people_row(p)
    settings = [r["setting"] for r in rows] + [people["setting"]]
    figure, ax = figures.new_figure(6.4, 1.3 + 0.32 * len(settings))
    figures.interval_points(ax, settings, {"ours": {r["setting"]: (r["share"], r["low"], r["high"]) for r in rows},
                                           "people (published)": {people["setting"]: (people["share"], None, None)}},
                            xlabel="share of games reaching a proper colouring (95 % Wilson interval)")
    ax.axvline(p["solved"] / p["experiments"], color="black", linestyle="--", linewidth=1.2,
               label=f"published: {p['solved']} of {p['experiments']} experiments")
    figures.legend_outside(ax)
    ax.tick_params(labelsize=8)
    return Panel(title, figures.svg_text(figure), _beside_people(rows, report), published=_published_table(report),
                 caption=f"Published: {p['solved']} of {p['experiments']} experiments solved within {p['limit_s']} s "
                         f"({p['source']}), the people's row (no interval: the paper's count alone). Ours: every game on "
                         "the study's six graphs (N = 38), per setting, within the round limit (100 rounds at 3 s a "
                         "round = 300 s in the study's files).")


def time_panel(report: Mapping[str, Any]) -> Panel:
    title = "Time to a proper colouring (solved games), beside Kearns et al. (2006)"
    if (empty := _no_study_games(title, report)) is not None:
        return empty
    p = report["published"]
    rows = [r for r in report["headline"] if r["mean_s"] is not None]
    if not rows:
        reason = "no game reached a proper colouring: there is no time to a solution to draw"
        return Panel(title, figures.skipped_figure(title, reason), pd.DataFrame(report["headline"]), skipped=reason,
                     published=_published_table(report))
    settings = [r["setting"] for r in rows]
    figure, ax = figures.new_figure(6.4, 1.3 + 0.32 * len(settings))
    ax.scatter([r["mean_s"] for r in rows], range(len(rows)), marker="o", color=figures.COLOURS[0], label="ours: mean")
    ax.scatter([r["median_s"] for r in rows], range(len(rows)), marker="s", facecolors="none",
               edgecolors=figures.COLOURS[0], label="ours: median")
    ax.axvline(p["mean_s"], color="black", linewidth=1.2, label=f"published mean {p['mean_s']:.0f} s")
    ax.axvline(p["median_s"], color="black", linestyle="--", linewidth=1.2, label=f"published median {p['median_s']:.0f} s")
    ax.set_yticks(range(len(settings)), settings)
    ax.set_ylim(len(settings) - 0.5, -0.5)
    ax.set_xlim(0, max(p["limit_s"], *(r["mean_s"] for r in rows)) * 1.05)
    ax.set_xlabel(f"seconds to a solution ({p['seconds_per_round']:g} s a round)")
    ax.tick_params(labelsize=8)
    ax.grid(axis="x", alpha=0.3)
    figures.legend_outside(ax)
    return Panel(title, figures.svg_text(figure),
                 _beside_people(rows, report)[["setting", "solved", "mean_s", "median_s", "source"]],
                 published=_published_table(report),
                 caption=f"Published: solved experiments took {p['mean_s']:.0f} s on average, median "
                         f"{p['median_s']:.0f} s (continuous time). Ours: rounds to a solution x "
                         f"{p['seconds_per_round']:g} s, among the games solved.")


def structure_panel(report: Mapping[str, Any]) -> Panel:
    title = "Structure: solved per graph family, and the study's findings"
    if (empty := _no_study_games(title, report)) is not None:
        return empty
    from .design import GRAPHS

    rows = report["families"]
    families = [f for f in GRAPHS if any(r["family"] == f for r in rows)]
    series: dict[str, dict[str, tuple]] = {}
    for r in rows:
        series.setdefault(r["setting"], {})[r["family"]] = (r["share"], r["low"], r["high"])
    figure, ax = figures.new_figure(6.4, 1.4 + 0.36 * len(families))
    figures.interval_points(ax, families, series, xlabel="share of games solved (95 % Wilson interval)")
    ax.tick_params(labelsize=8)
    verdicts = pd.DataFrame(report["structure"]).round(3)
    return Panel(title, figures.svg_text(figure), verdicts, table_title="ours: the findings, per setting",
                 published=pd.DataFrame([{"published": report["published"]["findings"]["structure"],
                                          "source": report["published"]["source"]}]),
                 caption="Per setting: pa_harder says whether preferential attachment (pa-2, pa-3) was solved less "
                         "often than the cycles (cycle, chords, leader cycle); chords_easier whether the cycles with "
                         "chords were solved more often than the plain cycle (yes: as published). The figure: each "
                         "family's share solved.")


def information_panel(report: Mapping[str, Any]) -> Panel:
    title = "Information: solved per view, per graph family"
    published = pd.DataFrame([{"published": report["published"]["findings"]["information"]}])
    if not report["views"]:
        reason = ("one view was played: rule policies ignore what they are shown; "
                  "experiments/colouring-kearns2006-llm.toml plays the three views on the same graphs and starts")
        return Panel(title, figures.skipped_figure(title, reason), None, skipped=reason, published=published)
    from .design import GRAPHS, VIEWS

    rows = report["views"]
    families = [f for f in GRAPHS if any(r["family"] == f for r in rows)]
    bases = list(dict.fromkeys(r["base"] for r in rows))
    figure, axes = figures.facets(len(bases), cols=2, width=4.2, height=0.9 + 0.36 * len(families), sharex=True)
    for ax, base in zip(axes, bases):
        series = {v: {r["family"]: (r["share"], r["low"], r["high"]) for r in rows if r["base"] == base and r["view"] == v}
                  for v in VIEWS if any(r["view"] == v and r["base"] == base for r in rows)}
        figures.interval_points(ax, families, series, xlabel="share solved")
        ax.set_title(base, fontsize=9)
        ax.tick_params(labelsize=8)
    return Panel(title, figures.svg_text(figure), pd.DataFrame(rows), published=published,
                 caption="The views play the same graphs and starts (what agents are shown stays out of the seeds), "
                         "so each family's views compare game for game.")


def report_panels(sweep: Any, report: Mapping[str, Any]) -> list[Panel]:
    """The study's panels first (the headline), then every other measure as the generic report draws it."""
    ours = [drawn("Solved within the round limit", solved_panel, report),
            drawn("Time to a proper colouring", time_panel, report),
            drawn("Structure", structure_panel, report),
            drawn("Information", information_panel, report)]
    rest = [p for p in generic.report_panels(sweep, report["generic"]) if p.title != HEADLINE_MEASURE]
    return ours + rest


__all__ = ["information_panel", "report_panels", "solved_panel", "structure_panel", "time_panel"]
