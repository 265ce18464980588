"""The report's figures as a reviewer reads them: columns named for what they hold, labels that read,
published numbers only beside the games they match."""

from __future__ import annotations

import pandas as pd
import pytest

from llm_mesa.models.consensus import figures, figures_mechanisms
from llm_mesa.models.consensus.published import published_conditions


def study_games(update: str, games: int = 4) -> pd.DataFrame:
    """BA, local messages, the study's N: the cell the open models played 0/180 and the closed model 30/30."""
    return pd.DataFrame({"condition": ["ba-local"] * games, "model": ["mi-0.2"] * games, "topology": "ba",
                         "communication": "local", "preferences": "random", "label": "llm", "n": 36,
                         "direct_messages": False, "update": update, "consensus": [True, False] * (games // 2),
                         "rounds": [12, 50] * (games // 2)})


def test_published_successes_stand_beside_synchronous_games_only():
    """The study played synchronous rounds: a random-sequential game is not its cell."""
    assert list(published_conditions(study_games("synchronous"), ["ba-local"])["published_open_models"]) == ["0/180"]
    assert published_conditions(study_games("random-sequential"), ["ba-local"]).empty
    assert published_conditions(study_games("random-asynchronous"), ["ba-local"]).empty
    legacy = study_games("synchronous").drop(columns=["update"])  # a sweep from before the schemes
    assert len(published_conditions(legacy, ["ba-local"])) == 1


def test_rounds_to_consensus_names_its_range_min_and_max_not_an_interval():
    rows = [{"condition": "ba-local", "model": "mi-0.2", "successes": 3, "games": 4, "mean": 14.0, "sd": 2.0,
             "median": 13.0, "min": 12.0, "max": 17.0}]
    report = {"models": ["mi-0.2"], "conditions": ["ba-local"]}
    captured = {}
    original = figures.interval_points

    def spy(ax, categories, series, **kwargs):
        captured.update(series)
        return original(ax, categories, series, **kwargs)

    figures.interval_points = spy
    try:
        panel = figures._shares_panel("Rounds to consensus", rows, "mean", "rounds", report, ("min", "max"))
    finally:
        figures.interval_points = original
    assert {"min", "max"} <= set(panel.table.columns)
    assert not {"ci_low", "ci_high"} & set(panel.table.columns)  # a range is not a confidence interval
    assert captured["mi-0.2"]["ba-local"] == (14.0, 12.0, 17.0)  # the bar spans the range


@pytest.fixture
def drawn_figures(monkeypatch):
    """The matplotlib figures a panel draws, kept as they are saved."""
    kept = []
    original = figures_mechanisms.svg_text

    def keep(figure):
        kept.append(figure)
        return original(figure)

    monkeypatch.setattr(figures_mechanisms, "svg_text", keep)
    return kept


def test_component_box_plots_label_their_conditions_readably(drawn_figures):
    conditions = ["ba-global", "ba-local", "ba-none", "cc-local"]
    games = pd.DataFrame([{"model": "mi-0.2", "condition": c, "largest_component": 20 + i + s,
                           "largest_component_baseline_mean": 18.0} for i, c in enumerate(conditions) for s in range(3)])
    report = {"conditions": conditions, "models": ["mi-0.2"], "largest_component": {
        "published": "", "per_model": {"mi-0.2": {"conditions": [], "mann_whitney_vs_baseline": []}}}}
    figures_mechanisms.components_panel(report, games)
    figure = drawn_figures[0]
    ax = figure.axes[0]
    labels = ax.get_yticklabels()
    assert [t.get_text() for t in labels] == conditions
    assert min(t.get_fontsize() for t in [*labels, *ax.get_xticklabels()]) >= 8
    assert figure.get_size_inches()[0] >= 6  # one model: the report's full figure width, as the other panels
