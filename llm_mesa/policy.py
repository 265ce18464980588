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
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from llm_mesa.errors import LlmMesaError


class PolicyError(LlmMesaError):
    """Bad policy name or parameters; the message names the fix."""


class Policy:
    """Base class of every policy, rule or LLM: what turns an agent's observation into its decision.

    A rule policy gives ``decide``; one that waits on something (an LLM endpoint) sets ``is_async`` and gives the
    coroutine ``adecide``, so that a round's calls are gathered together. The observation and the decision are
    the game's own types. One policy object may serve every agent of a game: it holds no agent's state.
    """

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
        """How likely this policy makes each decision it may make on ``observation``.

        What a rule declares so that ``llm-mesa fit`` can weigh recorded decisions against it (its
        likelihood) and play it again; a policy that does not give it takes no part in fitting.

        Args:
            observation: What the agent sees, as ``decide`` gets it.

        Returns:
            Decision -> probability, summing to 1.
        """
        raise NotImplementedError(f"{type(self).__name__} does not declare how likely its decisions are")

    def decide_vector(self, colours, preferences, adjacency, rng: random.Random):
        """Every agent's next state at once, for a game of two states played as arrays (``vectorised``).

        It must draw from ``rng`` exactly as ``decide`` would, agent by agent in
        node order, so that both paths play the same game.

        Args:
            colours: Each agent's state, 0 or 1, in node order.
            preferences: Each agent's preferred state, 0 or 1.
            adjacency: The graph's adjacency, in node order (its sparse ``matrix``, ``degree``, ``indptr``,
                ``indices``).
            rng: The random source ``decide`` would draw from.

        Returns:
            Each agent's next state, 0 or 1, as an array in node order.
        """
        raise NotImplementedError(f"{type(self).__name__} has no vectorised path")

    def decide(self, observation: Any, rng: random.Random) -> Any:
        """One agent's decision, at once.

        Args:
            observation: What the agent sees (the game's type).
            rng: Where a rule's draws come from: the game's own stream, so a rule run replays bit for bit.

        Returns:
            The decision (the game's type).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement decide()")

    async def adecide(self, observation: Any, rng: random.Random) -> Any:
        """One agent's decision, awaited (an LLM's call); by default ``decide``'s. Takes and gives what ``decide``
        does."""
        return self.decide(observation, rng)

    def params(self) -> dict[str, Any]:
        """The parameters that identify this policy's behaviour, for manifests and ``spec``.

        Returns:
            Keyword -> value, as the policy's class takes them (empty for a policy with none).
        """
        return {}

    def spec(self) -> str:
        """The policy as a spec, so that a manifest's spec builds the same policy again.

        Returns:
            ``NAME[:key=value,...]``, which ``make_policy`` turns back into an equal policy.
        """
        params = self.params()
        if not params:
            return self.name
        return self.name + ":" + ",".join(f"{k}={v}" for k, v in params.items())

    def identity(self) -> str:
        """What makes this policy's answers what they are: part of the key of its recorded calls.

        Returns:
            The spec, by default; an LLM policy leaves out where its server is, so a recording replays elsewhere.
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
#: policies a game imports only when asked for (game, name) -> (module, summary), and the module that registers a
#: game's rule policies (game -> module): pushed here by the game's own ``PolicyCatalog`` when its ``Game`` class is
#: defined, never looked up in the game registry
_LAZY: dict[tuple[str, str], tuple[str, str]] = {}
_MODULES: dict[str, str] = {}
LLM_SUMMARY = "an LLM agent behind any OpenAI-compatible endpoint"


def register_policy(name: str, game: str, summary: str = ""):
    """Class decorator: make a policy available by name to one game (its command, sweeps and pages).

    The older way to give a game its policies; a game may instead list them as values,
    ``PolicyCatalog(rules={"follow": Follow})``.

    Args:
        name: The policy's name in specs (``NAME[:key=value,...]``).
        game: The name of the game it plays.
        summary: One line for listings (default: the class docstring's first line).

    Returns:
        The decorator, which gives the class its ``name`` and ``game`` and returns it.
    """

    def wrap(cls):
        cls.name = name
        cls.game = game
        _REGISTRY[(game, name)] = _Entry(cls, game, summary or (cls.__doc__ or "").strip().split("\n")[0])
        return cls

    return wrap


def register_catalogue(game: str, module: str | None, lazy: Mapping[str, tuple[str, str]]) -> None:
    """Remember where a game's policies are registered, so that this layer never looks a game up.

    A ``Game`` class pushes its ``PolicyCatalog`` down here when it is defined.

    Args:
        game: The game's name.
        module: The module that registers its rule policies when imported (None: none).
        lazy: The policies it imports only when asked for: name -> (module, summary).
    """
    if module:
        _MODULES[game] = module
    for name, entry in lazy.items():
        _LAZY[(game, name)] = tuple(entry)


def _imported(game: str) -> None:
    module = _MODULES.pop(game, None)
    if module is not None:
        importlib.import_module(module)


def _game_name(game: Any) -> str:
    return game if isinstance(game, str) else getattr(game, "name", "")


def _rules_of(game: Any) -> Mapping[str, Callable[..., Policy]]:
    catalogue = None if isinstance(game, str) else getattr(game, "policies", None)
    return getattr(catalogue, "rules", None) or {}


def policies_of(game: Any) -> dict[str, str]:
    """The game's policy names with their one-line summary.

    Args:
        game: A ``Game``, or a game's name (then only what its modules registered so far).

    Returns:
        Name -> summary, sorted: its catalogue's values, those registered under its name, those it imports when
        asked for, and ``llm`` where it has an LLM policy.
    """
    name = _game_name(game)
    _imported(name)
    names = {n: (getattr(f, "__doc__", None) or n).strip().split("\n")[0] for n, f in _rules_of(game).items()}
    names.update({n: e.summary for (g, n), e in _REGISTRY.items() if g == name})
    for (g, n), (_, summary) in _LAZY.items():
        if g == name:
            names.setdefault(n, summary)
    if not isinstance(game, str) and getattr(getattr(game, "llm", None), "policy", None):
        names.setdefault("llm", LLM_SUMMARY)
    return dict(sorted(names.items()))


def available_policies(game: Any) -> dict[str, str]:
    """The policy names of one game with their summaries (``policies_of``).

    ``llm_mesa.available_policies`` (``llm_mesa.registry``) takes a game's name and loads the game first.

    Args:
        game: A ``Game``, or a game's name whose modules are imported.

    Returns:
        Name -> summary, sorted.
    """
    return policies_of(game)


def rule_policy_names(game: Any) -> list[str]:
    """The game's policies that answer at once (no endpoint).

    Args:
        game: A ``Game``, or a game's name.

    Returns:
        Their names, in the order they were declared or registered.
    """
    name = _game_name(game)
    _imported(name)
    found = [n for n, f in _rules_of(game).items() if not getattr(f, "is_async", False)]
    found += [n for (g, n), e in _REGISTRY.items() if g == name and not getattr(e.factory, "is_async", False)
              and n not in found]
    return found


registered_rule_policies = rule_policy_names  # the older name


def policy_names_in(spec: str) -> list[str]:
    """The policy names a spec mentions.

    Args:
        spec: A policy spec, a mixed one (``A + B``) or a list (``A;B``).

    Returns:
        The names, in order: ``"llm:model=a + other"`` -> ``["llm", "other"]``.
    """
    return [part.strip().partition(":")[0].strip() for part in re.split(r"[+;]", spec) if part.strip()]


def parse_value(text: str) -> Any:
    """A value as text reads (a spec's, a prompt's): a whole number, a number, true/false, none, else the text."""
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
    """A spec's parts.

    Args:
        spec: ``NAME[:key=value,...]``; values are read as a whole number, a number, ``true``/``false`` or
            ``none`` where they look like one, as text otherwise; ``-`` in a key is ``_``.

    Returns:
        ``(name, keywords)``: ``"follow:inertia=0.3,threshold=0.7"`` -> ``("follow", {"inertia": 0.3,
        "threshold": 0.7})``.

    Raises:
        PolicyError: A part that is not ``key=value``.
    """
    name, _, rest = spec.strip().partition(":")
    kwargs: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq:
            raise PolicyError(f"policy parameter {part!r} in {spec!r} needs the form key=value")
        kwargs[key.strip().replace("-", "_")] = parse_value(value.strip())
    return name.strip(), kwargs


def make_policy(spec: str | Policy, game: Any, **overrides: Any) -> Policy:
    """Build a policy from a spec (or pass a policy through).

    A policy the game imports only when asked for is imported here. Use ``llm_mesa.make_policy`` to have a game
    loaded by its name first.

    Args:
        spec: ``NAME[:key=value,...]``, or a policy.
        game: A ``Game`` (its catalogue's rules come first) or a game's name (the policies its modules registered).
        **overrides: Keyword arguments that win over the spec's.

    Returns:
        The policy, built with the spec's keyword arguments.

    Raises:
        PolicyError: An unknown policy, or a parameter it does not take (the message lists those it does).
    """
    if isinstance(spec, Policy):
        return spec
    name, kwargs = parse_policy_spec(spec)
    kwargs.update(overrides)
    game_name = _game_name(game)
    _imported(game_name)
    factory = _rules_of(game).get(name)
    if factory is None:
        lazy = _LAZY.get((game_name, name))
        if (game_name, name) not in _REGISTRY and lazy is not None:
            importlib.import_module(lazy[0])
        entry = _REGISTRY.get((game_name, name))
        factory = entry.factory if entry is not None else None
    if factory is None:
        known = ", ".join(policies_of(game)) or "none registered (llm_mesa.make_policy loads a game by its name first)"
        raise PolicyError(f"unknown {game_name} policy {name!r}; choose one of: {known}")
    accepted = _parameters_of(factory)
    unknown = sorted(set(kwargs) - accepted) if accepted is not None else []
    if unknown:
        takes = ", ".join(sorted(accepted)) or "no parameters"
        raise PolicyError(f"unknown parameter(s) {', '.join(unknown)} of {game_name} policy {name!r}; it takes: {takes}")
    try:
        built = factory(**kwargs)
    except PolicyError:
        raise
    except (TypeError, ValueError) as exc:
        raise PolicyError(f"bad parameters for policy {name!r}: {exc}") from None
    if built.name == Policy.name:  # a rule given as a value, not registered under a name: it is the name it was given
        built.name = name
    if not built.game:
        built.game = game_name
    return built


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

