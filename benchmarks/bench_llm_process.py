"""Process-level LLM-game benchmark: one 36-agent game as a whole process from the shell, wall over the bound.

``benchmarks/bench_llm_game.py`` times a game inside a warm process; a user starts a
process: interpreter, imports, the endpoint's pre-flight check, the model, the rounds,
the exit. This times exactly that, from outside (``subprocess``, wall clock from start to
reaped), for ``--rounds`` rounds (default 3, 5 and 50) against the loopback stand-in
(``llm-mesa serve``, its own process) answering each call after ``--latency`` seconds
(default 1), the 1-token pre-flight call included. The bound is rounds x latency: a
game cannot be faster. Agents answer as stubborn rule agents on a BA graph with random
preferences, so no game ends early (checked: every run must play its rounds).

``--before LLM_MESA`` (or ``$LLM_MESA_BENCH_BEFORE``) is the ``llm-mesa`` command of
an older checkout's venv; its runs interleave with this checkout's (A B A B ...), so
the two figures come from one run under the same load. The import time of an LLM game
(the modules a consensus game with LLM agents loads, in a fresh interpreter) is
measured for both too.

    python benchmarks/bench_llm_process.py --before /path/to/old/.venv/bin/llm-mesa
    python benchmarks/bench_llm_process.py --quick          # CI: rounds 3 and 5 at 0.2 s, one run
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_client  # noqa: E402  (starts the loopback endpoint in its own process)

HERE = str(Path(sys.executable).with_name("llm-mesa"))
IMPORTS = ("import time; t = time.perf_counter(); import llm_mesa.cli, llm_mesa.models.consensus.model, "
           "llm_mesa.models.consensus.llm_policy, llm_mesa.llm.client; print(time.perf_counter() - t)")


def game_argv(command: str, base_url: str, rounds: int, latency: float) -> list[str]:
    return [command, "consensus", "--policy", "llm", "--base-url", base_url, "--model",
            f"rule:stubborn?latency={latency:g}", "--n", "36", "--topology", "ba", "--max-rounds", str(rounds),
            "--baseline-permutations", "0", "--no-record", "--json"]


def one_run(command: str, base_url: str, rounds: int, latency: float) -> float:
    started = time.perf_counter()
    done = subprocess.run(game_argv(command, base_url, rounds, latency), capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{command} failed ({done.returncode}): {done.stderr[-400:]}")
    played = json.loads(done.stdout)["rounds"]
    if played != rounds:
        raise SystemExit(f"{command} played {played} rounds of {rounds}: the bound would be wrong")
    return wall


def import_time(command: str, runs: int) -> float:
    python = str(Path(command).with_name("python"))
    times = [float(subprocess.run([python, "-c", IMPORTS], capture_output=True, text=True, check=True).stdout)
             for _ in range(runs)]
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", default=None, help="comma-separated rounds per game (default 3,5,50; quick 3,5)")
    parser.add_argument("--latency", type=float, default=None, help="seconds a call takes (default 1; quick 0.2)")
    parser.add_argument("--runs", type=int, default=None, help="runs of each command per rounds value (default 3; quick 1)")
    parser.add_argument("--before", default=os.environ.get("LLM_MESA_BENCH_BEFORE"),
                        help="the llm-mesa command of an older checkout's venv, interleaved with this one")
    parser.add_argument("--quick", action="store_true", help="small CI run")
    args = parser.parse_args(argv)
    rounds = [int(r) for r in (args.rounds or ("3,5" if args.quick else "3,5,50")).split(",")]
    latency = args.latency if args.latency is not None else (0.2 if args.quick else 1.0)
    runs = args.runs or (1 if args.quick else 3)
    commands = {"after": HERE, **({"before": args.before} if args.before else {})}

    server, base_url = bench_client.start_server()
    walls: dict[tuple[str, int], list[float]] = {}
    try:
        for command in commands.values():  # warm-up: file caches, the server's first answers
            one_run(command, base_url, 1, latency)
        for r in rounds:
            for _ in range(runs):
                for name, command in commands.items():
                    walls.setdefault((name, r), []).append(one_run(command, base_url, r, latency))
        imports = {name: import_time(command, max(5, runs)) for name, command in commands.items()}
    finally:
        server.terminate()
        server.wait(10)

    print(f"LLM game as a process: 36 agents, BA, stubborn rule answers, {latency:g} s a call, loopback endpoint in "
          f"its own process; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end; median of "
          f"{runs} run(s) each, interleaved")
    print(f"\n   {'rounds':>6} {'bound':>7} " + " ".join(f"{name + ' wall':>12} {name + '/bound':>13}" for name in commands)
          + ("   after/before" if "before" in commands else ""))
    for r in rounds:
        bound = r * latency
        cells = []
        for name in commands:
            wall = statistics.median(walls[(name, r)])
            cells.append(f"{wall:>10.2f} s {wall / bound:>12.3f}x")
        ratio = ""
        if "before" in commands:
            ratio = f"   {statistics.median(walls[('after', r)]) / statistics.median(walls[('before', r)]):>12.3f}"
        print(f"   {r:>6} {bound:>5.1f} s " + " ".join(cells) + ratio)
    print("\n   import time of an LLM game (cli, consensus model, LLM policy, client; median, fresh interpreter): "
          + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in imports.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
