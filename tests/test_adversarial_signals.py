"""SIGTERM (and SIGHUP) end a command as Ctrl-C does: nothing half-written, no hidden leftovers.

The default action of SIGTERM kills the process where it is: a ``--out`` staged next to its
destination stayed behind as a hidden folder. Each row stops a command while it writes
(its Parquet writer made to wait there), sends the signal, and looks at what is left.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llm_mesa.llm.stopping import GRACE_S

#: the child makes its Parquet writer wait after its first file, so the signal lands mid-write
CHILD = """
import pathlib, sys, time
import pandas as pd
write = pd.DataFrame.to_parquet
def slow(self, path, *args, **kwargs):
    write(self, path, *args, **kwargs)
    pathlib.Path({ready!r}).touch()
    time.sleep(120)
pd.DataFrame.to_parquet = slow
from llm_mesa.cli import main
sys.exit(main({argv!r}))
"""

COMMANDS = {
    "consensus --out": lambda out: ["consensus", "--n", "8", "--topology", "caveman", "--max-rounds", "2",
                                    "--baseline-permutations", "0", "--out", str(out)],
    "sweep --out": lambda out: ["sweep", "--game", "consensus", "--conditions", "ws-none", "--policies", "voter",
                                "--seeds", "2", "--set", "max_rounds=2", "--set", "baseline_permutations=0",
                                "--tables", "agents", "--quiet", "--out", str(out)],
}


def stop_while_writing(tmp_path: Path, command: str, signum: int) -> subprocess.CompletedProcess:
    ready, out = tmp_path / "ready", tmp_path / "work" / "out"
    out.parent.mkdir()
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(ready=str(ready), argv=COMMANDS[command](out))],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not ready.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ready.exists(), child.communicate()[1][-800:]
    child.send_signal(signum)
    stdout, stderr = child.communicate(timeout=60)
    return subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr)


def leftovers(folder: Path) -> list[str]:
    """Hidden or temporary files and folders anywhere under ``folder`` (a sweep's lock aside)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if (p.name.startswith(".") and p.name != ".lock") or p.name.startswith(".tmp-"))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["TERM", "HUP", "INT"])
def test_a_signal_while_a_run_is_written_leaves_nothing_behind(tmp_path, signum):
    done = stop_while_writing(tmp_path, "consensus --out", signum)
    assert done.returncode == 128 + signum, done.stderr[-800:]
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert os.listdir(tmp_path / "work") == []  # neither the run nor its hidden staging folder


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_a_signal_while_a_sweep_writes_leaves_no_temporary_part_and_the_rerun_completes(tmp_path, signum):
    done = stop_while_writing(tmp_path, "sweep --out", signum)
    assert done.returncode == 128 + signum, done.stderr[-800:]
    out = tmp_path / "work" / "out"
    assert leftovers(out) == []
    from llm_mesa.cli import main
    from llm_mesa.sweep import read_sweep

    assert main(COMMANDS["sweep --out"](out)) == 0
    assert len(read_sweep(out)) == 2 and read_sweep(out, "agents")["seed"].nunique() == 2


# -- a signal stops spending at once -----------------------------------------------------------------

class SlowServer:
    """A loopback game server whose every completion takes ``latency`` seconds; it keeps when each request
    arrived and which ones it answered (the clock is this process's, as the test's)."""

    def __init__(self, latency: float) -> None:
        from hostile_server import HostileServer

        self.latency, self.arrived, self.answered = latency, [], []
        self.server = HostileServer(self.handle)

    async def handle(self, request, body):
        import asyncio

        from aiohttp import web
        from hostile_server import completion, is_probe

        if request.path.endswith("/models"):
            return web.json_response({"data": [{"id": "m"}]})
        if request.path.endswith("/answered"):  # how many it has answered (the test's own child asks)
            return web.Response(text=str(len(self.answered)))
        if is_probe(body):
            return web.json_response(completion("x"))
        self.arrived.append(time.monotonic())
        await asyncio.sleep(self.latency)
        self.answered.append(body)
        colour = "red" if hashlib.sha256(body).digest()[0] % 2 else "blue"  # a coin per prompt: no quick consensus
        return web.json_response(completion(json.dumps({"colour": colour, "reason": "r", "diary": "d"})))

    def __enter__(self):
        self.server.__enter__()
        self.base_url = self.server.base_url
        return self

    def __exit__(self, *exc):
        self.server.__exit__(*exc)


def llm_sweep(base_url: str, out: Path, games: int = 6) -> list[str]:
    """6 games of 8 LLM agents in flight, 3 rounds each: 48 calls wanted at once, 8 let in (the rest queued)."""
    return [sys.executable, "-m", "llm_mesa.cli", "sweep", "--game", "consensus", "--conditions", "cc-local",
            "--policies", "llm", "--base-url", base_url, "--model", "m", "--seeds", str(games), "--set", "n=8",
            "--set", "max_rounds=3", "--set", "baseline_permutations=0", "--games-in-flight", str(games),
            "--concurrency", "8", "--max-attempts", "1", "--quiet", "--out", str(out)]


#: (id, the signal, the server's latency, answers before the signal): calls in flight answered within the grace,
#: or cut off by it (a server slower than ``stopping.GRACE_S``)
STOPS = [("TERM, in flight awaited", signal.SIGTERM, 1.0, 8), ("INT, in flight awaited", signal.SIGINT, 1.0, 8),
         ("HUP, in flight awaited", signal.SIGHUP, 1.0, 8), ("TERM, in flight cut off", signal.SIGTERM, 30.0, 0)]


@pytest.mark.parametrize("signum, latency, first", [r[1:] for r in STOPS], ids=[r[0] for r in STOPS])
def test_a_signal_stops_spending_at_once_keeps_every_answer_and_the_rerun_pays_for_none_twice(tmp_path, signum,
                                                                                              latency, first):
    from llm_mesa.llm.store import ResponseStore
    from llm_mesa.sweep import read_sweep

    out = tmp_path / "sweep"
    with SlowServer(latency=latency) as server:
        child = subprocess.Popen(llm_sweep(server.base_url, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        deadline = time.monotonic() + 120
        while (len(server.answered) < first or len(server.arrived) < first + 8) and child.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.02)  # the first answered (recorded); the next 8 in flight, the rest queued behind them
        assert len(server.answered) >= first and len(server.arrived) >= first + 8, child.communicate()[1][-800:]
        signalled, sent_before = time.monotonic(), len(server.arrived)
        child.send_signal(signum)
        _, stderr = child.communicate(timeout=60)
        exited = time.monotonic() - signalled
        answered_first = list(server.answered)
    after = [t for t in server.arrived if t > signalled]
    # the figures the closing note quotes: calls that arrived after the signal (0 expected beyond any already
    # on the wire), calls answered in the grace and recorded, the exit
    print(f"signal {signum}: {sent_before} calls sent before, {len(after)} arrived after; "
          f"{len(answered_first)} answered in all; exit {child.returncode} {exited:.2f} s after the signal")
    assert child.returncode == 128 + signum, stderr[-800:]
    said = [line for line in stderr.strip().splitlines() if not line.startswith("note:")]
    assert "Traceback" not in stderr and len(said) == 1 and said[0].startswith("llm-mesa: "), stderr
    assert [t for t in after if t > signalled + 0.25] == []  # no call sent after the signal
    assert leftovers(out) == []
    kept = read_sweep(out) if (out / "games").exists() else None
    assert kept is None or (kept["rounds"] == 3).all() or kept["consensus"].all()  # no unfinished game written
    if answered_first:
        recorded = ResponseStore(out / "calls.sqlite", "replay")
        assert len(recorded) == len(answered_first)  # every answer received is in the store
        recorded.close()
    if latency > GRACE_S:
        assert len(answered_first) == first  # the calls in flight were cut off, not waited for

    with SlowServer(latency=0.0) as again:  # the same command resumes
        done = subprocess.run(llm_sweep(again.base_url, out), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-800:]
        paid_again = len(again.answered)
    games = read_sweep(out)
    resumed = games if kept is None else games[~games["seed"].isin(kept["seed"])]
    assert len(games) == 6 and int(resumed["replayed_calls"].sum()) == len(answered_first)  # every answer replayed
    assert paid_again == int(resumed["calls"].sum()) - len(answered_first)  # and only the rest paid for


def test_a_signal_stops_a_single_llm_game_the_same_way_and_replay_fill_resumes_it(tmp_path):
    """The game's own command: its one thread waits on the round (``run_sync``), not on a sweep's games."""
    from llm_mesa.llm.store import ResponseStore

    store = tmp_path / "calls.sqlite"
    game = ["consensus", "--policy", "llm", "--model", "m", "--n", "16", "--topology", "caveman", "--comm", "local",
            "--max-rounds", "3", "--baseline-permutations", "0", "--concurrency", "4", "--max-attempts", "1", "--json"]
    with SlowServer(latency=1.0) as server:
        child = subprocess.Popen([sys.executable, "-m", "llm_mesa.cli", *game, "--base-url", server.base_url,
                                  "--record", str(store)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while (len(server.answered) < 4 or len(server.arrived) < 8) and child.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        signalled = time.monotonic()
        child.send_signal(signal.SIGTERM)
        _, stderr = child.communicate(timeout=60)
        answered_first = len(server.answered)
    assert child.returncode == 143 and "Traceback" not in stderr, stderr[-800:]
    assert [t for t in server.arrived if t > signalled + 0.25] == []
    recorded = ResponseStore(store, "replay")
    assert len(recorded) == answered_first == 8  # the 4 answered and the 4 in flight, awaited
    recorded.close()
    with SlowServer(latency=0.0) as again:
        done = subprocess.run([sys.executable, "-m", "llm_mesa.cli", *game, "--base-url", again.base_url,
                               "--replay", str(store), "--replay-fill"], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-800:]
        row = json.loads(done.stdout)
    assert len(again.answered) == row["calls"] - answered_first  # the recorded answers replayed, not paid again


#: the command, with a thread that sends SIGTERM to itself (a thread of the process, not its main thread: where the
#: kernel may deliver a signal meant for the process) once the server has answered the first calls
THREAD_SIGNAL = """
import signal, sys, threading, time, urllib.request
from llm_mesa.cli import main
def from_another_thread():
    while int(urllib.request.urlopen({stats!r}).read()) < 8:
        time.sleep(0.02)
    print(f"signalled {{time.monotonic()}}", file=sys.stderr, flush=True)
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
threading.Thread(target=from_another_thread, daemon=True).start()
sys.exit(main({argv!r}))
"""


@pytest.mark.parametrize("command", ["sweep", "game"])
def test_a_signal_the_kernel_gives_another_thread_stops_spending_as_soon(tmp_path, command):
    """The main thread waits on the games (a sweep) or on a round (a game's command) while other threads run:
    a signal handed to one of those only sets Python's flag, and a main thread asleep without a timeout ran its
    handler when a game ended (13 s and 96 calls later under load). It must wake within a fraction of a second."""
    with SlowServer(latency=1.0) as server:
        argv = llm_sweep(server.base_url, tmp_path / "sweep")[3:] if command == "sweep" else \
            ["consensus", "--policy", "llm", "--model", "m", "--n", "16", "--topology", "caveman", "--comm", "local",
             "--max-rounds", "3", "--baseline-permutations", "0", "--concurrency", "8", "--max-attempts", "1",
             "--base-url", server.base_url, "--record", str(tmp_path / "calls.sqlite")]
        script = THREAD_SIGNAL.format(stats=server.base_url.removesuffix("/v1") + "/answered", argv=argv)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        arrived = list(server.arrived)
    signalled = float(next(line.split()[1] for line in done.stderr.splitlines() if line.startswith("signalled")))
    assert done.returncode == 128 + signal.SIGTERM, done.stderr[-800:]
    assert [t for t in arrived if t > signalled + 0.5] == [], done.stderr[-800:]  # no call sent after the signal
