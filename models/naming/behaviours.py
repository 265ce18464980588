"""The naming game's loopback behaviours: SIGN speakers that read its prompt.

Registered with the loopback endpoint when it first lists or builds behaviours
(``NamingGame.behaviours_module``): ``naming:echo``, ``naming:noisy?p=0.3`` and
``naming:babble``. They read every variant of the prompt the game declares (``prompts.VARIANTS``)
by that variant's own templates, and any other prompt by the study's lines.
"""

from __future__ import annotations

import random
import re
from functools import cache

from llm_mesa.loopback.behaviours import (
    Behaviour,
    PromptNotUnderstood,
    PromptView,
    last_match,
    probability_param,
    register_behaviour,
)
from llm_mesa.prompt_templates import pattern

_NAMING_NAME = re.compile(r"Your current proposed name is\s+([^\s.,;]+)", re.I)
#: a Schema prompt asks for the @say form (an NL prompt never shows it); the form carries the current name
_NAMING_SCHEMA = re.compile(r"@say\s*\{\s*name\s*:", re.I)
_NAMING_SAY = re.compile(r"@say\s*\{\s*name\s*:\s*([^\s}]+)\s*\}", re.I)
_NAME_NUMBER = re.compile(r"(\D*)(\d+)$")


_NAMING_GROUPS = {"agent_id": r"\d+", "round_id": r"\d+", "name": r"[^\s.,;{}]+"}


@cache
def _variant_prompts() -> tuple[tuple[re.Pattern[str], bool], ...]:
    """Each declared variant's first prompt as a regular expression, per mode (Schema first), with its mode."""
    from .prompts import VARIANTS

    return tuple((re.compile(pattern(texts["prompt"].replace("{instruction}", texts[mode]), _NAMING_GROUPS)), mode == "schema")
                 for texts in VARIANTS.values() for mode in ("schema", "nl"))


def _naming_state(prompt: PromptView) -> tuple[str, bool]:
    """(current name, schema mode) read from a SIGN prompt: a declared variant's, else the study's lines."""
    for variant, schema in _variant_prompts():
        found = variant.search(prompt.last_user)
        if found is not None:
            return found.group("name"), schema
    schema = last_match(_NAMING_SCHEMA, prompt.last_user, prompt.full) is not None
    name = last_match(_NAMING_NAME, prompt.last_user, prompt.full)
    if name is not None:
        return name.group(1), schema
    # a prompt of one's own in Schema mode: the name its @say form shows (not the reminder's placeholder Ck)
    said = next((m.group(1) for m in _NAMING_SAY.finditer(prompt.last_user) if m.group(1) != "Ck"), None)
    if said is None:
        raise PromptNotUnderstood("the naming prompt has no line like 'Your current proposed name "
                                  "is C3.' and no '@say {name: C3}' form; the naming behaviours read those")
    return said, schema


def _another_name(name: str) -> str:
    match = _NAME_NUMBER.match(name)
    if match is None:
        return "C1" if name != "C1" else "C2"
    return f"{match.group(1) or 'C'}{int(match.group(2)) % 12 + 1}"


def _well_formed_line(name: str, schema: bool) -> str:
    return f"@say {{name: {name}}} | keeping my name" if schema else f"I propose the name {name}."


class NamingEcho(Behaviour):
    """Says its current name, in the form the prompt asks for."""

    kind = "naming:echo"

    def answer(self, prompt: PromptView, rng: random.Random | None) -> str:
        return _well_formed_line(*_naming_state(prompt))

    def malformed(self, prompt: PromptView, rng: random.Random) -> str:
        return _naming_malformed(prompt, rng)


def _naming_malformed(prompt: PromptView, rng: random.Random) -> str:
    """A line that fails the schema: one name without @say, two names, or none."""
    try:
        name, schema = _naming_state(prompt)
    except PromptNotUnderstood:
        name, schema = "C1", True
    other = _another_name(name)
    variants = [f"{name} or {other}, hard to choose.", "I would rather not say."]
    if schema:
        variants.append(f"My name is {name}, as before.")  # salvageable by free-text decoding
    return rng.choice(variants)


class NamingNoisy(Behaviour):
    """Like echo, but with probability ``p`` a malformed line (retry/salvage/None all occur)."""

    kind = "naming:noisy"
    uses_rng = True

    def __init__(self, params: dict[str, str], model: str):
        self.p = probability_param(params, "p", 0.3, model)

    def answer(self, prompt: PromptView, rng: random.Random | None) -> str:
        assert rng is not None
        name, schema = _naming_state(prompt)
        if rng.random() < self.p:
            return _naming_malformed(prompt, rng)
        return _well_formed_line(name, schema)

    def malformed(self, prompt: PromptView, rng: random.Random) -> str:
        return _naming_malformed(prompt, rng)


_BABBLE = (
    "La la la, what a lovely day.",
    "Names are overrated; I will not choose one.",
    "Hello there! Nice to meet you.",
    "@say nothing | I prefer silence.",
)


class NamingBabble(Behaviour):
    """Never names anything: every decode ends in None."""

    kind = "naming:babble"
    uses_rng = True

    def answer(self, prompt: PromptView, rng: random.Random | None) -> str:
        assert rng is not None
        return rng.choice(_BABBLE)


register_behaviour("naming:echo", NamingEcho, "SIGN speaker: says its current name in the requested form")
register_behaviour("naming:noisy", NamingNoisy, "SIGN speaker: like echo, malformed with probability p (default 0.3)",
                   params="p")
register_behaviour("naming:babble", NamingBabble, "SIGN speaker: never names anything")
