"""What a lab pilot costs beyond its people: K seats in Chromium beside N - K LLM agents on the stand-in.

Starts the loopback stand-in (``llm-mesa serve``, every call answered after ``--latency``
seconds, as majority-with-inertia would) and ``llm-mesa lab`` on the consensus game (the
study's BA graph at ``--n``, local communication), opens one Chromium context per seat,
and has every person click ``red`` the moment their question shows. Per round it times,
from the last seat's click to every seat's page showing the next round (the *turnaround*:
the round closed, the LLM agents' calls, the next observations, the pages re-rendered),
and sets it against the LLM latency the round cannot beat, since the calls are in flight
together with the people. Also: each seat page's load (link opened to its first question).
Medians and ranges, and the machine's load, which moves these figures on a shared machine.
No request leaves this machine.

    .venv/bin/python benchmarks/bench_lab.py [--seats 4] [--n 36] [--rounds 6] [--latency 1.0]
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
CLI = shutil.which("llm-mesa", path=str(Path(sys.executable).parent)) or "llm-mesa"
#: the seat shows round r's question, or the end of the game
NEXT = """r => { const q = document.querySelector('.llm-mesa-round');
                return (q && q.textContent.startsWith('Round ' + r + ' of')) || !!document.querySelector('.llm-mesa-lab-ended'); }"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, process: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{what} exited with {process.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise SystemExit(f"{what} did not listen on port {port}")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def summary(name: str, values: list[float]) -> str:
    if not values:
        return f"{name}: (none)"
    return f"{name}: median {statistics.median(values):.2f} s (range {min(values):.2f}-{max(values):.2f}, {len(values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seats", type=int, default=4)
    parser.add_argument("--n", type=int, default=36)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds the stand-in takes per call")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="bench-lab-"))
    serve_port, lab_port = free_port(), free_port()
    serve = subprocess.Popen([CLI, "serve", "--port", str(serve_port)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True, cwd=work)
    lab = None
    refused: list[str] = []
    try:
        wait_port(serve_port, serve, "llm-mesa serve")
        model = f"rule:majority-inertia?latency={args.latency:g}"
        lab = subprocess.Popen(
            [CLI, "lab", "--game", "consensus", "--seats", str(args.seats), "--set", f"n={args.n}", "--set",
             "topology=ba", "--set", "communication=local", "--set", f"max_rounds={args.rounds}", "--policy", "llm",
             "--base-url", f"http://127.0.0.1:{serve_port}/v1", "--model", model, "--deadline", "60", "--linger", "0",
             "--port", str(lab_port), "--out", str(work / "pilot")],
            stdout=subprocess.PIPE, stderr=open(work / "lab.log", "w"), text=True, start_new_session=True, cwd=work)
        urls = []
        while len(urls) < args.seats:
            line = lab.stdout.readline()
            if not line:
                raise SystemExit(f"the lab printed no links; see {work / 'lab.log'}")
            if line.startswith("seat "):
                urls.append(line.split(": ", 1)[1].strip())
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM,
                                        args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])

            def local_only(route):
                if (urlparse(route.request.url).hostname or "") in ("127.0.0.1", "localhost", "::1"):
                    route.continue_()
                else:
                    refused.append(route.request.url)
                    route.abort()

            pages = []
            for _ in urls:
                context = browser.new_context(viewport={"width": 1000, "height": 900})
                context.route("**/*", local_only)
                pages.append(context.new_page())
            loads, turnarounds = [], []
            opened = time.perf_counter()
            for page, url in zip(pages, urls):
                page.goto(url)
            for page in pages:
                page.locator(".llm-mesa-round", has_text="Round 1 of").wait_for(timeout=180_000)
                loads.append(time.perf_counter() - opened)
            for round_number in range(1, args.rounds + 1):
                for page in pages:
                    page.locator(".llm-mesa-round", has_text=f"Round {round_number} of").wait_for(timeout=120_000)
                for page in pages:
                    page.get_by_role("button", name="red", exact=True).click()
                clicked = time.perf_counter()
                if round_number == args.rounds:
                    break
                for page in pages:
                    page.wait_for_function(NEXT, arg=round_number + 1, timeout=120_000, polling="raf")
                if any(page.locator(".llm-mesa-lab-ended").count() for page in pages):
                    break  # consensus before the round limit
                turnarounds.append(time.perf_counter() - clicked)
            browser.close()
        lab.wait(timeout=120)
        load = os.getloadavg()
        print(f"lab pilot: {args.seats} seats in Chromium, {args.n - args.seats} LLM agents on the stand-in at "
              f"{args.latency:g} s a call (BA, local communication); load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
        print(summary("seat page load (link to first question, all seats opened together)", loads))
        print(summary("turnaround (last click to every seat's next question)", turnarounds))
        if turnarounds:
            print(f"turnaround beyond the LLM latency: median {statistics.median(turnarounds) - args.latency:.2f} s")
        print(f"requests refused (would have left this machine): {len(refused)}")
    finally:
        if lab is not None:
            stop(lab)
        stop(serve)


if __name__ == "__main__":
    main()
