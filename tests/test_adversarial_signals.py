"""SIGTERM (and SIGHUP) end a command as Ctrl-C does: nothing half-written, no hidden leftovers.

The default action of SIGTERM kills the process where it is: a ``--out`` staged next to its
destination stayed behind as a hidden folder. Each row stops a command while it writes
(its Parquet writer made to wait there), sends the signal, and looks at what is left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

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
