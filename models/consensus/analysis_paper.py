"""The consensus study's Firth models as the paper ran them: its subsets, its reference levels.

Each of the paper's models is a subset of the games (by their condition
columns, so any sweep holding such games answers it) and one focal factor with
the paper's reference level:

1. ``communication_ba``: within BA (50/50 preferences, "LLM" label, no private
   messages), communication with **global** as the baseline;
2. ``topology``: local and no communication (50/50, "LLM"), topology with
   **caveman** as the baseline, crossed with communication;
3. ``preferences``: BA with local messages, the **minority** design against the
   50/50 design (baseline);
4. ``label``: BA with global messages, the "LLM" label against the "human" label
   (baseline);
5. ``direct_messages``: the cells that were played with and without private
   messages, private messages against none (the "DM" extra).

Every model is fitted **pooled**, as the paper (a fixed effect per model, when
the games hold several), and **per model** (the same formula without it). A
factor that varies in the subset besides the focal one (e.g. N) enters as a
fixed effect. The focal terms are corrected for multiple tests, Bonferroni (as
the paper) and Holm: the pooled fits' focal terms as one family across the
paper's models, and each model's per-model fits across models. The
private-message count against consensus is fitted per model over the games
that allowed private messages. A model the games cannot answer is skipped, with
its reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from llm_mesa.analysis import AnalysisError, FirthRegressionResult, firth_logit
from llm_mesa.analysis.proportions import adjust_pvalues

__all__ = ["PAPER_MODELS", "PaperModel", "firth_summary", "paper_models", "private_messages_part", "subset"]

#: the condition columns a subset is chosen by, and their value in games that lack the column
SUBSET_DEFAULTS: Mapping[str, str] = {"topology": "ba", "communication": "none", "preferences": "random",
                                      "label": "llm", "direct_messages": "False"}


@dataclass(frozen=True)
class PaperModel:
    """One of the paper's Firth models: which games, which factor, which baseline."""

    title: str
    subset: Mapping[str, Sequence[str]]
    factor: str
    reference: str
    crossed_with: str | None = None
    #: what the paper reported for it (SPEC part A, "Published statistics")
    published: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: the published focal coefficients (log-odds), by our term's name, drawn beside ours
    published_coef: Mapping[str, float] = field(default_factory=dict)


PAPER_MODELS: Mapping[str, PaperModel] = {
    "communication_ba": PaperModel(
        "Communication within BA (global as baseline)",
        {"topology": ["ba"], "preferences": ["random"], "label": ["llm"], "direct_messages": ["False"]},
        "communication", "global",
        published="local -7.8111, none -6.6984 (p < 0.001); pseudo-R2 0.85, chi2(7) = 330.22, LL = -29.41",
        published_coef={"communication[T.local]": -7.8111, "communication[T.none]": -6.6984}),
    "topology": PaperModel(
        "Topology (caveman as baseline), local and no communication",
        {"communication": ["local", "none"], "preferences": ["random"], "label": ["llm"], "direct_messages": ["False"]},
        "topology", "caveman", crossed_with="communication",
        published="open models: no topology term significant; pseudo-R2 0.47, chi2(12) = 105.1, LL = -59.7; "
                  "with the closed model: WS and BA OR = 2.94 (p < 0.01, p < 0.001)"),
    "preferences": PaperModel(
        "Minority design vs 50/50 (BA, local messages)",
        {"topology": ["ba"], "communication": ["local"], "label": ["llm"], "direct_messages": ["False"]},
        "preferences", "random",
        published="minority coef 4.3022 (p < 0.001); pseudo-R2 0.38, chi2(6) = 70.17; the majority colour (blue) won",
        published_coef={"preferences[T.minority]": 4.3022}),
    "label": PaperModel(
        "Opponent label 'LLM' vs 'human' (BA, global messages)",
        {"topology": ["ba"], "communication": ["global"], "preferences": ["random"], "direct_messages": ["False"]},
        "label", "human",
        published="LLM label coef 0.998 (OR 2.7, p = 0.027, not significant after Bonferroni); pseudo-R2 0.77, "
                  "chi2(8) = 491.69",
        published_coef={"label[T.llm]": 0.998}),
    "direct_messages": PaperModel(
        "Private messages (DM) vs none, in the cells played both ways",
        {"preferences": ["random"], "label": ["llm"]},
        "direct_messages", "False",
        published="Mistral, global: 28/30 -> 13/30 with private messages (coef -1.15, p < 0.005)",
        published_coef={"direct_messages[T.True]": -1.15}),
}

#: factors that, when they vary inside a subset, enter its formula as fixed effects
NUISANCE = ("topology", "communication", "n")


def subset(games: pd.DataFrame, model: PaperModel) -> pd.DataFrame:
    """The games of ``model``'s subset, condition columns as text (missing columns take the study's default)."""
    frame = games.copy()
    for column, default in SUBSET_DEFAULTS.items():
        frame[column] = frame[column].astype(str) if column in frame.columns else default
    frame["n"] = frame["n"].astype(str) if "n" in frame.columns else "36"
    keep = pd.Series(True, index=frame.index)
    for column, values in model.subset.items():
        keep &= frame[column].isin(list(values))
    frame = frame[keep]
    if model.factor == "direct_messages":  # only the cells played both with and without private messages
        cells = frame.groupby(["topology", "communication", "n"])["direct_messages"].transform("nunique")
        frame = frame[cells > 1]
    return frame.reset_index(drop=True)


def _term(factor: str, reference: str) -> str:
    return f"C({factor}, contr.treatment(base={reference!r}))"


_CONTRAST = re.compile(r"C\((\w+), contr\.treatment\(base='[^']*'\)\)")
_PLAIN = re.compile(r"C\((\w+)\)")


def short_term(term: str) -> str:
    """``C(topology, contr.treatment(base='caveman'))[T.ba]`` -> ``topology[T.ba]``."""
    return _PLAIN.sub(r"\1", _CONTRAST.sub(r"\1", term))


def firth_summary(fit: FirthRegressionResult) -> dict[str, Any]:
    """A Firth fit as the report holds it: terms, log-likelihoods, LR chi2, McFadden R2, separation."""
    return {
        "formula": fit.formula, "nobs": fit.nobs, "events": fit.n_events, "converged": fit.converged,
        "terms": {short_term(term): {k: float(v) for k, v in row.items()} for term, row in fit.table.iterrows()},
        "ci_method": fit.ci_method, "p_method": fit.p_method,
        "loglik": fit.loglik, "loglik_null": fit.loglik_null,
        "loglik_unpenalised": fit.loglik_unpenalised, "loglik_null_unpenalised": fit.loglik_null_unpenalised,
        "lr_chi2": fit.lr_chi2, "lr_df": fit.lr_df, "lr_p": fit.lr_p,
        "pseudo_r2_mcfadden": fit.pseudo_r2_mcfadden,
        "separation": fit.separation, "infinite_ml_terms": [short_term(t) for t in fit.infinite_ml_terms],
        "aliased_columns_dropped": [short_term(t) for t in fit.dropped_columns],
    }


def _formula(frame: pd.DataFrame, model: PaperModel, with_model: bool) -> str:
    focal = _term(model.factor, model.reference)
    terms = [f"{focal} * C({model.crossed_with})" if model.crossed_with and frame[model.crossed_with].nunique() > 1
             else focal]
    terms += [f"C({c})" for c in NUISANCE if c not in (model.factor, model.crossed_with) and frame[c].nunique() > 1]
    if with_model and frame["model"].nunique() > 1:
        terms.append("C(model)")
    return "consensus ~ " + " + ".join(terms)


def _fit(frame: pd.DataFrame, model: PaperModel, with_model: bool) -> dict[str, Any]:
    levels = sorted(frame[model.factor].unique()) if len(frame) else []
    if model.reference not in levels:
        return {"skipped": f"no game with {model.factor} = {model.reference} (the paper's baseline) in this subset"}
    if len(levels) < 2:
        return {"skipped": f"every game of the subset has {model.factor} = {levels[0]}; nothing to compare"}
    formula = _formula(frame, model, with_model)
    try:
        return firth_summary(firth_logit(formula, frame, what=f"Firth model {model.factor!r}"))
    except AnalysisError as exc:
        return {"formula": formula, "skipped": str(exc)}


def _focal(part: Mapping[str, Any], factor: str) -> dict[str, float | None]:
    """The focal factor's terms and their p-values (main effects only)."""
    return {t: row["p"] for t, row in part.get("terms", {}).items() if t.startswith(f"{factor}[") and ":" not in t}


def _adjust(part: dict[str, Any], key: str, entries: list[tuple[dict[str, Any], str, float | None]]) -> None:
    """Write Bonferroni and Holm p-values of one family into each entry's term row."""
    adjusted = adjust_pvalues([p for _, _, p in entries])
    for (holder, term, _), bonf, holm in zip(entries, adjusted["bonferroni"], adjusted["holm"]):
        holder["terms"][term].update({"p_bonferroni": bonf, "p_holm": holm})
    part[key] = len([p for _, _, p in entries if p is not None])


def paper_models(games: pd.DataFrame, models: Sequence[str]) -> dict[str, Any]:
    """Every paper model, pooled and per model, with its focal terms corrected for multiple tests.

    ``{"models": {name: part}, "pooled_family_size": k}``; a part holds ``pooled``
    and ``per_model`` fits (see :func:`firth_summary`) or ``skipped``.
    """
    out: dict[str, Any] = {}
    pooled_family: list[tuple[dict[str, Any], str, float | None]] = []
    for name, model in PAPER_MODELS.items():
        frame = subset(games, model)
        part: dict[str, Any] = {"title": model.title, "factor": model.factor, "reference": model.reference,
                                "subset": {k: list(v) for k, v in model.subset.items()}, "games": len(frame),
                                "published": model.published, "published_coef": dict(model.published_coef)}
        if frame.empty:
            part["skipped"] = "no game of these sweeps falls in this subset"
            out[name] = part
            continue
        part["pooled"] = _fit(frame, model, with_model=True)
        pooled_family += [(part["pooled"], t, p) for t, p in _focal(part["pooled"], model.factor).items()]
        part["per_model"] = {m: _fit(frame[frame["model"] == m], model, with_model=False)
                             for m in models if (frame["model"] == m).any()}
        family = [(fit, t, p) for fit in part["per_model"].values() for t, p in _focal(fit, model.factor).items()]
        _adjust(part, "per_model_family_size", family)
        out[name] = part
    result: dict[str, Any] = {"models": out}
    _adjust(result, "pooled_family_size", pooled_family)
    return result


def private_messages_part(games: pd.DataFrame, models: Sequence[str]) -> dict[str, Any]:
    """Consensus against the count of private messages, per model, over games that allowed them."""
    if "private_messages" not in games.columns or "direct_messages" not in games.columns:
        return {"skipped": "the games table has no private-message columns"}
    frame = games[games["direct_messages"].astype(str) == "True"]
    if frame.empty:
        return {"skipped": "no game allowed private messages (the DM condition was not played)"}
    frame = frame.assign(private_messages=frame["private_messages"].astype(float))
    per_model: dict[str, Any] = {}
    for m in models:
        sub = frame[frame["model"] == m]
        if sub.empty:
            continue
        row: dict[str, Any] = {"games": len(sub), "mean_private_messages": float(sub["private_messages"].mean()),
                               "successes": int(sub["consensus"].sum())}
        try:
            fit = firth_logit("consensus ~ private_messages", sub, what="private messages vs consensus")
            row.update(firth_summary(fit))
        except AnalysisError as exc:
            row["skipped"] = str(exc)
        per_model[m] = row
    family = [(fit, "private_messages", fit["terms"]["private_messages"]["p"])
              for fit in per_model.values() if "terms" in fit and "private_messages" in fit["terms"]]
    part: dict[str, Any] = {"per_model": per_model,
                            "published": "coef -0.05 (Mistral, p < 0.05), -0.018 (closed model, p < 0.01)"}
    _adjust(part, "family_size", family)
    return part
