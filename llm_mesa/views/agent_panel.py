"""One agent's panel for any game: its state, policy, place, neighbours, its last decision and what it sees next.

The agent is called by its name in the game's tables (``GameView.names``), the number its
own observation and prompt use. At "Round t" the panel shows the decision the agent made
in round t and what it observes for round t + 1 (nothing once the game has ended), each
headed with its round, so that the page's round, the panel and the observation agree.
An observation or a decision is shown field by field (a dataclass, a mapping, a named
tuple, a plain object's attributes), each value in words: sequences joined, pairs kept
together ("C/D: 0"), numbers short, nothing a reader has to decode from a Python repr
such as ``View(agent=0, round=1, colour='red', ...)``. Fields that hold nothing, and
fields that repeat the heading (the observation's own agent and round), are left out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from llm_mesa.views.controls import shorten
from llm_mesa.views.spaces import neighbour_states

if TYPE_CHECKING:
    from llm_mesa.views import GameView

#: most items of a sequence shown in one row
MAX_ITEMS = 40
#: the columns a lab adds to a run's per-agent tables, in a reader's words
RECORDED_WORDS = {"response_s": "answered in (s)", "timeout": "missed the deadline", "label": "decided by",
                  "seat": "seat"}


def decision_heading(round_number: int) -> str:
    """What the decision an agent made in ``round_number`` is headed with."""
    return f"decision in round {round_number}"


def observation_heading(round_number: int) -> str:
    """What an agent's observation for its decision in ``round_number`` is headed with."""
    return f"observes for round {round_number}"


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
    if hasattr(value, "item") and not isinstance(value, (list, tuple)):  # a numpy or pandas scalar: its Python value
        try:
            value = value.item()
        except (TypeError, ValueError):
            pass
    if value is None or value == "" or (isinstance(value, float) and value != value):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple, set, frozenset)) and not hasattr(value, "_asdict"):
        items = list(value)
        if _is_table(items):  # ((C, C), 1), ((C, D), 0): a lookup table, "C/C: 1, C/D: 0"
            return shorten(", ".join(f"{_key(k)}: {words(v, 40)}" for k, v in items[:MAX_ITEMS]), limit)
        shown = ", ".join(_item(v) for v in items[:MAX_ITEMS])
        more = f" … ({len(items)} in all)" if len(items) > MAX_ITEMS else ""
        return shorten((shown or "none") + more, limit)
    inner = fields_of(value)
    if inner is not None:
        return shorten("; ".join(f"{k}: {words(v, 60)}" for k, v in inner.items() if v is not None) or "-", limit)
    return shorten(value, limit)


def _is_table(items: list[Any]) -> bool:
    """Pairs whose first items are distinct keys, at least one of them a pair itself: a lookup table."""
    if not items or not all(isinstance(i, tuple) and len(i) == 2 for i in items):
        return False
    keys = [i[0] for i in items]
    try:
        distinct = len(set(keys)) == len(keys)
    except TypeError:
        return False
    return distinct and any(isinstance(k, tuple) for k in keys)


def _key(key: Any) -> str:
    return "/".join(words(k, 20) for k in key) if isinstance(key, tuple) else words(key, 20)


def _item(value: Any) -> str:
    """One item of a sequence: a nested sequence kept whole, in parentheses ("(D, 11.2)")."""
    if isinstance(value, (list, tuple)) and not hasattr(value, "_asdict"):
        return "(" + ", ".join(words(v, 30) for v in value) + ")"
    return words(value, 60)


def field_rows(heading: str, value: Any, repeated: Mapping[str, Any] | None = None) -> dict[str, str]:
    """``value``'s fields as rows "HEADING · FIELD" (its one row "HEADING" when it has no fields); a field whose
    value is in ``repeated`` under its name (what the heading already says) is left out."""
    inner = fields_of(value)
    if inner is None:
        return {heading: words(value)}
    repeated = repeated or {}
    return {f"{heading} · {name.replace('_', ' ')}": words(v) for name, v in inner.items()
            if v is not None and not (isinstance(v, str) and not v.strip()) and not str(name).startswith("_")
            and not _same(repeated.get(name, _NOTHING), v)}


_NOTHING = object()


def _same(said: Any, value: Any) -> bool:
    return said is not _NOTHING and str(said) == str(value)


def agent_rows(view: GameView, model: Any, index: int) -> dict[str, str]:
    """State, policy, place, neighbours, last decision and next observation of the agent at ``index`` among
    ``view.agents(model)`` (what it has of them), the agent called by its name."""
    agents = view.agents(model)
    if not agents:
        return {}
    index = min(max(index, 0), len(agents) - 1)
    agent, name = agents[index], view.names(model)[index]
    if agent is None:
        return {"agent": str(name), "state": "(no agent on this node)"}
    rows = {"agent": str(name), "state": words(view.state_of(agent))}
    from llm_mesa.adapter.hooks import HOOKS, agent_details

    adapted = model in HOOKS  # a Mesa model played through the adapter: its policies and decisions are the hooks'
    if adapted:
        spec, decided_in, seen, answer = agent_details(model, agent)
        rows["policy"] = spec
    elif (policy := getattr(agent, "policy", None)) is not None:
        spec = getattr(policy, "spec", None)
        rows["policy"] = spec() if callable(spec) else str(policy)
    rows.update(place_rows(view, agent))
    if adapted:
        if decided_in is not None:
            heading = decision_heading(decided_in)
            rows.update(field_rows(f"{heading} · saw", seen, {"agent": name, "round": decided_in}))
            rows.update(field_rows(f"{heading} · answered", answer))
        return rows
    t = view.round_number(model)
    decision = getattr(agent, "pending", None)
    if decision is not None and t > 0:
        rows.update(field_rows(decision_heading(t), decision, {"agent": name, "round": t}))
    observe = getattr(agent, "observe", None)
    if callable(observe) and model.running:
        heading = observation_heading(t + 1)
        try:
            rows.update(field_rows(heading, observe(), {"agent": name, "round": t + 1}))
        except Exception:  # noqa: BLE001 - a panel never breaks a page; an agent may not observe between rounds
            rows[heading] = "-"
    elif callable(observe):
        rows["next round"] = "none: the game has ended"
    return rows


def place_rows(view: GameView, agent: Any) -> dict[str, str]:
    """The agent's cell and what its neighbours hold (nothing for an agent without a cell)."""
    rows: dict[str, str] = {}
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
    return rows


def recorded_rows(recorded: Mapping[str, Any], skip: tuple[str, ...] = ()) -> dict[str, str]:
    """An agent's row of a run's per-agent table, in words (a lab's columns named as a reader says them; a
    missed deadline shows no answering time: the game's default action was played)."""
    missed = words(recorded.get("timeout")) == "yes"
    out = {RECORDED_WORDS.get(k, k.replace("_", " ")): words(v) for k, v in recorded.items()
           if k not in skip and not (missed and k == "response_s")}
    if missed:
        out[RECORDED_WORDS["timeout"]] = "yes: the game's default action was played"
    return out


__all__ = ["RECORDED_WORDS", "agent_rows", "decision_heading", "field_rows", "fields_of", "observation_heading",
           "place_rows", "recorded_rows", "words"]
