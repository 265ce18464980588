"""What an agent sees and decides in the colouring game, and its rule policies.

The rule policies form the game's ``rules`` group:

* ``best-response``: an agent in conflict (a neighbour holds its colour) takes a
  colour none of its neighbours holds, else one of the colours least held among
  them, ties drawn from the game's stream; an agent not in conflict keeps its colour.
* ``random``: a colour drawn uniformly from the k colours, whatever it sees.

Inertia is the game's, not a policy's (``inertia``): each round, before anyone
decides, every agent keeps its colour with that probability whatever it sees, so
"best response with inertia p" is ``best-response`` in a game with ``inertia=p``,
and an LLM agent sits out the same rounds a rule agent would.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from llm_mesa import Policy, register_policy

NAME = "colouring"


@dataclass(frozen=True)
class View:
    """What one agent sees when it decides: the rules of its game and its neighbourhood.

    ``neighbour_degrees``, ``conflicts`` and ``network_colours`` (every node's colour,
    in node order) with ``links`` (every edge) are None unless the game shows them
    (``show_degrees``, ``show_conflicts``, ``show_network``).
    """

    agent: int
    round: int  # the round being decided (1 is the first)
    colour: str
    neighbours: tuple[int, ...]
    neighbour_colours: tuple[str, ...]
    colours: tuple[str, ...]  # the k colours of the game, in order
    n_players: int
    max_rounds: int
    payoff: float
    neighbour_degrees: tuple[int, ...] | None = None
    conflicts: int | None = None
    inertia: float = 0.0  # the game's: the chance that an agent sits a round out
    game_key: str = ""
    update: str = "synchronous"  # how turns are taken (llm_mesa.UPDATE_SCHEMES)
    activation: int | None = None  # the turn's index in its round (None: synchronous)
    network_colours: tuple[str, ...] | None = None
    links: tuple[tuple[int, int], ...] | None = None

    @property
    def in_conflict(self) -> bool:
        return self.colour in self.neighbour_colours


@dataclass(frozen=True)
class Move:
    """A decision: the colour chosen, and for an LLM agent why and how its answer went."""

    colour: str
    reason: str = ""
    #: ``rule`` for a rule policy, ``default`` for the game's default action (a person's missed answer), else
    #: the LLM answer's outcome (``ok``, ``retry_ok``, ``parse_failure``, ...)
    outcome: str = "rule"

    @property
    def failed(self) -> bool:
        return self.outcome not in ("rule", "default", "ok", "retry_ok")


def best_response(colour: str, neighbour_colours: Sequence[str], colours: Sequence[str], rng: random.Random) -> str:
    """The best-response colour (see the module docstring); the one draw is made only on a tie."""
    if colour not in neighbour_colours:
        return colour
    held = Counter(neighbour_colours)
    fewest = min(held[c] for c in colours)
    candidates = [c for c in colours if held[c] == fewest]  # the free colours, when there are any
    return candidates[0] if len(candidates) == 1 else candidates[rng.randrange(len(candidates))]


def situation(observation: View) -> tuple:
    """What the rules read of a view: the own colour and how many neighbours hold each colour (``llm-mesa fit``
    weighs each such situation once)."""
    held = Counter(observation.neighbour_colours)
    return observation.colour, observation.colours, tuple(held[c] for c in observation.colours)


@register_policy("best-response", NAME, "in conflict: a colour no neighbour holds, else one least held (ties random)")
class BestResponse(Policy):
    distribution_key = staticmethod(situation)

    def decide(self, observation: View, rng: random.Random) -> Move:
        return Move(best_response(observation.colour, observation.neighbour_colours, observation.colours, rng))

    def distribution(self, observation: View) -> dict[str, float]:
        """Out of conflict: the own colour; in conflict: each of the least-held colours alike."""
        if not observation.in_conflict:
            return {c: float(c == observation.colour) for c in observation.colours}
        held = Counter(observation.neighbour_colours)
        fewest = min(held[c] for c in observation.colours)
        candidates = [c for c in observation.colours if held[c] == fewest]
        return {c: (1.0 / len(candidates) if c in candidates else 0.0) for c in observation.colours}


@register_policy("random", NAME, "a colour drawn uniformly from the k colours, whatever it sees")
class RandomColour(Policy):
    distribution_key = staticmethod(situation)

    def decide(self, observation: View, rng: random.Random) -> Move:
        return Move(observation.colours[rng.randrange(len(observation.colours))])

    def distribution(self, observation: View) -> dict[str, float]:
        return {c: 1.0 / len(observation.colours) for c in observation.colours}


__all__ = ["BestResponse", "Move", "NAME", "RandomColour", "View", "best_response", "situation"]
