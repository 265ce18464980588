"""The explorer in a real browser: headless Debian Chromium driven by Playwright.

Starts ``llm-mesa viz`` on a free loopback port (its first run fills the offline
front-end cache from npm) and drives its pages as a researcher would:

* the consensus game: two browser contexts (two visitors) step their own games;
  a caveman graph with majority-with-inertia agents plays until the
  pseudo-equilibrium banner shows, and the echo-chamber map draws its chambers;
* errors stay in the page: a malformed endpoint URL, an empty model name and an
  unreachable endpoint each show one message beside their control, every control
  stays; an endpoint that goes away mid-game shows "36 of 36 decisions failed";
* a 500-node game renders, hovering a node shows its details, clicking selects it;
* hovering node 0 at N = 36 (its number on its centre) shows its details;
* every bad link value (``?topology=x``, ``?n=abc``, ``?n=7``, ``?max_rounds=100000``,
  ``?n=100000000``) shows its control's own message while the page plays the rest;
* the replay viewer (with its agent panel) and the naming game (its agreement chart
  at round 0 too).

Every context refuses (and records) any request that would leave this machine; each
test ends by checking there was none. The pages are saved to a folder of the run's own, or to
``LLM_MESA_SCREENSHOTS`` (``docs/screenshots`` refreshes the README's).
The side-by-side page and the sweep browser are in ``test_explorer_browser_pages.py``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from llm_mesa.registry import get_game
from llm_mesa.views import view_of

CHROMIUM = os.environ.get("LLM_MESA_CHROMIUM", "/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[1]
CLI = shutil.which("llm-mesa", path=str(Path(sys.executable).parent)) or "llm-mesa"
NODES = ".llm-mesa-network-chart svg g.nodes_marks path"

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the process on port {port} exited with {process.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise AssertionError(f"nothing listens on port {port}")


@contextlib.contextmanager
def serving(command: list[str], port: int, log: Path, **popen):
    """``command`` in its own process group until the block ends (``popen``: e.g. its ``env`` and ``cwd``)."""
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **popen)
    try:
        wait_for_port(port, process)
        yield process
    finally:
        stop(process)
        print(log.read_text()[-3000:])


def stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)  # the server and anything it started
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)


@contextlib.contextmanager
def viz(tmp_dir: Path, *options: str):
    """``llm-mesa viz OPTIONS`` on a free port; yields its URL."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (see scripts/install_explorer_prereqs.sh)")
    port = free_port()
    log = tmp_dir / "viz.log"
    with serving([CLI, "viz", "--port", str(port), "--host", "127.0.0.1", *options], port, log):
        yield f"http://127.0.0.1:{port}/"
    # a component that raised shows a traceback instead of its part of the page
    text = log.read_text()
    assert "raised exception" not in text and "Traceback" not in text, "a page component raised; see the server log"


class LocalOnly:
    """Browser contexts whose requests may go to this machine only; any other is refused and kept."""

    def __init__(self, browser) -> None:
        self.browser = browser
        self.refused: list[str] = []
        self.contexts = []

    def _route(self, route) -> None:
        host = urlparse(route.request.url).hostname or ""
        if host in ("127.0.0.1", "localhost", "::1") or route.request.url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            self.refused.append(route.request.url)
            route.abort()

    def page(self, width: int = 1400, height: int = 1000):
        context = self.browser.new_context(viewport={"width": width, "height": height})
        context.route("**/*", self._route)
        self.contexts.append(context)
        return context.new_page()

    def close(self) -> None:
        for context in self.contexts:
            context.close()


@pytest.fixture(scope="module")
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM,
                              args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture
def local(browser):
    """New pages for one test; at its end, not one request may have left this machine."""
    guard = LocalOnly(browser)
    yield guard
    guard.close()
    assert guard.refused == [], f"requests left localhost: {guard.refused[:5]}"


@pytest.fixture(scope="module")
def explorer_url(tmp_path_factory):
    with viz(tmp_path_factory.mktemp("viz"), "--game", "consensus") as url:
        yield url


def no_traceback(page) -> None:
    assert "Traceback" not in page.locator("body").inner_text()


def text_round(page, selector: str = ".llm-mesa-round") -> int:
    text = page.locator(selector).first.inner_text()
    match = re.search(r"Round (\d+)", text)
    assert match, f"round label reads {text!r}"
    return int(match.group(1))


def wait_round(page, expected: int, selector: str = ".llm-mesa-round", timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text_round(page, selector) == expected:
            return
        time.sleep(0.1)
    assert text_round(page, selector) == expected


def wait_picture(page, round_number: int, selector: str = ".llm-mesa-network-chart", timeout: float = 60_000) -> None:
    """Until the network picture's title names ``round_number``: the picture itself was redrawn."""
    page.wait_for_function(
        """([selector, r]) => Array.from(document.querySelectorAll(selector + ' svg .role-title-text'))
             .some(t => t.textContent.startsWith('Round ' + r + ':'))""",
        arg=[selector, round_number], timeout=timeout)


def open_game(page, url: str) -> None:
    page.goto(url)
    page.locator(NODES).first.wait_for(state="attached", timeout=120_000)  # a blank page never shows it


def choose(page, label: str, value: str) -> None:
    """Pick a value in a Select control."""
    page.locator(".v-select", has=page.get_by_text(label, exact=True)).first.click()
    page.locator(".v-menu__content.menuable__content__active .v-list-item",
                 has_text=re.compile(rf"^\s*{re.escape(value)}\s*$")).first.click()


def type_into(page, control: str, text: str) -> None:
    field = page.locator(f".llm-mesa-control-{control} input").first
    field.fill(text)
    field.press("Tab")


def step(page, times: int = 1, selector: str = ".llm-mesa-round") -> int:
    for _ in range(times):
        before = text_round(page, selector)
        page.get_by_role("button", name="Step").click()
        wait_round(page, before + 1, selector)
    return text_round(page, selector)


@functools.cache
def screenshots() -> Path:
    """Where the pages are saved: LLM_MESA_SCREENSHOTS (docs/screenshots refreshes the README's),
    else a folder of this run's own, made when the first page is saved: a run never changes the checkout."""
    chosen = os.environ.get("LLM_MESA_SCREENSHOTS")
    return Path(chosen) if chosen else Path(tempfile.mkdtemp(prefix="llm-mesa-screenshots-"))


def shoot(page, name: str) -> Path:
    folder = screenshots()
    folder.mkdir(parents=True, exist_ok=True)
    time.sleep(1.0)  # let the charts finish drawing
    path = folder / name
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 20_000
    return path


# --- one game per visitor ---------------------------------------------------------------


def test_two_visitors_step_their_own_games(explorer_url, local):
    first, second = local.page(), local.page()
    open_game(first, explorer_url)
    open_game(second, explorer_url)
    assert text_round(first) == text_round(second) == 0
    step(first, 3)
    wait_picture(first, 3)
    time.sleep(0.5)
    assert text_round(second) == 0  # the other visitor's game did not move
    step(second)
    wait_picture(second, 1)
    assert text_round(first) == 3 and text_round(second) == 1
    first.reload()  # a new session: a new game
    open_game(first, explorer_url)
    assert text_round(first) == 0 and text_round(second) == 1


def test_caveman_echo_chambers_reach_the_pseudo_equilibrium(explorer_url, local):
    page = local.page(height=1100)
    open_game(page, explorer_url)
    choose(page, "Topology", "caveman")
    page.locator(".llm-mesa-control-topology .llm-mesa-reset-hint").wait_for(timeout=10_000)  # "Reset to apply"
    page.get_by_role("button", name="Reset").click()
    page.locator(".llm-mesa-control-topology .llm-mesa-reset-hint").wait_for(state="detached", timeout=30_000)
    wait_picture(page, 0)
    banner = page.locator(".llm-mesa-pseudo-equilibrium")
    for _ in range(15):
        step(page)
        if banner.count():
            break
    banner.first.wait_for(state="visible", timeout=10_000)
    text = banner.first.inner_text()
    assert "Pseudo-equilibrium" in text and "same-colour groups" in text
    groups = int(re.search(r"split into (\d+) same-colour groups", text).group(1))
    title = page.locator(".llm-mesa-network-chart svg .role-title-text").first.text_content()
    assert f"{groups} same-colour groups" in title  # the banner speaks of what is drawn
    shoot(page, "consensus.png")
    page.get_by_role("button", name="echo chambers").click()
    page.wait_for_function(
        "n => document.querySelectorAll('.llm-mesa-network-chart svg g.chambers_marks path').length === n",
        arg=groups, timeout=30_000)  # one bubble per chamber
    assert "echo chambers" in page.locator(".llm-mesa-network-chart svg .role-title-text").first.text_content()
    shoot(page, "chambers.png")


# --- errors stay in the page ------------------------------------------------------------


def _controls_in_place(page) -> None:
    """Every control of the game's view is still on the page (an error replaced none of them)."""
    from llm_mesa.visualization.controls import applies

    shown = [name for name, spec in view_of(get_game("consensus")).controls().items() if applies(spec, {"topology": "ba"})]
    assert page.locator(".llm-mesa-control").count() == len(shown)  # a BA graph has no ring degree to set
    assert page.get_by_role("button", name="Step").count() == 1 and page.locator(".llm-mesa-round").count() == 1
    assert "Traceback" not in page.locator("body").inner_text()


def test_bad_endpoint_model_and_unreachable_server_show_beside_their_control(explorer_url, local):
    page = local.page()
    open_game(page, explorer_url)
    _controls_in_place(page)
    step(page, 2)
    choose(page, "Policies (default | selector=policy)", "llm")
    type_into(page, "llm_endpoint", "htp:/not a url")
    page.get_by_role("button", name="Reset").click()
    error = page.locator(".llm-mesa-control-llm_endpoint .llm-mesa-control-error")
    error.wait_for(timeout=30_000)
    assert "is not an endpoint URL" in error.inner_text()
    assert page.locator(".llm-mesa-control-error").count() == 1  # one clear message
    _controls_in_place(page)
    assert text_round(page) == 2  # the running game is kept
    shoot(page, "errors.png")

    type_into(page, "llm_endpoint", "loopback")
    type_into(page, "llm_model", "")
    page.get_by_role("button", name="Reset").click()
    error = page.locator(".llm-mesa-control-llm_model .llm-mesa-control-error")
    error.wait_for(timeout=30_000)
    assert "model name is empty" in error.inner_text()
    _controls_in_place(page)

    type_into(page, "llm_model", "rule:majority-inertia")
    type_into(page, "llm_endpoint", f"http://127.0.0.1:{free_port()}/v1")  # nobody listens there
    page.get_by_role("button", name="Reset").click()
    error = page.locator(".llm-mesa-control-llm_endpoint .llm-mesa-control-error")
    error.wait_for(timeout=60_000)
    assert "cannot reach" in error.inner_text()  # found before the game starts
    _controls_in_place(page)

    type_into(page, "llm_endpoint", "loopback")
    page.get_by_role("button", name="Reset").click()
    page.locator(".llm-mesa-control-error").first.wait_for(state="detached", timeout=60_000)
    wait_round(page, 0)
    step(page)
    assert page.locator(".llm-mesa-failures").count() == 0


def test_an_endpoint_gone_mid_game_counts_every_failed_decision_in_the_banner(explorer_url, local, tmp_path):
    port = free_port()
    with serving([CLI, "serve", "--port", str(port)], port, tmp_path / "serve.log") as server:
        page = local.page()
        open_game(page, explorer_url + f"?policy_mix=llm&llm_endpoint=http://127.0.0.1:{port}/v1&n=36")
        step(page)  # the endpoint answers
        assert page.locator(".llm-mesa-failures").count() == 0
        stop(server)
    step(page)  # now every call is refused
    banner = page.locator(".llm-mesa-failures")
    banner.wait_for(timeout=60_000)
    assert "36 of 36 decisions failed: connection refused" in banner.inner_text()


# --- a large network ---------------------------------------------------------------------


def test_a_500_node_game_renders_and_hovering_a_node_shows_its_details(explorer_url, local):
    page = local.page()
    open_game(page, explorer_url + "?n=500")
    page.wait_for_function(f"() => document.querySelectorAll('{NODES}').length === 500", timeout=60_000)
    assert "N (agents): 500" in page.locator(".llm-mesa-control-n").inner_text()
    step(page, 3)  # echo chambers form
    wait_picture(page, 3)
    node = page.locator(NODES).nth(123)
    node.hover(force=True)
    tooltip = page.locator("#vg-tooltip-element")
    tooltip.wait_for(state="visible", timeout=10_000)
    details = tooltip.inner_text()
    for field in ("agent", "colour now", "preference", "role", "group size", "policy", "last reason"):
        assert field in details
    assert re.search(r"agent\s+123\b", details)
    shoot(page, "network-500.png")
    node.click(force=True)
    page.wait_for_function(
        "() => document.querySelector('.llm-mesa-agent-select input').value === '123'", timeout=30_000)
    step(page)
    wait_picture(page, 4)
    assert page.locator(".llm-mesa-agent").inner_text().count("123") >= 1


def test_hovering_node_0_at_36_agents_shows_its_details(explorer_url, local):
    """At N <= 60 each node carries its number on its centre: hovering the centre must still show the node."""
    page = local.page()
    open_game(page, explorer_url + "?n=36")
    page.wait_for_function(f"() => document.querySelectorAll('{NODES}').length === 36", timeout=60_000)
    box = page.locator(NODES).nth(0).bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # the very centre, under the "0"
    tooltip = page.locator("#vg-tooltip-element")
    tooltip.wait_for(state="visible", timeout=10_000)
    assert re.search(r"agent\s+0\b", tooltip.inner_text()) and "colour now" in tooltip.inner_text()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_function("() => document.querySelector('.llm-mesa-agent-select input').value === '0'", timeout=30_000)


@pytest.mark.parametrize(("query", "control", "message"), [
    ("topology=x", "topology", "unknown value 'x'"),
    ("n=abc", "n", "'abc' is not a whole number"),
    ("n=7", "n", "7 is below this page's minimum 8"),
    ("max_rounds=100000", "max_rounds", "100,000 is above this page's maximum 200"),
    ("n=100000000", "n", "100,000,000 is above this page's maximum 1,000"),
])
def test_a_bad_link_value_shows_its_controls_message_and_the_page_plays(explorer_url, local, query, control, message):
    page = local.page()
    open_game(page, explorer_url + f"?{query}&seed=4")
    error = page.locator(f".llm-mesa-control-{control} .llm-mesa-control-error")
    error.wait_for(timeout=30_000)
    assert message in error.inner_text()
    assert page.locator(".llm-mesa-control-error").count() == 1
    _controls_in_place(page)
    assert step(page) == 1  # the page keeps its state: the game from the rest of the link plays
    assert "Seed\n4" in page.locator(".llm-mesa-control-seed").inner_text() or \
        page.locator(".llm-mesa-control-seed input").input_value() == "4"


# --- the replay viewer and the naming game ------------------------------------------------


def test_replay_slider_scrubs_a_recorded_game(tmp_path, local):
    run_dir = tmp_path / "caveman-seed3"
    subprocess.run([CLI, "consensus", "--topology", "caveman", "--n", "36", "--policy", "majority-inertia",
                    "--seed", "3", "--max-rounds", "20", "--baseline-permutations", "10", "--out", str(run_dir)],
                   check=True, capture_output=True, text=True)
    last = len(__import__("pandas").read_parquet(run_dir / "rounds.parquet")) - 1
    with viz(tmp_path, "--replay", str(run_dir)) as url:
        page = local.page(height=1180)
        open_game(page, url)
        assert text_round(page, ".llm-mesa-replay-round") == 0
        assert page.locator(".llm-mesa-replay-dir input").first.input_value() == str(run_dir.resolve())
        slider = page.locator(".llm-mesa-replay-slider .v-slider__thumb-container").first
        slider.focus()
        page.keyboard.press("End")  # the slider's own keyboard handling: jump to the last round
        wait_round(page, last, ".llm-mesa-replay-round")
        wait_picture(page, last)
        page.locator(".llm-mesa-pseudo-equilibrium").first.wait_for(state="visible", timeout=10_000)
        for expected in (last - 1, last - 2):
            page.keyboard.press("ArrowLeft")
            wait_round(page, expected, ".llm-mesa-replay-round")
        wait_picture(page, last - 2)
        page.keyboard.press("Home")
        for expected in (1, 2):
            page.keyboard.press("ArrowRight")
            wait_round(page, expected, ".llm-mesa-replay-round")
        wait_picture(page, 2)
        panel = page.locator(".llm-mesa-agent")
        assert "colour / preference:" in panel.inner_text()  # the agent panel, at the round shown
        page.locator(NODES).nth(5).click(force=True)
        page.wait_for_function(
            "() => document.querySelector('.llm-mesa-agent-select input').value === '5'", timeout=30_000)
        no_traceback(page)
        shoot(page, "replay.png")


def test_naming_game_steps_and_its_charts_show_the_latest_round(tmp_path, local):
    with viz(tmp_path, "--game", "naming") as url:
        page = local.page(height=1100)
        page.goto(url)
        # round 0: the names held at the start, one bar of every name's holders (an area over one round has no width)
        page.locator(".llm-mesa-naming-names svg .mark-rect path").first.wait_for(state="attached", timeout=120_000)
        assert text_round(page) == 0
        assert page.locator(".llm-mesa-naming-names svg .mark-rect path").count() == 12  # 12 agents, a name each
        # round 0: the agreement chart draws its one measure of the start (who holds the most common name)
        page.wait_for_function(
            "() => document.querySelectorAll('.llm-mesa-naming-agreement svg .mark-symbol.role-mark path').length === 1",
            timeout=30_000)
        assert "N (agents): 12" in page.locator(".llm-mesa-control-n").inner_text()  # sliders show their value
        choose(page, "Speaker", "noisy:p=0.3")  # malformed replies: retries and salvages show
        page.locator(".llm-mesa-control-speaker .llm-mesa-reset-hint").wait_for(timeout=10_000)  # "Reset to apply"
        page.get_by_role("button", name="Reset").click()
        wait_round(page, 0)
        step(page, 3)
        page.wait_for_function(
            "n => document.querySelectorAll('.llm-mesa-naming-agreement svg .mark-symbol.role-mark path').length === n",
            arg=3 * 3 + 1, timeout=30_000)  # three agreement series, rounds 1..3, and the start
        page.locator(".llm-mesa-naming-names svg .mark-area").first.wait_for(state="attached", timeout=30_000)
        # the x axis reaches the latest round
        page.wait_for_function(
            "() => Array.from(document.querySelectorAll('.llm-mesa-naming-names svg .role-axis-label text'))"
            ".some(t => t.textContent === '3')", timeout=30_000)
        page.get_by_role("button", name="Play").click()
        deadline = time.monotonic() + 120
        while text_round(page) < 60 and time.monotonic() < deadline:
            time.sleep(0.5)
        page.get_by_role("button", name="Pause").click()
        assert text_round(page) >= 60
        assert "holds:" in page.locator(".llm-mesa-agent").inner_text()  # the agent panel
        no_traceback(page)
        shoot(page, "naming.png")
