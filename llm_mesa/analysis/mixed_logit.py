"""Mixed-effects logistic regression: fixed effects plus random intercepts per group.

The fit is statsmodels' ``BinomialBayesMixedGLM`` (variational Bayes, ``fit_vb``).
Random intercepts absorb that some units (games, agents) lean towards one
outcome whatever the predictors, so the fixed slopes measure the predictors
themselves. Bad input raises :class:`~llm_mesa.analysis.checks.AnalysisError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from llm_mesa.analysis.checks import AnalysisError, as_binary, require_both_outcomes, require_columns, split_formula

__all__ = ["MixedLogitResult", "mixed_logit"]


@dataclass(frozen=True)
class MixedLogitResult:
    """Posterior summaries of a random-intercept logistic regression.

    ``fixed_effects`` has one row per fixed term (``Intercept`` first) with the
    posterior ``mean`` and ``sd`` (log-odds). ``random_effect_sd`` maps each
    random-intercept group to the posterior mean of its standard deviation;
    ``n_groups`` to its number of levels.
    """

    formula: str
    fixed_effects: pd.DataFrame
    random_effect_sd: dict[str, float]
    n_groups: dict[str, int]
    nobs: int

    @property
    def params(self) -> pd.Series:
        return self.fixed_effects["mean"]


def mixed_logit(
    formula: str,
    data: pd.DataFrame,
    groups: Mapping[str, str | Sequence[str]],
    *,
    vb_sd: float = 1.0,
    fe_prior_sd: float = 2.0,
    fit_method: str = "L-BFGS-B",
    what: str = "mixed_logit",
) -> MixedLogitResult:
    """Logistic regression of the binary ``outcome ~ terms`` of ``formula`` with random intercepts.

    ``groups`` names each random-intercept group and gives its column, or
    several columns for a group nested in another: ``{"game": "game",
    "agent_in_game": ["game", "agent"]}`` gives one intercept per game and one
    per agent within its game. ``formula`` is a patsy formula over ``data``'s
    columns. ``vb_sd`` and ``fe_prior_sd`` are statsmodels' prior SDs (``vcp_p``,
    ``fe_p``) of the log random-effect SDs and of the fixed effects;
    ``fit_method`` is the optimiser of ``fit_vb`` (L-BFGS-B: the same optimum as
    statsmodels' default BFGS on these models, faster, and it scales to many
    random effects). Mean-field variational posteriors are known to understate
    posterior SDs: read the fixed effects' ``sd`` as lower bounds. ``what`` names the
    caller in error messages.
    """
    from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM

    outcome, _ = split_formula(formula)
    columns = {name: [cols] if isinstance(cols, str) else list(cols) for name, cols in groups.items()}
    if not columns or any(not cols for cols in columns.values()):
        raise AnalysisError(f"{what}: name at least one random-intercept group and its column(s)")
    require_columns(data, [outcome, *dict.fromkeys(c for cols in columns.values() for c in cols)], what)
    y = as_binary(data[outcome], outcome, what)
    require_both_outcomes(y, outcome, what)

    frame = data.copy()
    frame[outcome] = y
    vc_formulas = {}
    n_groups = {}
    for index, (name, cols) in enumerate(columns.items()):
        key = data[cols[0]].astype(str).to_numpy()
        for col in cols[1:]:
            key = key + ":" + data[col].astype(str).to_numpy()
        frame[f"_group_{index}"] = key
        vc_formulas[name] = f"0 + C(_group_{index})"
        n_groups[name] = int(pd.unique(key).size)
        if n_groups[name] < 2:
            raise AnalysisError(f"{what}: group {name!r} has a single level; random intercepts need several")

    model = BinomialBayesMixedGLM.from_formula(formula, vc_formulas, frame, vcp_p=vb_sd, fe_p=fe_prior_sd)
    fit = model.fit_vb(fit_method=fit_method)
    fixed = pd.DataFrame({"mean": fit.fe_mean, "sd": fit.fe_sd}, index=list(model.exog_names[: model.k_fep]))
    # vcp_mean is the posterior mean of log(SD) of each variance component.
    random_sd = {name: float(np.exp(value)) for name, value in zip(model.vcp_names, fit.vcp_mean)}
    return MixedLogitResult(formula=formula, fixed_effects=fixed, random_effect_sd=random_sd,
                            n_groups=n_groups, nobs=len(frame))
