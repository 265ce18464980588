"""The consensus study's conditions and the default rule configurations, as data.

A *condition* is a short name and the ``ConsensusModel`` keyword arguments that
define it (everything except the policy and the seed). The study (SPEC part A)
ran 12 open-model conditions and identified 11; those are ``STUDY_CONDITIONS``,
in the order of its tables. ``EXTRA_CONDITIONS`` holds the documented extras:
the private-message ("DM") condition and the N = 20 replication of each study
condition (prefix ``n20-``; the minority design keeps its 5 red hubs, the
caveman graph becomes 5 cliques of 4).

For rule policies, a "model" of the study is a rule configuration:
``RULE_CONFIGURATIONS`` maps a short name to a policy spec. The six defaults
span the inertia of the human literature's majority-with-inertia rule, an
opinionated variant, and the voter model as a reference without inertia or
majority. ``TALKING_CONFIGURATIONS`` (the ``talking`` group) are rule baselines that
send messages (relay, announce), so communication has a rule counterpart.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from llm_mesa.errors import LlmMesaError


class ConditionError(LlmMesaError):
    """An unknown condition or rule configuration name; the message lists the known ones."""


def _condition(topology: str, communication: str, **extra: Any) -> Mapping[str, Any]:
    return MappingProxyType({"n": 36, "topology": topology, "communication": communication, **extra})


#: The 11 identified open-model conditions (label "llm" unless stated), study order.
STUDY_CONDITIONS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "ba-global": _condition("ba", "global"),
    "ba-local": _condition("ba", "local"),
    "ba-none": _condition("ba", "none"),
    "ws-local": _condition("ws", "local"),
    "ws-none": _condition("ws", "none"),
    "cc-local": _condition("caveman", "local"),
    "cc-none": _condition("caveman", "none"),
    "er-local": _condition("er", "local"),
    "er-none": _condition("er", "none"),
    "ba-local-minority": _condition("ba", "local", preferences="minority", minority=5, minority_colour="red"),
    "ba-global-human": _condition("ba", "global", label="human"),
})

#: Documented extras: private messages to one neighbour, and the N = 20 replications.
EXTRA_CONDITIONS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "ba-local-dm": _condition("ba", "local", direct_messages=True),
    **{f"n20-{name}": MappingProxyType({**kwargs, "n": 20}) for name, kwargs in STUDY_CONDITIONS.items()},
})

ALL_CONDITIONS: Mapping[str, Mapping[str, Any]] = MappingProxyType({**STUDY_CONDITIONS, **EXTRA_CONDITIONS})

#: Six rule configurations ("models" of the study for rule policies): name -> policy spec.
RULE_CONFIGURATIONS: Mapping[str, str] = MappingProxyType({
    "mi-0": "majority-inertia:inertia=0.0",
    "mi-0.2": "majority-inertia:inertia=0.2",
    "mi-0.5": "majority-inertia:inertia=0.5",
    "mi-0.8": "majority-inertia:inertia=0.8",
    "mi-0.2-pref0.7": "majority-inertia:inertia=0.2,threshold=0.7",
    "voter": "voter",
})

#: Rule baselines that talk (``talking.py``): communication with a rule counterpart.
TALKING_CONFIGURATIONS: Mapping[str, str] = MappingProxyType({
    "relay": "relay:inertia=0.0,relay_every=2",
    "relay-0.2": "relay:inertia=0.2,relay_every=2",
    "announce": "announce:inertia=0.0",
    "announce-0.2": "announce:inertia=0.2",
})

#: Names that stand for a group of conditions on the command line.
CONDITION_GROUPS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "study": tuple(STUDY_CONDITIONS),
    "extras": tuple(EXTRA_CONDITIONS),
    "n20": tuple(n for n in EXTRA_CONDITIONS if n.startswith("n20-")),
    "all": tuple(ALL_CONDITIONS),
})


def resolve_conditions(selection: str | list[str] | tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """``"study"``, ``"extras"``, ``"n20"``, ``"all"`` or names (comma-separated) -> {name: kwargs}.

    Order is kept and repeats are dropped, so a sweep's table reads in study order.
    """
    items = selection.split(",") if isinstance(selection, str) else list(selection)
    chosen: dict[str, dict[str, Any]] = {}
    for item in (i.strip() for i in items):
        if not item:
            continue
        names = CONDITION_GROUPS.get(item, (item,))
        for name in names:
            if name not in ALL_CONDITIONS:
                raise ConditionError(
                    f"unknown condition {name!r}; choose a group ({', '.join(CONDITION_GROUPS)}) "
                    f"or names among: {', '.join(ALL_CONDITIONS)}")
            chosen.setdefault(name, dict(ALL_CONDITIONS[name]))
    if not chosen:
        raise ConditionError("no conditions given; pass e.g. --conditions study or --conditions ba-local,ws-none")
    return chosen


def describe_condition(kwargs: Mapping[str, Any]) -> str:
    """A short human description, e.g. ``BA, N=36, local communication, minority hubs``."""
    topology = {"ba": "BA", "ws": "WS", "er": "ER", "caveman": "CC"}.get(kwargs.get("topology", "ba"), "?")
    parts = [topology, f"N={kwargs.get('n', 36)}", {"none": "no communication", "local": "local messages", "global": "global messages"}.get(
        kwargs.get("communication", "none"), "?")]
    if kwargs.get("direct_messages"):
        parts.append("private messages")
    if kwargs.get("preferences") == "minority":
        parts.append(f"{kwargs.get('minority', 5)} {kwargs.get('minority_colour', 'red')} hubs")
    if kwargs.get("label") == "human":
        parts.append('"human" label')
    return ", ".join(parts)


__all__ = ["STUDY_CONDITIONS", "EXTRA_CONDITIONS", "ALL_CONDITIONS", "RULE_CONFIGURATIONS", "TALKING_CONFIGURATIONS",
           "CONDITION_GROUPS", "ConditionError", "resolve_conditions", "describe_condition"]
