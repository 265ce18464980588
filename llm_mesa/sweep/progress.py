"""Progress of a long sweep: games done of total, rate, ETA, tokens, cost, failures and the concurrency limit.

On a terminal it is a tqdm bar (a kept library: its rate and ETA are smoothed
from the first games, and it redraws in place); in a log (not a terminal) the same
figures, formatted by tqdm, go out as one plain line every ``interval`` seconds and
at the end, so a CI log or ``nohup`` file stays readable.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from tqdm import tqdm

from llm_mesa.llm.limits import limits_in_use

from .columns import failed_decisions


class SweepProgress:
    """``progress(done, total, row)`` for ``run_sweep``, counting the LLM use of every game."""

    def __init__(self, total: int | None = None, *, stream: TextIO | None = None, interval: float = 10.0,
                 terminal: bool | None = None, describe=None) -> None:
        self.stream = stream or sys.stderr
        self.terminal = self.stream.isatty() if terminal is None else terminal
        self.interval = interval
        self.describe = describe
        self.tokens = 0
        self.cost = 0.0
        self.failures = 0
        self.bar: tqdm | None = None
        self.started = time.monotonic()
        self.last_line = 0.0
        self.first_done: int | None = None

    def _postfix(self) -> str:
        parts = [f"{self.tokens:,} tokens"]
        if self.cost:
            parts.append(f"cost {self.cost:,.2f}")
        parts.append(f"{self.failures} failed decisions")
        limits = [report["limit"] for report in limits_in_use().values()]
        if limits:  # the calls in flight each server is allowed now (--concurrency auto moves it)
            parts.append(f"limit{'s' if len(limits) > 1 else ''} {', '.join(map(str, limits))}")
        return ", ".join(parts)

    def __call__(self, done: int, total: int, row: dict[str, Any]) -> None:
        self.tokens += int(row.get("prompt_tokens") or 0) + int(row.get("completion_tokens") or 0)
        self.cost += float(row.get("cost") or 0.0)
        self.failures += failed_decisions(row)
        if self.first_done is None:
            self.first_done = done - 1
        if self.terminal:
            if self.bar is None:
                self.bar = tqdm(total=total, initial=done - 1, unit="game", file=self.stream, dynamic_ncols=True)
            self.bar.update(1)
            self.bar.set_postfix_str(self._postfix(), refresh=False)
            if done >= total:
                self.close()
            return
        now = time.monotonic()
        if now - self.last_line < self.interval and done < total:
            return
        self.last_line = now
        meter = tqdm.format_meter(done, total, now - self.started, unit="game", initial=self.first_done,
                                  postfix=self._postfix(), ncols=0)
        detail = f"  last: {row['condition']} | {row['policy']} | seed {row['seed']}"
        if self.describe is not None:
            detail += f": {self.describe(row)}"
        print(meter + detail, file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


__all__ = ["SweepProgress"]
