"""The colouring study's statistics for ``llm-mesa analyze`` and ``report``: the headline first, the paper beside ours.

Kearns, Suri and Montfort (2006) report that 31 of their 38 experiments reached a
proper colouring within the 300 s limit, in 82 s on average (median 44 s), that
preferential attachment was harder than the cycles, that a few random chords
(a small world) made the cycle easier, and that more information (the neighbours'
degrees, the whole network) helped or hurt depending on the structure. Here each
game is placed in its graph family (the study's six) and its *setting*: everything
else that was crossed (the policy or LLM model, the view, inertia, the update
scheme). Per setting, pooled over the six families as the study pooled its 38
experiments: the share solved within the round limit (Wilson 95 %), and the time to
a solution at 3 s a round (``SECONDS_PER_ROUND``, the study file's mapping), beside
the published numbers; then per family (structure) and per view (information),
each finding set against ours. The rest of the summary row follows as any game's
(``llm_mesa.analysis.generic``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from llm_mesa.analysis import generic, wilson_interval

from .design import GRAPHS, VIEWS
from .parameters import PARAMETERS

#: the study's result and where it was published
PUBLISHED = {"experiments": 38, "solved": 31, "limit_s": 300, "mean_s": 82.0, "median_s": 44.0}
SOURCE = ("Kearns, Suri and Montfort, 'An experimental study of the coloring problem on human subject networks', "
          "Science 313(5788):824-827, 2006")
FINDINGS = {"structure": "preferential attachment was harder than the cycles; a few random chords made the cycle easier",
            "information": "more information (degrees, the whole network) helped or hurt depending on the structure"}
#: a round read as a player's see-decide-click cycle (experiments/colouring-kearns2006.toml): 300 s = 100 rounds
SECONDS_PER_ROUND = 3.0
CYCLES = ("cycle", "chords-5", "chords-20", "leader-cycle")
PREFERENTIAL = ("pa-2", "pa-3")
#: the parameters that make a graph family; every other crossed one makes the setting
GRAPH_KEYS = ("n", "topology", "chords", "leaders", "links", "k")
DEFAULTS = {name: PARAMETERS[name].default for name in PARAMETERS.names}
#: the study's people as a row beside ours: only what the paper reports (its 38 experiments pooled; no interval,
#: no per-network figure: neither is quoted here, and nothing is estimated)
PEOPLE_SETTING = "people: Kearns, Suri and Montfort (2006)"


def people_row(published: Mapping[str, Any]) -> dict[str, Any]:
    """The published human result in the headline's columns (games: the experiments), with its source."""
    return {"setting": PEOPLE_SETTING, "games": published["experiments"], "solved": published["solved"],
            "share": published["solved"] / published["experiments"], "low": None, "high": None,
            "mean_s": published["mean_s"], "median_s": published["median_s"], "source": published["source"]}


def family(parameters: Mapping[str, Any]) -> str | None:
    """The study's graph a game's parameters draw (``cycle``, ``chords-5``, ... ``pa-3``), or None."""
    if int(parameters.get("n", 38)) != 38:
        return None
    for name, shape in GRAPHS.items():
        if all(parameters.get(k, DEFAULTS.get(k)) == v for k, v in shape.items()):
            return name
    return None


def view(parameters: Mapping[str, Any]) -> str:
    """What the agents were shown: one of the study's views, or the flags as words."""
    shown = {k: bool(parameters.get(k, False)) for k in ("show_degrees", "show_conflicts", "show_network")}
    named = [name for name, flags in VIEWS.items() if dict(flags) == shown]
    return named[0] if named else "+".join(k.removeprefix("show_") for k, on in shown.items() if on) or "local"


def condition_parameters(sweep: Any) -> dict[str, dict[str, Any]]:
    """Each condition's parameters, as the sweeps' manifests list them."""
    out: dict[str, dict[str, Any]] = {}
    for manifest in sweep.manifests:
        for name, parameters in ((manifest.get("grid") or {}).get("conditions") or {}).items():
            out.setdefault(str(name), dict(parameters or {}))
    return out


def placed(sweep: Any) -> pd.DataFrame:
    """The games with their family, view and setting (the games outside the study's six graphs: family None)."""
    known = condition_parameters(sweep)
    rows = []
    for condition, model in zip(sweep.games["condition"].astype(str), sweep.games["model"].astype(str)):
        parameters = {**DEFAULTS, **known.get(condition, {})}
        crossed = {k: v for k, v in known.get(condition, {}).items()
                   if k not in GRAPH_KEYS and not k.startswith("show_")}
        rows.append({"family": family(parameters), "view": view(parameters), "crossed": crossed, "model": model})
    extra = pd.DataFrame(rows, index=sweep.games.index)
    games = sweep.games.assign(family=extra["family"], view=extra["view"])
    varying = {k for k in {k for c in extra["crossed"] for k in c} if len({repr(c.get(k)) for c in extra["crossed"]}) > 1}
    views_vary = games["view"].nunique() > 1
    labels = []
    for model, seen, crossed in zip(extra["model"], games["view"], extra["crossed"]):
        words = [model] + ([f"{seen} view"] if views_vary else []) + [f"{k} {crossed.get(k)}" for k in sorted(varying)]
        labels.append(" · ".join(words))
    return games.assign(setting=labels)


def solved_row(games: pd.DataFrame) -> dict[str, Any]:
    """Games, solved, the share with its Wilson interval, and the time to a solution among the solved (s)."""
    n, solved = len(games), int(games["solved"].astype(bool).sum())
    low, high = wilson_interval(solved, n) if n else (None, None)
    rounds = pd.to_numeric(games.loc[games["solved"].astype(bool), "rounds_to_solution"], errors="coerce").dropna()
    seconds = rounds.to_numpy(dtype=float) * SECONDS_PER_ROUND
    return {"games": n, "solved": solved, "share": solved / n if n else None, "low": low, "high": high,
            "mean_s": float(seconds.mean()) if len(seconds) else None,
            "median_s": float(np.median(seconds)) if len(seconds) else None}


def by(games: pd.DataFrame, keys: list[str]) -> list[dict[str, Any]]:
    return [{**dict(zip(keys, k if isinstance(k, tuple) else (k,))), **solved_row(g)}
            for k, g in games.groupby(keys, sort=False)]


def _pooled(names, share: Mapping[str, float], games: Mapping[str, int]) -> float | None:
    played = [f for f in names if f in share]
    total = sum(games[f] for f in played)
    return sum(share[f] * games[f] for f in played) / total if total else None


def _lower(first: float | None, second: float | None) -> str | None:
    """``yes`` when ``first`` < ``second``, ``no`` when above, ``equal``; None when a side was not played."""
    if first is None or second is None:
        return None
    return "yes" if first < second else "no" if first > second else "equal"


def structure_verdicts(families: pd.DataFrame) -> list[dict[str, Any]]:
    """Per setting, the study's two structural findings held against ours (None: a side was not played)."""
    out = []
    for setting, rows in families.groupby("setting", sort=False):
        share, games = dict(zip(rows["family"], rows["share"])), dict(zip(rows["family"], rows["games"]))
        cycles, pa = _pooled(CYCLES, share, games), _pooled(PREFERENTIAL, share, games)
        plain, chords = share.get("cycle"), _pooled(("chords-5", "chords-20"), share, games)
        out.append({"setting": setting, "cycles_solved": cycles, "pa_solved": pa, "pa_harder": _lower(pa, cycles),
                    "cycle_solved": plain, "chords_solved": chords, "chords_easier": _lower(plain, chords)})
    return out


def analyze(sweep: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """The colouring report: headline per setting beside the paper, structure, information, then every measure."""
    games = placed(sweep)
    study = games[games["family"].notna()]
    order = {f: i for i, f in enumerate(GRAPHS)}
    study = study.iloc[sorted(range(len(study)), key=lambda i: order[study["family"].iloc[i]])]  # the study's order
    families = pd.DataFrame(by(study, ["setting", "family"])) if len(study) else pd.DataFrame()
    views = by(study.assign(base=study["setting"].str.replace(r" · \w+ view", "", regex=True)),
               ["base", "family", "view"]) if study["view"].nunique() > 1 else []
    return {
        "games": len(games), "study_games": len(study), "conditions": sweep.ordered("condition"),
        "models": sweep.ordered("model"), "settings": list(dict.fromkeys(games["setting"])),
        "published": {**PUBLISHED, "source": SOURCE, "findings": FINDINGS, "seconds_per_round": SECONDS_PER_ROUND},
        "headline": by(study, ["setting"]),
        "families": families.to_dict("records"),
        "structure": structure_verdicts(families) if len(families) else [],
        "views": views,
        "generic": generic.analyze(sweep, options),
    }


def _share(row: Mapping[str, Any]) -> str:
    if row["share"] is None:
        return "-"
    time = f"; solved in {row['mean_s']:.0f} s on average, median {row['median_s']:.0f} s" if row["mean_s"] else ""
    return f"{row['solved']}/{row['games']} = {row['share']:.2f} [{row['low']:.2f}, {row['high']:.2f}]{time}"


def format_report(report: Mapping[str, Any]) -> str:
    p = report["published"]
    lines = [f"colouring: {report['games']} games, {report['study_games']} on the study's six graphs (N = 38)",
             f"published: {p['solved']}/{p['experiments']} experiments solved within {p['limit_s']} s, mean "
             f"{p['mean_s']:.0f} s, median {p['median_s']:.0f} s ({p['source']})",
             f"ours, per setting, the six graphs pooled (a round = {p['seconds_per_round']:g} s):"]
    lines += [f"  {r['setting']}: {_share(r)}" for r in report["headline"]] or ["  (no game on the study's graphs)"]
    lines += ["", f"structure (published: {p['findings']['structure']}):"]
    for r in report["structure"]:
        lines.append(f"  {r['setting']}: preferential attachment harder than the cycles: {_verdict(r['pa_harder'])}; "
                     f"chords easier than the plain cycle: {_verdict(r['chords_easier'])}")
    lines += ["", f"information (published: {p['findings']['information']}):"]
    lines += [f"  {r['base']} · {r['family']} · {r['view']} view: {_share(r)}" for r in report["views"]] or \
        ["  skipped: one view was played (rule policies ignore what they are shown; the LLM file plays three)"]
    return "\n".join(lines) + "\n\nevery measure of the summary row:\n" + generic.format_report(report["generic"])


def _verdict(value: str | None) -> str:
    return {None: "not both played", "yes": "yes, as published", "no": "no, the other way round",
            "equal": "no difference"}[value]


__all__ = ["FINDINGS", "PEOPLE_SETTING", "PUBLISHED", "SECONDS_PER_ROUND", "SOURCE", "analyze", "family", "format_report", "people_row",
           "placed", "view"]
