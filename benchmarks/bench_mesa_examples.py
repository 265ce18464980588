"""Mesa's example games with LLM agents (issue 25): what their order of decisions costs in wall time.

Each game plays against the stand-in (``llm-mesa serve`` in its own process) answering as Mesa's rule
(``GAME:mesa``) after a fixed ``--latency``, so every game here is the ``mesa`` rule's game (checked:
the rounds tables are compared) and the wall time is the order's cost alone:

* Schelling and pd_grid under ``Simultaneous`` ask every agent of a step at once: wall ~ steps x latency;
* pd_grid under ``Random`` and ``Sequential`` chain a turn only behind its neighbours' earlier turns: wall ~
  depth x latency (``depth``: each step's longest chain of turns, summed);
* Boltzmann asks one agent at a time (every move draws from the stream the earlier gifts drew from):
  wall ~ calls x latency.

Printed per game: calls, depth, wall, wall / (depth x latency) and wall / (calls x latency), and the
load average before and after (the machine is shared).

    python benchmarks/bench_mesa_examples.py               # Mesa's default sizes, 0.2 s a call
    python benchmarks/bench_mesa_examples.py --quick       # CI: small grids, 0.05 s a call
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_client  # noqa: E402  (the stand-in in its own process)

from llm_mesa import PlayRequest, get_game  # noqa: E402
from llm_mesa.llm import Endpoint  # noqa: E402
from llm_mesa.play import play as play_game  # noqa: E402

FULL = [
    ("schelling", {"max_rounds": 4}),
    ("boltzmann_wealth_model", {"max_rounds": 3}),
    ("pd_grid", {"activation_order": "Simultaneous", "max_rounds": 2}),
    ("pd_grid", {"activation_order": "Random", "max_rounds": 2}),
    ("pd_grid", {"activation_order": "Sequential", "width": 20, "height": 20, "max_rounds": 1}),
]
QUICK = [
    ("schelling", {"width": 10, "height": 10, "max_rounds": 2}),
    ("boltzmann_wealth_model", {"n": 20, "width": 5, "height": 5, "max_rounds": 2}),
    ("pd_grid", {"activation_order": "Simultaneous", "width": 10, "height": 10, "max_rounds": 2}),
    ("pd_grid", {"activation_order": "Random", "width": 10, "height": 10, "max_rounds": 2}),
    ("pd_grid", {"activation_order": "Sequential", "width": 6, "height": 6, "max_rounds": 1}),
]


def play(base_url: str, name: str, parameters: dict, latency: float, seed: int) -> dict:
    game = get_game(name)
    endpoint = Endpoint(base_url, f"{name}:mesa?latency={latency:g}", concurrency=512, timeout=60.0, max_attempts=3)
    started = time.perf_counter()
    llm = play_game(game, PlayRequest(parameters, "llm", seed, ("rounds",), endpoint))
    wall = time.perf_counter() - started
    rule = play_game(game, PlayRequest(parameters, "mesa", seed, ("rounds",)))
    depth = llm.row.get("depth", llm.row["rounds"])  # Schelling: one level a step
    return {"game": name, "order": parameters.get("activation_order", "-"), "calls": llm.row["calls"], "depth": depth,
            "wall_s": wall, "wall/(depth x latency)": wall / (depth * latency),
            "wall/(calls x latency)": wall / (llm.row["calls"] * latency),
            "same as mesa": llm.tables["rounds"].equals(rule.tables["rounds"])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small grids at 0.05 s a call (CI)")
    parser.add_argument("--latency", type=float, default=None, help="seconds the stand-in takes a call")
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args(argv)
    latency = args.latency if args.latency is not None else (0.05 if args.quick else 0.2)
    print(f"load before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores; {latency:g} s a call")
    server, base_url = bench_client.start_server()
    try:
        rows = [play(base_url, name, parameters, latency, args.seed) for name, parameters in (QUICK if args.quick else FULL)]
    finally:
        server.terminate()
        server.wait()
    for row in rows:
        print("  " + "  ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
    print(f"load after: {os.getloadavg()[0]:.2f}")
    return 0 if all(row["same as mesa"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
