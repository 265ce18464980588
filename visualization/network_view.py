"""The space panel every page shares: a game's picture as the network (or its echo-chamber map) or the grid.

The panel draws what the game's view describes (``llm_mesa.views``): the whole
network, or (for a game whose agents' states are categories) the contracted map of
its same-state groups; or the cells of a Mesa grid; with the round's banners above,
and reports a clicked agent (a clicked cell: its first agent).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import solara

from llm_mesa.views import Banner, GridPicture, Picture

from .grid_chart import grid_spec
from .network_chart import chamber_spec, has_categories, network_spec
from .vega_widget import Drawn, VegaChart, steady

VIEWS = ("network", "echo chambers")
_SHOW = {"done": solara.Success, "warning": solara.Warning, "info": solara.Info, "error": solara.Error}


def spec_of(picture: Picture, view: str = VIEWS[0], selected: int | None = None, height: int = 460) -> dict:
    """The Vega-Lite spec of one view of ``picture``."""
    if isinstance(picture, GridPicture):
        return grid_spec(picture, selected=selected, height=height)
    if view == VIEWS[1] and has_categories(picture):
        return chamber_spec(picture, height=height)
    return network_spec(picture, selected=selected, height=height)


def Banners(banners: Sequence[Banner]):
    """Each banner in its colour, tagged with its CSS class (tests and styles find it)."""
    for banner in banners:
        _SHOW.get(banner.kind, solara.Info)(banner.text, dense=True, classes=[banner.tag] if banner.tag else [])


@solara.component
def NetworkPanel(picture: Picture, selected: int | None = None,
                 on_select: Callable[[int], None] | None = None, height: int = 460, classes: Sequence[str] = (),
                 fill: bool = False):
    """The picture (network or echo-chamber map, or grid) and its view switch; a click selects an agent.

    ``fill``: the picture takes the height the panel's flex column leaves (a cell of Mesa's
    grid), so the whole picture shows in the cell, however the user sizes it.
    """
    view, set_view = solara.use_state(VIEWS[0])
    views = list(VIEWS) if has_categories(picture) else [VIEWS[0]]
    grid = isinstance(picture, GridPicture)

    def clicked(datum):
        if on_select is not None and isinstance(datum, dict) and datum.get("index") is not None:
            on_select(int(datum["index"]))  # the agent's place among the selectable ones (its name is "agent")

    shown = view if view in views else VIEWS[0]
    spec = solara.use_memo(lambda: Drawn(steady(spec_of(picture, shown, selected, height))),  # text: see Drawn
                           dependencies=[picture.key, picture.round_number, shown, selected, height,
                                         tuple(picture.state), picture.details is None, picture.domain,
                                         tuple(picture.agents) if grid else None])
    panel = {"min-width": "0", "overflow-x": "auto", **({"flex": "1 1 0", "min-height": "180px"} if fill else {})}
    with solara.Column(classes=["llm-mesa-grid" if grid else "llm-mesa-network", *classes], gap="4px", style=panel):
        with solara.Row(style={"align-items": "center"}):
            if len(views) > 1:
                solara.ToggleButtonsSingle(value=shown, values=views, on_value=set_view, dense=True,
                                           classes=["llm-mesa-view-switch"])
            solara.Text("hover a cell for its agents; click it to select its agent" if grid
                        else "hover a node for its details; click it to select it" if shown == VIEWS[0]
                        else "hover a chamber for its members", style={"font-size": "0.8em", "color": "#666"})
        VegaChart(spec, classes=["llm-mesa-grid-chart" if grid else "llm-mesa-network-chart"],
                  on_click=clicked if on_select else None, fill=fill)


__all__ = ["Banners", "NetworkPanel", "VIEWS", "spec_of"]
