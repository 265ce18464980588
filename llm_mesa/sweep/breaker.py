"""A sweep's circuit breaker, and the line that counts its invalid games.

Why: against a server whose every game answer is malformed (its pre-flight answer sound), a
sweep played its whole grid, marked every game invalid in a note and exited 0; on a
3,300-game grid with a slow failing server that burns hours. A game's verdict is its row's
``invalid`` (the core's, or the game's own), its cause the row's ``failure_cause`` (the
commonest kind of failure among its calls and decisions, ``llm_mesa.llm.diagnosis``).

* **Tripped**: as many games in a row as the sweep keeps in flight (at least ``MIN_RUN``)
  finish invalid, for one cause or several: the sweep stops spending at once (``SweepStopped``
  stops the games in flight, as an interrupt does), keeps the games it wrote, and exits 3 with
  the causes, each with its count and fix, in one line. A valid game starts the count again.
* **Finished**: a sweep whose results hold invalid games says how many in its last line
  (``closing_line``), and exits 3 when every game is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import pandas as pd

from llm_mesa.errors import INVALID_GAME
from llm_mesa.llm.diagnosis import CAUSES

from .columns import SweepError, failed_decisions

#: the fewest invalid games in a row that trip the breaker (one failure should not stop a sweep)
MIN_RUN = 3
_UNSAID = "(not reported)"


class SweepStopped(SweepError):
    """The breaker tripped: the sweep's games keep failing (exit status 3)."""

    exit_status = INVALID_GAME
    stops_spending = True  # the games in flight end at once (llm_mesa.sweep.execution._drain)


class AllInvalid(SweepError):
    """A sweep that finished with every game invalid (exit status 3)."""

    exit_status = INVALID_GAME


def cause_of(kind: str | None) -> str:
    """A failure kind in words, with its fix."""
    if kind is None or kind == _UNSAID:
        return "too many failed LLM decisions (the game reports no cause)"
    return f"{kind}: {CAUSES[kind].format(env='named by --api-key-env')}" if kind in CAUSES else str(kind)


class CircuitBreaker:
    """Counts the games that finish invalid in a row, whatever made each invalid; trips at ``run`` of them.

    The causes do not have to agree: a server that alternates malformed answers with answers that decide
    nothing fails every game as surely as one that always does the same (a streak of one cause let such a
    sweep play all 12 games and spend 480 calls). The line names every cause of the run, commonest first.
    """

    def __init__(self, games_in_flight: int, out: Any) -> None:
        self.run = max(MIN_RUN, games_in_flight)
        self.out = out
        self.causes: Counter[str] = Counter()

    @property
    def streak(self) -> int:
        return sum(self.causes.values())

    def see(self, row: Mapping[str, Any]) -> None:
        """One finished game (already written); raise ``SweepStopped`` when it trips the breaker."""
        if not row.get("invalid"):
            self.causes.clear()
            return
        self.causes[row.get("failure_cause") or _UNSAID] += 1
        if self.streak >= self.run:
            raise SweepStopped(f"stopped: {self.streak} games in a row finished invalid, {self._why()}; the games "
                               f"played are kept in {self.out} (marked invalid); fix the cause, then rerun the same "
                               "command to play the rest")

    def _why(self) -> str:
        if len(self.causes) == 1:
            return f"every one for one cause: {cause_of(next(iter(self.causes)))}"
        return f"for {len(self.causes)} causes: " + "; ".join(
            f"{count} for {cause_of(kind)}" for kind, count in self.causes.most_common())


def closing_line(results: pd.DataFrame) -> str | None:
    """The last line of a finished sweep with invalid games: how many, and their commonest cause."""
    if results.empty or "invalid" not in results.columns:
        return None
    invalid = results["invalid"].fillna(False).astype(bool)
    if not invalid.any():
        return None
    causes = Counter(results.loc[invalid, "failure_cause"].fillna(_UNSAID)) if "failure_cause" in results.columns \
        else Counter({_UNSAID: int(invalid.sum())})
    kind, _ = causes.most_common(1)[0]
    return (f"{int(invalid.sum())} of {len(results)} games are invalid (too many failed LLM decisions: "
            f"{failed_decisions(results.loc[invalid]):,} in them; commonest cause {cause_of(kind)})")


def check_finished(results: pd.DataFrame) -> None:
    """Raise ``AllInvalid`` when every game of a finished sweep is invalid."""
    line = closing_line(results)
    if line is not None and bool(results["invalid"].fillna(False).astype(bool).all()):
        raise AllInvalid(f"every game is invalid: {line}")


__all__ = ["MIN_RUN", "AllInvalid", "CircuitBreaker", "SweepStopped", "check_finished", "closing_line"]
