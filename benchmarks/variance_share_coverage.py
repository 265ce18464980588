"""Variance shares (``llm_mesa.analysis.variance_shares``) on designs whose true shares are known.

A 3 x 2 design (factor A with effects 0, d/2, d; factor B with none) crossed with S seeds, each
game's outcome A's effect + the seed's draw (shared by every game of that seed, as a sweep's
seeds are: variance rho) + its own noise (variance 1 - rho). The true shares are A: var(A) /
(var(A) + 1), B: 0, seed: the rest. Prints, over many simulated sweeps, the mean estimate of each
share beside its truth and how often the 95 % interval held the truth (its coverage).

    python benchmarks/variance_share_coverage.py                    # 10 and 30 seeds, d = 1, rho = 0.5
    python benchmarks/variance_share_coverage.py --seeds 6 --rho 0 --sweeps 200
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from llm_mesa.analysis.variance_shares import shapley_shares


def coverage(seeds: int, effect: float, rho: float, sweeps: int, resamples: int) -> dict[str, tuple[float, float, float]]:
    """Per share: (its truth, the mean estimate, the share of sweeps whose interval held the truth)."""
    rows = [(a, b, s) for a in range(3) for b in range(2) for s in range(seeds)]
    a_effect = np.array([r[0] for r in rows]) * effect / 2
    seed = np.array([r[2] for r in rows])
    factors = pd.DataFrame({"A": [str(r[0]) for r in rows], "B": [str(r[1]) for r in rows]})
    spread = float(np.var([0, effect / 2, effect]))
    truth = {"A": spread / (spread + 1), "B": 0.0, "seed": 1 / (spread + 1)}
    held = dict.fromkeys(truth, 0)
    found: dict[str, list[float]] = {k: [] for k in truth}
    draws = np.random.default_rng(1)
    for sweep in range(sweeps):
        y = a_effect + draws.normal(size=seeds)[seed] * np.sqrt(rho) + draws.normal(size=len(rows)) * np.sqrt(1 - rho)
        out = shapley_shares(y, factors, list(seed), ["all"] * len(rows), resamples=resamples, seed=sweep)
        for name, value in truth.items():
            low, high = out["intervals"][name]
            held[name] += low - 1e-9 <= value <= high + 1e-9
            found[name].append(out["shares"][name])
    return {k: (truth[k], float(np.mean(found[k])), held[k] / sweeps) for k in truth}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[10, 30], help="seeds per cell (several: one line each)")
    parser.add_argument("--effect", type=float, default=1.0, help="d: A's largest effect, in SDs of the noise")
    parser.add_argument("--rho", type=float, default=0.5, help="share of the noise that the seed's games share")
    parser.add_argument("--sweeps", type=int, default=100, help="simulated sweeps per line")
    parser.add_argument("--resamples", type=int, default=400, help="bootstrap resamples per sweep")
    args = parser.parse_args()
    for seeds in args.seeds:
        result = coverage(seeds, args.effect, args.rho, args.sweeps, args.resamples)
        cells = "  ".join(f"{k}: truth {t:.3f} mean {m:.3f} coverage {c:.2f}" for k, (t, m, c) in result.items())
        print(f"{seeds} seeds a cell, {args.sweeps} sweeps: {cells}")


if __name__ == "__main__":
    main()
