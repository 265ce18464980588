"""Sweeps on a Dask cluster: a LocalCluster's results equal the local runner's; the SLURM example's job script."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from llm_mesa.cli import main
from llm_mesa.sweep import read_sweep, run_sweep

GRID = {"ws": {"n": 12, "topology": "ws", "max_rounds": 8, "baseline_permutations": 10},
        "ba": {"n": 12, "topology": "ba", "max_rounds": 8, "baseline_permutations": 10}}
ROOT = Path(__file__).resolve().parent.parent


def table(out, name):
    df = read_sweep(out, name).drop(columns=["wall_s"], errors="ignore")
    return df.sort_values(list(df.columns)[:5]).reset_index(drop=True)


@pytest.mark.slow
def test_a_local_cluster_sweep_equals_the_local_runners(tmp_path):
    kw = dict(policies="mi-0.2;voter", seeds=3, tables=["rounds"])
    run_sweep(GRID, out=tmp_path / "here", **kw, game="consensus")
    run_sweep(GRID, out=tmp_path / "dask", executor="local-cluster:2", batch_size=2, **kw, game="consensus")
    for name in ("games", "rounds"):
        pd.testing.assert_frame_equal(table(tmp_path / "dask", name), table(tmp_path / "here", name))


@pytest.mark.parametrize("executor", ["dask://nowhere", "local-cluster:0", "slurm", "dask://host:99999"])
def test_a_bad_executor_is_one_line(tmp_path, capsys, executor):
    assert main(["sweep", "--game", "consensus", "--conditions", "ws-none", "--seeds", "1", "--out", str(tmp_path / "x"),
                 "--executor", executor]) == 2
    err = capsys.readouterr().err.strip()
    assert "--executor" in err and "local-cluster:N or dask://HOST:PORT" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_the_slurm_examples_job_script_runs_one_single_threaded_worker_per_job():
    script = subprocess.run([sys.executable, str(ROOT / "examples" / "slurm_cluster.py"), "--print-job-script"],
                            capture_output=True, text=True, timeout=120)
    assert script.returncode == 0, script.stderr[-2000:]
    text = script.stdout
    assert text.startswith("#!/usr/bin/env bash") and "#SBATCH -p normal" in text
    assert "#SBATCH --cpus-per-task=1" in text and "#SBATCH -t 04:00:00" in text
    assert "export OPENBLAS_NUM_THREADS=1" in text
    assert "distributed.cli.dask_worker" in text and "--nthreads 1" in text
