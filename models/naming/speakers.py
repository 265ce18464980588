"""Rule speakers of the naming game: what replaces the LLM for baselines and tests.

Each speaker writes a message in its mode's format and the shared decoder reads it
back, so rule games exercise the same decoding path (and outcome counts) as LLM games.
All randomness comes from the ``rng`` the model hands over (its ``random``).
"""

from __future__ import annotations

import random

from llm_mesa.policy import Policy, PolicyError, register_policy

from .decoding import decode_with_retry
from .observation import NamingObservation, Utterance, is_schema_mode


def say(name: str, mode: str, rationale: str = "keeping my name") -> str:
    """A well-formed message naming ``name`` in the mode's format."""
    if is_schema_mode(mode):
        return f"@say {{name: {name}}} | {rationale}"
    return f"I propose the name {name}."


def _said(observation: NamingObservation, likely: dict[str | None, float]) -> dict[str | None, float]:
    """Every name a speaker may be read as saying (and None: read as naming nothing), ``likely`` as given, the rest 0."""
    return {**dict.fromkeys(observation.lexicon, 0.0), None: 0.0, **likely}


def situation(observation: NamingObservation) -> tuple:
    """What the rule speakers read of an observation: the own name, the names remembered, the mode, the lexicon's
    size (``llm-mesa fit`` weighs each such situation once)."""
    return observation.name, tuple(sorted(set(observation.memory))), observation.mode, len(observation.lexicon)


class RuleSpeaker(Policy):
    """A speaker that writes its message itself; decoding and the retry are shared.

    Its ``distribution`` is over the name its message is read as (None: none), what ``llm-mesa fit``
    weighs against the names speakers were read as saying.
    """

    game = "naming"
    distribution_key = staticmethod(situation)

    def compose(self, observation: NamingObservation, rng: random.Random) -> str:
        raise NotImplementedError

    def decide(self, observation: NamingObservation, rng: random.Random) -> Utterance:
        def again() -> str:
            return self.compose(_retry_of(observation), rng)

        return decode_with_retry(observation.mode, self.compose(observation, rng), again,
                                 len(observation.lexicon))


def _retry_of(observation: NamingObservation) -> NamingObservation:
    return NamingObservation(observation.agent_id, observation.round, observation.name,
                             observation.mode, observation.lexicon, observation.memory, attempt=1,
                             game_key=observation.game_key, prompt=observation.prompt)


@register_policy("echo", "naming", "say the current name, always well formed")
class EchoSpeaker(RuleSpeaker):
    """Says its current name in the mode's format: the ideal compliant speaker."""

    def compose(self, observation: NamingObservation, rng: random.Random) -> str:
        return say(observation.name, observation.mode)

    def distribution(self, observation: NamingObservation) -> dict[str | None, float]:
        return _said(observation, {observation.name: 1.0})


@register_policy("noisy", "naming", "say the current name; malformed with probability p")
class NoisySpeaker(RuleSpeaker):
    """Says its current name, but each reply is malformed with probability ``p``.

    A malformed Schema reply is, with equal odds, free text that still names the name
    (the salvage can read it) or babble that names nothing. A malformed NL reply names
    nothing or two names, so it never decodes. Every attempt (the reminder too) draws
    afresh, so all decoding outcomes occur.
    """

    def __init__(self, p: float = 0.3):
        p = float(p)
        if not 0.0 <= p <= 1.0:
            raise PolicyError(f"noisy speaker p={p} must lie in [0, 1]")
        self.p = p

    fit_parameters = {"p": (0.0, 1.0)}

    def params(self):
        return {"p": self.p}

    def distribution(self, observation: NamingObservation) -> dict[str | None, float]:
        """Schema: read as nothing only when both replies are malformed babble (p/2 each: the salvage reads the
        rest); NL: every malformed reply names nothing or two names."""
        lost = (self.p / 2) ** 2 if is_schema_mode(observation.mode) else self.p
        return _said(observation, {observation.name: 1.0 - lost, None: lost})

    def compose(self, observation: NamingObservation, rng: random.Random) -> str:
        name = observation.name
        if rng.random() >= self.p:
            return say(name, observation.mode)
        readable = rng.random() < 0.5
        if is_schema_mode(observation.mode):
            return f"I would rather go with {name} this time." if readable else "Hmm, let me think."
        if readable:
            others = [n for n in observation.lexicon if n != name]
            if others:
                return f"Either {name} or {others[0]}, I cannot decide."
        return "Hmm, let me think about a good name."


@register_policy("minimal", "naming", "say a random name from the inventory (own name + memory)")
class MinimalSpeaker(RuleSpeaker):
    """Says a uniformly random name from its inventory: its current name and its memory.

    The minimal naming game's speaker (Baronchelli et al.): with no memory it behaves as
    ``echo``; with a memory window it explores the names it has heard.
    """

    def distribution(self, observation: NamingObservation) -> dict[str | None, float]:
        inventory = {observation.name, *observation.memory}
        return _said(observation, dict.fromkeys(inventory, 1.0 / len(inventory)))

    def compose(self, observation: NamingObservation, rng: random.Random) -> str:
        inventory = sorted({observation.name, *observation.memory}, key=lambda n: int(n[1:]))
        return say(inventory[int(rng.random() * len(inventory))], observation.mode, "from my inventory")


# Registers the "llm" speaker beside the rule speakers (one registry for CLI, sweeps, explorer).
from . import llm_speaker  # noqa: E402,F401
