"""SIGN as the core sees it: one parameter definition and how to play one game.

``PARAMETERS`` is the single definition of the naming game's parameters: the
model validates with it, the ``naming`` subcommand builds its options from it,
the explorer its controls and ``llm-mesa sweep --game naming --set NAME=...`` its
axes. The study's design cells are ``conditions`` (mode and memory go together:
NL has no memory, NL-SW and Schema a window of 5 or 10).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from llm_mesa.games import Game, GameResult, PlayRequest
from llm_mesa.parameters import Parameter, ParameterSet

from .observation import MODES

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
              low=1, high=MAX_ROUNDS, cli="--rounds", label="Rounds"),
    Parameter("lexicon_size", int, 12, "M, names C1..CM", low=1, high=10_000, control=False),
    Parameter("stop_at_consensus", bool, False, "stop once every agent holds one name (the study always plays all rounds)",
              control=False),
    Parameter("convergence_basis", str, None,
              "what convergence is read from: said, latest or held (default said; latest under one pairing)",
              choices=("said", "latest", "held"), nullable=True, control=False),
)

#: The study's design cells (SPEC B): NL (K = 0), NL-SW and Schema with K = 5 or 10.
CONDITIONS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "nl": MappingProxyType({"mode": "nl", "memory": 0}),
    "nl-sw-5": MappingProxyType({"mode": "nl-sw", "memory": 5}),
    "nl-sw-10": MappingProxyType({"mode": "nl-sw", "memory": 10}),
    "schema-5": MappingProxyType({"mode": "schema", "memory": 5}),
    "schema-10": MappingProxyType({"mode": "schema", "memory": 10}),
})

SPEAKER_CONFIGURATIONS: Mapping[str, str] = MappingProxyType({
    "echo": "echo", "noisy-0.3": "noisy:p=0.3", "minimal": "minimal"})


class NamingGame(Game):
    """SIGN, the schema-induced naming game (SPEC part B)."""

    name = "naming"
    summary = "SIGN, the schema-induced naming game"
    parameters = PARAMETERS
    policy_module = "llm_mesa.models.naming.speakers"
    lazy_policies = {"llm": ("llm_mesa.models.naming.llm_speaker",
                             "an LLM speaker (the authors' raw prompt); needs an endpoint")}
    cli_module = "llm_mesa.models.naming.cli"
    analysis_module = "llm_mesa.models.naming.analysis"
    figures_module = "llm_mesa.models.naming.figures"
    behaviours_module = "llm_mesa.models.naming.behaviours"
    tables = ("rounds", "speakers")
    policy_groups = {"rules": SPEAKER_CONFIGURATIONS}
    conditions = CONDITIONS
    condition_groups = {"study": tuple(CONDITIONS)}
    policy_parameter = "speaker"
    populations = True  # the study's mixed 6 + 6 population of two models
    #: the study's sampling: raw completion, 32 tokens, temperature 0.7, top-p 0.9, repetition penalty 1.1
    endpoint_defaults = {"prompt_mode": "completion", "max_tokens_per_call": 32, "temperature": 0.7,
                         "top_p": 0.9, "extra_body": '{"repetition_penalty": 1.1}'}

    def outcome(self, row: Mapping[str, Any]) -> str:
        return f"agreement {row['agreement_final']:.2f} after {row['rounds']} rounds"

    def llm_policy(self, endpoint: Any, store: Any = None) -> Any:
        from .llm_speaker import LLMSpeaker

        return LLMSpeaker(endpoint, store=store)

    def estimate(self, parameters: Mapping[str, Any], endpoint: Any) -> dict[str, Any]:
        """Every paired agent speaks each round (two under pairing one); retries not counted."""
        from llm_mesa.sweep.dry_run import approx_tokens

        from .observation import NamingObservation, lexicon
        from .prompts import build_prompt

        full = {**PARAMETERS.defaults(), **parameters}
        n, rounds = full["n"], full["max_rounds"]
        speakers = 2 if full["pairing"] == "one" else n - n % 2
        obs = NamingObservation(n - 1, rounds, "C12", full["mode"], lexicon(full["lexicon_size"]))
        completion = endpoint.max_tokens or endpoint.max_completion_tokens or 32
        return {"calls": speakers * rounds, "rounds": rounds, "prompt_tokens_per_call": approx_tokens(build_prompt(obs)),
                "completion_tokens_per_call": completion, "may_stop_early": bool(full["stop_at_consensus"])}

    def check(self, parameters: Mapping[str, Any], seed: int) -> None:
        from .model import NamingModel

        NamingModel(speaker="echo", rng=seed, **parameters)

    def play(self, request: PlayRequest) -> GameResult:
        from .model import NamingModel

        speaker: Any = request.policy
        models: list[str] = []
        if getattr(request.endpoint, "parts", None) is not None:  # a mixed population, in equal blocks
            parts = [p if isinstance(p, str) else self.llm_policy(p, request.store) for p in request.endpoint.parts]
            n = request.parameters.get("n", PARAMETERS["n"].default)
            block = max(1, n // len(parts))
            speaker = [parts[min(i // block, len(parts) - 1)] for i in range(n)]
            models = [p.endpoint.model for p in parts if not isinstance(p, str)]
        elif request.endpoint is not None:
            speaker = self.llm_policy(request.endpoint, request.store)
            models = [request.endpoint.model]
        model = NamingModel(speaker=speaker, rng=request.seed, **request.parameters)
        model.run()
        row = {k: v for k, v in model.summary().items() if k != "seed"}
        row["speaker_counts"] = model.parameters()["speaker_counts"]  # who spoke for how many agents
        if models:
            from .prompts import TEMPLATE_HASH

            row["model"] = " + ".join(models)
            row["prompt_template_hash"] = TEMPLATE_HASH  # the report's manifest summary names it
        from .metrics import speakers_frame

        makers = {"rounds": model.rounds_frame, "speakers": lambda: speakers_frame(model)}
        tables = {name: makers[name]() for name in request.tables}
        return GameResult(row, tables)

    def headline(self, games, conditions: Sequence[str], policies: Sequence[str]) -> str:
        import pandas as pd

        if games.empty:
            return "(no games)"
        grouped = games.groupby(["condition", "policy"], sort=False)
        table = pd.DataFrame({
            "games": grouped.size(),
            "agreement_final": grouped["agreement_final"].mean().round(3),
            "sd": grouped["agreement_final"].std(ddof=1).round(3),
            "reached_50%": grouped["rounds_to_50"].count(),
        })
        return "final agreement (mean, SD over seeds):\n" + table.to_string()


GAME = NamingGame()
