"""A sweep on a SLURM cluster through dask-jobqueue (untested here: this machine has no SLURM).

Run on the cluster's login node, in the project's environment (the workers must import
llm_mesa, and the sweep's directory and call store must be on a file system they share):

    python examples/slurm_cluster.py --jobs 10 --out /shared/runs/rules
    python examples/slurm_cluster.py --print-job-script        # see what would be submitted

It starts a Dask scheduler here, submits SLURM jobs that each run one Dask worker
process (1 core, so no game's BLAS threads compete), and plays the consensus study's
rule baseline on them: the same games, seeds and results as `llm-mesa sweep
experiments/consensus-study-rules.toml`, written as games finish. Any sweep can use the
same cluster from the command line: `llm-mesa sweep FILE --out DIR --executor dask://HOST:PORT`
with the scheduler's address this script prints.
"""

import argparse

from dask_jobqueue import SLURMCluster


def make_cluster(queue: str = "normal", walltime: str = "04:00:00") -> SLURMCluster:
    """One single-core worker per SLURM job; BLAS capped to one thread in every job."""
    return SLURMCluster(
        queue=queue, cores=1, processes=1, memory="4GB", walltime=walltime,
        job_script_prologue=["export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1"],
        scheduler_options={"dashboard_address": None},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=10, help="SLURM jobs (workers) to ask for")
    parser.add_argument("--queue", default="normal", help="the SLURM partition")
    parser.add_argument("--out", default="runs/rules-slurm", help="the sweep's directory (shared file system)")
    parser.add_argument("--print-job-script", action="store_true", help="print the job script and exit")
    args = parser.parse_args()
    cluster = make_cluster(args.queue)
    if args.print_job_script:
        print(cluster.job_script())
        cluster.close()
        return
    from llm_mesa.cli import main as llm_mesa

    cluster.scale(jobs=args.jobs)
    address = cluster.scheduler_address.split("://", 1)[1]
    print(f"scheduler at {address}; other sweeps can use --executor dask://{address}")
    try:
        llm_mesa(["sweep", "experiments/consensus-study-rules.toml", "--out", args.out, "--executor", f"dask://{address}"])
    finally:
        cluster.close()


if __name__ == "__main__":
    main()
