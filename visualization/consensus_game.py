"""The consensus game as the explorer builds and reads it (no drawing here).

Controls come from the game's own parameter definition (``PARAMETERS``); a policy
mix, an endpoint and a seed are translated into ``ConsensusModel``'s arguments.
Every control value is checked before a game is built, each error naming the
control at fault; an LLM endpoint is asked whether it answers before the game
starts; and each round's failed LLM decisions are counted with their cause.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from llm_mesa.llm.endpoint import Endpoint, EndpointError
from llm_mesa.llm.usage import Usage
from llm_mesa.models.consensus import ConsensusModel, measures
from llm_mesa.models.consensus.parameters import PARAMETERS
from llm_mesa.parameters import ParameterError
from llm_mesa.policy import PolicyError, available_policies, make_policy

from .builtin_endpoint import BUILTIN, resolve_endpoint
from .controls import GENERAL, ControlError

LOOPBACK_ENDPOINT = BUILTIN
LOOPBACK_MODEL = "rule:majority-inertia"
PREFERENCE_CHOICES = ("random", "minority")
#: The largest network the page offers (the picture stays readable and quick there).
MAX_N = 1000
#: Policy mixes offered in the controls: "default | selector=policy | ...".
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
#: The explorer's LLM calls give up sooner than a study's: a failure shows within seconds.
EXPLORER_ENDPOINT = {"timeout": 60.0, "max_attempts": 2}
_CALL_FAILURES = {"timeout": "timed out", "server": "server error", "rate_limit": "rate limited",
                  "auth": "API key refused", "not_found": "model or URL not found", "bad_request": "request refused"}
_DECISION_FAILURES = {"parse_failure": "unreadable answer", "truncated": "answer cut off by the token limit"}


class ExplorerError(ControlError):
    """A control value the explorer cannot turn into a game; the message names the fix."""

    def __init__(self, message: str, control: str = "policy_mix") -> None:
        super().__init__(control, message)


class FailureLedger(Usage):
    """A usage ledger that also keeps the last error message of each kind of failed call."""

    def __init__(self, name: str = "explorer") -> None:
        super().__init__(name)
        self.messages: dict[str, str] = {}

    def add_result(self, result, endpoint=None) -> None:
        super().add_result(result, endpoint)
        if result.error is not None:
            self.messages[result.error] = result.error_message or result.error


def check_endpoint_text(url: str) -> str:
    """``url`` stripped, or ``ExplorerError`` on the endpoint control for a malformed one."""
    url = (url or "").strip()
    if url == BUILTIN:
        return url
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname or " " in url:
        raise ExplorerError(f"{url!r} is not an endpoint URL: give a base URL such as http://127.0.0.1:8765/v1, "
                            f"or {BUILTIN} for the built-in stand-in", "llm_endpoint")
    return url


def llm_policy(endpoint: str, model_name: str, *, check: bool = True):
    """One LLM policy for every LLM agent of a game; the endpoint is asked first when ``check``."""
    from llm_mesa.llm.client import preflight
    from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy

    url = check_endpoint_text(endpoint)
    name = (model_name or "").strip()
    if not name:
        raise ExplorerError(f"the LLM model name is empty: name the model the endpoint serves "
                            f"(on {BUILTIN}: {LOOPBACK_MODEL})", "llm_model")
    try:
        target = Endpoint(base_url=resolve_endpoint(url), model=name, **EXPLORER_ENDPOINT)
        if check:
            preflight(target)
    except EndpointError as exc:
        text = str(exc).replace("pass e.g. --base-url ", "e.g. ").replace(" (pass one with --model)", "")
        raise ExplorerError(text, "llm_model" if "model" in text.split(";")[0].lower()
                            and "reach" not in text else "llm_endpoint") from None
    return LLMConsensusPolicy(target, usage=FailureLedger())


def parse_policy_mix(mix: str, endpoint: str, model_name: str, *, check: bool = False):
    """Turn a mix ``"default | selector=policy"`` into ConsensusModel's ``policy`` and ``assign``.

    ``llm`` stands for one LLM policy pointed at ``endpoint`` and ``model_name``, so
    rule and LLM agents are chosen the same way in the controls.
    """
    parts = [p.strip() for p in (mix or "").split("|") if p.strip()]
    if not parts:
        raise ExplorerError("empty policy mix; pick e.g. majority-inertia")
    shared = []

    def expand(spec: str):
        spec = spec.strip()
        if spec != "llm":
            try:
                make_policy(spec, "consensus")
            except (PolicyError, ValueError) as exc:
                raise ExplorerError(f"policy {spec!r}: {exc}") from None
            return spec
        if not shared:
            shared.append(llm_policy(endpoint, model_name, check=check))
        return shared[0]

    assign: dict[str, Any] = {}
    for part in parts[1:]:
        selector, eq, spec = part.partition("=")
        if not eq:
            raise ExplorerError(f"policy mix part {part!r} needs the form selector=policy, e.g. hubs:5=stubborn")
        assign[selector.strip()] = expand(spec)
    return expand(parts[0]), assign or None


class ExplorerConsensusModel(ConsensusModel):
    """ConsensusModel with the explorer's controls as keyword arguments."""

    def __init__(self, topology: str = "ba", n: int = 36, preferences: str = "random",
                 communication: str = "none", label: str = "llm",
                 policy_mix: str = "majority-inertia", llm_endpoint: str = LOOPBACK_ENDPOINT,
                 llm_model: str = LOOPBACK_MODEL, seed: int = 1, max_rounds: int = 50,
                 rng: int | None = None, check_endpoint: bool = False, **game: Any) -> None:
        policy, assign = parse_policy_mix(policy_mix, llm_endpoint, llm_model, check=check_endpoint)
        super().__init__(n=int(n), topology=topology, policy=policy, assign=assign,
                         preferences=preferences, communication=communication, label=label,
                         max_rounds=int(max_rounds), rng=int(seed) if rng is None else rng,
                         baseline_permutations=0, **game)


def _policy_choices() -> list[str]:
    """Mixes whose policies are registered here (the LLM policy may not be installed)."""
    known = set(available_policies("consensus"))

    def usable(mix: str) -> bool:
        default, *rest = mix.split("|")
        names = [default.split(":")[0].strip()] + [p.partition("=")[2].split(":")[0].strip() for p in rest]
        return all(n in known for n in names)
    return [m for m in POLICY_MIXES if usable(m)]


GAME_CONTROLS = ("topology", "n", "preferences", "communication", "label")


def model_params() -> dict:
    """The page's controls: the game's own parameters, then policies, endpoint and seed."""
    game = PARAMETERS.controls(list(GAME_CONTROLS), n={"min": 8, "max": MAX_N, "step": 4},
                               preferences={"values": list(PREFERENCE_CHOICES)})
    return {
        **game,
        "policy_mix": {"type": "Select", "value": "majority-inertia", "values": _policy_choices(),
                       "label": "Policies (default | selector=policy)"},
        "llm_endpoint": {"type": "InputText", "value": LOOPBACK_ENDPOINT,
                         "label": "LLM endpoint (base URL, or loopback: the built-in stand-in)"},
        "llm_model": {"type": "InputText", "value": LOOPBACK_MODEL, "label": "LLM model"},
        "seed": {"type": "InputInt", "value": 1, "min": 0, "label": "Seed"},
        **PARAMETERS.controls(["max_rounds"], max_rounds={"min": 5, "max": 200, "step": 5}),
    }


def checked_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """Control values converted by the game's own parameter checks; the first error names its control."""
    out = dict(values)
    for name in (*GAME_CONTROLS, "max_rounds"):
        if name in values:
            try:
                out[name] = PARAMETERS[name].convert(values[name])
            except ParameterError as exc:
                raise ControlError(name, str(exc)) from None
    if "n" in out and not 2 <= out["n"] <= MAX_N:
        raise ControlError("n", f"N={out['n']} is outside what the page draws (2..{MAX_N}); "
                                "play larger games with llm-mesa consensus")
    seed = values.get("seed", 1)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ControlError("seed", f"the seed must be a whole number >= 0 (got {seed!r})")
    if "llm_endpoint" in values:
        check_endpoint_text(values["llm_endpoint"])
    return out


def build_model(values: Mapping[str, Any], **extra: Any) -> ExplorerConsensusModel:
    """A game from control values, every error reported against its control; the endpoint asked first."""
    values = checked_values(values)
    try:
        return ExplorerConsensusModel(**values, check_endpoint=True, **extra)
    except ControlError:
        raise
    except (ParameterError, PolicyError, ValueError) as exc:
        text = str(exc)
        control = next((name for name in ("topology", "n", "preferences", "communication", "max_rounds", "seed")
                        if name in text.lower()), GENERAL)
        if "selector" in text or "policy" in text:
            control = "policy_mix"
        raise ControlError(control, text) from None


# --- what the views read from a game ------------------------------------------------


def satisfied(model) -> list[bool]:
    return measures.locally_satisfied(model.adjacency, list(model.colours),
                                      getattr(model, "satisfied_threshold", 0.5)).tolist()


def agent_details(model) -> list[dict[str, Any]]:
    """Per agent: policy and last reason, for the picture's tooltip."""
    out = []
    for agent in model.agents_by_node:
        decision = agent.last_decision if hasattr(agent, "last_decision") else None
        reason = decision.reason if decision is not None and decision.reason else None
        if decision is not None and decision.failed:
            reason = f"failed ({decision.failed})"
        out.append({"policy": agent.policy.spec() if hasattr(agent.policy, "spec") else str(agent.policy),
                    "reason": reason})
    return out


def llm_agents(model) -> int:
    return sum(bool(getattr(a.policy, "is_async", False)) for a in model.agents_by_node)


def _ledgers(model) -> list[FailureLedger]:
    seen = {}
    for agent in model.agents_by_node:
        usage = getattr(agent.policy, "usage", None)
        if isinstance(usage, FailureLedger):
            seen[id(usage)] = usage
    return list(seen.values())


def _call_failure_text(model) -> str:
    kinds: Counter = Counter()
    messages: dict[str, str] = {}
    for ledger in _ledgers(model):
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


__all__ = ["ExplorerConsensusModel", "ExplorerError", "FailureLedger", "LOOPBACK_ENDPOINT", "LOOPBACK_MODEL",
           "MAX_N", "agent_details", "build_model", "check_endpoint_text", "failure_line", "model_params",
           "parse_policy_mix", "satisfied"]
