"""Does a flood of requests for assets the lab lacks slow a seat's page more than any flood of requests would?

Starts ``llm-mesa lab`` (one seat, consensus) with ``SOLARA_ASSETS_CDN`` pointing at a black
hole on this machine (a listener that never answers: where a fetching asset route would
hang), then times ``GET /_solara/cdn/requirejs@2.3.6/require.js`` (the file every seat's
page loads first) ``--samples`` times: alone; while ``--flood`` threads keep asking for files
the cache lacks (``left-pad@1.3.N/index.js``); and while as many threads keep asking for a
file it holds (font-awesome's css). On a machine of few cores any flood costs the server its
CPU; what matters is the ratio of the two floods: about 1 when a missing file costs what any
request costs (a 404 at once), where a fetching route stalled the page for tens of seconds.
Prints the medians, the ratios, the floods' own answers and how many connections reached the
black hole. No request leaves this machine.

    .venv/bin/python benchmarks/bench_lab_assets.py [--flood 50] [--samples 40]
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
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

CLI = shutil.which("llm-mesa", path=str(Path(sys.executable).parent)) or "llm-mesa"
REQUIRE = "requirejs@2.3.6/require.js"
PRESENT = "font-awesome@4.5.0/css/font-awesome.min.css"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed_get(url: str) -> tuple[int, float]:
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    return status, time.perf_counter() - start


def shown(times: list[float]) -> str:
    return f"median {statistics.median(times) * 1000:.1f} ms over {len(times)} (range {min(times) * 1000:.1f}-" \
           f"{max(times) * 1000:.1f})"


def under_flood(args: argparse.Namespace, flood_url, page_url: str) -> tuple[list[float], list[tuple[int, float]]]:
    """``page_url``'s times while ``args.flood`` threads keep asking for ``flood_url(thread, i)``; the flood's answers."""
    stop = threading.Event()
    answers: list[tuple[int, float]] = []

    def ask(k: int) -> None:
        i = 0
        while not stop.is_set():
            answers.append(timed_get(flood_url(k, i)))
            i += 1

    askers = [threading.Thread(target=ask, args=(k,), daemon=True) for k in range(args.flood)]
    for asker in askers:
        asker.start()
    time.sleep(0.5)
    times = [timed_get(page_url)[1] for _ in range(args.samples)]
    stop.set()
    for asker in askers:
        asker.join(timeout=150)
    return times, answers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flood", type=int, default=50, help="threads asking for missing assets at once")
    parser.add_argument("--samples", type=int, default=40, help="require.js fetches, alone and under the flood")
    args = parser.parse_args()
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(512)
    reached: list[socket.socket] = []
    threading.Thread(target=lambda: [reached.append(hole.accept()[0]) for _ in iter(int, 1)], daemon=True).start()
    port = free_port()
    folder = Path(tempfile.mkdtemp(prefix="bench-lab-assets-"))
    env = {**os.environ, "SOLARA_ASSETS_CDN": f"http://127.0.0.1:{hole.getsockname()[1]}/npm/"}
    lab = subprocess.Popen([CLI, "lab", "--game", "consensus", "--seats", "1", "--set", "n=8", "--port", str(port)],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=folder, env=env,
                           start_new_session=True)
    try:
        while not lab.stdout.readline().startswith("host: "):
            if lab.poll() is not None:
                raise SystemExit(f"the lab exited with {lab.returncode}")
        base = f"http://127.0.0.1:{port}/_solara/cdn"
        timed_get(f"{base}/{REQUIRE}")  # warm
        alone = [timed_get(f"{base}/{REQUIRE}")[1] for _ in range(args.samples)]
        missing = under_flood(args, lambda k, i: f"{base}/left-pad@1.3.{k}-{i}/index.js", f"{base}/{REQUIRE}")
        present = under_flood(args, lambda k, i: f"{base}/{PRESENT}", f"{base}/{REQUIRE}")
    finally:
        os.killpg(lab.pid, signal.SIGTERM)
        lab.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)
    a = statistics.median(alone)
    print(f"require.js alone:                  {shown(alone)}")
    for name, (flooded, answers) in (("missing files", missing), ("a file it holds", present)):
        print(f"require.js under a flood of {name + ':':16} {shown(flooded)}, ratio to alone "
              f"{statistics.median(flooded) / a:.1f}; the flood: {len(answers)} requests, status "
              f"{sorted({s for s, _ in answers})}, median {statistics.median(t for _, t in answers) * 1000:.1f} ms")
    print(f"ratio of the floods (missing / held): {statistics.median(missing[0]) / statistics.median(present[0]):.2f}")
    print(f"connections to the CDN set in SOLARA_ASSETS_CDN: {len(reached)}")
    print(f"machine load (1 min): {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
