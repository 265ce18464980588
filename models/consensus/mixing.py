"""Who plays which agent of one game: a mixed population (``A + B``) and an assignment (``assign``).

The command line gives some agents another policy with ``--assign SELECTOR=POLICY`` (repeatable).
A sweep or an experiment file says the same with the game's ``assign`` parameter: the same
entries joined by ``;`` and applied in order (``all=part:2; hubs:5=part:1``). POLICY is
``part:K``, the K-th part of the sweep's policy when it is a mixed population such as
``llm:model=A + llm:model=B`` (so one axis of assignments serves an LLM mix and its rule
counterpart alike), or a spec: a rule policy, or an LLM that must be a part of the population,
so that the sweep plans, records and prices its endpoint like any other. Agents the assignment
does not name play the first part. A population without an assignment splits the agents into
equal blocks in node order (the contract's ``A + B``).

``assign`` does not enter an experiment's derived seeds (``in_seed=False``): designs that differ
only in who plays which agent play the same graphs, preferences and starting colours.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from llm_mesa import declared
from llm_mesa.parameters import ParameterError
from llm_mesa.policy import parse_policy_spec

#: joins the entries of an ``assign`` parameter (policy specs hold commas)
SEPARATOR = ";"


class AssignmentError(ParameterError):
    """An assignment that cannot be read or played; the message names the fix."""


def parse_assignment(entries: str | Iterable[str], what: str = "--assign") -> dict[str, str]:
    """``"hubs:5=stubborn; random:3=voter"`` (or the entries as a list) -> {selector: policy spec}."""
    items = entries.split(SEPARATOR) if isinstance(entries, str) else list(entries)
    assign: dict[str, str] = {}
    for item in (i.strip() for i in items):
        if not item:
            continue
        selector, eq, spec = item.partition("=")
        selector, spec = selector.strip(), spec.strip()
        kind, colon, arg = selector.partition(":")
        if not eq or not selector or not spec or (colon and not arg.strip()):
            raise AssignmentError(f"{what} {item!r} needs the form SELECTOR=POLICY, e.g. hubs:5=stubborn")
        if selector in assign:
            raise AssignmentError(f"{what} gives selector {selector!r} twice; give each group of agents once")
        assign[selector] = spec
    return assign


def request_policies(game: Any, request: Any) -> tuple[Any, Any, list[Any]]:
    """The policy, the assignment and the LLM policies of a sweep's ``PlayRequest``."""
    from llm_mesa.sweep.grid import population_parts

    endpoint = request.endpoint
    if endpoint is not None and getattr(endpoint, "parts", None) is not None:
        parts = list(endpoint.parts)
    elif endpoint is not None:
        parts = [endpoint]
    else:
        parts = population_parts(str(request.policy))
    built = [p if isinstance(p, str) else declared.llm_policy(game, p, request.store) for p in parts]
    llms = [p for p in built if not isinstance(p, str)]
    text = str(request.parameters.get("assign") or "")
    if text:
        by_model = {p.endpoint.model: p for p in llms}
        assign: dict[str, Any] = {}
        for selector, spec in parse_assignment(text, "assign").items():
            if is_part(spec):
                assign[selector] = _part(built, spec)
                continue
            name, options = parse_policy_spec(spec)
            if name != "llm":
                assign[selector] = spec
                continue
            model = options.get("model")
            if model not in by_model:
                known = ", ".join(by_model) or "none"
                raise AssignmentError(f"assign gives {selector} to {spec!r}, which is not a part of the policy "
                                      f"(its LLM models: {known}); add it to the policy, e.g. 'llm:model=A + {spec}'")
            assign[selector] = by_model[model]
        return built[0], assign, llms
    if len(built) > 1:  # equal blocks in node order, the last block taking what is left
        from .parameters import PARAMETERS

        n = int(request.parameters.get("n") or PARAMETERS["n"].default)
        block = max(1, n // len(built))
        return built[0], (lambda model, v: built[min(v // block, len(built) - 1)]), llms
    return built[0], None, llms


def is_part(spec: str) -> bool:
    """Does ``spec`` name a part of a mixed policy (``part:K``) rather than a policy?"""
    return spec.strip().startswith("part:")


def _part(built: list[Any], spec: str) -> Any:
    index = spec.partition(":")[2].strip()
    if not index.isdigit() or not 1 <= int(index) <= len(built):
        raise AssignmentError(f"assign names {spec!r}; the policy has {len(built)} part(s): use part:1 to "
                              f"part:{len(built)}")
    return built[int(index) - 1]


def assignment_of(assign: Any) -> Mapping[str, Any] | None:
    """The model's ``assign`` keyword as given: a text (the parameter) becomes its mapping; '' none."""
    if isinstance(assign, str):
        return parse_assignment(assign, "assign") or None
    return assign


__all__ = ["AssignmentError", "SEPARATOR", "assignment_of", "is_part", "parse_assignment",
           "request_policies"]
