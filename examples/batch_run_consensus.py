"""Mesa's own ``batch_run`` drives the consensus model unchanged (Mesa 3), or the project's sweep does (Mesa 4).

``ConsensusModel`` is a plain Mesa model (``rng=`` seed, ``running``, a
``DataCollector``), so on Mesa 3 ``mesa.batch_run`` sweeps its keyword arguments like
any other model's. Mesa 4 removed ``batch_run``: there the example says so and plays
the same scan through ``llm_mesa.sweep.run_sweep``, which needs neither and plays the
same games (same seeds, same graphs, same rounds), so the table is the same on both.
Use the sweep when a scan must survive interruption, resume by key, or keep many LLM
games in flight at once.

    python examples/batch_run_consensus.py           # batch_run on Mesa 3, the sweep on Mesa 4
    python examples/batch_run_consensus.py --sweep   # the sweep on either
"""

from __future__ import annotations

import argparse
import tempfile

import mesa
import pandas as pd

from llm_mesa.mesa_versions import HAS_BATCH_RUN
from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.sweep import limit_blas_threads, read_sweep, run_sweep

TOPOLOGIES = ["ba", "ws", "caveman"]
POLICIES = ["majority-inertia:inertia=0.2", "voter"]
SEEDS = 10
MAX_ROUNDS = 50  # the study's round limit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sweep", action="store_true", help="play the scan through llm-mesa's sweep on any Mesa")
    args = parser.parse_args()
    if args.sweep or not HAS_BATCH_RUN:
        if not args.sweep:
            print(f"Mesa's batch_run needs Mesa 3 (Mesa {mesa.__version__} removed it); "
                  "the same scan through llm-mesa's own sweep:")
        games, how = _sweep(), "llm-mesa sweep"
    else:
        # One BLAS thread: parallelism belongs to the runs; on a busy machine numpy/scipy
        # thread pools inside every run slow it many times over (run_sweep does this itself).
        with limit_blas_threads(1):
            games, how = pd.DataFrame(_batch_run()), "Mesa batch_run"
    rate = games.groupby(["topology", "policy"])["consensus"].agg(["sum", "count"])
    rate["rate"] = rate["sum"] / rate["count"]
    print(f"consensus by topology and rule ({how}, {SEEDS} seeds each):")
    print(rate.to_string())


def _batch_run() -> list[dict]:
    from mesa import batch_run  # Mesa 3 only

    return batch_run(
        ConsensusModel,
        parameters={
            "topology": TOPOLOGIES,
            "policy": POLICIES,
            "baseline_permutations": [0],
            "collect_agents": [False],  # model-level rows only
        },
        rng=list(range(SEEDS)),  # one run per seed and parameter combination
        max_steps=MAX_ROUNDS,  # the model also stops itself at consensus
        number_processes=1,
        data_collection_period=-1,  # the last round of each run
        display_progress=False,
    )


def _sweep() -> pd.DataFrame:
    conditions = {t: {"topology": t, "baseline_permutations": 0, "max_rounds": MAX_ROUNDS} for t in TOPOLOGIES}
    with tempfile.TemporaryDirectory() as out:
        run_sweep(conditions, {p: p for p in POLICIES}, SEEDS, out, game="consensus")
        return read_sweep(out)


if __name__ == "__main__":  # batch_run may spawn worker processes: keep it under this guard
    main()
