"""The explorer in a real browser: headless Debian Chromium driven by Playwright.

Starts ``llm-mesa viz`` on a free loopback port (its first run fills the offline
front-end cache from npm), waits for the network view, steps the game and checks
that the round counter and the plots advance, then switches to a caveman graph
with majority-with-inertia agents and plays until the pseudo-equilibrium banner
shows. A blank page (front-end not loaded) fails at the first wait.
"""

from __future__ import annotations

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


@pytest.fixture(scope="module")
def explorer_url(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (see scripts/install_explorer_prereqs.sh)")
    port = _free_port()
    log = tmp_path_factory.mktemp("viz") / "server.log"
    cli = shutil.which("llm-mesa", path=str(Path(sys.executable).parent)) or "llm-mesa"
    with open(log, "w") as out:
        process = subprocess.Popen([cli, "viz", "--port", str(port), "--host", "127.0.0.1"],
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
    network_before = page.locator(".llm-mesa-network img").first.get_attribute("src")
    points_before = _plot_points(page)
    assert points_before == 4  # one point (round 0) in each of the four per-round plots

    step = page.get_by_role("button", name="Step")
    for expected in range(1, 4):
        step.click()
        _wait_round(page, expected)
    page.wait_for_function(
        "n => document.querySelectorAll('.llm-mesa-plots svg .mark-symbol path').length === n",
        arg=4 * 4, timeout=30_000)  # rounds 0..3 in each plot
    assert page.locator(".llm-mesa-network img").first.get_attribute("src") != network_before

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
