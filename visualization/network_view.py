"""The network panel shared by the live explorer, the side-by-side page and the replays.

A ``NetworkState`` is what one round looks like (plain values: a live model and a
recorded round give the same state); ``NetworkPanel`` draws it as the whole
network or as the echo-chamber map, with the status banner worded from what is
drawn, and reports a clicked agent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import solara

from llm_mesa.models.consensus import measures

from .charts import LLM_PLOTS, ROUND_PLOTS, VegaChart, round_chart
from .network_chart import COLOUR_HEX, chamber_spec, chambers, network_spec, node_roles

VIEWS = ("network", "echo chambers")


@dataclass(frozen=True)
class NetworkState:
    """One round of a consensus game, as the panel draws it."""

    graph: nx.Graph
    layout: Mapping[int, Sequence[float]]
    colours: Sequence[str]
    preferences: Sequence[str]
    round_number: int
    flippers: tuple[int, ...] = ()
    satisfied: Sequence[bool] | None = None
    pseudo_equilibrium: bool = False
    details: Sequence[Mapping[str, Any]] | None = field(default=None, compare=False)
    key: Any = None  # tells one game from another (a redraw when it changes)

    @classmethod
    def of_model(cls, model, details: Sequence[Mapping[str, Any]] | None = None, layout=None) -> "NetworkState":
        colours = list(model.colours)
        return cls(graph=model.graph, layout=layout or model.layout, colours=colours,
                   preferences=list(model.preferences), round_number=model.round, flippers=tuple(model.flippers),
                   satisfied=measures.locally_satisfied(model.adjacency, colours,
                                                        getattr(model, "satisfied_threshold", 0.5)).tolist(),
                   pseudo_equilibrium=bool(model.pseudo_equilibrium), details=details, key=id(model))

    def spec(self, view: str = "network", selected: int | None = None, height: int = 460) -> dict[str, Any]:
        if view == "echo chambers":
            return chamber_spec(self.graph, self.layout, self.colours, flippers=self.flippers,
                                satisfied=self.satisfied, round_number=self.round_number, height=height)
        return network_spec(self.graph, self.layout, self.colours, self.preferences, flippers=self.flippers,
                            satisfied=self.satisfied, round_number=self.round_number, details=self.details,
                            selected=selected, height=height)

    @property
    def local_agreement(self) -> float:
        sat = self.satisfied if self.satisfied is not None else measures.locally_satisfied(self.graph, self.colours)
        return float(sum(bool(s) for s in sat)) / max(len(self.colours), 1)


def describe(state: NetworkState, view: str = "network") -> tuple[str, str]:
    """(kind, text) of the status banner, worded from what the panel draws."""
    colours = list(state.colours)
    n = len(colours)
    if measures.is_consensus(colours):
        return "consensus", f"Consensus on {colours[0]} at round {state.round_number}: all {n} agents agree."
    found = chambers(state.graph, colours)
    satisfied = state.satisfied if state.satisfied is not None else [True] * n
    roles = node_roles(colours, satisfied, state.flippers)
    disagree = sum(r == "unsatisfied" for r in roles.values())
    drawn = "shaded regions" if view == "network" else "bubbles"
    groups = f"{len(found.members)} same-colour groups (the {drawn}; largest {found.largest} of {n})"
    if state.pseudo_equilibrium:
        names = ", ".join(str(v) for v in state.flippers) or "none"
        return "pseudo", (f"Pseudo-equilibrium at round {state.round_number}: {state.local_agreement:.0%} of agents "
                          f"see their neighbourhood agree, yet the network is split into {groups}. "
                          f"Flippers (◆, black ring): {names}.")
    return "moving", (f"No consensus yet at round {state.round_number}: {groups}; "
                      f"{disagree} agent{'' if disagree == 1 else 's'} (■) see{'s' if disagree == 1 else ''} their neighbourhood disagree.")


def status_banner(state: NetworkState, view: str = "network") -> None:
    """Consensus, pseudo-equilibrium (echo chambers), or still moving."""
    kind, text = describe(state, view)
    if kind == "consensus":
        solara.Success(text, dense=True, classes=["llm-mesa-consensus"])
    elif kind == "pseudo":
        solara.Warning(text, dense=True, classes=["llm-mesa-pseudo-equilibrium"])
    else:
        solara.Info(text, dense=True, classes=["llm-mesa-moving"])


@solara.component
def NetworkPanel(state: NetworkState, selected: int | None = None,
                 on_select: Callable[[int], None] | None = None, height: int = 460, banner: bool = True,
                 classes: Sequence[str] = ()):
    """The picture (network or echo-chamber map), its view switch and its banner."""
    view, set_view = solara.use_state(VIEWS[0])

    def clicked(datum):
        if on_select is not None and isinstance(datum, dict) and datum.get("agent") is not None:
            on_select(int(datum["agent"]))

    spec = solara.use_memo(lambda: state.spec(view, selected, height),
                           dependencies=[state.key, state.round_number, view, selected, height,
                                         tuple(state.colours), state.details is None])
    with solara.Column(classes=["llm-mesa-network", *classes], gap="4px", style={"min-width": "0"}):
        if banner:
            status_banner(state, view)
        with solara.Row(style={"align-items": "center"}):
            solara.ToggleButtonsSingle(value=view, values=list(VIEWS), on_value=set_view, dense=True,
                                       classes=["llm-mesa-view-switch"])
            solara.Text("hover a node for its details; click it to select it" if view == VIEWS[0]
                        else "hover a chamber for its members", style={"font-size": "0.8em", "color": "#666"})
        VegaChart(spec, classes=["llm-mesa-network-chart"], on_click=clicked if on_select else None)


__all__ = ["COLOUR_HEX", "LLM_PLOTS", "NetworkPanel", "NetworkState", "ROUND_PLOTS", "VIEWS", "describe",
           "node_roles", "round_chart", "status_banner"]
