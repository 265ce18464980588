"""The consensus study's statistics over tidy game tables, on the core's estimators.

Each function names the study's question and its columns, checks that the table
can answer it, and hands the work to a general estimator of
``llm_mesa.analysis``: Firth logistic regression of consensus, a mixed-effects
logistic regression for majority following, a point-biserial correlation for
stubbornness, rank tests for the largest same-colour component. It also turns
the agents table of a game (or of a sweep) into majority-following transitions.
Bad input raises :class:`~llm_mesa.analysis.AnalysisError`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit

from llm_mesa.analysis import (
    AnalysisError,
    FirthRegressionResult,
    PointBiserialResult,
    RankTestsResult,
    firth_logit,
    mixed_logit,
    point_biserial,
    rank_tests,
)
from llm_mesa.analysis.checks import as_binary, require_both_outcomes, require_columns

__all__ = [
    "CONDITION_COLUMNS",
    "DEFAULT_FORMULA",
    "ComponentTestsResult",
    "FirthRegressionResult",
    "MajorityFollowingResult",
    "PointBiserialResult",
    "component_tests",
    "firth_consensus_regression",
    "majority_following",
    "stubbornness_vs_consensus",
    "sweep_transitions",
    "transitions_from_rounds",
]

#: the study's model: topology x communication, and a fixed effect per model (policy)
DEFAULT_FORMULA = "consensus ~ C(topology) * C(communication) + C(policy)"
#: the columns of the games table that make a condition of the study
CONDITION_COLUMNS = ("topology", "communication", "preferences", "label")
#: the largest-component tests' result (the general rank tests' result)
ComponentTestsResult = RankTestsResult


def firth_consensus_regression(
    games: pd.DataFrame,
    formula: str = DEFAULT_FORMULA,
    *,
    alpha: float = 0.05,
    profile_likelihood: bool = True,
    tol: float = 1e-6,
    max_iter: int = 100,
) -> FirthRegressionResult:
    """Firth logistic regression of consensus on the game conditions.

    Firth's penalty keeps estimates finite when a condition never (or always)
    reaches consensus, which is the common case here (e.g. BA + local: 0/180).
    The default formula follows the study: topology x communication plus a fixed
    effect per model (the ``policy`` column of the game table; a factor with a
    single level simply drops out). The options are those of
    :func:`llm_mesa.analysis.firth_logit`.
    """
    return firth_logit(formula, games, alpha=alpha, profile_likelihood=profile_likelihood, tol=tol,
                       max_iter=max_iter, what="firth_consensus_regression")


# ---------------------------------------------------------------- majority following


@dataclass(frozen=True)
class MajorityFollowingResult:
    """P(blue at t+1 | share of blue neighbours at t), model and data side by side.

    ``slope``/``intercept`` are posterior means of the fixed effects (log-odds per
    unit share), ``*_sd`` their posterior SDs (variational Bayes). ``curve`` is the
    fitted probability on a grid of shares for a typical game/agent (random
    effects at 0); ``empirical`` is the observed share choosing blue in bins of
    the neighbour share, with counts. ``random_effect_sd`` maps each random-effect
    group to the posterior mean of its standard deviation.
    """

    slope: float
    slope_sd: float
    intercept: float
    intercept_sd: float
    random_effect_sd: dict[str, float]
    nobs: int
    n_games: int
    curve: pd.DataFrame
    empirical: pd.DataFrame
    fixed_effects: pd.DataFrame = field(repr=False)
    converged: bool = True
    seed: int = 0
    report: Any = None  # the fit's verdict and attempts (``llm_mesa.analysis.vb_intercepts.FitReport``)


def majority_following(
    transitions: pd.DataFrame,
    *,
    share_col: str = "blue_share_neighbours",
    choice_col: str = "chose_blue_next",
    game_col: str = "game",
    agent_col: str = "agent",
    nested_agent: bool = True,
    grid: Sequence[float] | None = None,
    bins: int = 10,
    vb_sd: float = 1.0,
    fe_prior_sd: float = 2.0,
    seed: int = 0,
    max_iter: int = 1000,
    gradient_tol: float = 0.01,
    restarts: int = 2,
) -> MajorityFollowingResult:
    """Mixed-effects logistic regression of choosing blue on the blue neighbour share.

    Random intercepts per game, and (``nested_agent``) per agent within game,
    absorb that some games and some agents lean blue whatever their neighbours
    do, so the slope measures majority following itself. For very large tables
    the agent level adds one parameter per agent-game; turn it off if the fit is
    too slow. ``vb_sd``, ``fe_prior_sd``, ``max_iter``, ``gradient_tol``, ``restarts`` and ``seed`` (of the
    fit's starting values: the same rows and seed give the same fit) are those of
    :func:`llm_mesa.analysis.mixed_logit`. Mean-field variational posteriors are
    known to understate posterior SDs: read ``slope_sd`` as a lower bound.
    """
    what = "majority_following"
    needed = [share_col, choice_col, game_col] + ([agent_col] if nested_agent else [])
    require_columns(transitions, needed, what)
    data = transitions[needed].copy()
    if data[share_col].isna().any():
        raise AnalysisError(f"{what}: {share_col!r} has missing values (agents without neighbours?); drop those rows")
    y = as_binary(data[choice_col], choice_col, what)
    require_both_outcomes(y, choice_col, what)
    share = data[share_col].astype(float)
    if share.min() < 0 or share.max() > 1:
        raise AnalysisError(f"{what}: {share_col!r} must be a share in [0, 1]")
    if share.nunique() < 2:
        raise AnalysisError(f"{what}: {share_col!r} takes a single value; the slope needs variation")

    frame = pd.DataFrame({"y": y, "share": share.to_numpy(),
                          "game": data[game_col].astype(str).to_numpy()})
    groups: dict[str, str | list[str]] = {"game": "game"}
    if nested_agent:
        frame["agent"] = data[agent_col].astype(str).to_numpy()
        groups["agent_in_game"] = ["game", "agent"]
    if frame["game"].nunique() < 2:
        raise AnalysisError(f"{what}: transitions come from one game only; random game intercepts need several games")

    fit = mixed_logit("y ~ share", frame, groups, vb_sd=vb_sd, fe_prior_sd=fe_prior_sd, seed=seed,
                      max_iter=max_iter, gradient_tol=gradient_tol, restarts=restarts, what=what)
    fixed = fit.fixed_effects
    intercept, slope = float(fixed.loc["Intercept", "mean"]), float(fixed.loc["share", "mean"])

    grid_values = np.linspace(0.0, 1.0, 21) if grid is None else np.asarray(grid, dtype=float)
    # a 95 % band from the fixed effects' posterior SDs (independent under the mean-field posterior,
    # which understates them: read it as a lower bound of the uncertainty)
    spread = 1.96 * np.sqrt(float(fixed.loc["Intercept", "sd"]) ** 2 + (grid_values * float(fixed.loc["share", "sd"])) ** 2)
    centre = intercept + slope * grid_values
    curve = pd.DataFrame({share_col: grid_values, "p_blue": expit(centre), "p_low": expit(centre - spread),
                          "p_high": expit(centre + spread)})

    edges = np.linspace(0.0, 1.0, bins + 1)
    binned = pd.cut(frame["share"], edges, include_lowest=True)
    empirical = (
        frame.groupby(binned, observed=True)
        .agg(share_mean=("share", "mean"), p_blue=("y", "mean"), n=("y", "size"))
        .reset_index(names="bin")
    )
    empirical["bin"] = empirical["bin"].astype(str)

    return MajorityFollowingResult(
        slope=slope,
        slope_sd=float(fixed.loc["share", "sd"]),
        intercept=intercept,
        intercept_sd=float(fixed.loc["Intercept", "sd"]),
        random_effect_sd=fit.random_effect_sd,
        nobs=fit.nobs,
        n_games=fit.n_groups["game"],
        curve=curve,
        empirical=empirical,
        fixed_effects=fixed,
        converged=fit.converged,
        seed=seed,
        report=fit.report,
    )


# ------------------------------------------------------------ stubbornness vs success


def stubbornness_vs_consensus(
    games: pd.DataFrame,
    *,
    ratio_col: str = "stubbornness",
    consensus_col: str = "consensus",
    moves_col: str = "stubborn_moves",
    opportunities_col: str = "opportunities",
) -> PointBiserialResult:
    """Correlate each game's pooled stubbornness ratio with whether it reached consensus.

    When the table has the counts (``moves_col``, ``opportunities_col``) the ratio
    is recomputed from them, so that a game without any opportunity counts as
    undefined (left out, counted in ``n_dropped``) rather than as 0; otherwise
    ``ratio_col`` is used as given (NaN = undefined). The study reports r = -0.44.
    """
    what = "stubbornness_vs_consensus"
    if moves_col in games.columns and opportunities_col in games.columns:
        require_columns(games, [consensus_col], what)
        moves = pd.to_numeric(games[moves_col], errors="coerce")
        opportunities = pd.to_numeric(games[opportunities_col], errors="coerce")
        ratio = (moves / opportunities.where(opportunities > 0)).astype(float)
        ratio_col = f"{moves_col}/{opportunities_col}"
    else:
        require_columns(games, [ratio_col, consensus_col], what)
        ratio = pd.to_numeric(games[ratio_col], errors="coerce")
    frame = pd.DataFrame({consensus_col: games[consensus_col], ratio_col: ratio})
    return point_biserial(frame, consensus_col, ratio_col, what=what)


# ------------------------------------------------------------- component size tests


def component_tests(
    games: pd.DataFrame,
    baseline_col: str = "largest_component_baseline_mean",
    value_col: str = "largest_component",
    group_col: str | Sequence[str] = CONDITION_COLUMNS,
    *,
    alternative: str = "two-sided",
) -> ComponentTestsResult:
    """Do final colour clusters differ across conditions, and from random colourings?

    Kruskal-Wallis compares ``value_col`` across the groups of ``group_col``; in
    each group, Mann-Whitney U compares the games' ``value_col`` with their
    ``baseline_col`` (the mean largest component of random colourings with the
    same colour counts). A condition is one column or several (default:
    topology, communication, preferences and opponent label; add ``policy`` to
    split by model); several columns are joined as ``"ba/global/random/llm"``.
    ``alternative`` is passed to Mann-Whitney ("greater": clusters larger than
    chance). Games without a baseline (None/NaN) are left out.
    """
    return rank_tests(games, value_col, baseline_col, group_col, alternative=alternative, what="component_tests")


# ------------------------------------------------------- transitions for one game


def transitions_from_rounds(
    agents: pd.DataFrame,
    graph,
    game: object,
    *,
    round_col: str = "round",
    node_col: str = "node",
    colour_col: str = "colour",
) -> pd.DataFrame:
    """Turn one game's per-agent, per-round colours into majority-following transitions.

    ``agents`` is the consensus model's ``agents_table()`` (one row per agent per
    round, round 0 the initial state) and ``graph`` its networkx graph (nodes
    0..n-1). Each row of the result is an agent at round t: the share of its
    neighbours holding blue at t, whether it holds blue at t+1, and its own
    colour at t (``blue_now``, for inertia). Agents without neighbours are left
    out. Concatenate the results of several games and pass them to
    :func:`majority_following`.
    """
    import networkx as nx

    what = "transitions_from_rounds"
    require_columns(agents, [round_col, node_col, colour_col], what)
    colours = agents.pivot_table(index=round_col, columns=node_col, values=colour_col, aggfunc="first")
    n = graph.number_of_nodes()
    if set(graph.nodes) != set(range(n)) or list(colours.columns) != list(range(n)):
        raise AnalysisError(f"{what}: agents' nodes and the graph's must both be 0..{n - 1}")
    if colours.isna().any().any():
        raise AnalysisError(f"{what}: some agents miss some rounds; pass the complete agents_table()")
    blue = (colours.to_numpy() == "blue").astype(float)  # rounds x nodes
    adjacency = nx.to_scipy_sparse_array(graph, nodelist=range(n), format="csr")
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    with np.errstate(invalid="ignore", divide="ignore"):
        share = (adjacency @ blue.T).T / degree  # rounds x nodes
    rounds = colours.index.to_numpy()
    t_index, node_index = np.meshgrid(np.arange(len(rounds) - 1), np.arange(n), indexing="ij")
    frame = pd.DataFrame({
        "game": game,
        "agent": node_index.ravel(),
        "round": rounds[t_index.ravel()],
        "blue_share_neighbours": share[:-1].ravel(),
        "blue_now": blue[:-1].ravel().astype(bool),
        "chose_blue_next": blue[1:].ravel().astype(bool),
    })
    return frame[degree[frame["agent"]] > 0].reset_index(drop=True)


# ---------------------------------------------------- transitions for a whole sweep


def _game_graph(row: pd.Series, edges: pd.DataFrame | None = None):
    """The game's graph: from the sweep's saved edges, else redrawn as the model draws it.

    Sweeps that keep the agents table save each game's edges. For older sweeps
    the graph is redrawn: ``ConsensusModel`` builds its topology from its stdlib
    rng before anything else draws from it, so (topology, n, seed) fixes it.
    Custom graphs without saved edges cannot be had (None).
    """
    import networkx as nx

    from llm_mesa.graphs import build_topology

    if edges is not None:
        graph = nx.Graph()
        graph.add_nodes_from(range(int(row["n"])))
        graph.add_edges_from(zip(edges["source"].astype(int), edges["target"].astype(int)))
        return graph
    if str(row["topology"]) not in ("ba", "er", "ws", "caveman"):
        return None
    ring = row.get("ring_degree")
    return build_topology(str(row["topology"]), int(row["n"]), random.Random(int(row["seed"])),
                          ws_k=4 if ring is None or pd.isna(ring) else int(ring))


def sweep_transitions(games: pd.DataFrame, agents: pd.DataFrame,
                      edges: pd.DataFrame | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Majority-following transitions of every game whose graph can be redrawn and checked.

    A redrawn graph is checked against the game's own record: the largest
    same-colour component of the final colours on it must equal the game's
    ``largest_component``; a game that fails the check is left out and named.
    """
    from .measures import largest_same_colour_component

    key_cols = [c for c in ("sweep", "condition", "policy", "seed")
                if c in games.columns and c in agents.columns and (edges is None or c in edges.columns)]
    if edges is not None and "n" in games.columns:
        from .transitions import fast_sweep_transitions

        return fast_sweep_transitions(games.reset_index(drop=True), agents, edges, key_cols)
    by_game = {key: frame for key, frame in agents.groupby(key_cols, sort=False)}
    edges_by_game = ({key: frame for key, frame in edges.groupby(key_cols, sort=False)}
                     if edges is not None else {})
    frames, left_out = [], []
    for _, row in games.iterrows():
        key = tuple(row[c] for c in key_cols)
        name = "|".join(map(str, key))
        rounds = by_game.get(key)
        graph = _game_graph(row, edges_by_game.get(key)) if rounds is not None else None
        if graph is None:
            left_out.append(name)
            continue
        last = rounds[rounds["round"] == rounds["round"].max()].sort_values("node")
        if graph.number_of_nodes() != len(last) or \
                largest_same_colour_component(graph, list(last["colour"]))[0] != int(row["largest_component"]):
            left_out.append(name)
            continue
        frames.append(transitions_from_rounds(rounds, graph, name))
    transitions = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return transitions, left_out
