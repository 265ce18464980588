"""The side-by-side page and the sweep browser in headless Chromium (Playwright).

* ``llm-mesa viz --game consensus --compare``: LLM agents on the built-in loopback
  stand-in and majority-with-inertia play the same graph, preferences and seed; one
  Step moves both panels, each has its agent panel, the two chamber maps share one
  bubble scale and the overlaid charts hold both populations' curves;
* ``llm-mesa viz --sweep DIR`` on a sweep of named conditions crossed with an axis
  (``ba-local|n=20``), kept with ``--tables agents,rounds``: its table and
  distribution show; clicking a game in the distribution picks it, and it replays
  round by round with its agent panel; typing another sweep's directory starts its
  filters afresh;
* the sweep of ``experiments/sign-rules.toml`` (fewer rounds) browses and replays.

Helpers and the local-only request guard come from ``test_explorer_browser``.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
from pathlib import Path

import pytest
from test_explorer_browser import (  # noqa: F401 - fixtures
    CLI,
    NODES,
    browser,
    choose,
    local,
    no_traceback,
    open_game,
    shoot,
    step,
    text_round,
    viz,
    wait_picture,
    wait_round,
)

pytestmark = pytest.mark.slow
POINTS = ".llm-mesa-sweep-distribution svg g.mark-symbol.role-mark path"
REPO = Path(__file__).resolve().parents[1]


def test_side_by_side_panels_step_together_with_agent_panels_and_one_bubble_scale(tmp_path, local):  # noqa: F811
    with viz(tmp_path, "--game", "consensus", "--compare") as url:
        page = local.page(height=1700)
        open_game(page, url)
        page.wait_for_function(f"() => document.querySelectorAll('{NODES}').length === 72", timeout=60_000)
        panels = [".llm-mesa-panel-a", ".llm-mesa-panel-b"]
        for panel in panels:
            assert text_round(page, f"{panel} .llm-mesa-panel-round") == 0
            assert "colour / preference:" in page.locator(f"{panel} .llm-mesa-agent").inner_text()
        assert "llm" in page.locator(".llm-mesa-panel-a").inner_text()
        assert "majority-inertia" in page.locator(".llm-mesa-panel-b").inner_text()
        step(page, 3)
        for panel in panels:
            wait_round(page, 3, f"{panel} .llm-mesa-panel-round")
            wait_picture(page, 3, f"{panel} .llm-mesa-network-chart")
        # both populations, two measures each: four lines in the shares chart
        page.wait_for_function(
            "() => document.querySelectorAll('.llm-mesa-chart-shares svg .mark-line path').length === 4", timeout=30_000)
        assert "A: llm" in page.locator(".llm-mesa-chart-shares svg").text_content()
        # a click on a node in one panel selects that agent in both
        page.locator(f".llm-mesa-panel-b {NODES}").nth(7).click(force=True)
        for panel in panels:
            page.wait_for_function(
                f"() => document.querySelector('{panel} .llm-mesa-agent-select input').value === '7'", timeout=30_000)
        said = page.locator(".llm-mesa-panel-a .llm-mesa-agent").inner_text()
        assert "decision in round 3 · reason:" in said and "observes for round 4:" in said  # each with its round
        shoot(page, "compare.png")
        for panel in panels:
            page.locator(panel).get_by_role("button", name="echo chambers").click()
        for panel in panels:
            page.wait_for_function(
                f"() => document.querySelectorAll('{panel} .llm-mesa-network-chart svg g.chambers_marks path').length > 1",
                timeout=30_000)
        for panel in panels:  # one bubble scale, set by N: the same member sizes in both legends
            assert "191836members" in page.locator(f"{panel} .llm-mesa-network-chart svg").text_content()
        no_traceback(page)


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    from llm_mesa.sweep import run_sweep

    root = tmp_path_factory.mktemp("sweeps")
    crossed = root / "crossed"
    run_sweep(["ba-local", "ws-local"], "mi-0.2;voter", 2, crossed, tables=["agents", "rounds"], axes=["n=20,24"],
              model_options={"max_rounds": 10, "baseline_permutations": 0}, game="consensus")
    sign = root / "sign"
    subprocess.run([CLI, "sweep", str(REPO / "experiments" / "sign-rules.toml"), "--set", "max_rounds=20",
                    "--repetitions", "1", "--out", str(sign), "--quiet"], check=True, capture_output=True, text=True)
    return crossed, sign


def test_the_sweep_browser_opens_named_conditions_crossed_with_an_axis_and_replays_a_game(sweeps, tmp_path, local):  # noqa: F811
    from llm_mesa.sweep import read_sweep

    crossed, sign = sweeps
    games = read_sweep(crossed)
    with viz(tmp_path, "--sweep", str(crossed)) as url:
        page = local.page(height=1800)
        page.goto(url)
        table = page.locator(".llm-mesa-sweep-table")
        table.wait_for(timeout=120_000)
        summary = page.locator(".llm-mesa-sweep-summary").inner_text()
        assert "16 games in 8 cells (4 conditions × 2 policies), 2 games a cell" in summary
        cell = games[(games.condition == "ba-local|n=20") & (games.policy == "voter")]
        assert "ba-local|n=20" in table.inner_text() and f"{int(cell.consensus.sum())}/2" in table.inner_text()
        page.wait_for_function(f"() => document.querySelectorAll('{POINTS}').length === 16", timeout=60_000)
        choose(page, "Policies", "mi-0.2")  # filter: mi-0.2 off, voter only
        page.keyboard.press("Escape")
        page.wait_for_function(f"() => document.querySelectorAll('{POINTS}').length === 8", timeout=30_000)
        # click a game in the distribution to replay it
        points = page.locator(POINTS)
        before = page.locator(".llm-mesa-sweep-game").inner_text()
        points.nth(points.count() - 1).click(force=True)
        page.wait_for_function("b => document.querySelector('.llm-mesa-sweep-game').innerText !== b", arg=before,
                               timeout=60_000)
        chosen = page.locator(".llm-mesa-sweep-game").inner_text()
        assert "voter" in chosen and "|n=" in chosen  # the label kept whole
        condition = re.search(r"(\w+)-local\|n=(\d+)", chosen)
        seed = int(re.search(r"seed (\d+)", chosen).group(1))
        page.wait_for_function(  # the replay of the game clicked (not the one shown before)
            "t => document.querySelector('.llm-mesa-replay-outline').innerText.includes(t)",
            arg=f"{condition.group(1)} graph, {condition.group(2)} agents, policy voter, communication local, seed {seed}:",
            timeout=60_000)
        replay = page.locator(".llm-mesa-sweep-replay")
        replay.locator(NODES).first.wait_for(state="attached", timeout=60_000)
        last = int(games[(games.condition == condition.group(0)) & (games.policy == "voter")
                         & (games.seed == seed)].iloc[0]["rounds"])
        assert text_round(page, ".llm-mesa-replay-round") == 0
        # the slider is drawn again once the game's rounds are known: a key sent to the one drawn
        # before is lost, so focus the slider shown now and send End again until the round moves
        for _attempt in range(10):
            page.locator(".llm-mesa-replay-slider .v-slider__thumb-container").first.focus()
            page.keyboard.press("End")
            with contextlib.suppress(AssertionError):
                wait_round(page, last, ".llm-mesa-replay-round", timeout=6.0)
                break
        wait_round(page, last, ".llm-mesa-replay-round")
        wait_picture(page, last)
        assert "colour / preference:" in replay.locator(".llm-mesa-agent").inner_text()
        no_traceback(page)
        shoot(page, "sweep.png")
        # another directory: its own filters (every policy of the new sweep), not the old ones
        field = page.locator(".llm-mesa-sweep-dir input").first
        field.fill(str(sign))
        field.press("Enter")
        page.wait_for_function(
            "() => /naming sweep/.test(document.querySelector('.llm-mesa-sweep-summary').innerText)", timeout=120_000)
        policies = page.locator(".llm-mesa-sweep-policies").inner_text()
        assert all(p in policies for p in ("echo", "noisy-0.3", "minimal")) and "mi-0.2" not in policies
        no_traceback(page)


def test_the_sign_rules_sweep_browses_and_replays(sweeps, tmp_path, local):  # noqa: F811
    _, sign = sweeps
    with viz(tmp_path, "--sweep", str(sign)) as url:
        page = local.page(height=1600)
        page.goto(url)
        page.locator(".llm-mesa-sweep-table").wait_for(timeout=120_000)
        assert "90 games in 90 cells (30 conditions × 3 policies), 1 game a cell" in \
            page.locator(".llm-mesa-sweep-summary").inner_text()
        page.wait_for_function(f"() => document.querySelectorAll('{POINTS}').length === 90", timeout=60_000)
        legend = page.locator(".llm-mesa-sweep-distribution svg").text_content()
        assert all(p in legend for p in ("echo", "noisy-0.3", "minimal"))  # the legend whole
        page.locator(".llm-mesa-sweep-replay .llm-mesa-naming-agreement svg").first.wait_for(
            state="attached", timeout=60_000)
        assert text_round(page, ".llm-mesa-replay-round") == 0
        no_traceback(page)
        shoot(page, "sweep-naming.png")
