"""The side-by-side page and the sweep browser in headless Chromium (Playwright).

* ``llm-mesa viz --compare``: LLM agents on the built-in loopback stand-in and
  majority-with-inertia play the same graph, preferences and seed; one Step moves
  both panels, and the overlaid charts hold both populations' curves;
* ``llm-mesa viz --sweep DIR`` on a small sweep kept with ``--tables
  agents,rounds``: the consensus table and the distribution show; clicking a game
  in the distribution picks it, and it replays round by round.

Helpers and the local-only request guard come from ``test_explorer_browser``.
"""

from __future__ import annotations

import re

import pytest
from test_explorer_browser import (  # noqa: F401 - fixtures
    NODES,
    browser,
    choose,
    local,
    open_game,
    shoot,
    step,
    text_round,
    viz,
    wait_picture,
    wait_round,
)

pytestmark = pytest.mark.slow


def test_side_by_side_panels_step_together_and_overlay_their_curves(tmp_path, local):  # noqa: F811
    with viz(tmp_path, "--compare") as url:
        page = local.page(height=1500)
        open_game(page, url)
        page.wait_for_function(f"() => document.querySelectorAll('{NODES}').length === 72", timeout=60_000)
        panels = [".llm-mesa-panel-a", ".llm-mesa-panel-b"]
        for panel in panels:
            assert text_round(page, f"{panel} .llm-mesa-panel-round") == 0
        assert "llm" in page.locator(".llm-mesa-panel-a").inner_text()
        assert "majority-inertia" in page.locator(".llm-mesa-panel-b").inner_text()
        step(page, 3)
        for panel in panels:
            wait_round(page, 3, f"{panel} .llm-mesa-panel-round")
            wait_picture(page, 3, f"{panel} .llm-mesa-network-chart")
        # both populations, two measures each: four lines in the shares chart
        page.wait_for_function(
            "() => document.querySelectorAll('.llm-mesa-chart-shares svg .mark-line path').length === 4",
            timeout=30_000)
        legend = page.locator(".llm-mesa-chart-shares svg").text_content()
        assert "A: llm" in legend and "B: majority-inertia" in legend
        shoot(page, "compare.png")


@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory):
    from llm_mesa.sweep import run_sweep

    out = tmp_path_factory.mktemp("sweep") / "ba"
    run_sweep(["ba-local"], "mi-0.2;voter", 2, out, tables=["agents", "rounds"],
              model_options={"max_rounds": 10, "baseline_permutations": 0}, game="consensus")
    return out


def test_the_sweep_browser_opens_a_sweep_and_replays_one_of_its_games(small_sweep, tmp_path, local):  # noqa: F811
    from llm_mesa.sweep import read_sweep

    games = read_sweep(small_sweep)
    with viz(tmp_path, "--sweep", str(small_sweep)) as url:
        page = local.page(height=1400)
        page.goto(url)
        table = page.locator(".llm-mesa-sweep-table")
        table.wait_for(timeout=120_000)
        wins = {p: f"{int(games[games.policy == p].consensus.sum())}/2" for p in ("mi-0.2", "voter")}
        text = table.inner_text()
        assert "ba-local" in text and wins["mi-0.2"] in text and wins["voter"] in text
        points = page.locator(".llm-mesa-sweep-distribution svg g.mark-symbol.role-mark path")
        page.wait_for_function(
            "() => document.querySelectorAll('.llm-mesa-sweep-distribution svg g.mark-symbol.role-mark path')"
            ".length === 4", timeout=60_000)  # one point per game
        # filter: one policy only
        choose(page, "Policies", "mi-0.2")
        page.keyboard.press("Escape")
        page.wait_for_function(
            "() => document.querySelectorAll('.llm-mesa-sweep-distribution svg g.mark-symbol.role-mark path')"
            ".length === 2", timeout=30_000)
        choose(page, "Policies", "mi-0.2")  # and back
        page.keyboard.press("Escape")
        page.wait_for_function(
            "() => document.querySelectorAll('.llm-mesa-sweep-distribution svg g.mark-symbol.role-mark path')"
            ".length === 4", timeout=30_000)
        # click a voter game (the bottom row of the distribution) to replay it
        boxes = [(points.nth(i).bounding_box()["y"], i) for i in range(points.count())]
        points.nth(max(boxes)[1]).click(force=True)
        page.wait_for_function(
            "() => /voter/.test(document.querySelector('.llm-mesa-sweep-game').innerText)", timeout=30_000)
        chosen = page.locator(".llm-mesa-sweep-game").inner_text()
        seed = int(re.search(r"seed (\d+)", chosen).group(1))
        last = int(games[(games.policy == "voter") & (games.seed == seed)].iloc[0]["rounds"])
        replay = page.locator(".llm-mesa-sweep-replay")
        replay.locator(NODES).first.wait_for(
            state="attached", timeout=60_000)
        assert text_round(page, ".llm-mesa-replay-round") == 0
        slider = page.locator(".llm-mesa-replay-slider .v-slider__thumb-container").first
        slider.focus()
        page.keyboard.press("End")
        wait_round(page, last, ".llm-mesa-replay-round")
        wait_picture(page, last)
        page.keyboard.press("Home")
        page.keyboard.press("ArrowRight")
        wait_round(page, 1, ".llm-mesa-replay-round")
        wait_picture(page, 1)
        shoot(page, "sweep.png")
