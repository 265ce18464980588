"""The pages of Mesa's example games in a real browser: the live page steps and charts, a replay steps.

The games bring no view of their own, so this is the generic page: controls from the
parameters, Step, the DataCollector's charts, the agent panel. No request leaves this
machine and no traceback shows, in the page or the server's log.
"""

from __future__ import annotations

import subprocess

import pytest
from test_explorer_browser import (  # noqa: F401 - fixtures
    CLI,
    browser,
    local,
    no_traceback,
    shoot,
    step,
    text_round,
    viz,
    wait_round,
)

pytestmark = pytest.mark.slow
CHART = {"schelling": "happy", "boltzmann_wealth_model": "Gini", "pd_grid": "Cooperating-Agents"}
SMALL = {"schelling": "?width=12&height=12", "boltzmann_wealth_model": "?n=40", "pd_grid": "?width=12&height=12"}


def open_page(page, url: str) -> None:
    page.goto(url)
    page.locator(".llm-mesa-round").first.wait_for(timeout=120_000)


@pytest.mark.parametrize("name", sorted(CHART))
def test_the_live_page_steps_and_charts_the_examples_datacollector(tmp_path, local, name):  # noqa: F811
    with viz(tmp_path, "--game", name) as url:
        page = local.page()
        open_page(page, url + SMALL[name])
        assert text_round(page) == 0 and "Reset to apply" not in page.locator("body").inner_text()
        assert step(page, 2) == 2
        page.locator(f".llm-mesa-chart-{CHART[name]} svg .mark-line path").first.wait_for(state="attached",
                                                                                          timeout=30_000)
        assert "state:" in page.locator(".llm-mesa-agent").inner_text()
        no_traceback(page)
        shoot(page, f"{name}.png")


def test_a_pd_grid_run_replays_round_by_round(tmp_path, local):  # noqa: F811
    run = tmp_path / "run"
    subprocess.run([CLI, "pd_grid", "--width", "10", "--height", "10", "--max-rounds", "3", "--seed", "2",
                    "--out", str(run)], check=True, capture_output=True)
    with viz(tmp_path, "--replay", str(run)) as url:
        page = local.page()
        page.goto(url)
        page.locator(".llm-mesa-replay-round").first.wait_for(timeout=120_000)
        assert text_round(page, ".llm-mesa-replay-round") == 0
        page.get_by_role("button", name="Next", exact=True).click()
        wait_round(page, 1, ".llm-mesa-replay-round")
        no_traceback(page)
        shoot(page, "pd_grid-replay.png")
