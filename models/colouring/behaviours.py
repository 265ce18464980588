"""The colouring game's stand-in behaviours for the loopback server: they read its prompt and answer.

Registered when the loopback server first lists or builds behaviours (the game's
``llm.behaviours``):

* ``colouring:best-response`` answers as the ``best-response`` rule would, its ties
  drawn from the request's own stream; ``?inertia=P`` keeps the current colour with
  probability P first (so a game without inertia still breaks its symmetry);
* ``colouring:random``: one of the game's colours, uniformly.

Both read the colours from the rules ("There are k colours: ...") and the state from
the last user message ("Your current colour: ...", "Your neighbours' current colours:
3: red, 5: blue"), and answer JSON that fits the request's schema.
"""

from __future__ import annotations

import random
import re
from typing import Any

from llm_mesa.loopback import Behaviour, LoopbackError, PromptNotUnderstood, PromptView, register_behaviour

from .policies import NAME, best_response

_COLOURS = re.compile(r"There are \d+ colours: ([a-z, ]+)\.")
_CURRENT = re.compile(r"Your current colour: ([a-z]+)")
_NEIGHBOURS = re.compile(r"Your neighbours' current colours: ([^\n]*)")
_PAIR = re.compile(r"\d+: ([a-z]+)")


def read_prompt(prompt: PromptView) -> tuple[tuple[str, ...], str, list[str]]:
    """The game's colours, the agent's colour and its neighbours' colours, as the prompt shows them."""
    colours = _COLOURS.search(prompt.full)
    current = _CURRENT.search(prompt.last_user)
    neighbours = _NEIGHBOURS.search(prompt.last_user)
    if colours is None or current is None or neighbours is None:
        raise PromptNotUnderstood("the colouring behaviours read 'There are k colours: ...', 'Your current colour: ...' "
                                  "and 'Your neighbours' current colours: ...' lines; this prompt lacks one")
    return tuple(c.strip() for c in colours.group(1).split(",")), current.group(1), _PAIR.findall(neighbours.group(1))


class _ColouringBehaviour(Behaviour):
    json_answer = True
    uses_rng = True
    schema_aliases = {"color": "colour"}


class BestResponseBehaviour(_ColouringBehaviour):
    """Answers the colouring prompt as the best-response rule, with its own inertia."""

    kind = f"{NAME}:best-response"

    def __init__(self, params: dict[str, str], model: str) -> None:
        raw = params.pop("inertia", "0")
        try:
            self.inertia = float(raw)
        except ValueError:
            self.inertia = -1.0
        if not 0.0 <= self.inertia <= 1.0:
            raise LoopbackError(f"inertia={raw!r} in model {model!r} must be a probability in [0, 1]")

    def answer(self, prompt: PromptView, rng: random.Random | None) -> dict[str, Any]:
        assert rng is not None
        colours, colour, neighbours = read_prompt(prompt)
        if rng.random() < self.inertia:
            return {"colour": colour, "reason": "inertia: kept my colour"}
        chosen = best_response(colour, neighbours, colours, rng)
        clash = sum(c == colour for c in neighbours)
        return {"colour": chosen, "reason": f"{clash} neighbours held {colour}" if chosen != colour else "no need to move"}


class RandomBehaviour(_ColouringBehaviour):
    """One of the game's colours, uniformly."""

    kind = f"{NAME}:random"

    def answer(self, prompt: PromptView, rng: random.Random | None) -> dict[str, Any]:
        assert rng is not None
        colours, _, _ = read_prompt(prompt)
        return {"colour": colours[rng.randrange(len(colours))], "reason": "a random colour"}


register_behaviour(f"{NAME}:best-response", BestResponseBehaviour,
                   "answers the colouring prompt as best response would: colouring:best-response?inertia=P",
                   params="inertia")
register_behaviour(f"{NAME}:random", RandomBehaviour, "a random colour of the colouring game")
