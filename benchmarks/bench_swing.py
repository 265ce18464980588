"""``--concurrency auto`` against a server whose latency swings whatever its load, beside fixed limits.

The server (``benchmarks/shaped_server.py --shape swing``, a process of its own) answers in 0.05 s for a
second, in 0.5 s the next, and so on, however many calls it holds (no 429, no timeout): a swing that
does not follow the load, which ``auto`` must not take for overload. The work is a sweep: the consensus
game, ``--games`` games of 36 agents on a BA network without talk, ``--in-flight`` (4) at once, so that
144 calls a round want a place; each agent's answer a colour at random (the games run to their round
limit). Each limit (``auto``, 36, 72, 144) plays the sweep ``--repeats`` times, interleaved, under the
machine's own load (reported). Reported per limit: the median wall time; for ``auto`` the limit's lowest
and highest value, its cuts and probes, and its trajectory in the median run (the limit every 0.1 s,
changes only); then auto's median time over the best fixed limit's.

    python benchmarks/bench_swing.py                  # 5 repeats
    python benchmarks/bench_swing.py --repeats 1      # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_client  # noqa: E402  (free ports, waiting for a server)

from llm_mesa.llm import Endpoint  # noqa: E402
from llm_mesa.llm.limits import forget_limits, limits_in_use  # noqa: E402
from llm_mesa.sweep import run_sweep  # noqa: E402

ANSWERS = "|".join(json.dumps({"colour": c, "reason": "r", "diary": "d"}) for c in ("red", "blue"))
LIMITS: tuple[int | str, ...] = ("auto", 36, 72, 144)


def one_sweep(base_url: str, limit: int | str, games: int, in_flight: int, rounds: int, out: Path) -> dict:
    """One sweep under ``limit``: its wall time and, for auto, the limit's report and trajectory."""
    forget_limits()
    endpoint = Endpoint(base_url, "m", concurrency=limit, timeout=60.0)
    trajectory: list[tuple[float, int]] = []
    done = threading.Event()
    started = time.perf_counter()

    def watch() -> None:  # the limit as the progress line would read it
        while not done.wait(0.1):
            report = limits_in_use([base_url]).get(base_url)
            if report and (not trajectory or trajectory[-1][1] != report["limit"]):
                trajectory.append((round(time.perf_counter() - started, 1), report["limit"]))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        run_sweep({"ba-none": {"n": 36, "topology": "ba", "communication": "none", "max_rounds": rounds,
                               "baseline_permutations": 0}}, {"llm": endpoint}, games, out,
                  games_in_flight=in_flight, store_mode="off", check_endpoints=False, game="consensus")
    finally:
        done.set()
        watcher.join()
    wall = time.perf_counter() - started
    manifest = json.loads((out / "manifest.json").read_text())
    return {"wall": wall, "report": manifest.get("concurrency_limits", {}).get(base_url, {}), "trajectory": trajectory}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--games", type=int, default=8)
    parser.add_argument("--in-flight", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    port = bench_client.free_port()
    server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("shaped_server.py")), "--port", str(port),
                               "--shape", "swing", "--capacity", "0", "--latency", "0.05", "--period", "1",
                               "--answers", ANSWERS])
    runs: dict[str, list[dict]] = {str(limit): [] for limit in LIMITS}
    print(f"load {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores", flush=True)
    try:
        bench_client.wait_for_port(port)
        base_url = f"http://127.0.0.1:{port}/v1"
        with tempfile.TemporaryDirectory() as tmp:
            for repeat in range(args.repeats):
                for limit in LIMITS:  # interleaved: a drift of the machine's load falls on every limit alike
                    out = Path(tmp) / f"{limit}-{repeat}"
                    runs[str(limit)].append(one_sweep(base_url, limit, args.games, args.in_flight, args.rounds, out))
    finally:
        server.terminate()
        server.wait(10)
    print(f"swing 0.05 s / 0.5 s each second: {args.games} consensus games of 36 agents x {args.rounds} rounds, "
          f"{args.in_flight} in flight; medians of {args.repeats}")
    medians = {name: statistics.median(r["wall"] for r in done) for name, done in runs.items()}
    for name, done in runs.items():
        line = f"  {name:>6} {medians[name]:7.2f} s  (runs: {', '.join(f'{r['wall']:.2f}' for r in done)})"
        if name == "auto":
            low = min(r["report"].get("low", 0) for r in done)
            line += (f"\n         lowest limit {low}, highest {max(r['report'].get('high', 0) for r in done)}; cuts "
                     f"{[r['report'].get('cuts') for r in done]}, probes {[r['report'].get('probes') for r in done]}")
            middle = sorted(done, key=lambda r: r["wall"])[len(done) // 2]
            lowest = min(done, key=lambda r: r["report"].get("low", 0))
            line += f"\n         trajectory of the median run (s, limit): {middle['trajectory']}"
            if lowest is not middle:
                line += f"\n         and of the run that went lowest: {lowest['trajectory']}"
        print(line)
    best = min((n for n in medians if n != "auto"), key=medians.get)
    print(f"  auto / best fixed ({best}): {medians['auto'] / medians[best]:.3f} of its time")
    print(f"load {os.getloadavg()[0]:.1f} (1 min) at the end")


if __name__ == "__main__":
    main()
