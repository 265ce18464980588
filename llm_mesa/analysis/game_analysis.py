"""A game's statistics and figures for ``llm-mesa analyze`` and ``report``: its own, or the generic ones.

A game names its modules in ``Game.extensions`` (``analysis``: ``configure``,
``analyze``, ``format_report``; ``figures``: ``report_panels``); a game that names
none gets ``llm_mesa.analysis.generic``. The commands ask here, so the game
contract (``llm_mesa.games``) imports no analysis module. Whatever the game, its report
also says how much of each measure's variance each design factor explains
(``variance_shares``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

from llm_mesa.games import Game, load_target

if TYPE_CHECKING:
    import argparse

    from llm_mesa.analysis.report_html import Panel
    from llm_mesa.analysis.sweep_data import SweepData

GENERIC = "llm_mesa.analysis.generic"


def analysis_of(game: Game) -> ModuleType:
    """The module of the game's statistics, or the generic one."""
    return load_target(game.extensions.analysis or GENERIC)


def configure(game: Game, parser: argparse._ArgumentGroup) -> None:
    """Add the game's ``llm-mesa analyze`` options (a game names them so they do not clash with another's)."""
    own = getattr(analysis_of(game), "configure", None)
    if own is not None:
        own(parser)


def analyze(game: Game, sweep: SweepData, options: Mapping[str, Any]) -> dict[str, Any]:
    """The game's statistics over finished sweeps, JSON-ready, with the variance shares of its measures."""
    from llm_mesa.analysis.variance_shares import variance_report

    report = analysis_of(game).analyze(sweep, options)
    return {**variance_report(sweep, game), **report}  # a game's own decomposition stands


def format_report(game: Game, report: Mapping[str, Any]) -> str:
    """The analysis as text (the game's own words, else indented JSON)."""
    from llm_mesa.analysis.variance_shares import format_shares

    own = getattr(analysis_of(game), "format_report", None)
    if own is None:
        return json.dumps(report, indent=2)
    return own(report) + ("\n\n" + format_shares(report) if "variance_shares" in report else "")


def report_panels(game: Game, sweep: SweepData, report: Mapping[str, Any]) -> list[Panel]:
    """The figures of ``llm-mesa report``, each beside its table (``report_html.Panel``)."""
    from llm_mesa.analysis.variance_shares import shares_panels

    return [*load_target(game.extensions.figures or GENERIC).report_panels(sweep, report), *shares_panels(report)]


__all__ = ["analysis_of", "analyze", "configure", "format_report", "report_panels"]
