"""The check by simulation of ``llm-mesa fit``: does the fitted rule play the games RUNS played?

The fitted rule (its estimates; with its trembling hand when it has one) plays RUNS' own
designs and seeds through the game's own play path: ``llm_mesa.play.play_batch`` of ``PlayRequest``s
for a rule as registered, ``llm_mesa.play.make_model`` for a trembling one, ``llm_mesa.play.place`` in the
agents a policy played among others (a lab's seats). Then each headline outcome's
distribution over those games is held against RUNS':

* a yes/no outcome (an agreement reached, a problem solved): Fisher's exact test on the 2 x 2 table, exact at
  the few dozen games a cell holds, where a chi-squared approximation is not;
* a number (rounds, agreement): the two-sided Mann-Whitney U test: outcomes such as rounds
  are counts with many ties and a ceiling (the round limit), and Mann-Whitney compares the
  two distributions without assuming a shape, with its tie correction; Kolmogorov-Smirnov
  assumes continuous distributions and loses power (is conservative) with ties.

A small p-value refutes "these agents play as this rule"; a large one does not prove it.
A cell of fewer than two games a side gets no test (there is no distribution to compare).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Any

import pandas as pd

from llm_mesa import declared, play
from llm_mesa.analysis.fit_cells import PEOPLE
from llm_mesa.games import PlayRequest, run_model
from llm_mesa.policy import Policy, make_policy, parse_policy_spec

__all__ = ["Trembling", "check", "compare", "default_measures"]

#: games a side below which no test is made
MIN_GAMES = 2


class Trembling(Policy):
    """A rule with a trembling hand: its own decision, except with probability ``error_rate`` one of the
    decisions its distribution lists, uniformly (so P' = (1 - e) P + e / K, as fitted).

    A game's decision is its recorded value itself, or a dataclass whose first field holds that value
    (``ConsensusDecision.colour``, ``Move.colour``): a tremble replaces that field.
    """

    def __init__(self, rule: Policy, error_rate: float) -> None:
        self.rule, self.error_rate = rule, float(error_rate)
        self.name, self.game = rule.name, rule.game
        self.needs_history = rule.needs_history

    def params(self) -> dict[str, Any]:
        return {**self.rule.params(), "error_rate": self.error_rate}

    def decide(self, observation: Any, rng: random.Random) -> Any:
        chosen = self.rule.decide(observation, rng)
        if rng.random() >= self.error_rate:
            return chosen
        options = sorted(self.rule.distribution(observation), key=repr)
        value = options[int(rng.random() * len(options))]
        if dataclasses.is_dataclass(chosen) and not isinstance(chosen, type):
            return dataclasses.replace(chosen, **{dataclasses.fields(chosen)[0].name: value})
        return value


def default_measures(game: Any) -> list[str]:
    """The game's headline measure, then the rounds played."""
    return [m for m in dict.fromkeys([declared.first_measure(game), "rounds"]) if m]


def compare(ours: pd.Series, theirs: pd.Series) -> float | None:
    """The p-value of a test that ``ours`` and ``theirs`` come from one distribution (see the module doc)."""
    from scipy.stats import fisher_exact, mannwhitneyu

    a, b = ours.dropna(), theirs.dropna()
    if len(a) < MIN_GAMES or len(b) < MIN_GAMES:
        return None
    flags = {True, False}  # 0 and 1 too: they hash alike
    if pd.api.types.is_bool_dtype(a) or (set(a.unique()) <= flags and set(b.unique()) <= flags):
        x, y = a.astype(bool), b.astype(bool)
        return float(fisher_exact([[int(x.sum()), int((~x).sum())], [int(y.sum()), int((~y).sum())]])[1])
    x, y = pd.to_numeric(a, errors="coerce").dropna(), pd.to_numeric(b, errors="coerce").dropna()
    if len(x) < MIN_GAMES or len(y) < MIN_GAMES:
        return None
    if x.nunique() == 1 and y.nunique() == 1:
        return 1.0 if x.iloc[0] == y.iloc[0] else 0.0
    return float(mannwhitneyu(x, y, alternative="two-sided").pvalue)


def _played(cell: Any, spec: str, error_rate: float) -> pd.DataFrame:
    """The fitted rule's games on the cell's design, one per seed of RUNS' games."""
    game, parameters = cell.game, cell.parameters
    seeds = [int(s) for s in cell.games["seed"]]
    if cell.places is None and not error_rate:
        return pd.DataFrame([r.row for r in play.play_batch(game, [PlayRequest(parameters, spec, s) for s in seeds])])
    rule = make_policy(spec, game)
    policy = Trembling(rule, error_rate) if error_rate else rule
    rows = []
    for seed in seeds:
        if cell.places is None:
            model = play.make_model(game, parameters, policy, seed)
        else:
            model = play.place(game, parameters, cell.others, seed, {agent: policy for agent in cell.places.get(seed, [])})
        rounds = run_model(model, *play.step_limit(game, parameters))
        row = declared.summary_row(game, model)
        row.setdefault("rounds", rounds)
        rows.append(row)
    return pd.DataFrame(rows)


def check(cell: Any, spec: str, error_rate: float, measures: Sequence[str]) -> tuple[list[dict[str, Any]], str]:
    """``[{"measure": M, "p": p}]`` for each of ``measures`` both sides hold, and why there are none when none."""
    if cell.games.empty:
        return [], "RUNS kept no outcomes to replay against (a CSV file of decisions)"
    if len(cell.games) < MIN_GAMES or "seed" not in cell.games.columns:
        return [], f"{len(cell.games)} game(s) of RUNS in this cell: a test needs {MIN_GAMES} a side"
    if cell.others == PEOPLE:
        return [], "the game's other agents were people, who cannot be played again"
    if cell.others is not None and parse_policy_spec(cell.others)[0] == "llm":
        return [], "the other agents were LLM agents: replaying them needs their endpoint"
    played = _played(cell, spec, error_rate)
    out = []
    for measure in measures:
        if measure in cell.games.columns and measure in played.columns:
            p = compare(cell.games[measure], played[measure])
            if p is not None:
                out.append({"measure": measure, "p": p})
    return out, "" if out else f"none of {', '.join(measures)} is an outcome of both RUNS' games and the rule's"
