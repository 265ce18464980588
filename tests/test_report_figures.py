"""Figures a reviewer accepts: nothing cut at 0 or 1, legends off the data, every condition, whole tables,
unconverged fits marked."""

from __future__ import annotations

import pandas as pd

from llm_mesa.analysis.figures import SHARE_LIMITS, facets, interval_points, legend_outside, new_figure
from llm_mesa.analysis.report_html import Panel, Study, render_page


def extents(figure, *artists):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()  # lays the figure out as it is saved
    return [a.get_window_extent(canvas.get_renderer()) for a in artists]


def test_a_share_of_0_or_1_is_drawn_whole_and_the_legend_hides_no_data():
    figure, ax = new_figure()
    interval_points(ax, ["a", "b", "c"], {"x": {"a": (0.0, 0.0, 0.2), "b": (1.0, 0.8, 1.0)},
                                         "y": {"c": (0.5, 0.4, 0.6), "a": (1.0, 0.9, 1.0)}})
    low, high = ax.get_xlim()
    assert low < 0 and high > 1 and (low, high) == SHARE_LIMITS
    legend, axes_box = extents(figure, ax.get_legend(), ax)
    assert legend.x0 >= axes_box.x1  # beside the axes, not on them


def test_small_multiples_leave_no_empty_axes_and_a_figure_legend_clears_them():
    figure, axes = facets(5, cols=4)
    assert len(axes) == 5 and len([a for a in figure.axes if a.axison]) == 5
    for ax in axes:
        ax.plot([0, 1], [0, 1], label="fit")
    legend_outside(figure, handles=axes[0].get_legend_handles_labels()[0], labels=["fit"])
    legend = extents(figure, figure.legends[0])[0]
    assert all(not legend.overlaps(box) for box in extents(figure, *axes))


def test_sign_draws_every_condition_schema_first():
    from llm_mesa.models.naming.figures import curve_order

    conditions = [f"{mode}|n={n},alpha={a}" for mode in ("nl", "nl-sw-5", "schema-5", "schema-10", "nl-sw-10")
                  for n in (12, 24) for a in (0.5, 0.75, 0.9)]
    ordered = curve_order(conditions)
    assert sorted(ordered) == sorted(conditions) and len(ordered) == 30
    assert all(c.startswith("schema") for c in ordered[:12]) and all(c.startswith("nl|") for c in ordered[-6:])


def test_report_tables_are_whole():
    table = pd.DataFrame({"row": range(250), "value": [i / 7 for i in range(250)]})
    page = render_page("t", [Study("s", "x", [Panel("p", None, table)])], pd.DataFrame({"a": [1]}), "now")
    assert all(f"<td>{i}</td>" in page for i in range(250)) and "analyze --json" not in page


def test_an_unconverged_fit_is_marked_in_the_figure_and_its_table():
    from llm_mesa.models.consensus.figures_mechanisms import majority_panel

    curve = [{"blue_share_neighbours": s / 10, "p_blue": s / 10, "p_low": s / 12, "p_high": min(1, s / 9)}
             for s in range(11)]
    empirical = [{"bin": "x", "share_mean": 0.5, "p_blue": 0.5, "n": 20}]
    fit = {"slope": 5.0, "slope_sd": 0.1, "intercept": -2.5, "nobs": 100, "games": 5, "fit_seed": 0, "curve": curve,
           "empirical": empirical, "tried": ["L-BFGS-B", "continued"], "fit": {"warnings": {"RuntimeWarning: x": 3}}}
    report = {"models": ["a", "b"], "majority_following": {
        "published": "", "not_converged": ["b"],
        "per_model": {"a": {**fit, "converged": True}, "b": {**fit, "converged": False}}}}
    panel = majority_panel(report)
    assert "Not converged (dashed, hollow points): b" in panel.caption
    assert list(panel.table["converged"]) == [True, False] and panel.table["tried"].iloc[1] == "L-BFGS-B; continued"
    assert "RuntimeWarning: x (3x)" in panel.table["warnings"].iloc[1]
