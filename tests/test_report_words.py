"""Reports, figures and a sweep's closing words as a reader reads them, for any game.

Facets keep x tick labels on every column's lowest panel; a cell without a test says why;
seeds and planned games are counted as a reader counts them; the closing table follows the
grid's order (numbers as numbers, not as text); a per-round title stays inside its figure.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pandas as pd
import pytest

from llm_mesa.analysis.figures import facets
from llm_mesa.analysis.report import _planned, _seeds
from llm_mesa.models.consensus.figures_mechanisms import untested
from llm_mesa.registry import get_game
from llm_mesa.sweep.dry_run import SweepEstimate, format_estimate
from llm_mesa.sweep.engine import SweepResult

matplotlib.use("Agg")


@pytest.mark.parametrize("count", [3, 5, 6, 7])
def test_every_column_of_shared_facets_keeps_its_tick_labels(count):
    figure, axes = facets(count, cols=4, sharex=True, sharey=True)
    for ax in axes:
        ax.plot([0, 5, 10], [0, 1, 0])
    figure.canvas.draw()
    cols = min(4, count)
    for column in range(cols):
        lowest = max(range(column, count, cols))
        assert any(t.get_visible() and t.get_text() for t in axes[lowest].get_xticklabels()), (count, column)


def test_a_cell_without_a_test_says_why():
    assert untested({"games_none": 3, "games_local": 3}) == "no test (all 6 games alike)"
    assert untested({"games_none": 1, "games_local": 4}) == "no test (one game on a side)"


def test_seeds_and_planned_games_are_counted_as_a_reader_counts_them():
    assert _seeds({"seeds": [0]}) == "1 seed: 0" and _seeds({"seeds": [0, 1, 2]}) == "3 seeds: 0-2"
    assert _seeds({"seeds": [4, 9]}) == "2 seeds: 4, 9"
    grid = {"conditions": {"a": {}, "b": {}, "c": {}}, "seeds": [0, 1, 2], "policies": {"x": "x", "y": "y"}}
    assert _planned(grid, {"games_total": 18}) == 9  # one policy's games, not the sweep's


def test_the_closing_table_follows_the_grids_order_of_conditions_and_policies():
    order = ["traits=2", "traits=5", "traits=15", "traits=30"]
    rows = [{"condition": c, "policy": p, "seed": s, "rounds": float(i), "gini": 0.1 * i}
            for i, c in enumerate(sorted(order)) for p in ("b", "a") for s in (0, 1)]  # written as text sorts them
    result = SweepResult(get_game("boltzmann_wealth_model"), pd.DataFrame(rows), len(rows), 0, Path("."), 0.0,
                         order, ["a", "b"])
    listed = [line.split()[0] for line in result.headline().splitlines()[3:] if line.strip()]
    assert [c for c in listed if c.startswith("traits")] == order
    assert list(result.in_grid_order()["policy"][:4]) == ["a", "a", "b", "b"]


def test_the_dry_run_counts_one_game_in_flight_in_the_singular():
    estimate = SweepEstimate(games=2, llm_games=2, calls=10, rounds=5, prompt_tokens=100, completion_tokens=10,
                             cost=None, time_s=5.0, bounded=True)
    one = format_estimate(estimate, latency_s=1.0, games_in_flight=1, concurrency=4)
    assert "1 game in flight" in one and "1 games" not in one
    assert "2 games in flight" in format_estimate(estimate, latency_s=1.0, games_in_flight=2, concurrency=4)


def test_a_per_round_title_stays_inside_its_figure_of_two_panels():
    from llm_mesa.analysis.generic_curves import curves_figure
    from llm_mesa.game_types import continuous

    rows = [{"measure": "sim", "condition": c, "model": "m", "round": r, "mean": 0.5, "low": 0.4, "high": 0.6, "n": 3}
            for c in ("a", "b") for r in range(5)]
    curves = {"rows": rows, "series": [{"condition": c, "model": "m", "games": 3} for c in ("a", "b")]}
    scale = continuous(0, 1, label="mean similarity of neighbours over the whole neighbourhood")
    figure = curves_figure(curves, "sim", scale, ["a", "b"], ["m"])
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    title = figure._suptitle.get_window_extent(canvas.get_renderer())
    assert figure.bbox.x0 <= title.x0 and title.x1 <= figure.bbox.x1  # cut at neither end
    assert "95% t band" in figure._suptitle.get_text().replace("\n", " ")
