"""The consensus report of ``llm-mesa analyze`` as text: one block per question, per model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from .analysis_schemes import format_scheme_lines

__all__ = ["consensus_grid", "format_report"]


def _num(value: Any, digits: int = 3) -> str:
    return "NA" if value is None else f"{value:.{digits}g}"


def _indent(text: str) -> str:
    return "  " + text.replace("\n", "\n  ")


def _float(v: float) -> str:
    return f"{v:.4g}"


def consensus_grid(report: Mapping[str, Any]) -> pd.DataFrame:
    """Successes / games per condition (rows) and model (columns), with ``all`` totals."""
    rows = report["consensus"]
    cells = {(r["condition"], r["model"]): f"{r['successes']}/{r['games']}" for r in rows}
    table = pd.DataFrame({m: [cells.get((c, m), "-") for c in report["conditions"]] for m in report["models"]},
                         index=pd.Index(report["conditions"], name="condition"))
    totals = {c: [0, 0] for c in report["conditions"]}
    for r in rows:
        totals[r["condition"]][0] += r["successes"]
        totals[r["condition"]][1] += r["games"]
    table["all"] = [f"{totals[c][0]}/{totals[c][1]}" for c in report["conditions"]]
    by_model = [[sum(r[k] for r in rows if r["model"] == m) for k in ("successes", "games")] for m in report["models"]]
    wins, played = (sum(r[k] for r in rows) for k in ("successes", "games"))
    table.loc["all"] = [f"{w}/{g}" for w, g in by_model] + [f"{wins}/{played}"]
    return table


def _fit_lines(fit: Mapping[str, Any]) -> list[str]:
    if "skipped" in fit:
        return [f"skipped: {fit['skipped']}"]
    coef = pd.DataFrame.from_dict(fit["terms"], orient="index")
    columns = [c for c in ("coef", "se", "p", "p_bonferroni", "p_holm", "odds_ratio", "or_ci_low", "or_ci_high")
               if c in coef.columns]
    coef = coef[columns]
    coef.index.name = "term"
    lines = [f"{fit['formula']}", coef.to_string(float_format=_float, na_rep="NA"),
             f"n = {fit['nobs']}, events = {fit['events']}; CIs: {fit['ci_method']}; p: {fit['p_method']}",
             f"log-likelihood = {_num(fit['loglik'], 5)} (penalised; unpenalised {_num(fit['loglik_unpenalised'], 5)}); "
             f"LR chi2({fit['lr_df']}) = {_num(fit['lr_chi2'], 5)}, p = {_num(fit['lr_p'])}; "
             f"McFadden pseudo-R2 = {_num(fit['pseudo_r2_mcfadden'])}"]
    if fit.get("aliased_columns_dropped"):
        lines.append("dropped (aliased or empty cells): " + ", ".join(fit["aliased_columns_dropped"]))
    if fit.get("separation"):
        lines.append("separation: ML estimates infinite for " + ", ".join(fit["infinite_ml_terms"]))
    return lines


def _per_model_table(per_model: Mapping[str, Any], factor: str) -> str:
    rows = []
    for model, fit in per_model.items():
        if "skipped" in fit:
            rows.append({"model": model, "term": "-", "skipped": fit["skipped"]})
            continue
        for term, row in fit["terms"].items():
            if term.startswith(f"{factor}[") and ":" not in term:
                rows.append({"model": model, "term": term, "coef": row["coef"], "p": row["p"],
                             "p_bonferroni": row.get("p_bonferroni"), "p_holm": row.get("p_holm"),
                             "LL": fit["loglik"], f"chi2({fit['lr_df']})": fit["lr_chi2"],
                             "R2": fit["pseudo_r2_mcfadden"]})
    return pd.DataFrame(rows).set_index(["model", "term"]).to_string(float_format=_float, na_rep="")


def _paper_lines(paper: Mapping[str, Any]) -> list[str]:
    lines = ["", "the paper's Firth models (focal terms: Bonferroni as the paper, and Holm; pooled family of "
             f"{paper.get('pooled_family_size', 0)} tests):"]
    for part in paper["models"].values():
        lines += ["", f"{part['title']}: {part['games']} games"]
        if "skipped" in part:
            lines.append(f"  skipped: {part['skipped']}")
            continue
        lines.append("  pooled (a fixed effect per model, as the paper):")
        lines += ["    " + line.replace("\n", "\n    ") for line in _fit_lines(part["pooled"])]
        if part["per_model"]:
            lines.append(f"  per model (corrected across {part.get('per_model_family_size', 0)} tests):")
            lines.append("    " + _per_model_table(part["per_model"], part["factor"]).replace("\n", "\n    "))
        lines.append(f"  published: {part['published']}")
    return lines


def _rows_table(rows: Any, index: list[str]) -> str:
    if isinstance(rows, Mapping) and "skipped" in rows:
        return f"skipped: {rows['skipped']}"
    if not rows:
        return "(none)"
    return pd.DataFrame(rows).set_index(index).to_string(float_format=_float, na_rep="NA")


def _components_lines(comp: Mapping[str, Any]) -> list[str]:
    lines = ["", "largest same-colour component against the random-colouring baseline, per model:"]
    if "skipped" in comp:
        return [*lines, f"  skipped: {comp['skipped']}"]
    for model, part in comp["per_model"].items():
        lines.append(f"  {model}:")
        lines.append(_indent(_indent(_rows_table(part["conditions"], ["condition"]))))
        if "skipped" in part:
            lines.append(f"    tests skipped: {part['skipped']}")
        else:
            lines.append(f"    Kruskal-Wallis across conditions: H = {_num(part['kruskal_h'], 4)} on "
                         f"{part['kruskal_df']} df, p = {_num(part['kruskal_p'])}")
            lines.append("    Mann-Whitney U against the baseline (Bonferroni and Holm across conditions):")
            lines.append(_indent(_indent(_rows_table(part["mann_whitney_vs_baseline"], ["condition"]))))
        if part.get("none_vs_local"):
            lines.append("    no communication vs local, per design cell (games differing in communication alone; "
                         "Mann-Whitney):")
            shown = [{k: v for k, v in r.items() if k not in ("topology", "conditions_none", "conditions_local")}
                     for r in part["none_vs_local"]]
            lines.append(_indent(_indent(_rows_table(shown, ["cell"]))))
            lines.append("      compared: " + "; ".join(f"{r['cell']}: {r['conditions_none']} vs "
                                                        f"{r['conditions_local']}" for r in part["none_vs_local"]))
    lines.append(f"  published: {comp['published']}")
    return lines


def _fit_verdict(fit: Mapping[str, Any] | None) -> list[str]:
    """A mixed-effects fit's attempts and the warnings it raised, once each (only what a reader must know)."""
    if not fit:
        return []
    lines = []
    attempts = fit.get("attempts") or []
    if not fit.get("converged") or len(attempts) > 1:
        for a in attempts:
            lines.append(f"tried: {a['what']}: {a['iterations']} iterations, largest gradient "
                         f"{_num(a['max_gradient'])} (converged below {_num(fit['gradient_tol'])})")
    for warning, count in (fit.get("warnings") or {}).items():
        lines.append(f"warning while fitting ({count}x): {warning}")
    return lines


def _majority_lines(major: Mapping[str, Any]) -> list[str]:
    lines = ["", "majority following per model (mixed-effects logistic, P(blue next | blue neighbour share)):"]
    if "skipped" in major:
        lines.append(f"  skipped: {major['skipped']}")
    else:
        for model, part in major["per_model"].items():
            if "skipped" in part:
                lines.append(f"  {model}: skipped: {part['skipped']}")
                continue
            sub = (f"; a seeded subsample of {part['subsample']['rows']} of {part['transitions_total']} "
                   f"(seed {part['subsample']['seed']})" if "subsample" in part else "")
            lines.append(f"  {model}: slope = {_num(part['slope'], 4)} (posterior sd {_num(part['slope_sd'])}), "
                         f"intercept = {_num(part['intercept'], 4)}; {part['nobs']} transitions from "
                         f"{part['games']} games{sub}; fit seed {part['fit_seed']}"
                         + ("" if part["converged"] else "; NOT CONVERGED"))
            lines += [f"    {line}" for line in _fit_verdict(part.get("fit"))]
        lines.append(f"  published: {major['published']}")
    if major.get("games_left_out"):
        lines.append(f"  {len(major['games_left_out'])} game(s) left out (graph not redrawable or not matching)")
    return lines


def format_report(report: Mapping[str, Any]) -> str:
    lines = [f"sweep {report['sweep']}: {report['games']} games"]
    if report["invalid_games_left_out"]:
        lines[0] += f" ({report['invalid_games_left_out']} invalid games left out)"
    lines += ["", "consensus (successes / games):", consensus_grid(report).to_string()]
    rates = pd.DataFrame(report["consensus"]).set_index(["condition", "model"])[["rate", "ci_low", "ci_high"]]
    lines += ["", "consensus rate with 95 % Wilson intervals:", rates.to_string(float_format=lambda v: f"{v:.3f}")]
    lines += format_scheme_lines(report.get("update_schemes", {"skipped": ""}))

    lines += _paper_lines(report["paper_models"])

    firth = report["firth"]
    lines += ["", f"Firth logistic regression: {firth['formula'] or '(none)'}"]
    if firth["single_level_terms_dropped"]:
        lines.append("  left out (a single level in these games): " +
                     ", ".join(f"{k}={v}" for k, v in firth["single_level_terms_dropped"].items()))
    lines += ["  " + line.replace("\n", "\n  ") for line in _fit_lines(firth)]

    private = report["private_messages"]
    lines += ["", "private-message count vs consensus (Firth, per model, games allowing private messages):"]
    if "skipped" in private:
        lines.append(f"  skipped: {private['skipped']}")
    else:
        for model, fit in private["per_model"].items():
            lines.append(f"  {model}: " + "\n    ".join(_fit_lines(fit)))
        lines.append(f"  published: {private['published']}")

    stub = report["stubbornness_vs_consensus"]
    lines += ["", "stubbornness vs consensus (point-biserial; study: r = -0.44):"]
    lines.append(f"  all models: skipped: {stub['skipped']}" if "skipped" in stub else
                 f"  all models: r = {_num(stub['r'])}, p = {_num(stub['p'])}, n = {stub['n']} games"
                 + (f" ({stub['games_without_opportunity']} without any opportunity left out)"
                    if stub["games_without_opportunity"] else ""))
    for model, row in stub["per_model"].items():
        lines.append(f"  {model}: skipped: {row['skipped']}" if "skipped" in row else
                     f"  {model}: r = {_num(row['r'])}, p = {_num(row['p'])} (Bonferroni {_num(row['p_bonferroni'])}, "
                     f"Holm {_num(row['p_holm'])}), n = {row['n']}")

    lines += _components_lines(report["largest_component"])
    lines += ["", "rounds to consensus (games that reached it):",
              _indent(_rows_table(report["rounds_to_consensus"], ["condition", "model"]))]
    lines += ["", "pseudo-equilibrium (echo chambers) share, 95 % Wilson intervals:",
              _indent(_rows_table(report["pseudo_equilibrium"], ["condition", "model"]))]
    minority = report["minority_design"]
    lines += ["", "minority design: which colour won:"]
    lines.append(_indent(_rows_table(minority, []) if "skipped" in minority
                         else _rows_table(minority["rows"], ["model"])))
    lines += ["", "messages per game:", _indent(_rows_table(report["messages"], ["condition", "model"]))]
    lines += _majority_lines(report["majority_following"])
    return "\n".join(lines)
