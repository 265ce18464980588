"""The report's section of ``llm-mesa fit``: which rule plays like each policy (LLM agents, people, rules).

``llm-mesa report SWEEPS --out FILE --fit SOURCE`` (repeatable): SOURCE is the JSON that
``llm-mesa fit RUNS --json`` printed, or RUNS itself (a sweep kept with ``--tables agents``, a
run folder, a lab session, a CSV file of people's decisions), fitted then with the command's
defaults. The section draws the best rule's parameters per policy and condition with their
intervals, then gives each fit (a policy in a condition) its panel: every rule fitted, best AIC
first, with its estimates, log-likelihood, decisions and the check's p-values.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llm_mesa.analysis.checks import AnalysisError
from llm_mesa.analysis.report_html import Panel, Study

__all__ = ["fit_study", "load_fits"]

_KEYS = ("policy", "condition", "rule", "parameters", "log_likelihood", "aic", "decisions", "checks")
CAPTION = ("Each rule's parameters by maximum likelihood from the policy's recorded decisions, with 95 % profile-"
           "likelihood intervals; error_rate is the trembling hand of a rule that could not explain some decision "
           "(P' = (1 - e) P + e / K). delta_aic: AIC above the best rule's (the lowest). checks: the fitted rule replayed "
           "on the same designs and seeds, each outcome tested against these games (Fisher's exact test for yes/no, "
           "Mann-Whitney for numbers): a small p refutes the rule.")


def _read_json(path: Path) -> list[dict[str, Any]]:
    try:
        held = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise AnalysisError(f"--fit {path}: not the JSON of llm-mesa fit --json ({str(exc).splitlines()[0]}); "
                            "write it with llm-mesa fit RUNS --json > FILE") from None
    fits = held.get("fits") if isinstance(held, dict) else None
    if not isinstance(fits, list) or not all(isinstance(f, dict) and all(k in f for k in _KEYS) for f in fits):
        raise AnalysisError(f"--fit {path}: not the JSON of llm-mesa fit --json (an object {{\"fits\": [...]}} whose "
                            f"fits hold {', '.join(_KEYS)}); write it with llm-mesa fit RUNS --json > FILE")
    return fits


def load_fits(sources: Sequence[str]) -> list[dict[str, Any]]:
    """The fits of every source: a fit's JSON as it is, RUNS fitted with the command's defaults."""
    from llm_mesa.analysis.fit_cli import fit_runs

    fits: list[dict[str, Any]] = []
    for source in sources:
        path = Path(source)
        fits += _read_json(path) if path.suffix.lower() == ".json" else fit_runs([source])
    return fits


def _best_figure(fits: Sequence[dict[str, Any]]) -> str | None:
    """Per parameter of the best rules: each policy and condition's estimate with its interval."""
    from llm_mesa.analysis import figures
    from llm_mesa.analysis.fit_cli import fits_frame

    frame = fits_frame(fits)
    best = [f for f, delta in zip(_ordered(fits), frame["delta_aic"]) if delta == 0]
    names = list(dict.fromkeys(f"{f['rule']}: {p}" for f in best for p in f["parameters"]))
    if not names:
        return None
    figure, axes = figures.facets(len(names), cols=2, width=4.4, height=1.0 + 0.34 * len(best), sharex=False)
    for ax, name in zip(axes, names):
        rule, parameter = name.split(": ")
        mine = [f for f in best if f["rule"] == rule and parameter in f["parameters"]]
        labels = [f"{f['policy']} · {f['condition']['name']}" for f in mine]
        values = {label: (f["parameters"][parameter]["estimate"], *f["parameters"][parameter]["ci"])
                  for label, f in zip(labels, mine)}
        figures.interval_points(ax, labels, {"estimate (95 % CI)": values}, xlabel=parameter, limits=None)
        ax.set_title(name, fontsize=9)
        ax.tick_params(labelsize=7)
    return figures.svg_text(figure)


def _ordered(fits: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fits in ``fits_frame``'s order (policy as first seen, condition, AIC)."""
    order = {p: i for i, p in enumerate(dict.fromkeys(f["policy"] for f in fits))}
    return sorted(fits, key=lambda f: (order[f["policy"]], f["condition"]["name"], f["aic"]))


def fit_study(sources: Sequence[str]) -> Study:
    """The report's section: a figure of the best rules' parameters, then a panel per fit."""
    from llm_mesa.analysis.fit_cli import fits_frame

    fits = load_fits(sources)
    if not fits:
        return Study("Which rule plays like these agents (llm-mesa fit)", f"no fit in {', '.join(sources)}")
    frame = fits_frame(fits)
    panels = [Panel("The best rule's parameters, per policy and condition", _best_figure(fits),
                    frame[frame["delta_aic"] == 0].reset_index(drop=True), caption=CAPTION,
                    table_title="the best rule (lowest AIC) of each policy and condition")]
    for (policy, condition), rows in frame.groupby(["policy", "condition"], sort=False):
        best = rows.iloc[0]
        panels.append(Panel(f"{policy} · {condition}: plays most like {best['rule']}", None,
                            rows.drop(columns=["policy", "condition"]).reset_index(drop=True),
                            caption=f"{int(best['decisions'])} decisions; the columns as in the first panel.",
                            table_title="every rule fitted"))
    summary = (f"{len(fits)} fits from {', '.join(map(str, sources))}: "
               f"{frame['policy'].nunique()} policies, {frame['condition'].nunique()} conditions, "
               f"{frame['rule'].nunique()} rules")
    return Study("Which rule plays like these agents (llm-mesa fit)", summary, panels)
