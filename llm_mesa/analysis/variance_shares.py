"""How much of an outcome's variance across games each design factor explains, the rest being the seed.

A sweep crosses design factors: its conditions' parameters (topology, communication, a prompt
variant, every ``--set`` axis) and its policies (the rule, or the LLM model and each sampling
setting: temperature, top_p...). Each is read from the sweeps' manifests, whatever the game: a
parameter is a factor when it differs between the games' conditions, a policy setting when it
differs between their policies. The games of one design cell (every factor at one level)
differ by their seed alone.

The decomposition: Shapley shares of R² (Lindeman, Merenda and Gold's LMG; Grömping 2007) of
the saturated cell-means model, on adjusted R². For a set S of factors, v(S) is the adjusted R²
(Kelley's ε²) of grouping the games by S's levels crossed (their interactions included):
1 − (within-group mean square) / (total mean square), or 0 when that is below 0 (as ε² is
read). A factor's share is its Shapley value,
its mean gain v(S ∪ {f}) − v(S) over every order in which the factors could enter. Why this one:

* the shares and the seed's share sum to 1 exactly, whatever the order of the factors (a
  sequential, type-I decomposition depends on it; type-II/III sums of squares do not add up
  once the design is unbalanced or has interactions);
* the residual is the variance within the design cells, i.e. across seeds: the model of all
  factors is saturated;
* an interaction is shared by the factors that take part in it (in a balanced design each
  term is split equally among its factors: a factor's share is about its main effect's plus
  half of each two-way interaction it is in, a third of each three-way...);
* unbalanced cells (a missing game, a measure undefined in some games) need nothing special;
* adjusted, not plain, R²: plain η² grows by chance with every level (a factor that does
  nothing gets about its degrees of freedom, its interactions' in part, over the games: 0.05
  for a two-level factor crossed with a three-level one over 36 games); adjusted R² does not,
  so a factor that cannot matter gets about 0, and a little below 0 when the games of its
  levels are the very same games (a rule policy's games under two wordings of an LLM
  prompt): less than chance, to be read as 0. The seed's share stays within 0..1. In
  simulations of 3 x 2 designs (``benchmarks/variance_share_coverage.py``) the mean share is
  within 0.02 of the truth, and the 95 % intervals hold it in 84-90 % of sweeps of 6-10 seeds a
  cell, 94-100 % at 30 (a percentile bootstrap over few seeds is somewhat narrow).

Factors that split the games the same way (a condition that sets two parameters at once) cannot
be told apart by any analysis; they are one factor named ``a+b``. Each share has a 95 %
percentile interval from a stratified cluster bootstrap (``scipy.stats.bootstrap``): the design
is kept and the seeds are drawn again, each with all its games (games with one seed share its
network and preferences), within the conditions that play it. Booleans are analysed as 0/1.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from llm_mesa.analysis.sweep_data import SweepData
    from llm_mesa.games import Game

__all__ = ["ACCOUNTING", "RESIDUAL", "design_factors", "shapley_shares", "variance_report"]

#: the share of variance no design factor explains: the games' seeds
RESIDUAL = "seed"
#: columns the core or a game adds to count its LLM use: the run card's, not outcome measures
ACCOUNTING = frozenset({"calls", "prompt_tokens", "completion_tokens", "cached_tokens", "cached_prompt_tokens",
                        "prompt_cache_share", "cost", "failures", "failed_calls", "replayed_calls", "decisions",
                        "failed_decisions", "parse_failures", "truncated", "call_failures", "invalid"})
#: resamples of the bootstrap (its intervals' digits settle around a thousand)
RESAMPLES = 1000
#: more factors than this are 2^k subsets too many; the report says so instead
MAX_FACTORS = 12
#: the bootstrap's seed: the same sweep gives the same intervals (and the analysis cache its entry)
BOOTSTRAP_SEED = 34


def _level(value: Any) -> str:
    """A factor's level as text (lists and dicts as canonical JSON)."""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def _policy_settings(entry: Any) -> dict[str, str]:
    """What a sweep's grid says of one policy, as factor levels: the policy (a rule spec or the LLM's
    model) and, for an LLM, each sampling setting, the dialect and the prompt mode."""
    if isinstance(entry, str):
        return {"policy": entry}
    if isinstance(entry, dict) and isinstance(entry.get("llm"), dict):
        llm = entry["llm"]
        settings = {"policy": str(llm.get("model"))}
        settings.update({str(k): _level(v) for k, v in (llm.get("sampling_params") or {}).items()})
        settings.update({k: _level(llm.get(k)) for k in ("dialect", "prompt_mode") if k in llm})
        return settings
    if isinstance(entry, dict) and isinstance(entry.get("population"), list):
        parts = [p if isinstance(p, str) else _policy_settings(p).get("policy", "?") for p in entry["population"]]
        return {"policy": " + ".join(map(str, parts))}
    return {"policy": _level(entry)}


def design_factors(sweep: SweepData, game: Game | None) -> pd.DataFrame:
    """One column per design factor that varies between the games, one row per game (the games
    table's order), each level as text: the conditions' parameters, then the policies' settings.

    A policy setting named like a parameter of the game is called ``policy NAME``; a rule policy has
    no sampling setting (its level is ``-``), and a setting is a factor only where it differs between
    LLM policies (one temperature for every LLM says no more than the policy does)."""
    defaults = game.parameters.defaults() if game is not None else {}
    games = sweep.games
    by_cell: dict[tuple[str, str], dict[str, str]] = {}
    by_policy: dict[tuple[str, str], dict[str, str]] = {}
    for manifest, label in zip(sweep.manifests, sweep.labels):
        grid = manifest.get("grid") or {}
        for name, values in (grid.get("conditions") or {}).items():
            by_cell[(label, str(name))] = {k: _level(v) for k, v in {**defaults, **dict(values or {})}.items()}
        for name, entry in (grid.get("policies") or {}).items():
            by_policy[(label, str(name))] = _policy_settings(entry)
    keys = list(zip(games["sweep"].astype(str), games["condition"].astype(str)))
    policies = list(zip(games["sweep"].astype(str), games["policy"].astype(str)))
    parameters = pd.DataFrame([by_cell.get(k, {}) for k in keys], index=games.index)
    settings = pd.DataFrame([by_policy.get(k, {"policy": k[1]}) for k in policies], index=games.index)
    llm = settings.drop(columns="policy").notna().any(axis=1)
    # a setting only LLM policies have is a factor where it differs between them (else it is the policy)
    settings = settings[[c for c in settings.columns if c == "policy" or settings.loc[llm, c].nunique() > 1]]
    settings = settings.rename(columns={c: f"policy {c}" for c in settings.columns if c in parameters.columns})
    factors = pd.concat([parameters, settings.fillna("-")], axis=1).fillna("-").astype(str)
    return factors.loc[:, factors.nunique() > 1]


def _merge_aliases(factors: pd.DataFrame) -> pd.DataFrame:
    """Factors that split the games the same way, as one factor ``a+b`` (no analysis can tell them apart)."""
    codes = {c: pd.factorize(factors[c])[0] for c in factors.columns}
    groups: list[list[str]] = []
    for column in factors.columns:
        for group in groups:
            first = codes[group[0]]
            pairs = len(set(zip(first, codes[column])))
            if pairs == len(set(first)) == len(set(codes[column])):
                group.append(column)
                break
        else:
            groups.append([column])
    return pd.DataFrame({"+".join(g): factors[g[0]] for g in groups}, index=factors.index)


def _subset_groups(cell_levels: np.ndarray) -> list[tuple[np.ndarray, int]]:
    """For every subset of the factors (a bit mask), the group of each design cell under it and the
    number of groups."""
    k = cell_levels.shape[1]
    out = []
    for mask in range(1 << k):
        chosen = [j for j in range(k) if mask >> j & 1]
        if not chosen:
            out.append((np.zeros(len(cell_levels), dtype=np.int64), 1))
            continue
        _, inverse = np.unique(cell_levels[:, chosen], axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        out.append((inverse, int(inverse.max()) + 1))
    return out


def _shapley_weights(k: int) -> np.ndarray:
    """The Shapley weight of a coalition of each size s: s! (k - s - 1)! / k!."""
    return np.array([math.factorial(s) * math.factorial(k - s - 1) / math.factorial(k) for s in range(k)])


def _shares_from_sums(sums: np.ndarray, squares: np.ndarray, counts: np.ndarray,
                      subsets: Sequence[tuple[np.ndarray, int]], k: int) -> np.ndarray:
    """The k factors' Shapley shares and the residual's (rows) for each replicate (columns), from each
    design cell's sum of the measure and its number of games (cells x replicates, a game counted as
    often as the bootstrap drew it) and the sum of squares of all games (replicates). v(S) is the
    adjusted R² of the cell-means model of S's factors (a cell no game was drawn for is no group)."""
    from scipy import sparse

    total_n = counts.sum(axis=0)
    grand = sums.sum(axis=0)
    total_ss = squares - grand ** 2 / total_n
    varies = total_ss > 1e-12 * np.maximum(squares, 1.0)  # a replicate whose games all hold one value: no shares
    total_ms = np.where(varies, total_ss, 1.0) / (total_n - 1)
    values = np.zeros((len(subsets), sums.shape[1]))
    for mask, (group, size) in enumerate(subsets):
        if not mask:
            continue
        members = sparse.csr_array((np.ones(len(group)), (group, np.arange(len(group)))), shape=(size, len(group)))
        group_sums, group_counts = members @ sums, members @ counts
        held = group_counts > 0
        means_ss = np.divide(group_sums ** 2, group_counts, out=np.zeros_like(group_sums), where=held).sum(axis=0)
        within_ms = (total_ss - (means_ss - grand ** 2 / total_n)) / np.maximum(total_n - held.sum(axis=0), 1.0)
        values[mask] = np.where(varies, np.maximum(1.0 - within_ms / total_ms, 0.0), 0.0)
    weights = _shapley_weights(k)
    sizes = np.array([bin(mask).count("1") for mask in range(1 << k)])
    shares = np.zeros((k + 1, sums.shape[1]))
    for j in range(k):
        without = np.array([mask for mask in range(1 << k) if not mask >> j & 1])
        shares[j] = (weights[sizes[without]][:, None] * (values[without | (1 << j)] - values[without])).sum(axis=0)
    shares[k] = np.where(varies, 1.0 - values[-1], 0.0)
    return shares


def shapley_shares(y: Sequence[float], factors: pd.DataFrame, clusters: Sequence[Any] | None = None,
                   strata: Sequence[Any] | None = None, *, resamples: int = RESAMPLES,
                   seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """The Shapley shares of ``y``'s variance of each column of ``factors`` and the residual (``seed``),
    with 95 % percentile intervals of a stratified cluster bootstrap; see the module's notes.

    ``clusters`` (one per game; default: each game its own) are drawn with replacement within their
    ``strata`` (default: the design cell), every game of a drawn cluster with it: games that share a
    seed share its randomness (its network, its preferences), so they are drawn together.
    Returns ``{"shares": {factor: x, "seed": x}, "intervals": {factor: [lo, hi]}, "games": n, "cells": c}``.
    Raises ``ValueError`` with the reason when there is nothing to decompose."""
    from scipy.stats import bootstrap

    values = np.asarray(y, dtype=float)
    names = list(factors.columns)
    k = len(names)
    if k == 0:
        raise ValueError("the games differ by no design factor")
    if k > MAX_FACTORS:
        raise ValueError(f"{k} design factors are more than {MAX_FACTORS} (2^k subsets each)")
    if float(np.var(values)) == 0.0:
        raise ValueError("the measure holds one value in every game")
    cell = pd.MultiIndex.from_frame(factors).factorize()[0] if k > 1 else pd.factorize(factors.iloc[:, 0])[0]
    if np.bincount(cell).max() < 2:
        raise ValueError("no design cell holds two games (play several seeds per cell)")
    cluster = pd.factorize(pd.Series(list(clusters)) if clusters is not None else pd.Series(range(len(values))))[0]
    stratum_of = pd.Series(list(strata) if strata is not None else cell).groupby(cluster).first()
    cell_levels = np.column_stack([pd.factorize(factors.iloc[:, j])[0] for j in range(k)])
    first_row = np.array([np.flatnonzero(cell == c)[0] for c in range(cell.max() + 1)])
    subsets = _subset_groups(cell_levels[first_row])
    m, c = cluster.max() + 1, cell.max() + 1
    by_cluster_sums = np.zeros((m, c))  # each cluster's games: their sum and number per cell, their sum of squares
    np.add.at(by_cluster_sums, (cluster, cell), values)
    by_cluster_counts = np.zeros((m, c))
    np.add.at(by_cluster_counts, (cluster, cell), 1.0)
    by_cluster_squares = np.bincount(cluster, weights=values ** 2, minlength=m)
    groups = [np.flatnonzero(stratum_of.to_numpy() == s) for s in pd.unique(stratum_of)]
    drawn = [g for g in groups if len(g) > 1]  # a stratum of one cluster resamples to itself
    fixed = np.ones(m)
    for g in drawn:
        fixed[g] = 0.0

    def statistic(*resampled: np.ndarray, axis: int = -1) -> np.ndarray:
        batch = resampled[0].shape[:-1] if resampled else ()
        picks = [r.reshape(-1, r.shape[-1]).astype(np.int64) for r in resampled]
        b = picks[0].shape[0] if picks else 1
        weights = np.tile(fixed, (b, 1))
        for pick in picks:
            rows = np.repeat(np.arange(b), pick.shape[1])
            np.add.at(weights, (rows, pick.ravel()), 1.0)
        out = _shares_from_sums((weights @ by_cluster_sums).T, weights @ by_cluster_squares,
                                (weights @ by_cluster_counts).T, subsets, k)
        return out.reshape((k + 1, *batch))

    point = statistic(*drawn)
    low, high = point, point
    if drawn:
        result = bootstrap(drawn, statistic, n_resamples=resamples, method="percentile", vectorized=True,
                           rng=np.random.default_rng(seed))
        low, high = result.confidence_interval
    labels = [*names, RESIDUAL]
    return {"shares": {n: float(point[i]) for i, n in enumerate(labels)},
            "intervals": {n: [float(low[i]), float(high[i])] for i, n in enumerate(labels)},
            "games": len(values), "cells": int(c)}


def seed_clusters(games: pd.DataFrame) -> tuple[list[Any], list[Any]]:
    """Each game's bootstrap cluster, its seed, and stratum, the conditions that play that seed.

    Games with one seed share its draws (a sweep's ``--seeds`` are every condition's and policy's,
    so each seed's network and preferences are met under every factor): the bootstrap draws a seed
    with all its games. Seeds an experiment derived per condition are played in that condition
    alone: they are drawn within it, so every condition keeps its number of seeds."""
    conditions = games["sweep"].astype(str) + "\0" + games["condition"].astype(str)
    seeds = games["seed"].astype(str).to_numpy()
    signature = conditions.groupby(seeds).agg(lambda c: "\1".join(sorted(set(c))))
    return list(seeds), [signature[s] for s in seeds]


def outcome_measures(sweep: SweepData, game: Game | None, factors: pd.DataFrame) -> list[str]:
    """The games table's outcome columns: numeric or true/false, the game's declared measures first;
    not its keys, parameters (a design's, not an outcome), LLM accounting or timings."""
    from llm_mesa.analysis.generic import MAX_COLUMNS, measure_columns

    numeric, boolean = measure_columns(sweep.games)
    parameters = set(game.parameters.defaults()) if game is not None else set()
    parameters |= {k for m in sweep.manifests for c in ((m.get("grid") or {}).get("conditions") or {}).values() for k in c}
    declared = list(game.measures) if game is not None else []
    listed = [c for c in [*numeric, *boolean] if c not in parameters and c not in ACCOUNTING and c not in factors]
    listed.sort(key=lambda c: (c not in declared, declared.index(c) if c in declared else 0))
    return listed[:MAX_COLUMNS]


def variance_report(sweep: SweepData, game: Game | None) -> dict[str, Any]:
    """The part of ``analyze --json`` that holds the decomposition: ``variance_shares`` ({measure: {factor:
    share, "seed": share}}), ``variance_share_intervals`` ({measure: {factor: [lo, hi]}}, 95 %),
    ``variance_share_factors`` (each factor's levels) and ``variance_share_skipped`` (measure: why not)."""
    factors = design_factors(sweep, game)
    shares: dict[str, dict[str, float]] = {}
    intervals: dict[str, dict[str, list[float]]] = {}
    skipped: dict[str, str] = {}
    for measure in outcome_measures(sweep, game, factors):
        column = sweep.games[measure]
        if column.nunique(dropna=True) < 2:
            continue  # one value in every game: nothing to share out (the summaries name such columns)
        present = column.notna().to_numpy()
        y = column[present].astype(float).to_numpy()
        chosen = factors.loc[present]
        chosen = _merge_aliases(chosen.loc[:, chosen.nunique() > 1])
        try:
            found = shapley_shares(y, chosen, *seed_clusters(sweep.games.loc[present]))
        except ValueError as exc:
            skipped[measure] = str(exc)
            continue
        shares[measure], intervals[measure] = found["shares"], found["intervals"]
    return {"variance_shares": shares, "variance_share_intervals": intervals,
            "variance_share_factors": {c: sorted(factors[c].unique()) for c in factors.columns},
            "variance_share_skipped": skipped}


def shares_table(report: Mapping[str, Any]) -> pd.DataFrame:
    """Measures (rows) by factors and the seed (columns), each cell ``share [lo, hi]``."""
    shares = report.get("variance_shares") or {}
    intervals = report.get("variance_share_intervals") or {}
    columns = list(dict.fromkeys(f for by in shares.values() for f in by if f != RESIDUAL)) + [RESIDUAL]
    rows = []
    for measure, by in shares.items():
        row = {"measure": measure}
        for factor in columns:
            if factor in by:
                low, high = intervals.get(measure, {}).get(factor, [None, None])
                row[factor] = f"{by[factor]:.3f}" + ("" if low is None else f" [{low:.3f}, {high:.3f}]")
            else:
                row[factor] = ""
        rows.append(row)
    return pd.DataFrame(rows, columns=["measure", *columns])


#: what the table's cells are, in words (the text report and the HTML report say the same)
CAPTION = ("share of each measure's variance across games that each design factor explains (Shapley shares of the "
           "cell-means model's adjusted R², interactions shared among their factors; below 0: less than chance, "
           "read as 0); seed: the rest, within design cells; [95% bootstrap interval, seeds drawn again with all "
           "their games]")


def format_shares(report: Mapping[str, Any]) -> str:
    """The decomposition as text, for ``llm-mesa analyze``."""
    if not report.get("variance_shares"):
        reasons = sorted(set((report.get("variance_share_skipped") or {}).values()))
        return "variance shares: none" + (f" ({'; '.join(reasons)})" if reasons else " (no outcome measure)")
    lines = ["variance shares: " + CAPTION, shares_table(report).to_string(index=False)]
    skipped = report.get("variance_share_skipped") or {}
    if skipped:
        lines.append("not decomposed: " + "; ".join(f"{m} ({why})" for m, why in skipped.items()))
    return "\n".join(lines)


def draw_shares(report: Mapping[str, Any]) -> str:
    """Each measure's variance as one bar, cut into its factors' shares and the seed's (grey)."""
    from llm_mesa.analysis.figures import COLOURS, legend_outside, new_figure, svg_text

    table = report["variance_shares"]
    measures = list(table)
    factors = list(dict.fromkeys(f for by in table.values() for f in by if f != RESIDUAL))
    figure, ax = new_figure(7.2, 0.9 + 0.32 * len(measures))
    left = np.zeros(len(measures))
    for index, factor in enumerate([*factors, RESIDUAL]):
        widths = np.array([max(table[m].get(factor, 0.0), 0.0) for m in measures])  # below 0: drawn as 0
        colour = "#c8c8c8" if factor == RESIDUAL else COLOURS[index % len(COLOURS)]
        ax.barh(range(len(measures)), widths, left=left, color=colour, label=factor, height=0.7)
        left += widths
    ax.set_yticks(range(len(measures)), measures, fontsize=7)
    ax.set_ylim(len(measures) - 0.5, -0.5)
    ax.set_xlim(0, max(1.0, float(left.max())))
    ax.set_xlabel("share of the measure's variance across games")
    legend_outside(ax)
    return svg_text(figure)


def shares_panels(report: Mapping[str, Any]) -> list[Any]:
    """The report's panel of variance shares (none when no measure was decomposed)."""
    from llm_mesa.analysis.report_html import Panel, drawn

    if not report.get("variance_shares"):
        return []
    skipped = report.get("variance_share_skipped") or {}
    note = f"; not decomposed: {', '.join(skipped)}" if skipped else ""
    return [drawn("Variance shares", lambda: Panel("Variance shares", draw_shares(report), shares_table(report),
                                                   caption=CAPTION + note, table_title="share [95% interval]"))]
