"""How the core calls what a game gives it: a value or ``"module:attribute"``, one line when it raises.

A game declares its hooks as values (``Extensions(outcome=...)``, ``Table(read=...)``,
``LlmSupport(estimate=...)``); the core calls each through ``call``, which loads a
``"module:attribute"`` on first use and turns anything the game's own code raises into one
``GameHookError`` line that names the game and the hook, so a game's bug never reaches a user as
a traceback deep in its code. An ``LlmMesaError`` the game raised on purpose (bad input, named
fix) passes through unchanged.

A game written before hooks were values overrides a method of its ``Game`` subclass instead
(``def estimate(self, parameters, endpoint)``); ``override`` finds such a method, and the core
calls it with a ``DeprecationWarning`` that names the hook's new place (``MOVED``), so those
games keep working unchanged.
"""

from __future__ import annotations

import contextlib
import importlib
import warnings
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from llm_mesa.errors import GameHookError, LlmMesaError, one_line

#: where each method a ``Game`` subclass could override (or the core offered) now lives
MOVED = {
    "build_scenario": "llm_mesa.play.build_scenario(game, scenario, policy)",
    "play": "Extensions(play=...) to play a game your own way; llm_mesa.play.play(game, request) to play one",
    "make_model": "llm_mesa.play.make_model(game, parameters, policy, seed)",
    "place": "Extensions(place=...); llm_mesa.play.place(game, parameters, policy, seed, placed)",
    "run_tables": "Extensions(run_tables=...); llm_mesa.declared.run_tables(game, model)",
    "key": "llm_mesa.play.key(game, parameters, seed)",
    "failure_share": "LlmSupport(failure_share=...); llm_mesa.play.failure_share(game, parameters)",
    "judge": "llm_mesa.play.judge(game, row, model, parameters, policies)",
    "summary_row": "a summary() method of the model, or Extensions(summary=...); llm_mesa.declared.summary_row(game, model)",
    "table": "Table(name, ..., read=...); llm_mesa.declared.table(game, model, name)",
    "step_limit": "a Parameter marked round_limit=True; llm_mesa.play.step_limit(game, parameters)",
    "play_batch": "Extensions(play_batch=...); llm_mesa.play.play_batch(game, requests)",
    "batch_size": "Extensions(batch_size=...); llm_mesa.play.batch_size(game, request)",
    "check": "Extensions(check=...); llm_mesa.play.check(game, parameters, seed)",
    "first_policy": "llm_mesa.declared.first_policy(game)",
    "llm_policy": "LlmSupport(policy=...); llm_mesa.declared.llm_policy(game, endpoint, store)",
    "estimate": "LlmSupport(estimate=...); llm_mesa.declared.estimate(game, parameters, endpoint)",
    "outcome": "Extensions(outcome=...); llm_mesa.declared.outcome(game, row)",
    "describe": "Extensions(describe=...); llm_mesa.declared.describe(game, parameters)",
    "headline": "Extensions(headline=...); llm_mesa.declared.headline(game, games, conditions, policies)",
    "policy_groups": "PolicyCatalog(groups=...); llm_mesa.declared.policy_groups(game)",
    "load_policies": "PolicyCatalog(module=...); llm_mesa.declared.load_policies(game)",
    "resolve_conditions": "StudyDesign(...); llm_mesa.declared.resolve_conditions(game, selection)",
    "scale_of": "Game.measures; llm_mesa.declared.scale_of(game, column, values)",
    "first_measure": "Game.headline_measure; llm_mesa.declared.first_measure(game)",
    "table_spec": "Game.tables; llm_mesa.declared.table_spec(game, name)",
    "column_types": "Game.row_types and Table.types; llm_mesa.declared.column_types(game)",
}

_warned: set[tuple[type, str]] = set()
#: the older methods whose override is being bypassed: ``super().table(...)`` inside an override wants the default
_bypassed: ContextVar[frozenset[str]] = ContextVar("llm_mesa_bypassed_overrides", default=frozenset())


@contextlib.contextmanager
def defaults(name: str) -> Iterator[None]:
    """Inside, the core's reader of ``name`` gives its default, not the game's override.

    What an older game's ``super().table(...)`` inside its own ``table`` gets: the default, not itself again.

    Args:
        name: The older method's name (``MOVED``).
    """
    token = _bypassed.set(_bypassed.get() | {name})
    try:
        yield
    finally:
        _bypassed.reset(token)


def load_target(target: str) -> Any:
    """What a ``"module:attribute"`` text names, imported only when first used.

    Args:
        target: ``"module:attribute"``, or ``"module"``.

    Returns:
        The attribute, or the module.
    """
    module, _, attribute = target.partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, attribute) if attribute else loaded


def loaded(value: Any) -> Any:
    """A declared value as the core calls it.

    Args:
        value: A value, or a ``"module:attribute"`` text that names one.

    Returns:
        The value, with a text loaded (``load_target``).
    """
    return load_target(value) if isinstance(value, str) else value


def call(game: Any, hook: str, value: Any, *args: Any, **kwargs: Any) -> Any:
    """Call one of the game's hooks, so that a bug in it is one line, never a traceback deep in its code.

    Args:
        game: The game (its ``name`` is in the error).
        hook: The hook's name, as the error names it.
        value: The hook: a value, or a ``"module:attribute"`` text.
        *args: Its arguments.
        **kwargs: Its keyword arguments.

    Returns:
        What the hook returned.

    Raises:
        GameHookError: The hook cannot be loaded, or raised anything but an ``LlmMesaError`` (which a game raises
            on purpose, to name a fix, and which passes through unchanged).
    """
    name = getattr(game, "name", "?")
    try:
        function = loaded(value)
    except Exception as exc:  # noqa: BLE001  (someone else's module: say which, in one line)
        raise GameHookError(f"the {name} game's {hook} cannot be loaded from {value!r}: "
                            f"{type(exc).__name__}: {one_line(exc)}; fix the game's declaration") from exc
    try:
        return function(*args, **kwargs)
    except LlmMesaError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise GameHookError(f"the {name} game's {hook} raised {type(exc).__name__}: {one_line(exc)}; "
                            "this is a bug of the game, not of your input: report it to its authors") from exc


def override(game: Any, name: str) -> Callable[..., Any] | None:
    """The method ``name`` as an older ``Game`` subclass overrides it.

    Found on the game's own classes, never on ``llm_mesa.games.Game`` itself; the first call for each
    class warns once that the hook moved (``MOVED``).

    Args:
        game: The game.
        name: An older method's name.

    Returns:
        The overriding method, bound (or an older property's value); None when the game does not override it,
        or inside ``defaults(name)``.
    """
    if name in _bypassed.get():
        return None
    for cls in type(game).__mro__:
        if cls.__module__ in ("llm_mesa.games", "llm_mesa.game_legacy") or cls is object:
            continue
        if name in vars(cls):
            if (cls, name) not in _warned:
                _warned.add((cls, name))
                warnings.warn(f"{cls.__module__}.{cls.__qualname__}.{name} overrides a Game method that has moved: "
                              f"declare it as {MOVED.get(name, 'a declared value')}", DeprecationWarning, stacklevel=3)
            return getattr(game, name)
    return None


def called(game: Any, name: str, *args: Any, **kwargs: Any) -> tuple[bool, Any]:
    """An older game's own hook, called, where it overrides one: how every reader honours it first.

    Args:
        game: The game.
        name: An older method's name.
        *args: Its arguments.
        **kwargs: Its keyword arguments.

    Returns:
        ``(True, result)`` when the game overrides the method (called through ``call``, with one-line errors),
        else ``(False, None)``.
    """
    method = override(game, name)
    if method is None:
        return False, None
    if not callable(method):  # an older property (policy_groups, first_measure): its value
        return True, method
    return True, call(game, name, method, *args, **kwargs)


__all__ = ["MOVED", "call", "called", "defaults", "load_target", "loaded", "override"]
