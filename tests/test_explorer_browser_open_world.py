"""Every page on a game from outside the tree (``tinyvote``, installed by conftest), and Mesa's own SolaraViz page.

The outside game is found by the Solara server through ``PYTHONPATH`` (conftest puts
it there). Each page draws, Step advances (the round line and the network's own
title move), the network is drawn, no request leaves this machine and no traceback
shows, in the page or in the server's log. Then ``examples/solaraviz_consensus.py``
under ``solara run``: Mesa's SolaraViz with llm-mesa's components.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_explorer_browser import (  # noqa: F401 - fixtures
    CLI,
    NODES,
    browser,
    free_port,
    local,
    no_traceback,
    open_game,
    serving,
    shoot,
    step,
    text_round,
    viz,
    wait_picture,
    wait_round,
)

pytestmark = pytest.mark.slow
EXTRA = "tinyvote"
REPO = Path(__file__).resolve().parents[1]


def test_the_live_page_plays_the_outside_game(tmp_path, local):  # noqa: F811
    with viz(tmp_path, "--game", EXTRA) as url:
        page = local.page()
        open_game(page, url + "?n=14")
        page.wait_for_function(f"() => document.querySelectorAll('{NODES}').length === 14", timeout=60_000)
        assert text_round(page) == 0
        assert step(page, 2) == 2
        wait_picture(page, 2)
        assert "state:" in page.locator(".llm-mesa-agent").inner_text()
        page.locator(".llm-mesa-chart-shares svg .mark-line path").first.wait_for(state="attached", timeout=30_000)
        no_traceback(page)
        shoot(page, "open-world.png")
        page.get_by_role("button", name="echo chambers").click()
        page.locator(".llm-mesa-network-chart svg g.chambers_marks path").first.wait_for(state="attached", timeout=30_000)
        no_traceback(page)


def test_the_compare_page_plays_two_policies_of_the_outside_game(tmp_path, local):  # noqa: F811
    with viz(tmp_path, "--game", EXTRA, "--compare") as url:
        page = local.page(height=1400)
        open_game(page, url)
        page.wait_for_function(f"() => document.querySelectorAll('{NODES}').length === 20", timeout=60_000)
        step(page)
        for panel in (".llm-mesa-panel-a", ".llm-mesa-panel-b"):
            wait_round(page, 1, f"{panel} .llm-mesa-panel-round")
            wait_picture(page, 1, f"{panel} .llm-mesa-network-chart")
        no_traceback(page)


def test_the_sweep_browser_and_the_replay_open_the_outside_games_results(tmp_path, local):  # noqa: F811
    sweep, run = tmp_path / "sweep", tmp_path / "run"
    env = dict(os.environ)
    subprocess.run([CLI, "sweep", "--game", EXTRA, "--set", "n=8,12", "--policies", "follow;coin", "--seeds", "2",
                    "--tables", "rounds", "--out", str(sweep), "--quiet"], check=True, capture_output=True, env=env)
    subprocess.run([CLI, EXTRA, "--policy", "coin", "--n", "12", "--out", str(run)], check=True, capture_output=True,
                   env=env)
    with viz(tmp_path, "--sweep", str(sweep)) as url:
        page = local.page(height=1600)
        page.goto(url)
        page.locator(".llm-mesa-sweep-table").wait_for(timeout=120_000)
        assert "tinyvote sweep" in page.locator(".llm-mesa-sweep-summary").inner_text()
        page.locator(".llm-mesa-sweep-replay").locator(NODES).first.wait_for(state="attached", timeout=60_000)
        no_traceback(page)
    with viz(tmp_path, "--replay", str(run)) as url:
        page = local.page()
        open_game(page, url)
        assert text_round(page, ".llm-mesa-replay-round") == 0
        page.get_by_role("button", name="Next", exact=True).click()
        wait_round(page, 1, ".llm-mesa-replay-round")
        wait_picture(page, 1)
        no_traceback(page)


def test_mesas_solaraviz_draws_llm_mesas_components_and_steps(tmp_path, local):  # noqa: F811
    """``solara run examples/solaraviz_consensus.py`` as a Mesa user runs it (no asset cache variable set)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "SOLARA_ASSETS_PROXY_CACHE_DIR"}
    env["SOLARA_TELEMETRY_MIXPANEL_ENABLE"] = "false"
    command = [sys.executable, "-m", "solara", "run", str(REPO / "examples" / "solaraviz_consensus.py"),
               "--host", "127.0.0.1", "--port", str(port), "--no-open", "--production"]
    log = tmp_path / "solara.log"
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    from test_explorer_browser import stop, wait_for_port

    try:
        wait_for_port(port, process)
        page = local.page(height=1300)
        page.goto(f"http://127.0.0.1:{port}/")
        page.locator(NODES).first.wait_for(state="attached", timeout=120_000)
        page.wait_for_function(f"() => document.querySelectorAll('{NODES}').length === 36", timeout=60_000)
        assert text_round(page) == 0
        page.get_by_role("button", name="Step").first.click()
        wait_round(page, 1)
        wait_picture(page, 1)
        page.locator(".llm-mesa-component-charts .llm-mesa-chart-shares svg .mark-line path").first.wait_for(
            state="attached", timeout=30_000)
        assert "colour / preference:" in page.locator(".llm-mesa-component-agent").inner_text()
        charts = page.locator(".llm-mesa-component-charts .llm-mesa-chart svg").evaluate_all(
            "els => els.map(e => e.getBoundingClientRect().toJSON())")
        assert len(charts) == 3 and all(c["height"] >= 150 for c in charts), charts  # plots, not 40 px slivers
        cell = page.locator(".llm-mesa-component-charts").bounding_box()
        first = page.locator(".llm-mesa-component-charts .role-title-text").first.bounding_box()
        assert cell["y"] <= first["y"] and first["y"] + first["height"] <= cell["y"] + cell["height"]  # title shown
        no_traceback(page)
        shoot(page, "solaraviz.png")
        # N at its slider's minimum (2, the parameter's declared bound) with a BA graph that needs N > 2: Reset
        slider = page.locator(".v-input", has=page.get_by_text("N (agents)", exact=True)).first
        slider.locator("[role=slider]").first.focus()
        page.keyboard.press("Home")
        page.get_by_role("button", name="Reset").click()
        refused = page.locator(".llm-mesa-refused-n")
        refused.wait_for(timeout=60_000)
        assert "ba needs N > m=2" in refused.inner_text() and "“N (agents)”" in refused.inner_text()
        assert "--n" not in refused.inner_text() and "plays N (agents) 36" in refused.inner_text()
        assert "N (agents) ⚠ 2 refused: plays 36" in page.locator(".v-navigation-drawer").inner_text()  # beside it
        wait_round(page, 0)
        page.get_by_role("button", name="Step").first.click()  # the page stays live: the default game plays
        wait_round(page, 1)
        no_traceback(page)
        shoot(page, "solaraviz-refused.png")
    finally:
        stop(process)
    text = log.read_text()
    assert "Traceback" not in text, text[-3000:]
