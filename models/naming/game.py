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

from llm_mesa import declared
from llm_mesa import play as core
from llm_mesa.games import (
    Extensions,
    Game,
    GameResult,
    LlmEstimate,
    LlmSupport,
    PlayRequest,
    PolicyCatalog,
    StudyDesign,
    Table,
)

from .parameters import PARAMETERS

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


def outcome(game: Any, row: Mapping[str, Any]) -> str:
    return f"agreement {row['agreement_final']:.2f} after {row['rounds']} rounds"

def estimate(game: Any, parameters: Mapping[str, Any], endpoint: Any) -> LlmEstimate:
    """Every paired agent speaks each round (two under pairing one); retries not counted."""
    from llm_mesa.sweep.dry_run import approx_tokens

    from .observation import NamingObservation, lexicon
    from .prompts import build_prompt

    full = {**PARAMETERS.defaults(), **parameters}
    n, rounds = full["n"], full["max_rounds"]
    speakers = 2 if full["pairing"] == "one" else n - n % 2
    obs = NamingObservation(n - 1, rounds, "C12", full["mode"], lexicon(full["lexicon_size"]), prompt=full["prompt"])
    completion = endpoint.max_tokens or endpoint.max_completion_tokens or 32
    # the prompt's tokens, and its chat message's own (its role and the server's marks around it)
    return LlmEstimate(calls=speakers * rounds, rounds=rounds, prompt_tokens_per_call=approx_tokens(build_prompt(obs)) + 4,
                       completion_tokens_per_call=completion, may_stop_early=bool(full["stop_at_consensus"]))

def _check(game: Any, parameters: Mapping[str, Any], seed: int) -> None:
    from .model import NamingModel

    NamingModel(speaker="echo", rng=seed, **parameters)

def _play(game: Any, request: PlayRequest) -> GameResult:
    speaker: Any = request.policy
    models: list[str] = []
    if getattr(request.endpoint, "parts", None) is not None:  # a mixed population, in equal blocks
        parts = [p if isinstance(p, str) else declared.llm_policy(game, p, request.store) for p in request.endpoint.parts]
        n = request.parameters.get("n", PARAMETERS["n"].default)
        block = max(1, n // len(parts))
        speaker = [parts[min(i // block, len(parts) - 1)] for i in range(n)]
        models = [p.endpoint.model for p in parts if not isinstance(p, str)]
    elif request.endpoint is not None:
        speaker = declared.llm_policy(game, request.endpoint, request.store)
        models = [request.endpoint.model]
    model = game.build(request.parameters, speaker, request.seed)
    model.run()
    row = {k: v for k, v in model.summary().items() if k != "seed"}
    row["speaker_counts"] = model.parameters()["speaker_counts"]  # who spoke for how many agents
    if models:
        from .prompts import TEMPLATES

        row["model"] = " + ".join(models)
        row["prompt_template_hash"] = TEMPLATES.load(model.prompt).hash  # the report's manifest summary names it
        llms = [s for s in (speaker if isinstance(speaker, list) else [speaker]) if not isinstance(s, str)]
        core.judge(game, row, model, request.parameters, llms)  # the core's count of failed decisions, and its verdict
    from .metrics import speakers_frame

    makers = {"rounds": model.rounds_frame, "speakers": lambda: speakers_frame(model), "agents": model.agents_frame}
    tables = {name: makers[name]() for name in request.tables}
    return GameResult(row, tables)

def headline(game: Any, games, conditions: Sequence[str], policies: Sequence[str]) -> str:
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


class NamingGame(Game):
    """SIGN, the schema-induced naming game (SPEC part B)."""

    name = "naming"
    summary = "SIGN, the schema-induced naming game"
    parameters = PARAMETERS
    tables = (Table("rounds", ("round",), "one row per round: agreement, held share, tokens, decoding outcomes"),
              Table("speakers", ("speaker",), "per speaker of a mixed population: agents, utterances, tokens"),
              Table("agents", ("round", "agent"), "one row per agent and round: name held, partner, name said "
                    "(decoded), how it was decoded", types={"partner": "Int64", "said": "string", "outcome": "string"},
                    read=lambda model: model.agents_frame()))  # not the DataCollector's: a name said is read when
    # both partners spoke
    row_types = {f"{what}_to_{level}": "float64" for what in ("tokens", "total_tokens", "rounds")
                 for level in (50, 60, 70)}
    policies = PolicyCatalog(
        module="llm_mesa.models.naming.speakers",
        lazy={"llm": ("llm_mesa.models.naming.llm_speaker",
                      "an LLM speaker (the authors' raw prompt); needs an endpoint")},
        groups={"rules": SPEAKER_CONFIGURATIONS}, parameter="speaker",
        populations=True,  # the study's mixed 6 + 6 population of two models
        observed="llm_mesa.models.naming.observed:observed")  # what llm-mesa fit weighs
    #: the study's outcome: the population's final agreement (llm-mesa fit's check compares it first)
    headline_measure = "agreement_final"
    design = StudyDesign(CONDITIONS, {"study": tuple(CONDITIONS)})
    #: the study's sampling: raw completion, 32 tokens, temperature 0.7, top-p 0.9, repetition penalty 1.1
    llm = LlmSupport(policy="llm_mesa.models.naming.llm_speaker:game_policy",
                     endpoint_defaults={"prompt_mode": "completion", "max_tokens": 32, "temperature": 0.7,
                                        "top_p": 0.9, "extra_body": {"repetition_penalty": 1.1}},
                     behaviours="llm_mesa.models.naming.behaviours", estimate=estimate)
    extensions = Extensions(cli="llm_mesa.models.naming.cli", analysis="llm_mesa.models.naming.analysis",
                            figures="llm_mesa.models.naming.figures", view="llm_mesa.models.naming.view:NamingView",
                            outcome=outcome, check=_check, play=_play, headline=headline)

    def build(self, parameters: Mapping[str, Any], policy: Any, seed: int) -> Any:
        from .model import NamingModel

        return NamingModel(speaker=policy, rng=seed, **parameters)


GAME = NamingGame()
