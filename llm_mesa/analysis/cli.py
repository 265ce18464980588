"""A game's statistics over one or several sweeps' results, in one command.

Examples:
  llm-mesa analyze runs/rules
  llm-mesa analyze runs/qwen3b runs/rules          # an LLM sweep beside its rule baselines
  llm-mesa analyze runs/qwen3b --json --out runs/qwen3b/analysis.json

Reads sweeps (``llm-mesa sweep --out DIR``), learns from their manifests which game
they played (sweeps of
different games are refused) and prints that game's report, with "model" as a
column: the LLM model's name, or the rule configuration of a rule policy. --json
prints it as one JSON object; --out writes that object to a new file (--force
replaces an existing one). Each game's own options are listed below under its
name; they apply to its sweeps only.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from llm_mesa.analysis import game_analysis
from llm_mesa.analysis.sweep_data import AnalysisError, SweepData, open_sweep, open_sweeps
from llm_mesa.files import write_text_atomic
from llm_mesa.json_values import json_text

__all__ = ["AnalysisError", "SweepData", "analyze", "configure", "open_sweep", "open_sweeps", "run",
           "writable_out"]

def configure(parser: argparse.ArgumentParser) -> None:
    from llm_mesa.registry import installed_games

    parser.add_argument("sweeps", nargs="+", metavar="SWEEP_DIR",
                        help="a sweep's output: the --out DIR (or FILE.parquet) of `llm-mesa sweep`; several are "
                             "analysed together (one game)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--out", metavar="FILE.json", help="also write the JSON object to this new file")
    parser.add_argument("--force", action="store_true", help="let --out replace an existing file")
    parser.add_argument("--no-cache", action="store_true",
                        help="compute everything again instead of reading (and keeping) the result in the sweep's "
                             "analysis-cache folder, which is addressed by the sweeps' content, the options and the code")
    owners: dict[str, dict[str, tuple[str, Any]]] = {}
    for game in installed_games():  # a game that fails to load is one warning line; the others work
        name = game.name
        group = parser.add_argument_group(f"{name} sweeps")
        game_analysis.configure(game, group)
        owners[name] = {a.dest: (a.option_strings[0] if a.option_strings else a.dest, a.default)
                        for a in group._group_actions}
    parser.set_defaults(_analysis_options=owners)


def _game_options(args: argparse.Namespace, game: str) -> dict[str, Any]:
    """The options of ``game``'s analysis; an option of another game given on the command line is bad input."""
    owners: Mapping[str, Mapping[str, tuple[str, Any]]] = getattr(args, "_analysis_options", {})
    mine = owners.get(game, {})
    for other, options in owners.items():
        for dest, (flag, default) in options.items():
            if dest not in mine and getattr(args, dest, default) != default:
                raise AnalysisError(f"{flag} is an option of the analysis of {other} sweeps; "
                                   f"{', '.join(args.sweeps)} {'is a' if len(args.sweeps) == 1 else 'are'} {game} sweep"
                                   f"{'' if len(args.sweeps) == 1 else 's'}")
    return {dest: getattr(args, dest) for dest in mine}


def analyze(path: str | os.PathLike[str] | list[str | os.PathLike[str]], *, cache: bool = False,
            **options: Any) -> dict[str, Any]:
    """The report of the sweep(s) at ``path`` by their game, as one JSON-ready dict (``options``: the game's;
    ``cache``: read and keep it in the sweep's cache, as the command does)."""
    from llm_mesa.registry import get_game

    sweep = open_sweeps(path if isinstance(path, (list, tuple)) else [path])
    return _report(sweep, get_game(sweep.game), options, cache=cache)


def _report(sweep: SweepData, game: Any, options: Mapping[str, Any], *, cache: bool = True) -> dict[str, Any]:
    """The game's report; through the content-addressed cache (``analysis.cache``) unless ``cache`` is off."""
    from llm_mesa.analysis.cache import cached_analysis, default_options

    chosen = {**default_options(game), **options}
    return cached_analysis(sweep, game, chosen, lambda: _json_ready({"game": game.name, **game_analysis.analyze(game, sweep, chosen)}),
                           use=cache)


def _json_ready(value: Any) -> Any:
    """Plain JSON: numpy scalars unwrapped, NaN and infinities as null."""
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def writable_out(out: str | os.PathLike[str], force: bool) -> Path:
    """``--out``: a new file in an existing folder, or (``force``) an existing file to replace; else bad input."""
    path = Path(out)
    if path.is_dir():
        raise AnalysisError(f"--out {str(path)!r} is a folder; name a file")
    if path.exists() and not force:
        raise AnalysisError(f"--out {str(path)!r} exists; pass --force to replace it, or choose another name")
    if not path.parent.exists():
        raise AnalysisError(f"folder of --out {str(path)!r} does not exist; create it first")
    return path


def run(args: argparse.Namespace) -> int:
    from llm_mesa.registry import get_game

    out = writable_out(args.out, args.force) if args.out else None  # refused before any work
    sweep = open_sweeps(args.sweeps)
    game = get_game(sweep.game)
    report = _report(sweep, game, _game_options(args, game.name), cache=not args.no_cache)
    text = json_text(report, indent=2)  # NaN and infinities as null: JSON
    if out is not None:
        write_text_atomic(out, text + "\n")
    print(text if args.json else game_analysis.format_report(game, report))
    return 0


if __name__ == "__main__":
    from llm_mesa.cli import main

    sys.exit(main(["analyze", *sys.argv[1:]]))
