"""The record store's bytes a call at the demo's settings, and the CPU a call its rows cost.

The demo's LLM game (``scripts/demo.sh``: 36 agents, BA, local messages, 10 rounds, seed 1)
recorded against the loopback stand-in: the file's size over its calls as the command leaves
it (no VACUUM: what a user's disk holds) and after VACUUM, and the CPU of packing a row
(``compact.Packer.pack``: JSON, shared texts, compression), which the store's writer thread
does off the loop. 568 bytes a call when rows were compressed against the first row alone;
512 before the history block.

    python benchmarks/bench_store.py [--rounds 10]       # quick: the same (it takes seconds)
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from llm_mesa.cli import main as cli
from llm_mesa.llm.compact import Packer
from llm_mesa.llm.store import ResponseStore
from llm_mesa.loopback.server import LoopbackServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="CI (the same run: it takes seconds)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, LoopbackServer() as server:
        record = Path(tmp) / "calls.sqlite"
        argv = ["consensus", "--topology", "ba", "--n", "36", "--seed", "1", "--comm", "local", "--max-rounds",
                str(args.rounds), "--policy", "llm", "--base-url", server.base_url, "--model", "rule:majority-inertia",
                "--record", str(record), "--out", str(Path(tmp) / "game")]
        if cli(argv) != 0:
            raise SystemExit("the demo game failed")
        calls = json.loads((Path(tmp) / "game" / "summary.json").read_text())["calls"]
        left = sum(f.stat().st_size for f in Path(tmp).iterdir() if f.name.startswith("calls.sqlite"))
        rows = ResponseStore(record, "replay").rows()
        conn = sqlite3.connect(record)
        conn.execute("VACUUM")
        conn.close()
        vacuumed = record.stat().st_size
    packer = Packer()
    started = time.process_time()
    for row in rows:
        packer.pack(row["request"], row["response"])
    pack_us = 1e6 * (time.process_time() - started) / len(rows)
    print(f"demo game ({args.rounds} rounds, {calls} calls): {left / calls:.0f} bytes a call as left "
          f"(goal <= 512), {vacuumed / calls:.0f} after VACUUM; packing {pack_us:.0f} us a row (writer thread)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
