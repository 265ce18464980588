"""Rule policies of the consensus game: the human literature's baselines.

Each draws its randomness from the ``rng`` it is handed (the model's), so a game
with rule agents is reproducible bit for bit from its seed.
"""

from __future__ import annotations

import random

import numpy as np

from llm_mesa.models.consensus.observation import ConsensusDecision, ConsensusObservation, other
from llm_mesa.policy import Policy, PolicyError, register_policy


def _check_probability(name: str, value: float) -> float:
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise PolicyError(f"{name}={value} must lie in [0, 1]")
    return value


@register_policy("majority-inertia", "consensus",
                 "follow the neighbourhood majority; keep own colour with probability inertia")
class MajorityInertia(Policy):
    """Follow the neighbourhood majority, with a bias to keep the current colour.

    * With probability ``inertia`` the agent keeps its colour whatever it sees.
    * On a tie it keeps its colour.
    * ``threshold`` (opinionated agents): when the majority holds the agent's
      non-preferred colour, it yields only if that colour's share of neighbours
      exceeds ``threshold`` (default 0.5, i.e. plain majority). When currently
      off its preference, it returns to it unless the opposing share exceeds
      the threshold.
    """

    vectorised = True

    def __init__(self, inertia: float = 0.2, threshold: float = 0.5):
        self.inertia = _check_probability("inertia", inertia)
        self.threshold = _check_probability("threshold", threshold)
        if self.threshold < 0.5:
            raise PolicyError(f"threshold={self.threshold} must lie in [0.5, 1]: below a majority it would "
                              "have agents yield to a minority")

    def params(self):
        return {"inertia": self.inertia, "threshold": self.threshold}

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

    def decide_vector(self, colours, preferences, adjacency, rng):
        draws = np.array([rng.random() for _ in range(len(colours))])
        degree = adjacency.degree
        blue = (adjacency.matrix @ colours.astype(np.int64)) / np.maximum(degree, 1)
        keep = (draws < self.inertia) | (degree == 0) | (blue == 0.5)
        if self.threshold > 0.5:
            against = np.where(preferences == 0, blue, 1.0 - blue)
            choice = np.where(against > self.threshold, 1 - preferences, preferences)
        else:
            choice = (blue > 0.5).astype(np.int8)
        return np.where(keep, colours, choice).astype(np.int8)


@register_policy("voter", "consensus", "copy the colour of a uniformly random neighbour")
class Voter(Policy):
    """The voter model: copy a uniformly random neighbour (keep when isolated)."""

    vectorised = True

    def decide_vector(self, colours, preferences, adjacency, rng):
        new = colours.copy()
        indptr, indices = adjacency.indptr, adjacency.indices
        for i, d in enumerate(adjacency.degree.tolist()):
            if d:
                new[i] = colours[indices[indptr[i] + int(rng.random() * d)]]
        return new

    def decide(self, obs: ConsensusObservation, rng: random.Random) -> ConsensusDecision:
        if not obs.neighbour_colours:
            return ConsensusDecision(obs.colour)
        return ConsensusDecision(obs.neighbour_colours[int(rng.random() * len(obs.neighbour_colours))])


@register_policy("stubborn", "consensus", "always hold the preferred colour")
class Stubborn(Policy):
    """A zealot: always the preferred colour."""

    vectorised = True

    def decide_vector(self, colours, preferences, adjacency, rng):
        return preferences.copy()

    def decide(self, obs: ConsensusObservation, rng: random.Random) -> ConsensusDecision:
        return ConsensusDecision(obs.preference)


@register_policy("random", "consensus", "a fair coin each round")
class RandomColour(Policy):
    """A fair coin each round (a null model)."""

    vectorised = True

    def decide_vector(self, colours, preferences, adjacency, rng):
        return np.array([rng.random() < 0.5 for _ in range(len(colours))], dtype=np.int8)

    def decide(self, obs: ConsensusObservation, rng: random.Random) -> ConsensusDecision:
        return ConsensusDecision("blue" if rng.random() < 0.5 else "red")
