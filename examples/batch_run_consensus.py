"""Mesa's own ``batch_run`` drives the consensus model unchanged.

``ConsensusModel`` is a plain Mesa model (``rng=`` seed, ``running``, a
``DataCollector``), so ``mesa.batch_run`` sweeps its keyword arguments like any
other model's. Use it for quick parameter scans; use ``llm_mesa.sweep.run_sweep``
(or ``llm-mesa sweep``) when a sweep must survive interruption, resume by key,
or keep many LLM games in flight at once.

    python examples/batch_run_consensus.py
"""

from __future__ import annotations

import pandas as pd
from mesa import batch_run

from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.sweep import limit_blas_threads


def main() -> None:
    # One BLAS thread: parallelism belongs to the runs; on a busy machine numpy/scipy
    # thread pools inside every run slow it many times over (run_sweep does this itself).
    with limit_blas_threads(1):
        results = _batch()
    df = pd.DataFrame(results)
    rate = df.groupby(["topology", "policy"])["consensus"].agg(["sum", "count"])
    rate["rate"] = rate["sum"] / rate["count"]
    print("consensus by topology and rule (Mesa batch_run, 10 seeds each):")
    print(rate.to_string())


def _batch() -> list[dict]:
    return batch_run(
        ConsensusModel,
        parameters={
            "topology": ["ba", "ws", "caveman"],
            "policy": ["majority-inertia:inertia=0.2", "voter"],
            "baseline_permutations": [0],
            "collect_agents": [False],  # model-level rows only
        },
        rng=list(range(10)),  # one run per seed and parameter combination
        max_steps=50,  # the study's round limit (the model also stops itself)
        number_processes=1,
        data_collection_period=-1,  # the last round of each run
        display_progress=False,
    )


if __name__ == "__main__":  # batch_run may spawn worker processes: keep it under this guard
    main()
