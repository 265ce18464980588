"""The explorer's pages as a reviewer found them, fixed, in headless Chromium.

* the naming page: the agent selector refuses a name the game lacks (it used to show the
  nearest one, silently); ``?n=7`` plays and shows agents 1..7; the utterances table
  shows the rows its footer says;
* the consensus page: a policy mix in the README's form typed into the control plays;
* the side-by-side page: the pictures and agent panels stay in line when one panel's
  banner wraps and the other's does not;
* the replay page: a mistyped directory says so and keeps the game shown;
* the sweep browser of a 30-condition sweep: no "NaN", the filters stay a few lines
  tall, the measure list offers what varies;
* the colouring page: a banner says where the game stands.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest
from test_explorer_browser import (  # noqa: F401 - fixtures
    CLI,
    NODES,
    browser,
    local,
    no_traceback,
    open_game,
    shoot,
    step,
    text_round,
    type_into,
    viz,
    wait_round,
)

from llm_mesa.registry import get_game
from llm_mesa.views import view_of

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]


def panel_shows(page, pattern: str, timeout: float = 30.0) -> None:
    """Until the agent panel's text matches ``pattern``."""
    deadline = time.monotonic() + timeout
    while not re.search(pattern, page.locator(".llm-mesa-agent").inner_text()):
        assert time.monotonic() < deadline, page.locator(".llm-mesa-agent").inner_text()
        page.wait_for_timeout(100)


def naming_page(page, url: str) -> None:
    page.goto(url)
    page.locator(".llm-mesa-naming-agreement svg").first.wait_for(state="attached", timeout=120_000)


def test_the_naming_page_refuses_an_agent_it_lacks_plays_odd_n_and_shows_the_rows_it_says(tmp_path, local):  # noqa: F811
    with viz(tmp_path, "--game", "naming") as url:
        page = local.page(height=1200)
        naming_page(page, url + "?n=7")
        assert "N (agents): 7" in page.locator(".llm-mesa-control-n").inner_text()
        assert page.locator(".llm-mesa-control-error").count() == 0
        select = page.locator(".llm-mesa-agent-select input").first
        assert "Agent (1..7)" in page.locator(".llm-mesa-agent").inner_text()  # named as the game's tables name them
        step(page)
        panel = page.locator(".llm-mesa-agent")
        assert re.search(r"agent:\s*1\b", panel.inner_text())
        select.fill("8")
        select.press("Tab")
        page.locator(".llm-mesa-agent-error").wait_for(timeout=30_000)
        assert "there is no agent 8: choose 1..7" in page.locator(".llm-mesa-agent-error").inner_text()
        assert re.search(r"agent:\s*1\b", panel.inner_text())  # the agent shown stays
        select.fill("7")
        select.press("Tab")
        page.locator(".llm-mesa-agent-error").wait_for(state="detached", timeout=30_000)
        panel_shows(page, r"agent:\s*7\b")
        naming_page(page, url + "?n=24")
        step(page)
        table = page.locator(".llm-mesa-messages")
        table.locator("tbody tr").first.wait_for(timeout=30_000)
        shown = table.locator("tbody tr").count()
        footer = table.locator(".v-data-footer").inner_text()
        assert re.search(r"Rows per page:\s*10\b", footer) and shown == 10, (shown, footer)
        no_traceback(page)


def test_a_policy_mix_typed_as_the_readme_writes_it_plays(tmp_path, local):  # noqa: F811
    view = view_of(get_game("consensus"))
    defaults = {k: s.get("value") for k, s in view.controls().items()}
    typed = "voter | hubs:3=stubborn"
    model = view.build_from({**defaults, "policy_mix": typed})
    hub = next(v for v, a in enumerate(model.agents_by_node) if a.policy.spec().startswith("stubborn"))
    with viz(tmp_path, "--game", "consensus") as url:
        page = local.page()
        open_game(page, url)
        field = page.locator(".llm-mesa-control-policy_mix input").first
        field.fill(typed)
        field.press("Enter")
        field.press("Tab")
        page.get_by_role("button", name="Reset").click()
        page.locator(".llm-mesa-control-policy_mix .llm-mesa-reset-hint").wait_for(state="detached", timeout=30_000)
        assert page.locator(".llm-mesa-control-error").count() == 0
        select = page.locator(".llm-mesa-agent-select input").first
        select.fill(str(hub))
        select.press("Tab")
        panel_shows(page, rf"agent:\s*{hub}\b")
        assert re.search(r"policy:\s*stubborn", page.locator(".llm-mesa-agent").inner_text())
        no_traceback(page)


def tops(page, selector: str) -> list[float]:
    return [page.locator(f"{panel} {selector}").first.bounding_box()["y"] for panel in (".llm-mesa-panel-a",
                                                                                           ".llm-mesa-panel-b")]


def test_the_side_by_side_panels_stay_in_line_when_one_banner_wraps(tmp_path, local):  # noqa: F811
    with viz(tmp_path, "--game", "consensus", "--compare") as url:
        page = local.page(width=1150, height=1500)
        open_game(page, url + "?policy_a=voter&policy_b=majority-inertia&topology=caveman")
        page.wait_for_function(f"() => document.querySelectorAll('{NODES}').length === 72", timeout=60_000)
        heights = []
        for _ in range(12):  # voter keeps moving, majority-with-inertia settles into its chambers: the banners differ
            heights = [sum(b["height"] for b in page.locator(f"{p} .llm-mesa-panel-banners .v-alert").evaluate_all(
                           "els => els.map(e => e.getBoundingClientRect().toJSON())"))
                       for p in (".llm-mesa-panel-a", ".llm-mesa-panel-b")]  # the banners' own heights
            if abs(heights[0] - heights[1]) > 10:
                break
            step(page)
        assert abs(heights[0] - heights[1]) > 10, f"the banners never differed in height: {heights}"
        picture, agent = tops(page, ".llm-mesa-network-chart"), tops(page, ".llm-mesa-agent")
        assert abs(picture[0] - picture[1]) <= 2 and abs(agent[0] - agent[1]) <= 2, (heights, picture, agent)
        shoot(page, "compare-aligned.png")


def test_a_mistyped_replay_directory_keeps_the_game_shown(tmp_path, local):  # noqa: F811
    run = tmp_path / "run"
    subprocess.run([CLI, "consensus", "--n", "12", "--max-rounds", "6", "--out", str(run), "--no-record"], check=True,
                   capture_output=True)
    with viz(tmp_path, "--replay", str(run)) as url:
        page = local.page()
        open_game(page, url)
        page.get_by_role("button", name="Next", exact=True).click()
        wait_round(page, 1, ".llm-mesa-replay-round")
        field = page.locator(".llm-mesa-replay-dir input").first
        field.fill(str(tmp_path / "no-such-run"))
        field.press("Enter")
        error = page.locator(".llm-mesa-replay-error")
        error.wait_for(timeout=30_000)
        assert f"The game shown is still the one in {run.resolve()}" in error.inner_text() or \
            f"The game shown is still the one in {run}" in error.inner_text()
        assert page.locator(NODES).count() == 12 and text_round(page, ".llm-mesa-replay-round") == 1
        no_traceback(page)


def test_the_sweep_browser_of_30_conditions_keeps_its_filters_small_and_shows_no_nan(tmp_path, local):  # noqa: F811
    sign = tmp_path / "sign"
    subprocess.run([CLI, "sweep", str(REPO / "experiments" / "sign-rules.toml"), "--set", "max_rounds=20",
                    "--repetitions", "1", "--out", str(sign), "--quiet"], check=True, capture_output=True, text=True)
    with viz(tmp_path, "--sweep", str(sign)) as url:
        page = local.page(height=1200)
        page.goto(url)
        table = page.locator(".llm-mesa-sweep-table")
        table.wait_for(timeout=120_000)
        page.locator(".llm-mesa-sweep-table tbody tr").first.wait_for(timeout=60_000)
        assert "NaN" not in table.inner_text() and "–" in table.inner_text()  # one game a cell: no SD, a dash
        filters = page.locator(".llm-mesa-sweep-conditions").bounding_box()
        assert filters["height"] < 250, filters  # 30 chosen conditions scroll inside the field
        assert "shown: 30 of 30 conditions" in page.locator(".llm-mesa-sweep-shown").inner_text()
        page.locator(".llm-mesa-sweep-measure").click()
        offered = page.locator(".v-menu__content.menuable__content__active .v-list-item").all_inner_texts()
        assert offered and "max_rounds" not in offered and "lexicon_size" not in offered  # constant in this sweep
        no_traceback(page)
        shoot(page, "sweep-30-conditions.png")


def test_the_colouring_page_has_a_status_banner_to_the_end(tmp_path, local):  # noqa: F811
    with viz(tmp_path, "--game", "colouring") as url:
        page = local.page()
        open_game(page, url + "?max_rounds=5")
        banner = page.locator(".llm-mesa-colouring-status")
        banner.wait_for(timeout=30_000)
        assert re.search(r"Round 0: \d+ conflicts? \(links whose ends share a colour\), \d+ of 38 agents", banner.inner_text())
        step(page)
        page.wait_for_function("() => document.querySelector('.llm-mesa-colouring-status').innerText.startsWith('Round 1')",
                               timeout=30_000)
        page.get_by_role("button", name="Play").click()
        page.wait_for_function(
            "() => /Unsolved at round 5|Proper colouring/.test(document.querySelector('.llm-mesa-colouring-status').innerText)",
            timeout=60_000)
        no_traceback(page)
        shoot(page, "colouring.png")
