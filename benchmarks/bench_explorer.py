"""Step-to-picture time of the explorer: from the Step click to the redrawn network in Chromium.

Starts ``llm-mesa viz`` on a free loopback port, opens the consensus page in headless
Debian Chromium (Playwright) at each N (``?n=N``, voter agents on a Barabási–Albert
graph, so colours keep moving), clicks Step and waits until the network picture's
own title names the new round: the game stepped on the server, the page was
re-rendered, the Vega-Lite spec crossed the websocket and the browser drew it.
One warm-up step, then the median (and range) of ``--steps`` steps per N. It also
prints the server-side cost of building the picture's spec, and the machine's load,
which moves these figures on a shared machine. No request leaves this machine.

    .venv/bin/python benchmarks/bench_explorer.py [--sizes 36,100,500,1000] [--steps 10]
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
TITLE = ".llm-mesa-network-chart svg .role-title-text"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_viz(port: int, log: Path) -> subprocess.Popen:
    cli = shutil.which("llm-mesa", path=str(Path(sys.executable).parent)) or "llm-mesa"
    with open(log, "w") as out:
        process = subprocess.Popen([cli, "viz", "--port", str(port), "--host", "127.0.0.1"],
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"llm-mesa viz exited with {process.returncode}; see {log}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return process
        time.sleep(0.3)
    raise SystemExit(f"llm-mesa viz did not listen on port {port}")


def spec_cost(n: int, repeats: int = 3) -> float:
    """Seconds the server spends building the network picture's spec for one round (median)."""
    from llm_mesa.visualization.consensus_game import agent_details, build_model, model_params
    from llm_mesa.visualization.controls import initial_values
    from llm_mesa.visualization.layout import drawing_layout
    from llm_mesa.visualization.network_view import NetworkState

    model = build_model({**initial_values(model_params()), "n": n, "policy_mix": "voter", "max_rounds": 200})
    layout = drawing_layout(model)
    times = []
    for _ in range(repeats):
        model.step()
        started = time.perf_counter()
        NetworkState.of_model(model, agent_details(model), layout=layout).spec()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def step_to_picture(browser, url: str, n: int, steps: int, refused: list[str]) -> list[float]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})

    def local_only(route):
        if (urlparse(route.request.url).hostname or "") in ("127.0.0.1", "localhost", "::1"):
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    context.route("**/*", local_only)
    page = context.new_page()
    page.goto(f"{url}?n={n}&policy_mix=voter&max_rounds=200")
    page.locator(TITLE).first.wait_for(state="attached", timeout=180_000)
    page.wait_for_function("() => document.querySelector('" + TITLE + "').textContent.startsWith('Round 0:')")
    button = page.get_by_role("button", name="Step")
    times = []
    for round_number in range(1, steps + 2):
        started = time.perf_counter()
        button.click()
        page.wait_for_function(
            "r => { const t = document.querySelector('" + TITLE + "'); return t && t.textContent.startsWith('Round ' + r + ':'); }",
            arg=round_number, timeout=120_000, polling="raf")
        elapsed = time.perf_counter() - started
        if round_number > 1:  # the first step warms the page up
            times.append(elapsed)
    context.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="36,100,500,1000", help="comma-separated N (default %(default)s)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per N (default %(default)s)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()
    refused: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        process = start_viz(port, Path(tmp) / "viz.log")
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM,
                                            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
                print(f"step-to-picture, consensus page, BA graph, voter agents; median of {args.steps} steps "
                      f"(after one warm-up) on {os.cpu_count()} cores")
                print(f"{'N':>6} {'median s':>9} {'min s':>7} {'max s':>7} {'spec build s':>13}")
                for n in sizes:
                    times = step_to_picture(browser, f"http://127.0.0.1:{port}/", n, args.steps, refused)
                    print(f"{n:>6} {statistics.median(times):>9.3f} {min(times):>7.3f} {max(times):>7.3f} "
                          f"{spec_cost(n):>13.3f}", flush=True)
                browser.close()
        finally:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=20)
    load_after = os.getloadavg()
    print(f"load average (1, 5, 15 min): before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    if refused:
        raise SystemExit(f"requests left localhost: {refused[:5]}")


if __name__ == "__main__":
    main()
