"""The methods ``Game`` had before a game was a declaration, kept for games written against them.

A ``Game`` subclass that overrides one of them (``def table(self, model, name)``, ``def
estimate(...)``) gets this class as a further base (``Game.__init_subclass__``), so that its
override keeps working, ``super().table(model, name)`` included: each method here gives the
core's default (``llm_mesa.game_hooks.defaults``). The core calls the override with a
``DeprecationWarning`` that names where the hook now lives (``game_hooks.MOVED``). A game that
overrides none of them never carries this class: the contract it sees is ``Game``'s alone.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from llm_mesa import declared, play
from llm_mesa.game_hooks import MOVED, defaults

#: each older method, and the core function that now does its work (the game is its first argument)
SERVICES: dict[str, Callable[..., Any]] = {
    "build_scenario": play.build_scenario, "play": play.play, "make_model": play.make_model, "place": play.place,
    "run_tables": declared.run_tables, "key": play.key, "failure_share": play.failure_share, "judge": play.judge,
    "summary_row": declared.summary_row, "table": declared.table, "step_limit": play.step_limit,
    "play_batch": play.play_batch, "batch_size": play.batch_size, "check": play.check,
    "first_policy": declared.first_policy, "llm_policy": declared.llm_policy, "estimate": declared.estimate,
    "outcome": declared.outcome, "describe": declared.describe, "headline": declared.headline,
    "policy_groups": declared.policy_groups, "load_policies": declared.load_policies,
    "resolve_conditions": declared.resolve_conditions, "scale_of": declared.scale_of,
    "first_measure": declared.first_measure, "table_spec": declared.table_spec, "column_types": declared.column_types,
}
#: the older members that were properties, not methods
PROPERTIES = frozenset({"policy_groups", "first_measure"})
assert set(SERVICES) == set(MOVED), "every moved member has a service and a new place"


def _default(name: str) -> Callable[..., Any]:
    service = SERVICES[name]

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"Game.{name} has moved: use {MOVED[name]}", DeprecationWarning, stacklevel=2)
        with defaults(name):
            return service(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"Deprecated: {MOVED[name]}."
    return method


class LegacyGame:
    """The core's defaults under the older method names (for ``super()`` calls in older games' overrides)."""


for _name in SERVICES:
    setattr(LegacyGame, _name, property(_default(_name)) if _name in PROPERTIES else _default(_name))


__all__ = ["LegacyGame", "PROPERTIES", "SERVICES"]
