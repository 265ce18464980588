"""The picture a page draws of a model's space at one round: ``GameView.picture``'s default.

Each node of a ``Network`` or cell of a grid is filled by its agents' state, as the
game's ``state_scale`` says it is; the drawing positions are the game's own
(``model.layout``), else the space's, else a seeded layout. A continuous fill's range
is kept on the model so that it only ever widens: a colour means the same number from
round to round.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from llm_mesa.views.pictures import Fill, NetworkPicture, Picture
from llm_mesa.views.spaces import find_space, grid_picture, is_grid

if TYPE_CHECKING:
    from mesa import Model

#: the most agents' rows a tooltip carries details for (beyond it, the picture stays quick)
DETAILS_UP_TO = 2000


def model_picture(view: Any, model: Model) -> Picture | None:
    """The model's space at this round, drawn as ``view`` (a ``GameView``) says; None: no network or grid."""
    space = find_space(model)
    if space is None:
        return None
    agents = view.agents(model)
    game = view.game
    legend = {"fill": (game.state_scale.label if game.state_scale is not None else "") or "state"}
    common = {"round_number": view.round_number(model), "scale": game.state_scale, "legend": legend, "key": id(model)}
    if is_grid(space):
        number = {id(a): i for i, a in enumerate(agents)}
        picture = grid_picture(space, agents, view.state_of, common.pop("round_number"),
                               details_of=lambda a: {"agent": number[id(a)], "policy": policy_name(a)},
                               details_up_to=DETAILS_UP_TO, **common)
        return replace(picture, domain=kept_domain(model, picture.fill()))
    from llm_mesa.views.layout import drawing_layout

    graph = space.G
    nodes = list(graph.nodes)
    cells = [space[v] for v in nodes]
    own = getattr(model, "layout", None)  # a game's own drawing positions, if it keeps them
    positions = [point(getattr(c, "position", None)) for c in cells]
    if isinstance(own, Mapping) and all(v in own for v in nodes):
        layout = {v: (float(own[v][0]), float(own[v][1])) for v in nodes}
    elif all(p is not None for p in positions):
        layout = dict(zip(nodes, positions))
    else:
        layout = drawing_layout(graph, model, seed=getattr(model, "seed", 0) or 0)
    states = [view.state_of(a) for a in agents]
    details = [{"policy": policy_name(a)} for a in agents] if len(nodes) <= DETAILS_UP_TO else None
    picture = NetworkPicture(graph=graph, layout=layout, state=states, details=details, **common)
    return replace(picture, domain=kept_domain(model, picture.fill()))


def kept_domain(model: Model, fill: Fill) -> tuple[float, float] | None:
    """A continuous fill's range, kept on the model so that it only ever widens: a colour means the same
    number from round to round (a declared range never moves anyway)."""
    if not fill.numeric:
        return None
    kept = getattr(model, "_llm_mesa_domain", None)
    domain = fill.domain if kept is None else (min(kept[0], fill.domain[0]), max(kept[1], fill.domain[1]))
    try:
        model._llm_mesa_domain = domain
    except AttributeError:
        pass
    return domain


def point(position: Any) -> tuple[float, float] | None:
    """A cell's position as (x, y), or None (a network built without a layout keeps none)."""
    try:
        x, y = (float(c) for c in position)
    except (TypeError, ValueError):
        return None
    return x, y


def policy_name(agent: Any) -> str:
    """The spec (or name) of an agent's policy, for a tooltip; ``-`` without one."""
    policy = getattr(agent, "policy", None)
    if policy is None:
        return "-"
    spec = getattr(policy, "spec", None)
    return spec() if callable(spec) else str(getattr(policy, "name", policy))


__all__ = ["DETAILS_UP_TO", "kept_domain", "model_picture", "point", "policy_name"]
