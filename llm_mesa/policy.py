"""The policy seam: what turns an agent's observation into a decision.

A policy is one small object with two ways in:

* ``decide(observation, rng)`` for policies that answer at once (rule policies);
* ``adecide(observation, rng)``, a coroutine, for policies that wait on something
  (an LLM endpoint). Models gather all of a round's coroutines together, so a
  round of 36 LLM agents costs one round-trip, not 36.

Games define their own observation and decision types; a policy names the game it
plays (``game``) so that the registry can refuse one game's policy in another
game with a clear message.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from llm_mesa.errors import LlmMesaError


class PolicyError(LlmMesaError):
    """Bad policy name or parameters; the message names the fix."""


class Policy:
    """Base class of every policy, rule or LLM."""

    #: registry name, e.g. ``"majority-inertia"``
    name: ClassVar[str] = "policy"
    #: the game this policy plays (set by ``register_policy``)
    game: ClassVar[str] = ""
    #: True when decisions come from ``adecide`` (network-bound policies)
    is_async: ClassVar[bool] = False
    #: True when the policy reads the round history (built only when needed)
    needs_history: ClassVar[bool] = False
    #: True when ``decide_vector`` decides a whole round of a binary-opinion game
    vectorised: ClassVar[bool] = False

    #: what ``llm-mesa fit`` estimates of this rule: parameter name -> (lowest, highest) value it may take;
    #: empty: a rule with nothing to estimate (it still takes part when it gives ``distribution``)
    fit_parameters: ClassVar[dict[str, tuple[float, float]]] = {}

    def distribution(self, observation: Any) -> dict[Any, float]:
        """How likely this policy makes each decision it may make on ``observation`` (they sum to 1).

        What a rule declares so that ``llm-mesa fit`` can weigh recorded decisions against it (its
        likelihood) and play it again; a policy that does not give it takes no part in fitting.
        """
        raise NotImplementedError(f"{type(self).__name__} does not declare how likely its decisions are")

    def decide_vector(self, colours, preferences, adjacency, rng: random.Random):
        """Every agent's next colour code (1 = blue) at once, from 0/1 arrays.

        It must draw from ``rng`` exactly as ``decide`` would, agent by agent in
        node order, so that both paths play the same game.
        """
        raise NotImplementedError(f"{type(self).__name__} has no vectorised path")

    def decide(self, observation: Any, rng: random.Random) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement decide()")

    async def adecide(self, observation: Any, rng: random.Random) -> Any:
        return self.decide(observation, rng)

    def params(self) -> dict[str, Any]:
        """Parameters that identify this policy's behaviour (for manifests)."""
        return {}

    def spec(self) -> str:
        """A string that ``make_policy`` turns back into an equal policy."""
        params = self.params()
        if not params:
            return self.name
        return self.name + ":" + ",".join(f"{k}={v}" for k, v in params.items())

    def identity(self) -> str:
        """What makes this policy's answers what they are (keys recorded calls).

        The spec, by default; an LLM policy leaves out where its server is.
        """
        return self.spec()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec()}>"


@dataclass(frozen=True)
class _Entry:
    factory: Callable[..., Policy]
    game: str
    summary: str


_REGISTRY: dict[tuple[str, str], _Entry] = {}  # keyed by (game, name): each game has its own "llm"


def register_policy(name: str, game: str, summary: str = ""):
    """Class decorator: make a policy available to the CLI, sweeps and explorer."""

    def wrap(cls):
        cls.name = name
        cls.game = game
        _REGISTRY[(game, name)] = _Entry(cls, game, summary or (cls.__doc__ or "").strip().split("\n")[0])
        return cls

    return wrap


def available_policies(game: str | None = None) -> dict[str, str]:
    """Registered policy names (for one game, or all) with their one-line summary."""
    from llm_mesa.registry import game_names, get_game, installed_games

    games = [game] if game else [g.name for g in installed_games()]  # a broken plugin is a warning, not a crash
    names: dict[str, str] = {}
    for g in games:
        _load_game(g)
        names.update({n: e.summary for (eg, n), e in _REGISTRY.items() if eg == g})
        if g in game_names():
            found = get_game(g)
            for n, (_, summary) in found.policies.lazy.items():
                names.setdefault(n, summary)
            if found.llm.policy:
                names.setdefault("llm", "an LLM agent behind any OpenAI-compatible endpoint")
    return dict(sorted(names.items()))


def registered_rule_policies(game: str) -> list[str]:
    """The names of the game's registered policies that answer at once (no endpoint), in registration order."""
    _load_game(game)
    return [n for (g, n), e in _REGISTRY.items() if g == game and not getattr(e.factory, "is_async", False)]


def _parse_value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text.lower() in ("none", "null"):
        return None
    return text


def parse_policy_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"majority-inertia:inertia=0.3,threshold=0.7"`` -> name and keyword arguments."""
    name, _, rest = spec.strip().partition(":")
    kwargs: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq:
            raise PolicyError(f"policy parameter {part!r} in {spec!r} needs the form key=value")
        kwargs[key.strip().replace("-", "_")] = _parse_value(value.strip())
    return name.strip(), kwargs


def make_policy(spec: str | Policy, game: str, **overrides: Any) -> Policy:
    """Build a policy from a registry spec string (or pass a policy through)."""
    if isinstance(spec, Policy):
        return spec
    name, kwargs = parse_policy_spec(spec)
    kwargs.update(overrides)
    from llm_mesa.registry import game_names, get_game

    _load_game(game)
    if (game, name) not in _REGISTRY and game in game_names():
        lazy = get_game(game).policies.lazy.get(name)
        if lazy is not None:
            importlib.import_module(lazy[0])
    entry = _REGISTRY.get((game, name))
    if entry is None:
        known = ", ".join(available_policies(game))
        raise PolicyError(f"unknown {game} policy {name!r}; choose one of: {known}")
    accepted = _parameters_of(entry.factory)
    unknown = sorted(set(kwargs) - accepted) if accepted is not None else []
    if unknown:
        takes = ", ".join(sorted(accepted)) or "no parameters"
        raise PolicyError(f"unknown parameter(s) {', '.join(unknown)} of {game} policy {name!r}; it takes: {takes}")
    try:
        return entry.factory(**kwargs)
    except PolicyError:
        raise
    except (TypeError, ValueError) as exc:
        raise PolicyError(f"bad parameters for policy {name!r}: {exc}") from None


def _parameters_of(factory: Callable[..., Policy]) -> set[str] | None:
    """The keyword parameters a policy takes (None when it takes any: ``**kwargs``)."""
    import inspect

    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
        return None
    return {n for n, p in signature.parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _load_game(game: str) -> None:
    """Import the game's rule policies (through the game registry: the core names no game).

    A game defined in a script (not installed) registers its policies itself.
    """
    from llm_mesa.registry import game_names, get_game

    if game in game_names():
        get_game(game).load_policies()
