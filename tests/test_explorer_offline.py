"""Nothing leaves the machine: ``llm-mesa viz``, ``report`` and the README's SolaraViz example, audited.

Design. Each command runs as a user runs it, in a child process whose every socket is
audited (``tests/network_audit/sitecustomize.py`` on ``PYTHONPATH``: a PEP 578 hook on
name lookups, ``connect``, ``sendto`` and ``bind`` that logs and refuses any address
outside loopback; it loads in every interpreter the child starts, ``solara run`` after
``llm-mesa viz`` replaces itself). Solara's home is a fresh folder, so its first-run
checks would fire, and the environment carries none of Solara's switches
(``SOLARA_TELEMETRY_MIXPANEL_ENABLE``, the asset cache variable): what keeps the traffic
home must be set by the project's own code or by the README's command itself. The page
is opened in Chromium with every request logged; one for any host but this machine
fails the test, as does one audited lookup or connection. Each test also checks that
the audit ran in the processes it watched (a hook that never loaded would pass anything).
The offline asset cache is filled first, outside the audit (``llm-mesa viz`` would fetch
it from the npm registry, a package registry, on a first run).

The SolaraViz example's cells are checked too: every node of the network and every chart
lies inside its cell of Mesa's grid, and the lowest node can be clicked.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from test_explorer_browser import (  # noqa: F401 - fixtures
    CLI,
    NODES,
    browser,
    free_port,
    serving,
    shoot,
    text_round,
    wait_picture,
    wait_round,
)

from llm_mesa.visualization import assets

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
AUDIT = Path(__file__).resolve().parent / "network_audit"
LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")


class Audit:
    """The audited children's log: each process that ran under it, and each address off the machine it reached for."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.log = folder / "network-audit.jsonl"
        self.home = folder / "solara-home"  # Solara's own first-run state: none yet
        self.home.mkdir()

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in (assets.SOLARA_CACHE_ENV, "SOLARA_TELEMETRY_MIXPANEL_ENABLE", "PYTEST_CURRENT_TEST")}
        env["PYTHONPATH"] = os.pathsep.join([str(AUDIT), *filter(None, [os.environ.get("PYTHONPATH")])])
        env["LLM_MESA_NETWORK_AUDIT"] = str(self.log)
        env["SOLARA_HOME"] = str(self.home)
        return env

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []

    def off_the_machine(self) -> list[str]:
        return [f"{r['event']} {r['target']} (pid {r['pid']}: {' '.join(r['argv'])})\n{r['where']}"
                for r in self.records() if r["event"] != "audit-on"]

    def watched(self, word: str) -> bool:
        """Whether a process whose command line holds ``word`` ran under the audit."""
        return any(r["event"] == "audit-on" and word in " ".join(r["argv"]) for r in self.records())


class RequestLog:
    """A browser context whose every request is logged; one to any host but this machine is refused and kept."""

    def __init__(self, browser, allow_files: bool = False) -> None:  # noqa: F811
        self.context = browser.new_context(viewport={"width": 1400, "height": 1300})
        self.local: list[str] = []
        self.refused: list[str] = []
        self.allow = ("data:", "blob:", *(("file:",) if allow_files else ()))
        self.context.route("**/*", self._route)

    def _route(self, route) -> None:
        url = route.request.url
        host = re.match(r"^[a-z]+://([^/:]+|\[[^]]+\])", url)
        if url.startswith(self.allow) or (host and host.group(1) in LOCAL_HOSTS):
            self.local.append(url)
            route.continue_()
        else:
            self.refused.append(url)
            route.abort()

    def page(self):
        page = self.context.new_page()
        page.on("request", lambda r: None if r.url.startswith(self.allow) or re.match(
            r"^[a-z]+://(127\.0\.0\.1|localhost|\[::1\])[:/]", r.url) else self.refused.append(r.url))
        return page


@pytest.fixture(scope="module", autouse=True)
def offline_cache():
    """The front-end cache, complete before any audited command (a first run fills it from npm)."""
    cache = assets.default_cache_dir()
    if assets.missing_assets(cache):
        subprocess.run([sys.executable, "-m", "llm_mesa.visualization.assets", "fill"], check=True)
    assert not assets.missing_assets(cache)


def assert_stayed_home(audit: Audit, requests: RequestLog, *watched: str) -> None:
    for word in watched:
        assert audit.watched(word), f"no process running {word!r} loaded the audit: it watched nothing"
    assert audit.off_the_machine() == [], "\n\n".join(audit.off_the_machine())
    assert requests.refused == [], f"the browser asked for: {requests.refused}"
    assert requests.local, "the browser asked this machine for nothing: the page never loaded"


def test_llm_mesa_viz_makes_no_lookup_or_connection_off_the_machine(tmp_path, browser):  # noqa: F811
    """The live page with LLM agents on the built-in stand-in (127.0.0.1), and the replay page."""
    audit = Audit(tmp_path / "audit")
    requests = RequestLog(browser)
    port = free_port()
    command = [CLI, "viz", "--game", "consensus", "--host", "127.0.0.1", "--port", str(port)]
    with serving(command, port, tmp_path / "viz.log", env=audit.env()):
        page = requests.page()
        page.goto(f"http://127.0.0.1:{port}/?policy_mix=llm&n=12")
        page.locator(NODES).first.wait_for(state="attached", timeout=120_000)
        page.get_by_role("button", name="Step").click()
        wait_round(page, 1)
        wait_picture(page, 1)
        assert page.locator(".llm-mesa-failures").count() == 0  # the stand-in answered, on loopback
    run = tmp_path / "run"
    subprocess.run([CLI, "consensus", "--n", "12", "--max-rounds", "5", "--out", str(run), "--no-record"],
                   check=True, capture_output=True, env=audit.env())
    port = free_port()
    with serving([CLI, "viz", "--replay", str(run), "--port", str(port)], port, tmp_path / "replay.log",
                 env=audit.env()):
        page = requests.page()
        page.goto(f"http://127.0.0.1:{port}/")
        page.locator(NODES).first.wait_for(state="attached", timeout=120_000)
    requests.context.close()
    assert_stayed_home(audit, requests, "solara", "llm-mesa")


def test_a_report_written_and_opened_in_a_browser_stays_on_the_machine(tmp_path, browser):  # noqa: F811
    audit = Audit(tmp_path / "audit")
    sweep, report = tmp_path / "sweep", tmp_path / "report.html"
    subprocess.run([CLI, "sweep", "--game", "consensus", "--conditions", "ba-local", "--policies", "mi-0.2",
                    "--seeds", "1", "--set", "n=12", "--set", "max_rounds=10", "--out", str(sweep), "--quiet"],
                   check=True, capture_output=True, env=audit.env())
    subprocess.run([CLI, "report", str(sweep), "--out", str(report)], check=True, capture_output=True, env=audit.env())
    requests = RequestLog(browser, allow_files=True)
    page = requests.page()
    page.goto(report.as_uri(), wait_until="load")
    page.wait_for_timeout(2000)  # anything the page would fetch after it loaded
    assert page.locator("img, svg").count() > 0
    requests.context.close()
    assert_stayed_home(audit, requests, "sweep", "report")


def readme_solaraviz_command() -> list[str]:
    """The documented command for the SolaraViz example, as written in the README and the site's pages (every
    place it is given must agree)."""
    pages = [REPO / "README.md", *(p for p in (REPO / "docs").rglob("*.md") if "_build" not in p.parts)]
    found = {" ".join(command.split()) for page in pages
             for command in re.findall(r"`(solara run [^`]*examples/solaraviz_\w+\.py)`", page.read_text())}
    assert len(found) == 1, f"the documentation gives the SolaraViz example's command as {sorted(found) or 'nothing'}"
    return shlex.split(found.pop())


def test_the_readmes_solaraviz_example_stays_on_the_machine_and_fills_its_cells(tmp_path, browser):  # noqa: F811
    audit = Audit(tmp_path / "audit")
    requests = RequestLog(browser)
    port = free_port()
    command = [sys.executable, "-m", *readme_solaraviz_command(), "--host", "127.0.0.1", "--port", str(port),
               "--no-open"]
    with serving(command, port, tmp_path / "solara.log", env=audit.env(), cwd=REPO):
        page = requests.page()
        page.goto(f"http://127.0.0.1:{port}/")
        page.wait_for_function(f"() => document.querySelectorAll('{NODES}').length === 36", timeout=120_000)
        page.locator(".llm-mesa-component-charts svg .mark-line path").first.wait_for(state="attached", timeout=60_000)
        page.wait_for_timeout(1500)  # the charts' last redraw
        cells_hold_their_pictures(page)
        lowest = max(range(36), key=lambda i: page.locator(NODES).nth(i).bounding_box()["y"])
        box = page.locator(NODES).nth(lowest).bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        tooltip = page.locator("#vg-tooltip-element")
        tooltip.wait_for(state="visible", timeout=10_000)
        agent = re.search(r"agent\s+(\d+)", tooltip.inner_text()).group(1)
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.wait_for_function(
            "a => document.querySelector('.llm-mesa-component-agent .llm-mesa-agent-select input').value === a",
            arg=agent, timeout=30_000)  # the lowest node in the cell selects its agent
        page.get_by_role("button", name="Step").first.click()
        wait_round(page, 1)
        wait_picture(page, 1)
        shoot(page, "solaraviz.png")
    requests.context.close()
    assert_stayed_home(audit, requests, "solara")


def cells_hold_their_pictures(page) -> None:
    """Every node and every chart inside its cell of Mesa's grid: nothing cut off, nothing out of reach."""
    outside = page.evaluate("""() => {
        const inside = (box, cell) => box.top >= cell.top - 1 && box.bottom <= cell.bottom + 1
                                      && box.left >= cell.left - 1 && box.right <= cell.right + 1;
        const out = [];
        for (const [cellSel, partSel] of [['.llm-mesa-component-network', 'svg g.nodes_marks path'],
                                          ['.llm-mesa-component-charts', '.llm-mesa-chart svg']]) {
            const cell = document.querySelector(cellSel).getBoundingClientRect();
            const parts = Array.from(document.querySelectorAll(cellSel + ' ' + partSel));
            if (!parts.length) { out.push(cellSel + ': nothing drawn'); }
            parts.forEach((p, i) => { const b = p.getBoundingClientRect();
                if (!inside(b, cell)) { out.push(`${cellSel} ${partSel} #${i}: ${Math.round(b.top)}..${Math.round(b.bottom)}`
                                                 + ` outside ${Math.round(cell.top)}..${Math.round(cell.bottom)}`); } });
        }
        return out; }""")
    assert outside == [], outside


def test_the_compare_page_the_sweep_browser_and_a_lab_stay_on_the_machine(tmp_path, browser):  # noqa: F811
    """The explorer's other pages and the lab's seat and host pages, each served by its command under the audit."""
    from test_lab_browser import running_lab, wait_round

    audit = Audit(tmp_path / "audit")
    requests = RequestLog(browser)
    port = free_port()
    with serving([CLI, "viz", "--game", "consensus", "--compare", "--port", str(port)], port,
                 tmp_path / "compare.log", env=audit.env()):
        page = requests.page()
        page.goto(f"http://127.0.0.1:{port}/")
        page.locator(NODES).first.wait_for(state="attached", timeout=120_000)
    sweep = tmp_path / "sweep"
    subprocess.run([CLI, "sweep", "--game", "consensus", "--conditions", "ba-none", "--policies", "voter",
                    "--seeds", "2", "--set", "n=12", "--set", "max_rounds=3", "--set", "baseline_permutations=0",
                    "--tables", "agents", "--quiet", "--out", str(sweep)], check=True, capture_output=True,
                   env=audit.env())
    port = free_port()
    with serving([CLI, "viz", "--sweep", str(sweep), "--port", str(port)], port, tmp_path / "sweep.log",
                 env=audit.env()):
        page = requests.page()
        page.goto(f"http://127.0.0.1:{port}/")
        page.locator(".llm-mesa-sweep-table").wait_for(timeout=120_000)
    with running_lab(tmp_path, "--game", "consensus", "--seats", "1", "--policy", "majority-inertia",
                     "--deadline", "5", "--set", "n=8", "--set", "max_rounds=2", env=audit.env()) as lab:
        host, seat = requests.page(), requests.page()
        host.goto(lab.urls["host"])
        seat.goto(lab.urls["seat 1"])
        wait_round(seat, 1, 2, timeout=120_000)
    requests.context.close()
    assert_stayed_home(audit, requests, "llm-mesa", "--compare", "--sweep", "lab")
