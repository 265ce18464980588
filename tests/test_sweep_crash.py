"""A sweep killed by a real signal at its worst moments resumes to the same tables, with no duplicate row."""

import json
import signal
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from llm_mesa.cli import main
from llm_mesa.sweep import SweepError, read_sweep, run_sweep

GRID = {"ws": {"n": 12, "topology": "ws", "max_rounds": 8, "baseline_permutations": 10},
        "cc": {"n": 12, "topology": "caveman", "max_rounds": 8, "baseline_permutations": 10}}
ARGS = dict(policies="mi-0.2;voter", seeds=3, tables=["rounds", "agents"], batch_size=1)  # a part per game
TABLES = ("games", "rounds", "agents", "edges")

SCRIPT = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from llm_mesa.sweep import parts, run_sweep
    out, where, at = sys.argv[1], sys.argv[2], int(sys.argv[3])
    calls = {"n": 0}

    def kill_on(n):
        calls["n"] += 1
        if calls["n"] == n:
            os.kill(os.getpid(), signal.SIGKILL)

    if where == "between-tables":  # after the n-th part written (a batch writes its tables, then games)
        real_write = parts.write_atomic
        def write(path, data, types=None):
            real_write(path, data, types)
            if not str(path).endswith(".new"):
                kill_on(at)
        parts.write_atomic = write
    elif where == "compaction-writing":  # after the n-th merged part is staged: journal not complete
        real_write = parts.write_atomic
        def write(path, data, types=None):
            real_write(path, data, types)
            if str(path).endswith(".new"):
                kill_on(at)
        parts.write_atomic = write
    elif where == "compaction-renaming":  # after the n-th merged part replaced its parts: journal complete
        real_replace = parts.os.replace
        def replace(src, dst):
            real_replace(src, dst)
            if str(src).endswith(".new"):
                kill_on(at)
        parts.os.replace = replace
    grid = GRID
    run_sweep(grid, "mi-0.2;voter", 3, out, tables=["rounds", "agents"], batch_size=1, game="consensus")
""").replace("grid = GRID", "grid = " + repr(GRID))


def tables(out) -> dict[str, pd.DataFrame]:
    frames = {}
    for table in TABLES:
        df = read_sweep(out, table).drop(columns=["wall_s"], errors="ignore")
        frames[table] = df.sort_values(list(df.columns)[:6]).reset_index(drop=True)
    return frames


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("whole") / "sweep"
    run_sweep(GRID, out=out, **ARGS, game="consensus")
    return tables(out)


@pytest.mark.parametrize("where, at", [("between-tables", 2), ("between-tables", 7), ("compaction-writing", 2),
                                       ("compaction-renaming", 1), ("compaction-renaming", 3)])
def test_a_kill_then_a_resume_gives_the_uninterrupted_tables(tmp_path, uninterrupted, where, at):
    out = tmp_path / "sweep"
    killed = subprocess.run([sys.executable, "-c", SCRIPT, str(out), where, str(at)], capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    run_sweep(GRID, out=out, **ARGS, game="consensus")
    resumed = tables(out)
    for table in TABLES:
        keys = ["condition", "policy", "seed"] + {"rounds": ["round"], "agents": ["round", "node"],
                                                   "edges": ["source", "target"]}.get(table, [])
        assert not resumed[table].duplicated(subset=keys).any(), table
        pd.testing.assert_frame_equal(resumed[table], uninterrupted[table], check_dtype=False)
    assert not [p for p in out.rglob("*") if p.name.startswith((".tmp-", ".compaction")) or p.suffix == ".new"]


def test_a_second_sweep_cannot_write_while_one_holds_the_directory(tmp_path):
    out = tmp_path / "sweep"
    run_sweep({"ws": GRID["ws"]}, "voter", 1, out, game="consensus")
    from llm_mesa.sweep.output import SweepOutput

    with SweepOutput(out).lock(), pytest.raises(SweepError, match="another sweep .* is writing to"):
        run_sweep({"ws": GRID["ws"]}, "voter", 1, out, game="consensus")


def test_a_different_grid_is_refused_unless_extended(tmp_path):
    out = tmp_path / "sweep"
    run_sweep({"ws": GRID["ws"]}, "voter", 2, out, game="consensus")
    with pytest.raises(SweepError, match="condition\\(s\\) cc are new to it; .*--extend"):
        run_sweep(GRID, "voter", 2, out, game="consensus")
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["grid"]["conditions"]) == ["ws"]  # untouched by the refused start
    run_sweep(GRID, "voter", 2, out, extend=True, game="consensus")
    assert len(read_sweep(out)) == 4
    assert list(json.loads((out / "manifest.json").read_text())["grid"]["conditions"]) == ["ws", "cc"]


def test_a_single_runs_directory_is_not_adopted(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["consensus", "--n", "12", "--topology", "ws", "--max-rounds", "2", "--out", str(run)]) == 0
    capsys.readouterr()
    before = (run / "manifest.json").read_text()
    assert main(["sweep", "--game", "consensus", "--conditions", "ws-none", "--policies", "voter", "--seeds", "1", "--out", str(run)]) == 2
    assert "single game's run" in capsys.readouterr().err
    assert (run / "manifest.json").read_text() == before


def test_a_corrupt_part_is_one_line_naming_it_and_leftover_temporary_parts_are_cleaned(tmp_path, capsys):
    out = tmp_path / "sweep"
    argv = ["sweep", "--game", "consensus", "--conditions", "ws-none", "--policies", "voter", "--seeds", "2", "--set", "max_rounds=3",
            "--set", "baseline_permutations=0", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    capsys.readouterr()
    part = sorted((out / "games").glob("part-*.parquet"))[0]
    part.write_bytes(b"PAR1 this is not parquet")
    stray = out / "games" / ".tmp-abc.parquet"
    stray.write_bytes(b"half")
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert str(part) in err and "quarantine" in err and len(err.splitlines()) == 1
    assert not stray.exists()


def test_worker_processes_start_with_blas_capped(tmp_path):
    from llm_mesa.sweep.execution import BLAS_VARIABLES, blas_threads_in_children

    probe = f"import os, numpy; print(','.join(os.environ.get(v, '-') for v in {BLAS_VARIABLES!r}))"
    with blas_threads_in_children(1):
        inside = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip()
    assert inside == ",".join(["1"] * len(BLAS_VARIABLES))


def test_saving_edges_draws_no_layout(tmp_path, monkeypatch):
    import llm_mesa.graphs as graphs

    def no_layout(*args, **kwargs):
        raise AssertionError("a sweep computed a layout")

    monkeypatch.setattr(graphs, "seeded_layout", no_layout)
    monkeypatch.setattr("llm_mesa.models.consensus.model.seeded_layout", no_layout)
    run_sweep({"ws": GRID["ws"]}, "voter", 1, tmp_path / "sweep", tables=["agents"], game="consensus")
    assert len(read_sweep(tmp_path / "sweep", "edges")) > 0
