"""Games as plugins: what a game gives the core, and how the core finds it.

The core (policy registry, round, sweep engine, CLI shell, loopback server)
never imports a game. A game declares itself under the entry-point group
``llm_mesa.games`` (see ``pyproject.toml``) as a ``Game`` object; the core
finds it there by name. A third game is a new folder and one entry point,
with no edit to the core.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from llm_mesa.parameters import ParameterSet

if TYPE_CHECKING:
    import pandas as pd

ENTRY_POINT_GROUP = "llm_mesa.games"


class GameError(ValueError):
    """An unknown game or a game that cannot be played as asked; the message names the fix."""


@dataclass
class GameResult:
    """One finished game: its summary row and the per-game tables asked for."""

    row: dict[str, Any]
    tables: dict[str, "pd.DataFrame"] = field(default_factory=dict)


@dataclass(frozen=True)
class PlayRequest:
    """Everything needed to play one game of a sweep (picklable, for worker processes).

    ``policy`` is a rule policy spec, or ``"llm"`` with ``endpoint`` set; ``store``
    the record/replay store the game's LLM calls go through (or None).
    """

    parameters: dict[str, Any]
    policy: str
    seed: int
    tables: tuple[str, ...] = ()
    endpoint: Any = None
    store: Any = None


class Game:
    """What a game gives the core. Subclass it in the game's own folder.

    Attributes:
        name: the game's name on the command line (``--game NAME``).
        summary: one line for help texts.
        parameters: the one definition of the game's parameters.
        policy_module: the module that registers the game's rule policies.
        lazy_policies: heavy policies (LLM) by name: (module, one-line summary),
            imported only when asked for, so a rule-only game never imports openai.
        cli_module: the module of the game's own subcommand (``configure``/``run``).
        behaviours_module: the module registering the game's loopback behaviours.
        tables: per-game tables a sweep may keep besides its summary row.
        policy_groups: named sets of policies for sweeps (e.g. ``rules``).
        conditions: named parameter settings (a study's design cells).
        condition_groups: named lists of conditions (e.g. ``study``).
    """

    name: str = ""
    summary: str = ""
    parameters: ParameterSet = ParameterSet(())
    policy_module: str = ""
    lazy_policies: Mapping[str, tuple[str, str]] = {}
    cli_module: str | None = None
    behaviours_module: str | None = None
    tables: tuple[str, ...] = ()
    policy_groups: Mapping[str, Mapping[str, str]] = {}
    conditions: Mapping[str, Mapping[str, Any]] = {}
    condition_groups: Mapping[str, Sequence[str]] = {}
    #: modules of the game's statistics (``configure``, ``analyze``, ``format_report``) and figures
    #: (``report_panels``), imported only by ``llm-mesa analyze``/``report``
    analysis_module: str | None = None
    figures_module: str | None = None
    #: whether a sweep may give one game a mixed population (``A + B``; ``PlayRequest.endpoint``
    #: is then a ``llm_mesa.sweep.grid.Population``)
    populations: bool = False
    #: what the sweep grid calls the policy parameter of the model (``policy``, ``speaker``)
    policy_parameter: str = "policy"

    def load_policies(self) -> None:
        """Register the game's built-in (rule) policies."""
        if self.policy_module:
            importlib.import_module(self.policy_module)

    def play(self, request: PlayRequest) -> GameResult:
        """Play one game to its end and return its summary row and tables."""
        raise NotImplementedError(f"game {self.name!r} cannot be played by the sweep engine")

    def play_batch(self, requests: Sequence[PlayRequest]) -> list[GameResult]:
        """Play several games to their ends; their results in order.

        One by one by default; a game overrides it to play games together (the
        consensus game advances rule games at once as arrays).
        """
        return [self.play(request) for request in requests]

    def batch_size(self, request: PlayRequest) -> int:
        """How many games like ``request`` a sweep hands ``play_batch`` at once in one process.

        1 (the default) keeps every game written as soon as it finishes.
        """
        return 1

    def llm_policy(self, endpoint: Any, store: Any = None) -> Any:
        """The game's LLM policy for ``endpoint``, recording to ``store``."""
        raise NotImplementedError(f"game {self.name!r} has no LLM policy")

    def check(self, parameters: Mapping[str, Any], seed: int) -> None:
        """Build (not play) one game with these parameters: bad input fails before a sweep starts."""

    def estimate(self, parameters: Mapping[str, Any], endpoint: Any) -> dict[str, Any]:
        """One game's LLM use at most, from its parameters and prompt templates (no call is made).

        Keys: ``calls``, ``rounds``, ``prompt_tokens_per_call``, ``completion_tokens_per_call``,
        ``may_stop_early``. Used by ``llm-mesa sweep --dry-run``.
        """
        raise NotImplementedError(f"game {self.name!r} cannot estimate its LLM use")

    def headline(self, games: "pd.DataFrame", conditions: Sequence[str], policies: Sequence[str]) -> str:
        """The study's headline table over a sweep's games, as text."""
        return f"{len(games)} games"

    def _delegate(self, module: str | None, name: str) -> Any:
        """A function of the game's analysis or figures module, imported only when asked for."""
        return None if module is None else getattr(importlib.import_module(module), name, None)

    def configure_analysis(self, parser: Any) -> None:
        """Add the options of this game's ``llm-mesa analyze`` report to ``parser`` (an argparse group).

        Every installed game adds its options to the one command: name them so
        that they do not clash with another game's. Default: the ``configure`` of
        ``analysis_module``, if it has one.
        """
        configure = self._delegate(self.analysis_module, "configure")
        if configure is not None:
            configure(parser)

    def analyze(self, sweep: Any, options: Mapping[str, Any]) -> dict[str, Any]:
        """The game's statistics over a finished sweep, as a JSON-ready dict.

        ``sweep`` is a ``llm_mesa.analysis.sweep_data.SweepData`` (manifest, games
        table, ``table(name)`` for the others); ``options`` the values of the
        options of ``configure_analysis`` (missing ones take their defaults).
        """
        analyze = self._delegate(self.analysis_module, "analyze")
        if analyze is not None:
            return analyze(sweep, options)
        raise GameError(f"the {self.name} game has no analysis; `llm-mesa analyze` cannot report on its sweeps "
                        f"(read them with llm_mesa.sweep.read_sweep)")

    def format_report(self, report: Mapping[str, Any]) -> str:
        """``analyze``'s report as text (the ``format_report`` of ``analysis_module``, else its JSON)."""
        import json

        format_report = self._delegate(self.analysis_module, "format_report")
        if format_report is not None:
            return format_report(report)
        return json.dumps(report, indent=2)

    def report_panels(self, sweep: Any, report: Mapping[str, Any]) -> list[Any]:
        """The figures of ``llm-mesa report``, each beside its table: a list of ``llm_mesa.analysis.report_html.Panel``.

        ``sweep`` is the ``SweepData`` that ``analyze`` read and ``report`` what it
        returned (JSON-ready). Default: the ``report_panels`` of ``figures_module``, else
        the games played per condition and model.
        """
        panels = self._delegate(self.figures_module, "report_panels")
        if panels is not None:
            return panels(sweep, report)
        from llm_mesa.analysis.figures import new_figure, svg_text
        from llm_mesa.analysis.report_html import Panel

        games = sweep.games
        counts = games.groupby(["condition", "model"]).size().unstack(fill_value=0)
        figure, ax = new_figure()
        counts.plot.barh(ax=ax)
        ax.set_xlabel("games")
        return [Panel("Games per condition and model", svg_text(figure), counts.reset_index())]

    def outcome(self, row: Mapping[str, Any]) -> str:
        """A finished game's outcome in a few words (for progress lines)."""
        return f"{row.get('rounds', '?')} rounds"

    def describe(self, parameters: Mapping[str, Any]) -> str:
        """A condition's parameters in a few words (for listings)."""
        return ", ".join(f"{k}={v}" for k, v in parameters.items())

    def resolve_conditions(self, selection: str | Sequence[str]) -> dict[str, dict[str, Any]]:
        """Condition names or group names (comma-separated) -> {name: parameters}."""
        items = [s.strip() for s in (selection.split(",") if isinstance(selection, str) else selection)]
        chosen: dict[str, dict[str, Any]] = {}
        for item in filter(None, items):
            if item in self.condition_groups:
                for name in self.condition_groups[item]:
                    chosen.setdefault(name, dict(self.conditions[name]))
            elif item in self.conditions:
                chosen.setdefault(item, dict(self.conditions[item]))
            else:
                known = ", ".join([*self.condition_groups, *self.conditions]) or "(none defined)"
                raise GameError(f"unknown condition {item!r} of the {self.name} game; choose among: {known}")
        if not chosen:
            raise GameError(f"no {self.name} conditions given")
        return chosen


@cache
def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


@cache
def get_game(name: str) -> Game:
    """The game registered under ``name``."""
    found = _entry_points().get(name)
    if found is None:
        known = ", ".join(sorted(_entry_points())) or "none (is llm-mesa installed with pip install -e .?)"
        raise GameError(f"unknown game {name!r}; choose one of: {known}")
    game = found.load()
    return game() if isinstance(game, type) else game


def game_names() -> list[str]:
    """The names of every installed game, without importing any of them."""
    return sorted(_entry_points())


__all__ = ["ENTRY_POINT_GROUP", "Game", "GameError", "GameResult", "PlayRequest", "game_names", "get_game"]
