"""Controls that never lock, on every page of every installed game, in Chromium.

For each game ``llm_mesa.registry.game_names()`` lists (the project's, the tests'
``tinyvote``, any game installed later), on its live page and its side-by-side page:
Step plays round 1; Play runs to the end, where Step and Play are disabled; Reset
starts a new game at round 0 with Step and Play enabled again; stepping by hand to
the last round disables Step there (it never stays enabled doing nothing); a Reset
with a bad control (seed -1) keeps the running game, and the buttons say its state.
Then the replay page (and the sweep browser's replay, the same piece): Play runs the
recording to its last round, Previous, Next and Play are enabled exactly while they
can move it. The buttons are read from the page (``disabled``), not from the server.
"""

from __future__ import annotations

import re
import subprocess
import time

import pandas as pd
import pytest
from test_explorer_browser import (  # noqa: F401 - fixtures
    CLI,
    browser,
    local,
    no_traceback,
    shoot,
    text_round,
    type_into,
    viz,
    wait_round,
)

from llm_mesa.registry import game_names, get_game
from llm_mesa.views import view_of

pytestmark = pytest.mark.slow


def round_limit(name: str) -> tuple[str, int]:
    """A short game: the page's smallest round limit (at least 3), as a link value, when the game has one."""
    spec = view_of(get_game(name)).controls().get("max_rounds")
    if spec is None:
        return "", 0
    rounds = max(3, int(spec.get("min", 1)))
    return f"max_rounds={rounds}", rounds


def enabled(page, name: str, scope: str = "") -> bool | None:
    """Whether the page's button ``name`` can be clicked (None: not on the page)."""
    button = page.locator(f"{scope} button".strip(), has_text=re.compile(rf"^\s*{name}\s*$"))
    if button.count() == 0:
        return None
    return button.first.is_enabled()


def wait_buttons(page, expected: dict[str, bool | None], scope: str = "", timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if {name: enabled(page, name, scope) for name in expected} == expected:
            return
        time.sleep(0.1)
    assert {name: enabled(page, name, scope) for name in expected} == expected


def click(page, name: str, scope: str = "") -> None:
    page.locator(f"{scope} button".strip(), has_text=re.compile(rf"^\s*{name}\s*$")).first.click()


def play_to_the_end(page, limit: int, selector: str) -> int:
    click(page, "Play")
    wait_buttons(page, {"Step": False, "Play": False, "Reset": True}, timeout=120.0)  # Pause gave way to Play
    ended = text_round(page, selector)
    assert 1 <= ended <= (limit or ended)
    return ended


def exercise(page, limit: int, selector: str = ".llm-mesa-round") -> None:
    """Step, Play to the end, Reset, Step by hand to the end, a bad Reset: the buttons follow the game."""
    wait_buttons(page, {"Step": True, "Play": True, "Reset": True})
    click(page, "Step")
    wait_round(page, 1, selector)  # Step plays round 1; the page says "Round 1"
    wait_buttons(page, {"Step": True, "Play": True})
    ended = play_to_the_end(page, limit, selector)
    type_into(page, "seed", "2")  # another game, so the Reset below is seen to start one
    click(page, "Reset")
    wait_round(page, 0, selector)
    wait_buttons(page, {"Step": True, "Play": True, "Reset": True})  # the lock this test was written for
    for expected in range(1, (limit or ended) + 1):
        click(page, "Step")
        wait_round(page, expected, selector)
        if enabled(page, "Step") is False:
            break  # the game ended (a limit, or the game's own end): Step says so at once
    wait_buttons(page, {"Step": False, "Play": False, "Reset": True})
    type_into(page, "seed", "-1")  # below the seed's minimum: the Reset fails, the ended game stays
    click(page, "Reset")
    page.locator(".llm-mesa-control-seed .llm-mesa-control-error").wait_for(timeout=30_000)
    wait_buttons(page, {"Step": False, "Play": False, "Reset": True})
    type_into(page, "seed", "1")
    click(page, "Reset")
    page.locator(".llm-mesa-control-error").first.wait_for(state="detached", timeout=30_000)
    wait_round(page, 0, selector)
    wait_buttons(page, {"Step": True, "Play": True, "Reset": True})
    click(page, "Step")
    wait_round(page, 1, selector)
    no_traceback(page)


@pytest.mark.parametrize("name", game_names())
def test_the_live_page_never_locks_its_controls(name, tmp_path, local):  # noqa: F811
    link, limit = round_limit(name)
    with viz(tmp_path, "--game", name) as url:
        page = local.page(height=1100)
        page.goto(url + (f"?{link}" if link else ""))
        page.locator(".llm-mesa-round").first.wait_for(timeout=120_000)
        exercise(page, limit)
        shoot(page, f"controls-{name}.png")


@pytest.mark.parametrize("name", [n for n in game_names() if view_of(get_game(n)).policy_choices()])
def test_the_compare_page_never_locks_its_controls(name, tmp_path, local):  # noqa: F811
    link, limit = round_limit(name)
    with viz(tmp_path, "--game", name, "--compare") as url:
        page = local.page(height=1400)
        page.goto(url + (f"?{link}" if link else ""))
        page.locator(".llm-mesa-round").first.wait_for(timeout=120_000)
        exercise(page, limit)


@pytest.mark.parametrize("name", game_names())
def test_the_replay_page_plays_to_the_last_round_and_its_buttons_follow(name, tmp_path, local):  # noqa: F811
    run = tmp_path / "run"
    link, limit = round_limit(name)
    options = [get_game(name).parameters["max_rounds"].option, str(max(limit, 4))] if link else []
    subprocess.run([CLI, name, *options, "--seed", "3", "--out", str(run), "--no-record"], check=True,
                   capture_output=True, text=True)
    last = int(pd.read_parquet(run / "rounds.parquet")["round"].max())
    with viz(tmp_path, "--replay", str(run)) as url:
        page = local.page(height=1100)
        page.goto(url)
        page.locator(".llm-mesa-replay-round").first.wait_for(timeout=120_000)
        first = text_round(page, ".llm-mesa-replay-round")
        wait_buttons(page, {"Previous": False, "Next": True, "Play": True})
        click(page, "Next")
        wait_round(page, first + 1, ".llm-mesa-replay-round")
        wait_buttons(page, {"Previous": True, "Next": True, "Play": True})
        click(page, "Play")
        wait_round(page, last, ".llm-mesa-replay-round", timeout=120)
        wait_buttons(page, {"Previous": True, "Next": False, "Play": False})  # at the end: nothing left to play
        click(page, "Previous")
        wait_round(page, last - 1, ".llm-mesa-replay-round")
        wait_buttons(page, {"Previous": True, "Next": True, "Play": True})
        no_traceback(page)
