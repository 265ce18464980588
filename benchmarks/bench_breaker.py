"""What a sweep spends before its circuit breaker stops it, against servers whose every game fails.

The server answers the pre-flight soundly, then gives one game malformed answers and the next answers
that decide nothing, in turn (the shape that fooled a breaker counting a streak of one cause: it played
every game). The sweep is the consensus game's ``cc-local`` condition at n=8, one round (8 calls a game,
a reminder after an unreadable answer), one attempt a call, ``--games 12`` games, under
``--games-in-flight`` 1 and 4. Reported: the exit status, games played, calls the server received, and
the breaker's line.

    python benchmarks/bench_breaker.py
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import sys
import tempfile
import threading
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from hostile_server import HostileServer, completion, game_handler, raw  # noqa: E402

from llm_mesa.cli import main  # noqa: E402


def alternate(calls_a_game: int = 8):
    """Game by game: every call of one game (its reminders too) malformed, every call of the next answered with
    text that decides nothing, and so on (a game's first asks come in a block when one game is in flight)."""
    from aiohttp import web

    lock, asked = threading.Lock(), [0]

    async def hostile(request, body):
        with lock:
            reminder = len(json.loads(body).get("messages", [])) > 2  # the question's two, then a reminder
            if not reminder:
                asked[0] += 1
            malformed = ((asked[0] - 1) // calls_a_game) % 2 == 0
        await asyncio.sleep(0.02)
        return raw("not json") if malformed else web.json_response(completion("I like turtles"))
    return HostileServer(game_handler(hostile))


def sweep(base_url: str, model: str, games: int, in_flight: int, out: Path) -> tuple[int, str]:
    argv = ["sweep", "--game", "consensus", "--conditions", "cc-local", "--policies", "llm", "--base-url", base_url,
            "--model", model, "--seeds", str(games), "--set", "n=8", "--set", "max_rounds=1",
            "--set", "baseline_permutations=0", "--max-attempts", "1", "--games-in-flight", str(in_flight),
            "--out", str(out), "--quiet"]
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        status = main(argv)
    lines = err.getvalue().strip().splitlines()
    return status, lines[-1] if lines else ""


def played(out: Path) -> int:
    from llm_mesa.sweep import read_sweep

    return len(read_sweep(out)) if out.exists() else 0


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for in_flight in (1, 4):
            with alternate() as server:
                out = Path(tmp) / f"alternate-{in_flight}"
                status, line = sweep(server.base_url, "m", args.games, in_flight, out)
                calls = len(server.completions())
            print(f"alternate, {in_flight} in flight: exit {status}, {played(out)} of {args.games} games, "
                  f"{calls} calls\n  {line}")


if __name__ == "__main__":
    main_()
