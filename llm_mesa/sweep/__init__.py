"""Sweeps of any game: the grid, the engine and its Parquet output (see ``engine``)."""

from llm_mesa.sweep.engine import KEY, STORE_MODES, SweepResult, read_sweep, run_sweep
from llm_mesa.sweep.execution import GameTask, limit_blas_threads, play_game
from llm_mesa.sweep.grid import build_conditions, llm_endpoint, policy_label, resolve_policies, resolve_seeds
from llm_mesa.sweep.output import SweepError, SweepOutput

__all__ = ["KEY", "STORE_MODES", "GameTask", "SweepError", "SweepOutput", "SweepResult", "build_conditions",
           "limit_blas_threads", "llm_endpoint", "play_game", "policy_label", "read_sweep", "resolve_policies",
           "resolve_seeds", "run_sweep"]
