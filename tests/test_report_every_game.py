"""Figures that always draw: the report of a minimal sweep of every installed game.

One condition, one rule policy, one seed, one repetition: the least a researcher can
ask a report of; then one seed a cell over a few conditions and policies; then two
games a cell (the smallest sample with a spread). For each game
``llm_mesa.registry.game_names()`` lists (the project's, the tests' ``tinyvote``, any
game installed later), every panel of the report is drawn: a figure with data, or one
that says in words why it has none. A figure that failed to draw ("could not be drawn
(TypeError ...)"), or whose axes collapsed under its labels, fails the test. The sweeps
keep every table their game has, so the figures drawn from those tables are drawn too.
"""

from __future__ import annotations

import re

import pytest

from llm_mesa import declared
from llm_mesa.analysis.report import build_report
from llm_mesa.registry import game_names, get_game
from llm_mesa.sweep import run_sweep

FAILED = re.compile(r"could not be drawn \(([^)]*)\)")
SKIPPED = re.compile(r'<p class="skipped">skipped: ([^<]*)</p>')


#: the sweeps a report must draw whole: one game; one seed a cell over a few conditions and
#: policies (no spread anywhere); two seeds a cell (the smallest sample with one)
SHAPES = {"one-game": (1, 1, 1), "one-seed-a-cell": (4, 2, 1), "two-seeds": (1, 1, 2)}


def minimal_sweep(name: str, out, shape: str) -> None:
    conditions_wanted, policies_wanted, seeds = SHAPES[shape]
    game = get_game(name)
    names = list(game.design.conditions)[:conditions_wanted]
    conditions = {c: dict(game.design.conditions[c]) for c in names} or None
    rules = list(dict.fromkeys(spec for group in declared.policy_groups(game).values() for spec in group.values()))
    policies = rules[:policies_wanted] or [declared.first_policy(game)]
    options = {"max_rounds": 8} if "max_rounds" in game.parameters else {}
    tables = [t.name for t in game.tables]  # every table the game keeps: the figures drawn from them draw too
    run_sweep(conditions, policies, seeds, out, game=name, model_options=options, tables=tables)


def panels_of(page: str) -> list[str]:
    """Each panel's HTML (a figure, its caption, its table)."""
    return [part for part in page.split('<div class="panel"')[1:]]


@pytest.mark.filterwarnings("error:constrained_layout not applied")  # a figure whose axes collapsed is not drawn
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("name", game_names())
def test_every_figure_of_a_minimal_sweeps_report_draws_or_says_why(name, shape, tmp_path):
    minimal_sweep(name, tmp_path / "sweep", shape)
    page, figures = build_report([str(tmp_path / "sweep")], cache=False)
    assert figures >= 1
    failed = FAILED.findall(page)
    assert failed == [], f"{len(failed)} figure(s) of the {name} report could not be drawn: {failed}"
    for panel in panels_of(page):
        assert "data:image/svg+xml" in panel  # a figure in every panel, with data or with words
        for reason in SKIPPED.findall(panel):
            assert len(reason.split()) >= 3, f"a panel of the {name} report skipped with no reason: {reason!r}"
