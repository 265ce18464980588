"""Rule policies of the consensus game: the human literature's baselines.

Each policy answers one agent (``decide(observation, rng)``, one ``rng.random()``
at most, from the ``rng`` it is handed), and also describes itself as a *rule*
(``rule()``: a kind and its parameters) that ``rule_step`` applies to every
agent of one or many games at once, from one uniform draw per agent and round.

The rule stream: a game whose agents all follow these rules (``ConsensusModel``'s
array path and the batched engine, ``batched.py``) draws, for each round, one
uniform in [0, 1) per agent in node order from the game's own numpy Generator
(``array_state.rule_stream``); agent ``i`` decides from draw ``u[i]`` as
``decide`` would from ``rng.random()``: keep with inertia when ``u < inertia``;
the voter copies neighbour ``floor(u * degree)`` in node order; the coin is blue
when ``u < 0.5``; the zealot ignores its draw.
"""

from __future__ import annotations

import random
from typing import NamedTuple

import numpy as np

from llm_mesa.models.consensus.observation import ConsensusDecision, ConsensusObservation, other
from llm_mesa.policy import Policy, PolicyError, register_policy

#: rule kinds of ``rule_step``
MAJORITY, VOTER, STUBBORN, RANDOM = range(4)


class Rule(NamedTuple):
    """A rule policy as data: its kind and parameters (per node arrays, or one value for all)."""

    kind: int | np.ndarray
    inertia: float | np.ndarray = 0.0
    threshold: float | np.ndarray = 0.5


def _check_probability(name: str, value: float) -> float:
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise PolicyError(f"{name}={value} must lie in [0, 1]")
    return value


def rule_step(colours: np.ndarray, preferences: np.ndarray, blue: np.ndarray, degree: np.ndarray,
              draws: np.ndarray, rule: Rule, indptr: np.ndarray, indices: np.ndarray,
              at: np.ndarray | None = None) -> np.ndarray:
    """Every agent's next colour code (1 = blue) under ``rule``, from one draw per agent.

    ``blue`` holds each agent's count of blue neighbours, ``degree`` its number of
    neighbours, ``indptr``/``indices`` the neighbours in node order (CSR), all
    over the same flat node numbering (one game, or many games stacked).
    ``at``: only these agents decide (one draw each, in that order), as when agents
    take turns; the result is their next colours, read from ``colours`` as it is now.
    """
    if at is None:
        own, starts = colours, indptr[:-1]
    else:
        own, preferences, blue, degree, starts = colours[at], preferences[at], blue[at], degree[at], indptr[at]
        rule = Rule(*(field[at] if isinstance(field, np.ndarray) else field for field in rule))
    kinds = {int(rule.kind)} if np.isscalar(rule.kind) else set(np.unique(rule.kind).tolist())
    results = {}
    if MAJORITY in kinds:
        keep = (draws < rule.inertia) | (degree == 0) | (2 * blue == degree)
        thresholds = np.asarray(rule.threshold)
        if (thresholds > 0.5).any():
            share = blue / np.maximum(degree, 1)
            against = np.where(preferences == 0, share, 1.0 - share)
            choice = np.where(against > rule.threshold, 1 - preferences, preferences)
            if not (thresholds > 0.5).all():
                choice = np.where(thresholds > 0.5, choice, 2 * blue > degree)
        else:
            choice = 2 * blue > degree
        results[MAJORITY] = np.where(keep, own, choice).astype(np.int8)
    if VOTER in kinds:
        picked = starts + (draws * degree).astype(np.int64)
        has = degree > 0
        neighbour = indices[np.where(has, np.minimum(picked, max(len(indices) - 1, 0)), 0)] if len(indices) else 0
        results[VOTER] = np.where(has, colours[neighbour] if len(indices) else own, own).astype(np.int8)
    if STUBBORN in kinds:
        results[STUBBORN] = preferences.astype(np.int8)
    if RANDOM in kinds:
        results[RANDOM] = (draws < 0.5).astype(np.int8)
    if len(results) == 1:
        return next(iter(results.values()))
    out = np.empty_like(own, dtype=np.int8)
    for kind, value in results.items():
        mask = rule.kind == kind
        out[mask] = value[mask]
    return out


def combine_rules(rules: list[Rule], counts: list[int] | None = None) -> Rule:
    """One rule per node (or per block of ``counts`` nodes) as one ``Rule`` of per-node arrays."""
    counts = counts or [1] * len(rules)
    if len({r for r in rules}) == 1:
        return rules[0]
    return Rule(np.repeat(np.array([r.kind for r in rules], dtype=np.int8), counts),
                np.repeat(np.array([r.inertia for r in rules], dtype=np.float64), counts),
                np.repeat(np.array([r.threshold for r in rules], dtype=np.float64), counts))


def _split(keep: str, kept: float) -> dict[str, float]:
    """Both colours: ``keep`` with probability ``kept``, the other with the rest (a distribution's shape)."""
    return {keep: kept, other(keep): 1.0 - kept}


class StreamPolicy(Policy):
    """A rule policy that decides an agent from at most one uniform draw (``rng.random()``) a round.

    A game whose agents all follow such policies draws its rounds from its rule stream, one
    uniform per agent in node order (see the module doc); those that are also ``RulePolicy``s
    play as arrays, the others (the talking ones, ``talking.py``) agent by agent from the same
    draws. So a talking policy that does not talk plays the same game as its silent rule.
    """


class RulePolicy(StreamPolicy):
    """A rule policy that ``rule_step`` also plays for whole rounds at once."""

    vectorised = True

    def rule(self) -> Rule:
        raise NotImplementedError

    @staticmethod
    def distribution_key(obs: ConsensusObservation) -> tuple:
        """What a rule's distribution reads of an observation: its colour, preference, blue neighbours and
        neighbours (``llm-mesa fit`` weighs each such situation once)."""
        return obs.colour, obs.preference, obs.neighbour_colours.count("blue"), len(obs.neighbour_colours)

    def draws_from(self, degree: np.ndarray) -> np.ndarray:
        """Which agents' ``decide`` draws from its ``rng`` (all, by default)."""
        return np.ones(len(degree), dtype=bool)

    def decide_vector(self, colours, preferences, adjacency, rng):
        """The core's one-round contract: every agent at once, drawing from ``rng`` as ``decide`` would."""
        degree = adjacency.degree
        draws = np.zeros(len(colours))
        drawing = np.flatnonzero(self.draws_from(degree))
        draws[drawing] = [rng.random() for _ in range(len(drawing))]
        blue = adjacency.matrix @ np.asarray(colours, dtype=np.int64)
        return rule_step(np.asarray(colours, dtype=np.int8), np.asarray(preferences, dtype=np.int8), blue, degree,
                         draws, self.rule(), adjacency.indptr, adjacency.indices)


@register_policy("majority-inertia", "consensus",
                 "follow the neighbourhood majority; keep own colour with probability inertia")
class MajorityInertia(RulePolicy):
    """Follow the neighbourhood majority, with a bias to keep the current colour.

    * With probability ``inertia`` the agent keeps its colour whatever it sees.
    * On a tie it keeps its colour.
    * ``threshold`` (opinionated agents): when the majority holds the agent's
      non-preferred colour, it yields only if that colour's share of neighbours
      exceeds ``threshold`` (default 0.5, i.e. plain majority). When currently
      off its preference, it returns to it unless the opposing share exceeds
      the threshold.
    """

    def __init__(self, inertia: float = 0.2, threshold: float = 0.5):
        self.inertia = _check_probability("inertia", inertia)
        self.threshold = _check_probability("threshold", threshold)
        if self.threshold < 0.5:
            raise PolicyError(f"threshold={self.threshold} must lie in [0.5, 1]: below a majority it would "
                              "have agents yield to a minority")

    fit_parameters = {"inertia": (0.0, 1.0), "threshold": (0.5, 1.0)}

    def params(self):
        return {"inertia": self.inertia, "threshold": self.threshold}

    def distribution(self, obs: ConsensusObservation) -> dict[str, float]:
        """Keep with the inertia, else as ``decide`` chooses (which needs no draw)."""
        n = len(obs.neighbour_colours)
        blue = obs.blue_share()
        if n == 0 or blue == 0.5:
            return _split(obs.colour, 1.0)
        if self.threshold > 0.5:
            against_preference = blue if obs.preference == "red" else 1.0 - blue
            choice = other(obs.preference) if against_preference > self.threshold else obs.preference
        else:
            choice = "blue" if blue > 0.5 else "red"
        return _split(obs.colour, 1.0 if choice == obs.colour else self.inertia)

    def decide(self, obs: ConsensusObservation, rng: random.Random) -> ConsensusDecision:
        keep = ConsensusDecision(obs.colour)
        if rng.random() < self.inertia:
            return keep
        n = len(obs.neighbour_colours)
        if n == 0:
            return keep
        blue = obs.blue_share()
        if blue == 0.5:
            return keep
        majority = "blue" if blue > 0.5 else "red"
        if self.threshold > 0.5:
            against_preference = blue if obs.preference == "red" else 1.0 - blue
            return ConsensusDecision(
                other(obs.preference) if against_preference > self.threshold else obs.preference
            )
        return ConsensusDecision(majority)

    def rule(self) -> Rule:
        return Rule(MAJORITY, self.inertia, self.threshold)


@register_policy("voter", "consensus", "copy the colour of a uniformly random neighbour")
class Voter(RulePolicy):
    """The voter model: copy a uniformly random neighbour (keep when isolated)."""

    def rule(self) -> Rule:
        return Rule(VOTER)

    def draws_from(self, degree):
        return np.asarray(degree) > 0

    def distribution(self, obs: ConsensusObservation) -> dict[str, float]:
        """Each colour as often as the neighbours hold it (the own colour when isolated)."""
        if not obs.neighbour_colours:
            return _split(obs.colour, 1.0)
        return _split("blue", obs.blue_share())

    def decide(self, obs: ConsensusObservation, rng: random.Random) -> ConsensusDecision:
        if not obs.neighbour_colours:
            return ConsensusDecision(obs.colour)
        return ConsensusDecision(obs.neighbour_colours[int(rng.random() * len(obs.neighbour_colours))])


@register_policy("stubborn", "consensus", "always hold the preferred colour")
class Stubborn(RulePolicy):
    """A zealot: always the preferred colour."""

    def rule(self) -> Rule:
        return Rule(STUBBORN)

    def draws_from(self, degree):
        return np.zeros(len(degree), dtype=bool)

    def distribution(self, obs: ConsensusObservation) -> dict[str, float]:
        return _split(obs.preference, 1.0)

    def decide(self, obs: ConsensusObservation, rng: random.Random) -> ConsensusDecision:
        return ConsensusDecision(obs.preference)


@register_policy("random", "consensus", "a fair coin each round")
class RandomColour(RulePolicy):
    """A fair coin each round (a null model)."""

    def rule(self) -> Rule:
        return Rule(RANDOM)

    def distribution(self, obs: ConsensusObservation) -> dict[str, float]:
        return {"red": 0.5, "blue": 0.5}

    def decide(self, obs: ConsensusObservation, rng: random.Random) -> ConsensusDecision:
        return ConsensusDecision("blue" if rng.random() < 0.5 else "red")


from . import talking  # noqa: E402,F401  (registers the talking rule policies: relay, announce)
