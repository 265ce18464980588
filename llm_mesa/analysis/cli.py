"""A game's statistics over a sweep's results, in one command.

Examples:
  llm-mesa analyze runs/rules
  llm-mesa analyze runs/rules --formula 'consensus ~ C(topology) + C(policy)'
  llm-mesa analyze runs/qwen3b --json --out runs/qwen3b/analysis.json

Reads a sweep (``llm-mesa sweep --out DIR``), learns from its manifest which game
it played (sweeps older than the "game" key are consensus sweeps) and prints that
game's report; --json prints it as one JSON object. Each game's own options are
listed below under its name; they apply to its sweeps only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from llm_mesa.analysis.sweep_data import AnalyzeError, SweepData, open_sweep

__all__ = ["AnalyzeError", "SweepData", "analyze", "configure", "open_sweep", "run"]

def configure(parser: argparse.ArgumentParser) -> None:
    from llm_mesa.games import game_names, get_game

    parser.add_argument("sweep", metavar="SWEEP_DIR", help="a sweep's output: the --out DIR (or FILE.parquet) of `llm-mesa sweep`")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--out", metavar="FILE.json", help="also write the JSON object to this file")
    owners: dict[str, dict[str, tuple[str, Any]]] = {}
    for name in game_names():
        group = parser.add_argument_group(f"{name} sweeps")
        get_game(name).configure_analysis(group)
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
                raise AnalyzeError(f"{flag} is an option of the analysis of {other} sweeps; "
                                   f"{args.sweep!r} is a {game} sweep")
    return {dest: getattr(args, dest) for dest in mine}


def analyze(path: str | os.PathLike[str], **options: Any) -> dict[str, Any]:
    """The report of the sweep at ``path`` by its game, as one JSON-ready dict (``options``: the game's)."""
    from llm_mesa.games import get_game

    sweep = open_sweep(path)
    return _report(sweep, get_game(sweep.game), options)


def _report(sweep: SweepData, game: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    return _json_ready({"game": game.name, **game.analyze(sweep, options)})


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


def _write_json_atomic(path: Path, text: str) -> None:
    if not path.parent.exists():
        raise AnalyzeError(f"folder of --out {str(path)!r} does not exist; create it first")
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run(args: argparse.Namespace) -> int:
    from llm_mesa.games import get_game

    sweep = open_sweep(args.sweep)
    game = get_game(sweep.game)
    report = _report(sweep, game, _game_options(args, game.name))
    text = json.dumps(report, indent=2)
    if args.out:
        _write_json_atomic(Path(args.out), text + "\n")
    print(text if args.json else game.format_report(report))
    return 0


if __name__ == "__main__":
    from llm_mesa.cli import main

    sys.exit(main(["analyze", *sys.argv[1:]]))
