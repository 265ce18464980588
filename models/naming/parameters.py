"""The naming game's parameters: the one definition the model, the ``naming`` command,
the explorer and sweeps (``llm-mesa sweep --game naming --set NAME=V``) read.

In a module of its own, with no Mesa, so that the game's entry point and the model
both import it and neither imports the other.
"""

from __future__ import annotations

from llm_mesa.parameters import Parameter, ParameterSet

from .observation import MODES
from .prompts import TEMPLATES

MAX_AGENTS = 10_000_000
MAX_ROUNDS = 1_000_000

PARAMETERS = ParameterSet.of(
    Parameter("n", int, 12, "number of agents (the study: 12 or 24)", low=2, high=MAX_AGENTS, label="N (agents)"),
    Parameter("mode", str, "schema", "nl: free text, no memory; nl-sw: free text with memory; schema: @say lines",
              choices=MODES, label="Mode"),
    Parameter("memory", int, None, "memory window K (0 = no memory; default 0 for nl, 5 otherwise)",
              low=0, high=MAX_ROUNDS, nullable=True, control=False, label="Memory K"),
    Parameter("alpha", float, 0.5, "lose-shift adoption probability (the study: 0.5, 0.75, 0.9)", low=0, high=1,
              step=0.05, label="alpha (lose-shift)"),
    Parameter("pairing", str, "all", "all: disjoint random pairs each round; one: a single random pair",
              choices=("all", "one"), label="Pairing"),
    Parameter("max_rounds", int, 300, "rounds to play (the study: 300; 100 for the mixed population)",
              low=1, high=MAX_ROUNDS, cli="--rounds", label="Rounds", round_limit=True),
    Parameter("lexicon_size", int, 12, "M, names C1..CM", low=1, high=10_000, control=False),
    Parameter("stop_at_consensus", bool, False, "stop once every agent holds one name (the study always plays all rounds)",
              control=False),
    # which wording of the prompt LLM speakers get (a sweep axis); it changes nothing that is drawn
    TEMPLATES.parameter("prompt", "the wording of the prompt LLM speakers get", label="Prompt wording",
                        in_seed=False),
    Parameter("convergence_basis", str, None,
              "what convergence is read from: said, latest or held (default said; latest under one pairing)",
              choices=("said", "latest", "held"), nullable=True, control=False),
)

__all__ = ["MAX_AGENTS", "MAX_ROUNDS", "PARAMETERS"]
