"""The statistics of the two studies, as thin wrappers over tidy game tables.

Every function takes a pandas DataFrame (one row per game, per transition or per
run), checks that it can answer the question (columns present, at least two
conditions, outcomes that vary), and hands the work to an established library:

* Firth-penalised logistic regression: ``firthmodels`` (``FirthLogit``), the
  same method and conventions as R's ``logistf``;
* mixed-effects logistic regression: statsmodels ``BinomialBayesMixedGLM``
  (variational Bayes, ``fit_vb``);
* Kruskal-Wallis, Mann-Whitney U, point-biserial correlation: ``scipy.stats``.

Bad input raises :class:`AnalysisError`, a ``ValueError`` whose one-line message
names the fix.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats
from scipy.optimize import minimize_scalar
from scipy.special import expit

__all__ = [
    "AnalysisError",
    "FirthRegressionResult",
    "MajorityFollowingResult",
    "PointBiserialResult",
    "ComponentTestsResult",
    "firth_consensus_regression",
    "majority_following",
    "stubbornness_vs_consensus",
    "component_tests",
    "naming_summary",
    "transitions_from_rounds",
    "CONDITION_COLUMNS",
]


class AnalysisError(ValueError):
    """The table cannot answer the question asked; the message names the fix."""


# --------------------------------------------------------------------------- checks


def _require_columns(table: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    if not isinstance(table, pd.DataFrame):
        raise AnalysisError(f"{what} needs a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in columns if c not in table.columns]
    if missing:
        have = ", ".join(map(str, table.columns)) or "no columns"
        raise AnalysisError(f"{what} needs column(s) {', '.join(map(repr, missing))}; the table has: {have}")
    if len(table) == 0:
        raise AnalysisError(f"{what} got an empty table; run some games first")


def _as_binary(values: pd.Series, name: str, what: str) -> np.ndarray:
    """Turn a bool/0-1 column into floats, refusing anything else."""
    if values.isna().any():
        raise AnalysisError(f"{what}: column {name!r} has {int(values.isna().sum())} missing value(s); drop or fill them")
    array = values.astype(float).to_numpy() if values.dtype != object else values.map(float).to_numpy()
    if not np.isin(array, (0.0, 1.0)).all():
        raise AnalysisError(f"{what}: column {name!r} must be boolean or 0/1")
    return array


def _require_both_outcomes(y: np.ndarray, name: str, what: str) -> None:
    if y.min() == y.max():
        state = "true" if y[0] == 1 else "false"
        raise AnalysisError(
            f"{what}: {name!r} is {state} in all {len(y)} rows; the analysis needs both outcomes")


# ----------------------------------------------------------------- Firth regression


@dataclass(frozen=True)
class FirthRegressionResult:
    """Firth logistic regression of a binary outcome, reported as the study reports it.

    ``table`` has one row per kept design column: ``coef`` (log-odds), ``se``
    (Wald, from the inverse Fisher information, as logistf), ``ci_low``/``ci_high``
    (``ci_method``), ``p`` (``p_method``), ``odds_ratio`` and its interval.

    The likelihood-ratio test against the intercept-only model follows logistf:
    both log-likelihoods are penalised with the full design's Jeffreys term, so
    the test is nested (``loglik_null``). McFadden's pseudo-R² uses the ordinary
    (unpenalised) log-likelihoods: at the Firth estimates, and of the
    intercept-only maximum-likelihood fit.
    """

    formula: str
    table: pd.DataFrame
    ci_method: str
    p_method: str
    nobs: int
    n_events: int
    loglik: float
    loglik_null: float
    lr_chi2: float
    lr_df: int
    lr_p: float
    loglik_unpenalised: float
    loglik_null_unpenalised: float
    pseudo_r2_mcfadden: float
    converged: bool
    separation: bool
    infinite_ml_terms: tuple[str, ...]
    dropped_columns: tuple[str, ...]

    @property
    def params(self) -> pd.Series:
        return self.table["coef"]

    @property
    def odds_ratios(self) -> pd.Series:
        return self.table["odds_ratio"]

    def summary(self) -> str:
        """A plain-text report: the coefficient table and the model-level tests."""
        lines = [
            f"Firth logistic regression: {self.formula}",
            f"n = {self.nobs}, events = {self.n_events}, converged = {self.converged}",
            self.table.to_string(float_format=lambda v: f"{v:.4g}"),
            f"CIs: {self.ci_method}; p-values: {self.p_method}",
            f"LR chi2 = {self.lr_chi2:.3f} on {self.lr_df} df, p = {self.lr_p:.3g}; "
            f"McFadden pseudo-R2 = {self.pseudo_r2_mcfadden:.3f}",
        ]
        if self.separation:
            lines.append("separation: ordinary ML estimates are infinite for " + ", ".join(self.infinite_ml_terms))
        if self.dropped_columns:
            lines.append("dropped (aliased or empty cells): " + ", ".join(self.dropped_columns))
        return "\n".join(lines)


_FORMULA_SIDES = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*~(.+)$", re.S)


def _split_formula(formula: str) -> tuple[str, str]:
    match = _FORMULA_SIDES.match(formula)
    if not match:
        raise AnalysisError(f"formula {formula!r} must read 'outcome ~ terms' with a plain column name on the left")
    return match.group(1), match.group(2).strip()


def _full_rank_columns(design: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Keep columns in order while each adds rank; the rest are aliased (e.g. empty cells)."""
    kept: list[str] = []
    dropped: list[str] = []
    matrix = design.to_numpy(dtype=float)
    rank = 0
    for index, name in enumerate(design.columns):
        candidate = matrix[:, [design.columns.get_loc(k) for k in kept] + [index]]
        new_rank = np.linalg.matrix_rank(candidate)
        if new_rank > rank:
            kept.append(name)
            rank = new_rank
        else:
            dropped.append(name)
    return kept, dropped


def _build_design(formula: str, data: pd.DataFrame, what: str) -> tuple[np.ndarray, pd.DataFrame, list[str], str]:
    from formulaic import model_matrix
    from formulaic.errors import FormulaicError

    outcome, rhs = _split_formula(formula)
    _require_columns(data, [outcome], what)
    y = _as_binary(data[outcome], outcome, what)
    try:
        design = model_matrix(rhs, data, na_action="raise")
    except FormulaicError as exc:
        unknown = re.search(r"name '([^']+)' is not defined", str(exc))
        if unknown:
            have = ", ".join(map(str, data.columns))
            raise AnalysisError(f"{what}: the formula names {unknown.group(1)!r}, which is not a column; the table has: {have}") from None
        raise AnalysisError(f"{what}: cannot build the design of {formula!r}: {str(exc).splitlines()[0]}") from None
    except Exception as exc:  # formulaic reports unknown names as plain evaluation errors
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise AnalysisError(f"{what}: cannot build the design of {formula!r} ({message}); check the column names") from None
    design = pd.DataFrame(design)
    kept, dropped = _full_rank_columns(design)
    return y, design[kept], dropped, outcome


def _penalised_null_loglik(X: np.ndarray, y: np.ndarray, intercept_index: int) -> float:
    """logistf's null log-likelihood: only the intercept free, full-design penalty.

    firthmodels exposes 1-df likelihood-ratio tests only; the global test needs the
    model with every slope fixed at 0. Its penalised log-likelihood is evaluated by
    firthmodels' own routine and maximised over the single free intercept.
    """
    from firthmodels.logistic import _Workspace, compute_logistic_quantities

    n, k = X.shape
    workspace = _Workspace(n, k)
    weights = np.ones(n)
    offset = np.zeros(n)

    def negative_loglik(intercept: float) -> float:
        beta = np.zeros(k)
        beta[intercept_index] = intercept
        return -compute_logistic_quantities(X, y, beta, weights, offset, workspace, 0.5).loglik

    start = float(np.log((y.sum() + 0.5) / (n - y.sum() + 0.5)))
    result = minimize_scalar(negative_loglik, bracket=(start - 1.0, start + 1.0), tol=1e-10)
    return float(-result.fun)


def firth_consensus_regression(
    games: pd.DataFrame,
    formula: str = "consensus ~ C(topology) * C(communication) + C(policy)",
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
    single level simply drops out).
    Design columns that carry no information (empty topology x communication
    cells, or aliases of other columns) are dropped and listed in
    ``dropped_columns``. With ``profile_likelihood`` (default, as logistf) the CIs
    are profile penalised likelihood intervals and p-values penalised LR tests;
    otherwise both are Wald.
    """
    from firthmodels import detect_separation
    from firthmodels.adapters.statsmodels import FirthLogit
    from statsmodels.discrete.discrete_model import Logit

    what = "firth_consensus_regression"
    _require_columns(games, [], what)
    y, design, dropped, outcome = _build_design(formula, games, what)
    _require_both_outcomes(y, outcome, what)
    names = list(design.columns)
    if "Intercept" not in names:
        raise AnalysisError(f"{what}: the formula must keep the intercept (the LR test is against the intercept-only model)")
    X = design.to_numpy(dtype=float)
    if X.shape[1] >= X.shape[0]:
        raise AnalysisError(f"{what}: {X.shape[1]} parameters for {X.shape[0]} games; run more games or simplify the formula")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = FirthLogit(y, design).fit(maxiter=max_iter, pl=profile_likelihood, gtol=tol, xtol=tol)
        ci = fitted.conf_int(alpha=alpha, maxiter=max_iter, tol=min(tol, 1e-4))
    failed_inference = [str(w.message) for w in caught if "LRT" in str(w.message) or "profile" in str(w.message).lower()]

    coef = np.asarray(fitted.params, dtype=float)
    table = pd.DataFrame(
        {
            "coef": coef,
            "se": np.asarray(fitted.bse, dtype=float),
            "ci_low": ci[:, 0],
            "ci_high": ci[:, 1],
            "p": np.asarray(fitted.pvalues, dtype=float),
            "odds_ratio": np.exp(coef),
            "or_ci_low": np.exp(ci[:, 0]),
            "or_ci_high": np.exp(ci[:, 1]),
        },
        index=pd.Index(names, name="term"),
    )

    intercept_index = names.index("Intercept")
    loglik = float(fitted.llf)
    loglik_null = _penalised_null_loglik(X, y, intercept_index)
    lr_df = len(names) - 1
    lr_chi2 = max(0.0, 2.0 * (loglik - loglik_null))
    lr_p = float(stats.chi2.sf(lr_chi2, lr_df)) if lr_df > 0 else float("nan")

    # McFadden on ordinary likelihoods: Firth estimates vs the intercept-only ML fit.
    loglik_unpen = float(Logit(y, X).loglike(coef))
    share = y.mean()
    loglik_null_unpen = float(len(y) * (share * np.log(share) + (1 - share) * np.log(1 - share)))
    pseudo_r2 = 1.0 - loglik_unpen / loglik_null_unpen

    separation = detect_separation(X, y, fit_intercept=False)
    infinite = tuple(name for name, finite in zip(names, separation.is_finite) if not finite)

    p_method = "penalised likelihood-ratio test" if profile_likelihood else "Wald z test"
    if failed_inference:
        p_method += f" (not computed for {len(failed_inference)} term(s): NaN)"
    return FirthRegressionResult(
        formula=formula,
        table=table,
        ci_method="profile penalised likelihood" if profile_likelihood else "Wald",
        p_method=p_method,
        nobs=len(y),
        n_events=int(y.sum()),
        loglik=loglik,
        loglik_null=loglik_null,
        lr_chi2=lr_chi2,
        lr_df=lr_df,
        lr_p=lr_p,
        loglik_unpenalised=loglik_unpen,
        loglik_null_unpenalised=loglik_null_unpen,
        pseudo_r2_mcfadden=float(pseudo_r2),
        converged=bool(fitted.converged),
        separation=bool(separation.separation),
        infinite_ml_terms=infinite,
        dropped_columns=tuple(dropped),
    )


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
    fit_method: str = "L-BFGS-B",
) -> MajorityFollowingResult:
    """Mixed-effects logistic regression of choosing blue on the blue neighbour share.

    Random intercepts per game, and (``nested_agent``) per agent within game,
    absorb that some games and some agents lean blue whatever their neighbours
    do, so the slope measures majority following itself. For very large tables
    the agent level adds one parameter per agent-game; turn it off if the fit is
    too slow. ``vb_sd`` and ``fe_prior_sd`` are statsmodels' prior SDs
    (``vcp_p``, ``fe_p``) of the log random-effect SDs and of the fixed effects;
    ``fit_method`` is the optimiser of ``fit_vb`` (L-BFGS-B: same optimum as
    statsmodels' default BFGS here, about 5x faster, and it scales to many
    random effects). Mean-field variational posteriors are known to understate
    posterior SDs: read ``slope_sd`` as a lower bound.
    """
    from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM

    what = "majority_following"
    needed = [share_col, choice_col, game_col] + ([agent_col] if nested_agent else [])
    _require_columns(transitions, needed, what)
    data = transitions[needed].copy()
    if data[share_col].isna().any():
        raise AnalysisError(f"{what}: {share_col!r} has missing values (agents without neighbours?); drop those rows")
    y = _as_binary(data[choice_col], choice_col, what)
    _require_both_outcomes(y, choice_col, what)
    share = data[share_col].astype(float)
    if share.min() < 0 or share.max() > 1:
        raise AnalysisError(f"{what}: {share_col!r} must be a share in [0, 1]")
    if share.nunique() < 2:
        raise AnalysisError(f"{what}: {share_col!r} takes a single value; the slope needs variation")

    frame = pd.DataFrame({"y": y, "share": share.to_numpy(),
                          "game": data[game_col].astype(str).to_numpy()})
    vc_formulas = {"game": "0 + C(game)"}
    if nested_agent:
        frame["game_agent"] = frame["game"] + ":" + data[agent_col].astype(str).to_numpy()
        vc_formulas["agent_in_game"] = "0 + C(game_agent)"
    if frame["game"].nunique() < 2:
        raise AnalysisError(f"{what}: transitions come from one game only; random game intercepts need several games")

    model = BinomialBayesMixedGLM.from_formula("y ~ share", vc_formulas, frame, vcp_p=vb_sd, fe_p=fe_prior_sd)
    fit = model.fit_vb(fit_method=fit_method)
    fe_names = list(model.exog_names[: model.k_fep])
    fixed = pd.DataFrame({"mean": fit.fe_mean, "sd": fit.fe_sd}, index=fe_names)
    intercept, slope = float(fixed.loc["Intercept", "mean"]), float(fixed.loc["share", "mean"])
    # vcp_mean is the posterior mean of log(SD) of each variance component.
    random_sd = {name: float(np.exp(value)) for name, value in zip(model.vcp_names, fit.vcp_mean)}

    grid_values = np.linspace(0.0, 1.0, 21) if grid is None else np.asarray(grid, dtype=float)
    curve = pd.DataFrame({share_col: grid_values, "p_blue": expit(intercept + slope * grid_values)})

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
        random_effect_sd=random_sd,
        nobs=len(frame),
        n_games=int(frame["game"].nunique()),
        curve=curve,
        empirical=empirical,
        fixed_effects=fixed,
    )


# ------------------------------------------------------------ stubbornness vs success


@dataclass(frozen=True)
class PointBiserialResult:
    """Point-biserial correlation of a per-game measure with the consensus flag."""

    r: float
    p: float
    n: int
    n_dropped: int


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
        _require_columns(games, [consensus_col], what)
        moves = pd.to_numeric(games[moves_col], errors="coerce")
        opportunities = pd.to_numeric(games[opportunities_col], errors="coerce")
        ratio = (moves / opportunities.where(opportunities > 0)).astype(float)
        ratio_col = f"{moves_col}/{opportunities_col}"
    else:
        _require_columns(games, [ratio_col, consensus_col], what)
        ratio = pd.to_numeric(games[ratio_col], errors="coerce")
    keep = ratio.notna().to_numpy()
    if keep.sum() < 3:
        raise AnalysisError(f"{what}: only {int(keep.sum())} game(s) have a {ratio_col!r} ratio; need at least 3")
    flag = _as_binary(games.loc[keep, consensus_col], consensus_col, what)
    _require_both_outcomes(flag, consensus_col, what)
    values = ratio[keep].to_numpy(dtype=float)
    if np.ptp(values) == 0:
        raise AnalysisError(f"{what}: {ratio_col!r} is the same in every game; a correlation needs variation")
    result = stats.pointbiserialr(flag, values)
    return PointBiserialResult(r=float(result.statistic), p=float(result.pvalue),
                               n=int(keep.sum()), n_dropped=int((~keep).sum()))


# ------------------------------------------------------------- component size tests


@dataclass(frozen=True)
class ComponentTestsResult:
    """Largest same-colour component: across conditions, and against chance.

    ``kruskal_*``: Kruskal-Wallis H test that all conditions share one
    distribution (df = conditions - 1). ``per_condition``: for each condition,
    Mann-Whitney U of its games' components against their random-colouring
    baselines, with medians and Holm-adjusted p-values across conditions.
    """

    kruskal_h: float
    kruskal_p: float
    kruskal_df: int
    per_condition: pd.DataFrame


CONDITION_COLUMNS = ("topology", "communication", "preferences", "label")


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
    from statsmodels.stats.multitest import multipletests

    what = "component_tests"
    group_cols = [group_col] if isinstance(group_col, str) else list(group_col)
    _require_columns(games, [baseline_col, value_col, *group_cols], what)
    data = games[[*group_cols, value_col, baseline_col]].dropna(subset=[value_col, baseline_col])
    if data.empty:
        raise AnalysisError(f"{what}: every row misses {value_col!r} or {baseline_col!r}")
    condition = data[group_cols].astype(str).agg("/".join, axis=1)
    group_col = group_cols[0] if len(group_cols) == 1 else "condition"
    groups = {name: frame for name, frame in data.groupby(condition, sort=True)}
    if len(groups) < 2:
        only = next(iter(groups))
        raise AnalysisError(f"{what}: needs at least two conditions in {group_col!r}; got only {only!r}")
    samples = [frame[value_col].to_numpy(dtype=float) for frame in groups.values()]
    if np.ptp(np.concatenate(samples)) == 0:
        raise AnalysisError(f"{what}: {value_col!r} is the same in every game; the tests need variation")
    kruskal = stats.kruskal(*samples)

    rows = []
    for name, frame in groups.items():
        values = frame[value_col].to_numpy(dtype=float)
        baseline = frame[baseline_col].to_numpy(dtype=float)
        mwu = stats.mannwhitneyu(values, baseline, alternative=alternative)
        rows.append({group_col: name, "n": len(values),
                     "median": float(np.median(values)), "baseline_median": float(np.median(baseline)),
                     "u": float(mwu.statistic), "p": float(mwu.pvalue)})
    per_condition = pd.DataFrame(rows)
    per_condition["p_holm"] = multipletests(per_condition["p"].to_numpy(), method="holm")[1]
    return ComponentTestsResult(kruskal_h=float(kruskal.statistic), kruskal_p=float(kruskal.pvalue),
                                kruskal_df=len(groups) - 1, per_condition=per_condition)


# ------------------------------------------------------------------- naming (SIGN)


NAMING_CONDITION_COLUMNS = ("model", "speaker", "policy", "pairing", "n", "alpha", "mode", "memory")


def naming_summary(
    runs: pd.DataFrame,
    condition_cols: Sequence[str] | None = None,
    *,
    agreement_col: str = "agreement_final",
    tokens_cols: Sequence[str] | None = None,
    seed_col: str = "seed",
) -> pd.DataFrame:
    """Mean and SD over seeds of final agreement and tokens-to-convergence, per condition.

    ``condition_cols`` defaults to those of ``NAMING_CONDITION_COLUMNS`` that the
    table has (the naming game's summary row names them so). ``tokens_cols``
    defaults to every column starting with ``tokens_to_`` or ``total_tokens_to_``
    (completion, and prompt + completion, tokens until 50/60/70 % agreement). A run
    that never reached a threshold has None/NaN there: means and SDs are over the
    runs that did, and ``<col>_reached`` counts them. SDs use ddof = 1 (NaN with
    a single seed).
    """
    what = "naming_summary"
    if condition_cols is None:
        _require_columns(runs, [], what)
        condition_cols = [c for c in NAMING_CONDITION_COLUMNS if c in runs.columns]
        if not condition_cols:
            raise AnalysisError(f"{what}: no condition column found (looked for {', '.join(NAMING_CONDITION_COLUMNS)}); pass condition_cols")
    _require_columns(runs, [*condition_cols, agreement_col, seed_col], what)
    if tokens_cols is None:
        tokens_cols = [c for c in runs.columns if str(c).startswith(("tokens_to_", "total_tokens_to_"))]
    else:
        _require_columns(runs, tokens_cols, what)
    measures = [agreement_col, *tokens_cols]
    grouped = runs.groupby(list(condition_cols), sort=True, observed=True, dropna=False)
    summary = grouped[seed_col].nunique().rename("n_seeds").to_frame()
    for column in measures:
        values = pd.to_numeric(runs[column], errors="coerce").groupby(
            [runs[c] for c in condition_cols], sort=True, observed=True, dropna=False)
        summary[f"{column}_mean"] = values.mean()
        summary[f"{column}_sd"] = values.std(ddof=1)
        if column != agreement_col:
            summary[f"{column}_reached"] = values.count()
    return summary.reset_index()


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
    _require_columns(agents, [round_col, node_col, colour_col], what)
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
