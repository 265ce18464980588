"""Drawing a consensus game's state: shared by the live explorer and the replay viewer.

Everything here is a function of plain values (a graph, a layout, colours,
preferences, flippers, who is locally satisfied), not of a model, so a game
played now and a game read back from its run directory look exactly alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import altair as alt
import networkx as nx
import pandas as pd
import solara
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from llm_mesa.models.consensus import measures

COLOUR_HEX = {"red": "#d62728", "blue": "#1f77b4"}
#: The per-round measures plotted under the network (column -> title).
ROUND_PLOTS = {
    "blue_share": "share of blue",
    "largest_component": "largest same-colour component",
    "local_agreement": "local agreement",
    "stubborn_moves": "stubborn moves",
}
LLM_PLOTS = {
    "prompt_tokens": "prompt tokens",
    "completion_tokens": "completion tokens",
    "failures": "failed decisions",
}

Layout = Mapping[int, Sequence[float]]


def node_roles(colours: Sequence[str], satisfied: Sequence[bool], flippers: Iterable[int]) -> dict[int, str]:
    """Each node's role in the echo-chamber picture.

    ``flipper``: keeps changing colour (the pseudo-equilibrium flippers);
    ``satisfied``: its neighbourhood agrees with it although the network does not;
    ``unsatisfied``: its neighbourhood majority holds the other colour;
    ``agreed``: the network is unanimous.
    """
    if measures.is_consensus(list(colours)):
        return dict.fromkeys(range(len(colours)), "agreed")
    flipping = set(flippers)
    return {v: "flipper" if v in flipping else ("satisfied" if ok else "unsatisfied")
            for v, ok in enumerate(bool(s) for s in satisfied)}


def draw_network(graph: nx.Graph, layout: Layout, colours: Sequence[str], preferences: Sequence[str],
                 flippers: Iterable[int] = (), satisfied: Sequence[bool] | None = None,
                 round_number: int | None = None, size: tuple[float, float] = (6.4, 3.3),
                 dpi: int = 80) -> Figure:
    """The network: fill = current colour, ring = preference, shaded same-colour groups.

    ``satisfied`` defaults to the measure's own definition (at least half of the
    neighbours share the colour); the title counts the same-colour groups.
    """
    colours = list(colours)
    if satisfied is None:
        satisfied = measures.locally_satisfied(graph, colours).tolist()
    roles = node_roles(colours, satisfied, flippers)
    fig = Figure(figsize=size, dpi=dpi)
    ax = fig.add_subplot()
    ax.set_axis_off()
    xs = [p[0] for p in layout.values()]
    ys = [p[1] for p in layout.values()]
    pad = 0.08 * max(max(xs) - min(xs), max(ys) - min(ys), 1e-9)
    ax.set_xlim(min(xs) - pad, max(xs) + pad)  # fixed frame: nodes never jump between rounds
    ax.set_ylim(min(ys) - pad, max(ys) + pad)
    ax.set_aspect("equal")
    components = measures.same_colour_components(graph, colours)
    for u, v in graph.edges:
        (x0, y0), (x1, y1) = layout[u], layout[v]
        if colours[u] == colours[v]:
            # an echo chamber: the same-colour component drawn as a broad translucent band
            ax.plot([x0, x1], [y0, y1], color=COLOUR_HEX[colours[u]], alpha=0.28, linewidth=9,
                    solid_capstyle="round", zorder=1)
            ax.plot([x0, x1], [y0, y1], color="#555555", linewidth=0.8, zorder=2)
        else:
            ax.plot([x0, x1], [y0, y1], color="#999999", linewidth=0.7, linestyle=(0, (3, 3)), zorder=2)
    markers = {"agreed": "o", "satisfied": "o", "unsatisfied": "s", "flipper": "D"}
    for v, (x, y) in layout.items():
        role = roles[v]
        ax.scatter([x], [y], s=230 if role != "flipper" else 260, marker=markers[role],
                   c=COLOUR_HEX[colours[v]], edgecolors=COLOUR_HEX[preferences[v]], linewidths=3.2, zorder=3)
        if role == "flipper":
            ax.scatter([x], [y], s=520, marker="D", facecolors="none", edgecolors="black",
                       linewidths=1.6, linestyle="--", zorder=4)
        ax.annotate(str(v), (x, y), ha="center", va="center", fontsize=6.5, color="white", zorder=5)
    largest = len(components[0]) if components else 0
    prefix = f"round {round_number}: " if round_number is not None else ""
    ax.set_title(f"{prefix}{len(components)} same-colour groups, largest {largest}", fontsize=10)
    legend = [
        Line2D([], [], marker="o", linestyle="", markerfacecolor=COLOUR_HEX["blue"],
               markeredgecolor=COLOUR_HEX["red"], markeredgewidth=2.5, markersize=10,
               label="fill: colour now, ring: preference"),
        Line2D([], [], marker="o", linestyle="", color="#777777", markersize=9,
               label="locally satisfied"),
        Line2D([], [], marker="s", linestyle="", color="#777777", markersize=9,
               label="neighbourhood disagrees"),
        Line2D([], [], marker="D", linestyle="", markerfacecolor="#777777", markeredgecolor="black",
               markersize=9, label="flipper"),
        Line2D([], [], color=COLOUR_HEX["blue"], alpha=0.3, linewidth=7, label="same-colour group"),
    ]
    ax.legend(handles=legend, loc="center left", bbox_to_anchor=(1.0, 0.5), ncol=1, fontsize=7,
              frameon=False)
    fig.subplots_adjust(left=0.01, right=0.7, top=0.92, bottom=0.01)
    return fig


def status_banner(round_number: int, colours: Sequence[str], pseudo_equilibrium: bool,
                  flippers: Iterable[int], local_agreement: float) -> None:
    """Consensus, pseudo-equilibrium (echo chambers), or still moving."""
    colours = list(colours)
    if measures.is_consensus(colours):
        solara.Success(f"Consensus on {colours[0]} at round {round_number}.", dense=True,
                       classes=["llm-mesa-consensus"])
    elif pseudo_equilibrium:
        names = ", ".join(str(v) for v in flippers) or "none"
        solara.Warning(
            f"Pseudo-equilibrium: {local_agreement:.0%} of agents see their neighbourhood agree with them, "
            f"yet the network is split into echo chambers. Flippers: {names}.",
            dense=True, classes=["llm-mesa-pseudo-equilibrium"])
    else:
        solara.Info("No consensus yet.", dense=True, classes=["llm-mesa-moving"])


def round_chart(rounds: pd.DataFrame, columns: Mapping[str, str], title: str,
                current_round: int | None = None) -> alt.TopLevelMixin:
    """Small multiples, one per measure, of a per-round table; a rule marks ``current_round``."""
    long = rounds.melt(id_vars="round", value_vars=list(columns), var_name="measure", value_name="value")
    long["measure"] = long["measure"].map(columns)
    x = alt.X("round:Q", title="round", axis=alt.Axis(format="d", tickMinStep=1))
    lines = alt.Chart().mark_line(point=True).encode(
        x=x, y=alt.Y("value:Q", title=None), tooltip=["measure", "round", "value"])
    layers = [lines]
    if current_round is not None:
        layers.append(alt.Chart().mark_rule(color="#ff7f0e", strokeWidth=2, strokeDash=[5, 3])
                      .encode(x=x).transform_filter(alt.datum.round == int(current_round)))
    return (
        alt.layer(*layers, data=long)
        .properties(width=210, height=100)
        .facet(facet=alt.Facet("measure:N", title=None), columns=2)
        .resolve_scale(y="independent")
        .properties(title=title)
        # SVG, not canvas: every point is an element that a browser test can count
        .properties(usermeta={"embedOptions": {"renderer": "svg", "actions": False}})
    )


__all__ = ["COLOUR_HEX", "LLM_PLOTS", "ROUND_PLOTS", "draw_network", "node_roles", "round_chart",
           "status_banner"]
