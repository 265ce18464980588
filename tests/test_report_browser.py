"""The report in a real browser: headless Debian Chromium driven by Playwright, offline.

Builds a report from a small consensus sweep (rule policies, agents kept) and a
small naming sweep, opens the file in Chromium with every request routed: a
request for anything but the file itself (or a data: image) fails the test.
Every figure must be decoded and drawn (``naturalWidth > 0``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from llm_mesa.cli import main
from llm_mesa.sweep import run_sweep

CHROMIUM = os.environ.get("LLM_MESA_CHROMIUM", "/usr/bin/chromium")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("report-browser")
    conditions = {"ba-global": {"n": 12, "topology": "ba", "communication": "global"},
                  "cc-none": {"n": 12, "topology": "caveman", "communication": "none"}}
    run_sweep(conditions, "mi-0.2;voter", 3, root / "consensus",
              model_options={"max_rounds": 15, "baseline_permutations": 50}, tables=("agents",), game="consensus")
    run_sweep({"nl": {"mode": "nl", "memory": 0}, "schema-5": {"mode": "schema", "memory": 5}}, "echo;noisy:p=0.3", 3,
              root / "naming", game="naming", model_options={"n": 12, "max_rounds": 15}, tables=("rounds",))
    out = root / "report.html"
    assert main(["report", str(root / "consensus"), str(root / "naming"), "--out", str(out)]) == 0
    return out


def test_every_figure_renders_and_no_request_leaves_the_page(report):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (see scripts/install_explorer_prereqs.sh)")
    playwright_api = pytest.importorskip("playwright.sync_api")
    outside: list[str] = []
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM,
                                    args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})

            def route(request_route):
                url = request_route.request.url
                if url.startswith(("file:", "data:")):
                    request_route.continue_()
                else:
                    outside.append(url)
                    request_route.abort()

            context.route("**/*", route)
            page = context.new_page()
            page.on("request", lambda r: None if r.url.startswith(("file:", "data:")) else outside.append(r.url))
            page.goto(report.as_uri(), wait_until="load")
            images = page.locator("img")
            count = images.count()
            assert count >= 15
            page.wait_for_function("() => Array.from(document.images).every(i => i.complete)", timeout=30_000)
            widths = page.evaluate("() => Array.from(document.images).map(i => [i.alt, i.naturalWidth, i.naturalHeight])")
            assert len(widths) == count
            blank = [alt for alt, width, height in widths if not (width > 0 and height > 0)]
            assert blank == [], f"figures not drawn: {blank}"
            panels = page.locator(".panel")
            assert panels.count() == count  # one figure per panel, each with its table
            for index in range(panels.count()):
                assert panels.nth(index).locator("table").count() >= 1
            page.screenshot(path=str(report.with_suffix(".png")), full_page=False)
        finally:
            browser.close()
    assert outside == [], f"requests left the page: {outside}"
