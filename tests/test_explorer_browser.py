"""The explorer in a real browser: headless Debian Chromium driven by Playwright.

Starts ``llm-mesa viz`` on a free loopback port (its first run fills the offline
front-end cache from npm) for each page:

* the consensus game: waits for the network view, steps the game and checks that
  the round counter and the plots advance, then switches to a caveman graph with
  majority-with-inertia agents and plays until the pseudo-equilibrium banner shows;
* the replay viewer (``--replay DIR`` on a game just recorded with ``llm-mesa
  consensus --out``): moves the round slider and checks the round label and the
  network picture follow;
* the naming game (``--game naming``): steps and checks the agreement plot grows.

A blank page (front-end not loaded) fails at the first wait. The pages are saved
to ``docs/screenshots/``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("LLM_MESA_CHROMIUM", "/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[1]
SCREENSHOTS = REPO / "docs" / "screenshots"

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"llm-mesa viz exited with {process.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(f"llm-mesa viz did not listen on port {port}")


@contextlib.contextmanager
def _viz(tmp_dir: Path, *options: str):
    """``llm-mesa viz OPTIONS`` on a free port; yields its URL, then ends its process group."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (see scripts/install_explorer_prereqs.sh)")
    port = _free_port()
    log = tmp_dir / "server.log"
    cli = shutil.which("llm-mesa", path=str(Path(sys.executable).parent)) or "llm-mesa"
    with open(log, "w") as out:
        process = subprocess.Popen([cli, "viz", "--port", str(port), "--host", "127.0.0.1", *options],
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/"
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the server and anything it started
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        print(log.read_text()[-3000:])


@pytest.fixture(scope="module")
def explorer_url(tmp_path_factory):
    with _viz(tmp_path_factory.mktemp("viz")) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM,
                              args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
        yield b
        b.close()


def _round(page) -> int:
    text = page.locator(".llm-mesa-round").inner_text()
    match = re.search(r"Round (\d+) of", text)
    assert match, f"round counter reads {text!r}"
    return int(match.group(1))


def _plot_points(page) -> int:
    """Points drawn in the per-round plots (vega renders SVG symbols)."""
    return page.locator(".llm-mesa-plots svg .mark-symbol path").count()


def _wait_round(page, expected: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _round(page) == expected:
            return
        time.sleep(0.2)
    assert _round(page) == expected


def _choose(page, label: str, value: str) -> None:
    """Pick a value in one of SolaraViz's Select controls."""
    page.locator(".v-select", has=page.get_by_text(label, exact=True)).first.click()
    page.locator(".v-menu__content .v-list-item", has_text=re.compile(rf"^\s*{re.escape(value)}\s*$")).first.click()


def test_explorer_steps_and_reaches_pseudo_equilibrium(explorer_url, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(explorer_url)
    # a blank page (the front-end not loaded) never shows these
    page.locator(".llm-mesa-network img").first.wait_for(state="visible", timeout=90_000)
    page.locator(".llm-mesa-plots svg .mark-symbol").first.wait_for(state="attached", timeout=60_000)
    assert _round(page) == 0
    network_before = _picture(page)
    points_before = _plot_points(page)
    assert points_before == 4  # one point (round 0) in each of the four per-round plots

    step = page.get_by_role("button", name="Step")
    for expected in range(1, 4):
        step.click()
        _wait_round(page, expected)
    page.wait_for_function(
        "n => document.querySelectorAll('.llm-mesa-plots svg .mark-symbol path').length === n",
        arg=4 * 4, timeout=30_000)  # rounds 0..3 in each plot
    _wait_picture_change(page, network_before)  # the picture's bytes, not just a new blob URL

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    # caveman graph, majority-with-inertia agents: the echo chambers of the study
    _choose(page, "Topology", "caveman")
    _choose(page, "Policies (default | selector=policy)", "majority-inertia")
    page.get_by_role("button", name="Reset").click()
    page.wait_for_function(
        "() => document.querySelector('.llm-mesa-network img') && "
        "document.body.innerText.includes('same-colour')", timeout=30_000)
    _wait_round(page, 0)
    banner = page.locator(".llm-mesa-pseudo-equilibrium")
    for expected in range(1, 16):
        step.click()
        _wait_round(page, expected)
        if banner.count():
            break
    banner.first.wait_for(state="visible", timeout=10_000)
    assert "Pseudo-equilibrium" in banner.first.inner_text()
    time.sleep(1.0)  # let the plots finish drawing before the picture
    page.screenshot(path=str(SCREENSHOTS / "consensus.png"), full_page=True)
    assert (SCREENSHOTS / "consensus.png").stat().st_size > 20_000


# --- the replay viewer ----------------------------------------------------------------


def _text_round(page, selector: str) -> tuple[int, int]:
    text = page.locator(selector).first.inner_text()
    match = re.search(r"Round (\d+) of (\d+)", text)
    assert match, f"round label reads {text!r}"
    return int(match.group(1)), int(match.group(2))


def _wait_text_round(page, selector: str, expected: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _text_round(page, selector)[0] == expected:
            return
        time.sleep(0.2)
    assert _text_round(page, selector)[0] == expected


def _picture(page) -> bytes:
    """The network picture's bytes (the image's src is a blob URL, new at every redraw)."""
    data = page.evaluate("""async () => {
        const img = document.querySelector('.llm-mesa-network img');
        if (!img || !img.src) return [];
        const response = await fetch(img.src);
        return Array.from(new Uint8Array(await response.arrayBuffer()));
    }""")
    return bytes(data)


def _wait_picture_change(page, before: bytes, timeout: float = 30.0) -> bytes:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = _picture(page)
        if now and now != before:
            return now
        time.sleep(0.3)
    raise AssertionError("the network picture did not change")


def test_replay_slider_scrubs_a_recorded_game(tmp_path_factory, browser):
    tmp = tmp_path_factory.mktemp("replay")
    run_dir = tmp / "caveman-seed3"
    cli = shutil.which("llm-mesa", path=str(Path(sys.executable).parent)) or "llm-mesa"
    subprocess.run([cli, "consensus", "--topology", "caveman", "--n", "36", "--policy", "majority-inertia",
                    "--seed", "3", "--max-rounds", "20", "--baseline-permutations", "10", "--out", str(run_dir)],
                   check=True, capture_output=True, text=True)
    last = len(__import__("pandas").read_parquet(run_dir / "rounds.parquet")) - 1
    with _viz(tmp, "--replay", str(run_dir)) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1180})  # the whole page in the picture
        page.goto(url)
        picture = page.locator(".llm-mesa-network img").first
        picture.wait_for(state="visible", timeout=90_000)  # a blank page never shows it
        page.locator(".llm-mesa-plots svg .mark-symbol").first.wait_for(state="attached", timeout=60_000)
        assert _text_round(page, ".llm-mesa-replay-round") == (0, last)
        assert page.locator(".llm-mesa-replay-dir input").first.input_value() == str(run_dir.resolve())
        first_picture = _picture(page)

        slider = page.locator(".llm-mesa-replay-slider .v-slider__thumb-container").first
        slider.focus()
        page.keyboard.press("End")  # the slider's own keyboard handling: jump to the last round
        _wait_text_round(page, ".llm-mesa-replay-round", last)
        last_picture = _wait_picture_change(page, first_picture)
        for expected in (last - 1, last - 2):
            page.keyboard.press("ArrowLeft")
            _wait_text_round(page, ".llm-mesa-replay-round", expected)
        _wait_picture_change(page, last_picture)
        # round 0 again: the very picture drawn at first (a replay draws a round, not a history)
        page.keyboard.press("Home")
        _wait_text_round(page, ".llm-mesa-replay-round", 0)
        deadline = time.monotonic() + 30
        while _picture(page) != first_picture and time.monotonic() < deadline:
            time.sleep(0.3)
        assert _picture(page) == first_picture

        page.keyboard.press("End")
        _wait_text_round(page, ".llm-mesa-replay-round", last)
        page.locator(".llm-mesa-pseudo-equilibrium").first.wait_for(state="visible", timeout=10_000)
        # the picture: early in the game, where agents still move and the marker sits mid-plot
        page.keyboard.press("Home")
        for expected in (1, 2):
            page.keyboard.press("ArrowRight")
            _wait_text_round(page, ".llm-mesa-replay-round", expected)
        time.sleep(1.5)  # let the plots finish drawing before the picture
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "replay.png"), full_page=True)
        assert (SCREENSHOTS / "replay.png").stat().st_size > 20_000


# --- the naming game ------------------------------------------------------------------


def _agreement_points(page) -> int:
    return page.locator(".llm-mesa-naming-agreement svg .mark-symbol.role-mark path").count()


def test_naming_game_steps_and_its_agreement_plot_grows(tmp_path_factory, browser):
    with _viz(tmp_path_factory.mktemp("naming"), "--game", "naming") as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1100})
        page.goto(url)
        # a blank page never shows the names plot (it has round 0 from the start)
        page.locator(".llm-mesa-naming-names svg .mark-area").first.wait_for(state="attached", timeout=90_000)
        assert _text_round(page, ".llm-mesa-naming-round")[0] == 0
        assert _agreement_points(page) == 0
        _choose(page, "Speaker", "noisy:p=0.3")  # malformed replies: retries and salvages show
        page.get_by_role("button", name="Reset").click()
        _wait_text_round(page, ".llm-mesa-naming-round", 0)
        step = page.get_by_role("button", name="Step")
        for expected in range(1, 4):
            step.click()
            _wait_text_round(page, ".llm-mesa-naming-round", expected)
        page.wait_for_function(
            "n => document.querySelectorAll('.llm-mesa-naming-agreement svg .mark-symbol.role-mark path').length === n",
            arg=3 * 3, timeout=30_000)  # three agreement series, rounds 1..3
        assert page.locator(".llm-mesa-naming-outcomes svg .mark-area path").count() > 0

        page.get_by_role("button", name="▶").click()
        deadline = time.monotonic() + 120
        while _text_round(page, ".llm-mesa-naming-round")[0] < 60 and time.monotonic() < deadline:
            time.sleep(0.5)
        page.get_by_role("button", name="❚❚").click()
        assert _text_round(page, ".llm-mesa-naming-round")[0] >= 60
        time.sleep(1.5)  # let the plots finish drawing before the picture
        assert _agreement_points(page) > 3 * 3
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "naming.png"), full_page=True)
        assert (SCREENSHOTS / "naming.png").stat().st_size > 20_000
