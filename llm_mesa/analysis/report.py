"""One self-contained HTML report over one or several sweeps: figures beside their tables.

Examples:
  llm-mesa report runs/rules --out report.html
  llm-mesa report runs/qwen3b runs/rules runs/sign --out report.html --force

Each study (the sweeps of one game, analysed together as by `llm-mesa analyze`)
gets the game's figures, each beside the table it was drawn from, the study's
published numbers beside ours where the conditions match, and a figure even
where a test had to be skipped (it says why). Each sweep's run card follows (as
`llm-mesa card` prints it), and the manifests are summarised at the end: models,
sampling parameters, seeds, dialects, prompt template hashes, token totals, cost
and failed decisions. Figures are SVG embedded in the page: the file
opens anywhere and loads nothing. --out refuses to replace a file unless --force.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from llm_mesa.analysis.cli import writable_out
from llm_mesa.analysis.report_html import Panel, Study, render_page
from llm_mesa.analysis.sweep_data import AnalysisError, SweepData, open_sweep, open_sweeps
from llm_mesa.files import write_text_atomic
from llm_mesa.sweep.columns import failed_decisions

__all__ = ["build_report", "configure", "manifest_summary", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweeps", nargs="+", metavar="SWEEP_DIR",
                        help="sweeps' outputs (--out of `llm-mesa sweep`); those of one game form one study")
    parser.add_argument("--out", required=True, metavar="FILE.html", help="the report to write (a new file)")
    parser.add_argument("--force", action="store_true", help="let --out replace an existing file")
    parser.add_argument("--title", default="llm-mesa report", help="the page's title")
    parser.add_argument("--fit", action="append", default=[], metavar="SOURCE",
                        help="a section of `llm-mesa fit` results: its --json output, or RUNS to fit (a sweep kept with "
                             "--tables agents, a run folder, a lab session, a CSV file of decisions); repeatable")
    parser.add_argument("--no-cache", action="store_true",
                        help="compute the statistics again instead of reading those `llm-mesa analyze` kept "
                             "(the sweep's analysis-cache folder, addressed by the sweeps' content)")


def _seeds(grid: dict[str, Any]) -> str:
    """The sweep's seeds in words: how many, then which ("1 seed: 0", "30 seeds: 0-29")."""
    seeds = grid.get("seeds")
    if isinstance(seeds, dict):
        counts = sorted({len(v) for v in seeds.values()})
        return f"derived per condition ({'/'.join(map(str, counts))} each)"
    if isinstance(seeds, list) and seeds:
        contiguous = seeds == list(range(seeds[0], seeds[0] + len(seeds)))
        which = f"{seeds[0]}-{seeds[-1]}" if contiguous and len(seeds) > 2 else ", ".join(map(str, seeds))
        return f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''}: {which}"
    return "?"


def _planned(grid: dict[str, Any], manifest: dict[str, Any]) -> int | None:
    """Games the sweep planned for one policy: its conditions times their seeds (the manifest's total counts
    every policy's)."""
    seeds, conditions = grid.get("seeds"), grid.get("conditions") or {}
    if isinstance(seeds, dict):
        return sum(len(v) for v in seeds.values()) or None
    if isinstance(seeds, list) and conditions:
        return len(conditions) * len(seeds)
    total, policies = manifest.get("games_total"), len(grid.get("policies") or {}) or 1
    return total // policies if isinstance(total, int) else None


def _store_hashes(path: Path) -> list[str]:
    """Prompt template hashes of the calls a sweep recorded (its calls.sqlite), for sweeps whose rows lack them."""
    store = path / "calls.sqlite" if path.is_dir() else path.with_name(path.stem + ".calls.sqlite")
    if not store.exists():
        return []
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            rows = db.execute("SELECT DISTINCT json_extract(request, '$.template_hash') FROM calls").fetchall()
    except sqlite3.Error:
        return []
    return sorted(str(r[0]) for r in rows if r[0])


def _sum(frame: pd.DataFrame, column: str) -> float | None:
    return float(pd.to_numeric(frame[column], errors="coerce").sum()) if column in frame.columns else None


def manifest_summary(sweep: SweepData) -> pd.DataFrame:
    """One row per sweep and policy: what a reader needs to rerun and judge it."""
    rows = []
    for path, manifest, label in zip(sweep.paths, sweep.manifests, sweep.labels):
        grid = manifest.get("grid") or {}
        endpoints = manifest.get("endpoints") or {}
        versions = manifest.get("versions") or {}
        games = sweep.games[sweep.games["sweep"] == label]
        hashes_from_store = None
        for policy, entry in (grid.get("policies") or {"?": None}).items():
            mine = games[games["policy"].astype(str) == policy]
            endpoint = endpoints.get(policy) or {}
            llm = entry.get("llm", {}) if isinstance(entry, dict) else {}
            hashes = sorted(mine["prompt_template_hash"].dropna().astype(str).unique()) \
                if "prompt_template_hash" in mine.columns else []
            if not hashes and endpoint:
                hashes_from_store = _store_hashes(path) if hashes_from_store is None else hashes_from_store
                hashes = hashes_from_store
            rows.append({
                "sweep": label, "game": manifest.get("game", ""), "created": manifest.get("created", ""),
                "policy": policy,
                "model": ", ".join(sorted(mine["model"].astype(str).unique())) if len(mine) else "",
                "spec": entry if isinstance(entry, str) else "LLM",
                "sampling": json.dumps(llm.get("sampling_params") or endpoint.get("sampling_params") or {},
                                       sort_keys=True) if endpoint or llm else "",
                "dialect": "/".join(str(v) for v in (endpoint.get("dialect") or llm.get("dialect"),
                                                     endpoint.get("negotiated_dialect")) if v) if endpoint else "",
                "prompt_mode": endpoint.get("prompt_mode", "") if endpoint else "",
                "prompt_template_hashes": ", ".join(hashes),
                "conditions": len(grid.get("conditions") or {}), "seeds": _seeds(grid),
                "games (played of planned)": f"{len(mine)} of {_planned(grid, manifest) or '?'}",
                "prompt_tokens": _sum(mine, "prompt_tokens"), "completion_tokens": _sum(mine, "completion_tokens"),
                "cost": _sum(mine, "cost"),
                "failed_decisions": failed_decisions(mine) if {"failed_decisions", "failures"} & set(mine.columns)
                else None,
                "llm_mesa": versions.get("llm-mesa", ""), "mesa": versions.get("mesa", ""),
            })
    return pd.DataFrame(rows)


def run_cards(paths: Sequence[str]) -> list[str]:
    """Each sweep's run card (``llm-mesa card``), as HTML."""
    from llm_mesa.run_card import gather
    from llm_mesa.run_card_markdown import card_html

    return [card_html(gather(path)) for path in paths]


def build_report(paths: Sequence[str], title: str = "llm-mesa report", *, cache: bool = True,
                 fits: Sequence[str] = ()) -> tuple[str, int]:
    """The page's text and its number of figures, for the sweeps at ``paths`` (grouped by game).

    The statistics are those ``llm-mesa analyze`` keeps (``cache``): a report right after an
    analysis of the same sweeps costs the drawing alone."""
    from llm_mesa.analysis import game_analysis
    from llm_mesa.analysis.cli import _report
    from llm_mesa.registry import get_game

    by_game: dict[str, list[str]] = {}
    for path in paths:
        by_game.setdefault(open_sweep(path).game, []).append(path)
    studies, manifests = [], []
    for name, game_paths in by_game.items():
        sweep = open_sweeps(game_paths)
        game = get_game(name)
        report = _report(sweep, game, {}, cache=cache)
        panels: list[Panel] = game_analysis.report_panels(game, sweep, report)
        studies.append(Study(f"{game.summary[:1].upper()}{game.summary[1:]} ({name})",
                             f"{len(sweep.games)} games from {len(sweep.paths)} sweep(s): {sweep.name}; "
                             f"models: {', '.join(report.get('models') or report.get('policies') or [])}", panels))
        manifests.append(manifest_summary(sweep))
    if fits:
        from llm_mesa.analysis.fit_report import fit_study

        studies.append(fit_study(fits))
    generated = f"generated {datetime.now(UTC).isoformat(timespec='seconds')} by llm-mesa report " \
                f"from {len(paths)} sweep(s)"
    page = render_page(title, studies, pd.concat(manifests, ignore_index=True), generated, run_cards(paths))
    return page, sum(len(s.panels) for s in studies)


def run(args: argparse.Namespace) -> int:
    out = writable_out(args.out, args.force)
    if out.suffix.lower() not in (".html", ".htm"):
        raise AnalysisError(f"--out {str(out)!r} must end in .html")
    page, figures = build_report(args.sweeps, args.title, cache=not args.no_cache, fits=args.fit)
    write_text_atomic(out, page)
    print(f"wrote {out} ({figures} figures)")
    return 0


if __name__ == "__main__":
    from llm_mesa.cli import main

    sys.exit(main(["report", *sys.argv[1:]]))
