"""Step-to-picture time of the explorer: from the Step click to the redrawn picture in Chromium.

Starts ``llm-mesa viz`` on a free loopback port, opens a game's page in headless Debian
Chromium (Playwright) at each size, clicks Step and waits until the picture's own title
names the new round: the game stepped on the server, the page was re-rendered, the
Vega-Lite spec crossed the websocket and the browser drew it. ``--game consensus`` (the
default): N agents (``?n=N``), voter agents on a Barabási–Albert graph, so colours keep
moving. ``--game pd_grid``: Mesa's spatial prisoner's dilemma on a SIZE x SIZE grid
(``?width=SIZE&height=SIZE``; Mesa's own page is 50 x 50), or any other grid game of
``--game`` with a width and a height.
One warm-up step, then the median (and range) of ``--steps`` steps per N. It also
prints the server-side cost of building the picture's spec, and the machine's load,
which moves these figures on a shared machine. No request leaves this machine.

``--before REV`` also serves the explorer as it was at git revision REV (its
``llm_mesa``, ``models`` and ``visualization`` laid out in a temporary folder put
first on ``PYTHONPATH``) and measures both in the same run, N by N, before then
after, so a change is judged under one load.

    .venv/bin/python benchmarks/bench_explorer.py [--sizes 36,100,500,1000] [--steps 10] [--before be873dd]
    .venv/bin/python benchmarks/bench_explorer.py --game pd_grid --sizes 50 --steps 10 [--before REV]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

CHROMIUM = os.environ.get("LLM_MESA_CHROMIUM", "/usr/bin/chromium")
NETWORK_CHART = ".llm-mesa-network-chart"
GRID_CHART = ".llm-mesa-grid-chart"
#: the picture names round r: its SVG title, or (a picture drawn on a canvas) its element's data-title
DRAWN = """([chart, r]) => {
    const said = 'Round ' + r + ':';
    return Array.from(document.querySelectorAll(chart + ' svg .role-title-text')).some(t => t.textContent.startsWith(said))
        || Array.from(document.querySelectorAll(chart + ' [data-title]')).some(e => e.dataset.title.startsWith(said));
}"""


def page_query(game: str, size: int) -> str:
    """The page's link for one size: N agents of the consensus game, else a SIZE x SIZE grid."""
    if game == "consensus":
        return f"?n={size}&policy_mix=voter&max_rounds=200"
    return f"?width={size}&height={size}&max_rounds=200"


def chart_of(game: str) -> str:
    return NETWORK_CHART if game == "consensus" else GRID_CHART


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_viz(port: int, log: Path, site: Path | None = None, game: str = "consensus") -> subprocess.Popen:
    """``llm-mesa viz`` of this tree, or of the tree laid out in ``site`` (another revision).

    It runs as ``python -m llm_mesa.cli``, not through the installed ``llm-mesa`` script:
    that script names this tree's entry function, which an older tree may lack (be873dd's
    ``llm_mesa.cli`` has ``main`` alone); every revision's ``cli`` runs as a module.
    """
    env = dict(os.environ)
    if site is not None:  # the explorer of another revision, found before the installed one
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    with open(log, "w") as out:
        # run outside the work tree: Solara puts the working folder first on sys.path
        process = subprocess.Popen([sys.executable, "-m", "llm_mesa.cli", "viz", "--port", str(port), "--host",
                                    "127.0.0.1", "--game", game],
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env,
                                   cwd=str(site.parent) if site is not None else None)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:  # the log lives in a temporary folder that goes with the run: show it
            raise SystemExit(f"llm-mesa viz{' of ' + str(site) if site else ''} exited with {process.returncode}:\n"
                             + log.read_text()[-3000:])
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return process
        time.sleep(0.3)
    raise SystemExit(f"llm-mesa viz did not listen on port {port}")


def spec_cost(n: int, repeats: int = 3, game: str = "consensus") -> float:
    """Seconds the server spends on one round's picture: the view's snapshot and the picture's spec (median)."""
    from urllib.parse import parse_qsl

    from llm_mesa.registry import get_game
    from llm_mesa.views import view_of
    from llm_mesa.views.controls import initial_values
    from llm_mesa.visualization.network_view import spec_of

    view = view_of(get_game(game))
    given = dict(parse_qsl(page_query(game, n).lstrip("?")))
    model = view.build_from({**initial_values(view.controls()), **view.check(given)})
    times = []
    for _ in range(repeats):
        model.step()
        started = time.perf_counter()
        spec_of(view.snapshot(model).picture)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def revision_site(revision: str, into: Path) -> Path:
    """The project at ``revision`` laid out as an installed ``llm_mesa`` (models and visualization inside it)."""
    root = Path(__file__).resolve().parents[1]
    archive = subprocess.run(["git", "-C", str(root), "archive", revision, "llm_mesa", "models", "visualization"],
                             check=True, capture_output=True).stdout
    tree = into / "tree"
    tree.mkdir()
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    site = into / "site"
    site.mkdir()
    shutil.move(str(tree / "llm_mesa"), site / "llm_mesa")
    shutil.move(str(tree / "models"), site / "llm_mesa" / "models")
    shutil.move(str(tree / "visualization"), site / "llm_mesa" / "visualization")
    return site


def step_to_picture(browser, url: str, n: int, steps: int, refused: list[str], game: str = "consensus") -> list[float]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})

    def local_only(route):
        if (urlparse(route.request.url).hostname or "") in ("127.0.0.1", "localhost", "::1"):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    context.route("**/*", local_only)
    page = context.new_page()
    chart = chart_of(game)
    page.goto(url + page_query(game, n))
    page.wait_for_function(DRAWN, arg=[chart, 0], timeout=180_000)
    button = page.get_by_role("button", name="Step")
    times = []
    for round_number in range(1, steps + 2):
        started = time.perf_counter()
        button.click()
        page.wait_for_function(DRAWN, arg=[chart, round_number], timeout=120_000, polling="raf")
        elapsed = time.perf_counter() - started
        if round_number > 1:  # the first step warms the page up
            times.append(elapsed)
    context.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", default="consensus", help="consensus (N agents) or a grid game such as pd_grid "
                                                             "(SIZE x SIZE cells); default %(default)s")
    parser.add_argument("--sizes", default=None, help="comma-separated N, or grid sides (default 36,100,500,1000; "
                                                      "a grid game: 50, Mesa's own)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per N (default %(default)s)")
    parser.add_argument("--before", metavar="REV", default=None,
                        help="also measure the explorer of git revision REV, in the same run")
    args = parser.parse_args()
    sizes = [int(s) for s in (args.sizes or ("36,100,500,1000" if args.game == "consensus" else "50")).split(",")
             if s.strip()]
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()
    refused: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        servers = {}
        versions = [("before", revision_site(args.before, Path(tmp))), ("after", None)] if args.before else [("after", None)]
        try:
            for name, site in versions:
                port = free_port()
                servers[name] = (port, start_viz(port, Path(tmp) / f"viz-{name}.log", site, args.game))
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM,
                                            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
                what = "consensus page, BA graph, voter agents" if args.game == "consensus" else \
                    f"{args.game} page, SIZE x SIZE grid"
                print(f"step-to-picture, {what}; median of {args.steps} steps "
                      f"(after one warm-up) on {os.cpu_count()} cores" + (f"; before = {args.before}" if args.before else ""))
                print(f"{'N':>6} {'version':>8} {'median s':>9} {'min s':>7} {'max s':>7} {'spec build s':>13}")
                for n in sizes:
                    medians = {}
                    for name, _ in versions:
                        port = servers[name][0]
                        times = step_to_picture(browser, f"http://127.0.0.1:{port}/", n, args.steps, refused, args.game)
                        medians[name] = statistics.median(times)
                        cost = f"{spec_cost(n, game=args.game):>13.3f}" if name == "after" else f"{'-':>13}"
                        print(f"{n:>6} {name:>8} {medians[name]:>9.3f} {min(times):>7.3f} {max(times):>7.3f} {cost}",
                              flush=True)
                    if "before" in medians:
                        print(f"{n:>6} {'after/before':>8} {medians['after'] / medians['before']:>9.2f}x", flush=True)
                browser.close()
        finally:
            for _, process in servers.values():
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=20)
    load_after = os.getloadavg()
    print(f"load average (1, 5, 15 min): before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    if refused:
        raise SystemExit(f"requests left localhost: {refused[:5]}")


if __name__ == "__main__":
    main()
