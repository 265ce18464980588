"""The consensus command's LLM set-up: endpoint options, recording, spending limits.

Kept apart from the LLM policy so that ``llm-mesa consensus --help`` and rule-only
games never import openai: the policy is imported only when a game has LLM agents.
Every ``llm[:k=v,...]`` spec of ``--policy`` and ``--assign`` gets its own endpoint
(the command line's options, then the spec's own, which win), and all of them share
one record/replay store and one usage ledger.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llm_mesa.llm.dialects import endpoint_manifest
from llm_mesa.llm.endpoint import EndpointError, add_endpoint_arguments, endpoint_from_spec
from llm_mesa.llm.recording import add_recording_arguments, game_recording, store_from_args
from llm_mesa.llm.usage import Usage
from llm_mesa.policy import parse_policy_spec

if TYPE_CHECKING:
    import pandas as pd

    from llm_mesa.llm.store import ResponseStore

    from .llm_policy import LLMConsensusPolicy


def add_llm_arguments(parser: argparse.ArgumentParser) -> None:
    """The consensus command's LLM options: the endpoint, recording (the shared options) and spending limits."""
    add_endpoint_arguments(parser)
    add_recording_arguments(parser)
    g = parser.add_argument_group("spending limits")
    g.add_argument("--max-tokens", type=positive(int), help="stop the game cleanly once it has used this many tokens")
    g.add_argument("--max-cost", type=positive(float),
                   help="stop the game cleanly once it has cost this much (needs --price)")


def positive(kind: type):
    """argparse type: a positive finite number (a limit of 0, -5 or nan would stop or never stop the game)."""
    def convert(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not (value > 0 and value != float("inf")):
            raise argparse.ArgumentTypeError(f"{text} must be a positive finite number")
        return value
    convert.__name__ = kind.__name__
    return convert


def is_llm_spec(spec: str) -> bool:
    return spec.split(":")[0].strip() == "llm"


@dataclass
class LLMSetup:
    """What a game with LLM agents holds beside the model: its LLM policies, the store, the ledger."""

    policies: dict[str, "LLMConsensusPolicy"]
    store: "ResponseStore | None"
    usage: Usage = field(default_factory=lambda: Usage("game"))

    @property
    def policy(self) -> "LLMConsensusPolicy":
        """The first LLM policy (the one of --policy when it is an LLM)."""
        return next(iter(self.policies.values()))

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

    def diagnosis(self) -> str | None:
        """Why the calls failed, and the fix (``llm_mesa.llm.diagnosis``), or None."""
        from llm_mesa.llm.diagnosis import diagnose

        return diagnose(self.usage, (p.endpoint for p in self.policies.values()))

    def summary_fields(self) -> dict[str, Any]:
        models = sorted({p.endpoint.model for p in self.policies.values()})
        return {"replayed_calls": self.usage.replayed, "model": ",".join(models)}

    def tables(self, model) -> dict[str, "pd.DataFrame"]:
        import pandas as pd

        return {"transcript": pd.DataFrame(model.transcript)}

    def manifest(self, prompt_variant: str = "study", update: str = "synchronous") -> dict[str, Any]:
        from .prompt_variants import TEMPLATES

        template = TEMPLATES.load(prompt_variant)
        endpoints = {spec: endpoint_manifest(p.endpoint) for spec, p in self.policies.items()}
        served = {(m, f) for p in self.policies.values() for m, f in p.served_by}
        return {
            "endpoint": endpoint_manifest(self.policy.endpoint),
            "endpoints": endpoints,
            "prompt_variant": prompt_variant,
            "prompt_template_hash": self.policy.prompt_for(prompt_variant).template_hash_for(update),
            **({"prompt_file": template.record()} if template.is_file else {}),  # its text: the run replays from it
            "served_by": [{"model": m, "system_fingerprint": f} for m, f in sorted(served, key=str)],
            "store": None if self.store is None else {"path": str(self.store.path), "mode": self.store.mode},
            "usage": self.usage.as_dict(),
        }


def llm_setup_from_args(args: argparse.Namespace, specs: list[str]) -> LLMSetup:
    """One LLM policy per distinct ``llm`` spec, one store and ledger; checks the endpoints first."""
    from llm_mesa.llm.preflight_check import schedule

    from .llm_policy import LLMConsensusPolicy

    endpoints = {spec: endpoint_from_spec(parse_policy_spec(spec)[1], args, repr(spec)) for spec in dict.fromkeys(specs)}
    _, mode = game_recording(args)  # contradictory recording options fail before any call or file
    if args.max_cost is not None and any(ep.price is None for ep in endpoints.values()):
        raise EndpointError("--max-cost needs --price PROMPT,COMPLETION (per 1M tokens)")
    store = store_from_args(args)  # records by default (the library only when given a store); checked before any call
    if mode != "replay":  # a strict replay calls nothing; a fill checks only when a call misses the recording
        for endpoint in dict.fromkeys(endpoints.values()):
            schedule(endpoint, lazy=mode == "replay-fill")
    usage = Usage("game")
    policies = {spec: LLMConsensusPolicy(ep, store=store, usage=usage) for spec, ep in endpoints.items()}
    return LLMSetup(policies=policies, store=store, usage=usage)
