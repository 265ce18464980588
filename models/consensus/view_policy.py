"""The consensus page's agents: a policy mix, its LLM policy, and each round's failed decisions.

A mix ``"default | selector=policy | ..."`` gives every agent the default policy and
the selected ones another (``hubs:5=stubborn``, ``random:6=llm``); ``llm`` stands for
one LLM policy at the page's endpoint, so rule and LLM agents are chosen the same
way. Failed LLM decisions are counted each round with their cause
("36 of 36 decisions failed: connection refused").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llm_mesa.llm import Usage
from llm_mesa.policy import PolicyError, available_policies, make_policy
from llm_mesa.views.controls import ControlError, page_endpoint

#: the stand-in's model the LLM controls start with: it answers as majority-with-inertia would
LOOPBACK_MODEL = "rule:majority-inertia"
#: policy mixes the control offers; any other may be typed: "default | selector=policy | ..."
POLICY_MIXES = (
    "majority-inertia",
    "majority-inertia:inertia=0.5",
    "voter",
    "random",
    "majority-inertia | hubs:5=stubborn",
    "llm",
    "llm | hubs:5=stubborn",
    "majority-inertia | random:6=llm",
)
_CALL_FAILURES = {"timeout": "timed out", "server": "server error", "rate_limit": "rate limited",
                  "auth": "API key refused", "not_found": "model or URL not found", "bad_request": "request refused"}
_DECISION_FAILURES = {"parse_failure": "unreadable answer", "truncated": "answer cut off by the token limit"}
MIX = "policy_mix"


class FailureLedger(Usage):
    """A usage ledger that also keeps the last error message of each kind of failed call."""

    def __init__(self, name: str = "explorer") -> None:
        super().__init__(name)
        self.messages: dict[str, str] = {}

    def add_result(self, result, endpoint=None) -> None:
        super().add_result(result, endpoint)
        if result.error is not None:
            self.messages[result.error] = result.error_message or result.error


@dataclass(frozen=True)
class Mix:
    """What ``ConsensusModel`` takes: every agent's ``policy`` and the exceptions ``assign``."""

    policy: Any
    assign: Mapping[str, Any] | None = None
    text: str = ""


def mix_choices() -> list[str]:
    """The mixes whose policies are registered here (the LLM policy may not be installed)."""
    known = set(available_policies("consensus"))

    def usable(mix: str) -> bool:
        default, *rest = mix.split("|")
        names = [default.split(":")[0].strip()] + [p.partition("=")[2].split(":")[0].strip() for p in rest]
        return all(n in known for n in names)
    return [m for m in POLICY_MIXES if usable(m)]


def llm_policy(endpoint: str, model_name: str, *, check: bool = True):
    """One LLM policy for every LLM agent of a game; the endpoint is asked first when ``check``."""
    from .game import GAME
    from .llm_policy import LLMConsensusPolicy

    return LLMConsensusPolicy(page_endpoint(GAME, endpoint, model_name, check=check), usage=FailureLedger())


def parse_mix(text: str, endpoint: str, model_name: str, *, check: bool = False) -> Mix:
    """A mix ``"default | selector=policy"`` as ``Mix``; ``ControlError`` on the mix control when it is bad."""
    parts = [p.strip() for p in (text or "").split("|") if p.strip()]
    if not parts:
        raise ControlError(MIX, "empty policy mix; pick e.g. majority-inertia")
    shared: list[Any] = []

    def expand(spec: str) -> Any:
        spec = spec.strip()
        if spec != "llm":
            try:
                make_policy(spec, "consensus")
            except (PolicyError, ValueError) as exc:
                raise ControlError(MIX, f"policy {spec!r}: {exc}") from None
            return spec
        if not shared:
            shared.append(llm_policy(endpoint, model_name, check=check))
        return shared[0]

    assign: dict[str, Any] = {}
    for part in parts[1:]:
        selector, eq, spec = part.partition("=")
        if not eq:
            raise ControlError(MIX, f"policy mix part {part!r} needs the form selector=policy, e.g. hubs:5=stubborn")
        assign[selector.strip()] = expand(spec)
    return Mix(expand(parts[0]), assign or None, text)


def llm_agents(model) -> int:
    return sum(bool(getattr(a.policy, "is_async", False)) for a in model.agents_by_node)


def _call_failure_text(model) -> str:
    kinds: Counter = Counter()
    messages: dict[str, str] = {}
    ledgers = {id(u): u for a in model.agents_by_node if isinstance(u := getattr(a.policy, "usage", None), FailureLedger)}
    for ledger in ledgers.values():
        kinds.update(ledger.failures)
        messages.update(ledger.messages)
    if not kinds:
        return "call failed"
    kind = kinds.most_common(1)[0][0]
    if kind == "connection":
        text = messages.get(kind, "").lower()
        return "connection refused" if ("refused" in text or "cannot connect" in text) else "connection lost"
    return _CALL_FAILURES.get(kind, kind.replace("_", " "))


def failure_line(model) -> str | None:
    """This round's failed LLM decisions and their cause, e.g. "36 of 36 decisions failed: connection refused"."""
    if model.round == 0:
        return None
    failed = [row["failed"] for row in model.transcript if row["round"] == model.round and row.get("failed")]
    if not failed:
        return None
    causes = Counter(_DECISION_FAILURES.get(f, _call_failure_text(model) if f == "call_failure" else f)
                     for f in failed)
    asked = llm_agents(model)
    what = "decisions" if asked == model.n else "LLM decisions"
    cause = ", ".join(c if len(causes) == 1 else f"{c} ({k})" for c, k in causes.most_common())
    return f"{len(failed)} of {asked} {what} failed: {cause}"


__all__ = ["FailureLedger", "LOOPBACK_MODEL", "MIX", "Mix", "POLICY_MIXES", "failure_line", "llm_agents", "llm_policy",
           "mix_choices", "parse_mix"]
