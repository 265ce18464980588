"""How a sweep's games are played (processes, games in flight, batches, the executor): never part of a game's identity.

A module of its own so that what reads an experiment file (``experiment``) can check its ``[execution]`` table
without the sweep's design (``spec``), which reads experiments.
"""

from __future__ import annotations

from dataclasses import dataclass

from .columns import SweepError
from .execution import check_executor


@dataclass(frozen=True)
class Execution:
    """How the games are played: never part of a game's identity.

    ``processes``: worker processes (spawn) that batches of games go to;
    ``games_in_flight``: games played at once in threads of each process (LLM sweeps:
    their calls overlap on one event loop); ``batch_size``: games per task (default:
    about four batches a process, at most 25 games); ``executor``: ``local``,
    ``local-cluster:N`` or ``dask://HOST:PORT``; ``blas_threads``: BLAS threads per
    process while games run (None: leave as is).
    """

    processes: int = 1
    games_in_flight: int = 1
    batch_size: int | None = None
    executor: str = "local"
    blas_threads: int | None = 1

    def __post_init__(self) -> None:
        for name in ("processes", "games_in_flight"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_WORKERS:
                raise SweepError(f"{name.replace('_', ' ')} must be a whole number from 1 to {MAX_WORKERS:,} "
                                 f"(got {value!r})")
        if self.batch_size is not None and (not isinstance(self.batch_size, int) or self.batch_size < 1):
            raise SweepError(f"batch size must be at least 1 (got {self.batch_size})")
        if self.batch_size is not None and self.batch_size > MAX_GAMES:
            raise SweepError(f"batch size must be a whole number from 1 to {MAX_GAMES:,} (got {self.batch_size:,})")
        object.__setattr__(self, "executor", check_executor(self.executor))


#: the most processes or games in flight a sweep may ask for
MAX_WORKERS = 4096
#: the most games one sweep plays (each is listed as a task, and its seeds in the manifest)
MAX_GAMES = 2_000_000


__all__ = ["Execution", "MAX_GAMES", "MAX_WORKERS"]
