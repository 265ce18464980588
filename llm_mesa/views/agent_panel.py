"""One agent's panel for any game: its state, policy, place, neighbours, what it observes and its last answer.

An observation or a decision is shown field by field (a dataclass, a mapping, a named
tuple, a plain object's attributes), each value in words: sequences joined, numbers
short, nothing a reader has to decode from a Python repr such as
``View(agent=0, round=1, colour='red', ...)``. Fields that hold nothing are left out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from llm_mesa.views.controls import shorten
from llm_mesa.views.spaces import neighbour_states

if TYPE_CHECKING:
    from llm_mesa.views import GameView

#: what a field's row is headed with: "observation · colour", "last answer · reason"
OBSERVATION, ANSWER = "observation", "last answer"
#: most items of a sequence shown in one row
MAX_ITEMS = 40


def fields_of(value: Any) -> dict[str, Any] | None:
    """A structured value's fields by name (dataclass, mapping, named tuple, plain object), else None."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return dict(value._asdict())
    if hasattr(value, "model_dump") and callable(value.model_dump):  # a pydantic model
        try:
            return dict(value.model_dump())
        except Exception:  # noqa: BLE001 - a panel never breaks a page
            return None
    own = getattr(value, "__dict__", None)
    if isinstance(own, dict) and own and type(value).__repr__ is object.__repr__:
        return {k: v for k, v in own.items() if not k.startswith("_")}
    return None


def words(value: Any, limit: int = 400) -> str:
    """One value as a reader reads it: a sequence joined by commas, a mapping as "key: value" pairs,
    a structured value by its fields, a number short."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple, set, frozenset)) and not hasattr(value, "_asdict"):
        items = list(value)
        shown = ", ".join(words(v, 60) for v in items[:MAX_ITEMS])
        more = f" … ({len(items)} in all)" if len(items) > MAX_ITEMS else ""
        return shorten((shown or "none") + more, limit)
    inner = fields_of(value)
    if inner is not None:
        return shorten("; ".join(f"{k}: {words(v, 60)}" for k, v in inner.items() if v is not None) or "-", limit)
    return shorten(value, limit)


def field_rows(heading: str, value: Any) -> dict[str, str]:
    """``value``'s fields as rows "HEADING · FIELD" (its one row "HEADING" when it has no fields)."""
    inner = fields_of(value)
    if inner is None:
        return {heading: words(value)}
    return {f"{heading} · {name.replace('_', ' ')}": words(v) for name, v in inner.items()
            if v is not None and not str(name).startswith("_")}


def agent_rows(view: GameView, model: Any, index: int) -> dict[str, str]:
    """State, policy, place, neighbours, observation and last decision of agent ``index`` (what it has of them)."""
    agents = view.agents(model)
    if not agents:
        return {}
    agent = agents[min(max(index, 0), len(agents) - 1)]
    if agent is None:
        return {"agent": str(index), "state": "(no agent on this node)"}
    rows = {"agent": str(index), "state": words(view.state_of(agent))}
    from llm_mesa.adapter.hooks import HOOKS, agent_details

    if model in HOOKS:  # a Mesa model played through the adapter: its policies and decisions are the hooks'
        spec, seen, answer = agent_details(model, agent)
        rows["policy"] = spec
        rows.update(field_rows(OBSERVATION, seen) if seen else {})
        rows.update(field_rows(ANSWER, answer) if answer is not None else {})
        return rows
    policy = getattr(agent, "policy", None)
    if policy is not None:
        spec = getattr(policy, "spec", None)
        rows["policy"] = spec() if callable(spec) else str(policy)
    cell = getattr(agent, "cell", None)
    coordinate = getattr(cell, "coordinate", None)
    if isinstance(coordinate, tuple):
        rows["cell"] = "(" + ", ".join(str(int(c)) for c in coordinate) + ")"
    if getattr(cell, "neighborhood", None) is not None:
        states, empty = neighbour_states(agent, view.state_of)
        held = ", ".join(words(s, 40) for s in states[:MAX_ITEMS])
        held += f" … ({len(states)} in all)" if len(states) > MAX_ITEMS else ""
        rows["neighbours hold"] = (held or "-") + (f" ({empty} neighbouring cell{'s' if empty != 1 else ''} empty)"
                                                   if empty and coordinate is not None else "")
    observe = getattr(agent, "observe", None)
    if callable(observe):
        try:
            rows.update(field_rows(OBSERVATION, observe()))
        except Exception:  # noqa: BLE001 - a panel never breaks a page; an agent may not observe between rounds
            rows[OBSERVATION] = "-"
    decision = getattr(agent, "pending", None)
    if decision is not None:
        rows.update(field_rows(ANSWER, decision))
    return rows


__all__ = ["ANSWER", "OBSERVATION", "agent_rows", "field_rows", "fields_of", "words"]
