"""Recordings made before the game contract changed replay today with zero calls and the same summary.

``tests/data/recordings`` holds games of schelling, boltzmann_wealth_model, pd_grid (on the Mesa adapter today) and
consensus, recorded against the stand-in by the code before the change, with what that code printed when it replayed
them (its README says how). Each is replayed strictly against an address where nothing listens: a call would fail.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mesa
import pytest

from llm_mesa.cli import main

#: Mesa's examples play other games on Mesa 4 (it seeds them otherwise), so each version replays its own recordings
#: of them; the consensus game seeds itself and plays one game on both
MESA_4 = int(mesa.__version__.split(".")[0]) >= 4
DATA = Path(__file__).resolve().parent / "data"
RECORDINGS = DATA / "recordings"
FOLDERS = {p.name: p for p in RECORDINGS.iterdir() if p.is_dir()}
if MESA_4:
    FOLDERS.update({p.name: p for p in (DATA / "recordings-mesa4").iterdir() if p.is_dir()})
#: what a replay may print differently: how long it took
VOLATILE = {"wall_s"}


@pytest.mark.parametrize("game", sorted(FOLDERS))
def test_a_recording_from_before_replays_with_zero_calls_and_the_same_summary(game, tmp_path, capsys):
    folder = shutil.copytree(FOLDERS[game], tmp_path / game)
    options = (folder / "options.txt").read_text().split()
    model = (folder / "model.txt").read_text().strip()
    status = main([game, "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", model, "--seed", "3",
                   "--replay", str(folder / "calls.sqlite"), "--json", *options])
    out, err = capsys.readouterr()
    assert status == 0, err
    now, then = json.loads(out), json.loads((folder / "replay.json").read_text())
    assert {k: v for k, v in now.items() if k not in VOLATILE} == {k: v for k, v in then.items() if k not in VOLATILE}
    recorded = json.loads((folder / "summary.json").read_text())
    assert now["calls"] == recorded["calls"] > 0 and now.get("replayed_calls", now["calls"]) == now["calls"]
