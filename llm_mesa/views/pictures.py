"""One round of a game's space, as plain data a page draws: a network, a grid, and how states are filled.

``NetworkPicture`` is a graph with a layout, each node filled by its agent's state;
``GridPicture`` one of Mesa's discrete grids (square or hexagonal cells), each cell
filled by the state of the agents in it, empty cells shown. Both carry the state's
``Scale`` (what the game declares its agents' ``state`` to be, else what the values look
like), from which ``fill()`` says how a page colours it: categories in the game's palette
(or named colours, then distinct ones) with a sorted legend, ordered values light to
dark, numbers on a continuous scale with a legend bar.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import llm_mesa.views.colours as palette_of
from llm_mesa.game_types import Scale

if TYPE_CHECKING:
    import networkx as nx

#: a game with more distinct states than this has no chamber map (its states are not a few categories)
MAX_CATEGORIES = 24
#: what an empty place is called in a legend
EMPTY_LABEL = "empty"


@dataclass(frozen=True)
class Fill:
    """How a picture's states are coloured: ``categories`` (label -> colour, in legend order) or
    ``numbers`` (a continuous scale over ``domain``); ``title`` heads the legend."""

    kind: str
    title: str
    colours: Mapping[str, str] = field(default_factory=dict)
    domain: tuple[float, float] = (0.0, 1.0)
    scale: Scale | None = None

    @property
    def numeric(self) -> bool:
        return self.kind == "numbers"

    def colour_of(self, value: Any) -> str:
        """The colour one state is drawn in (for numbers, close to what the browser draws)."""
        if value is None:
            return palette_of.EMPTY
        if self.numeric:
            return palette_of.numeric_fill(float(value), self.domain)
        return self.colours.get(label(value), palette_of.EMPTY)

    def ink_of(self, value: Any) -> str:
        """The readable text colour on that state's fill."""
        return palette_of.ink(self.colour_of(value))


def label(value: Any) -> str:
    """A state as a legend shows it (whole floats without their .0)."""
    if value is None:
        return EMPTY_LABEL
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def fill_of(states: Sequence[Any], scale: Scale | None, *, palette: Mapping[Any, str] | None = None,
            extra: Sequence[Any] = (), domain: tuple[float, float] | None = None, title: str = "state") -> Fill:
    """How ``states`` (and ``extra`` values drawn in the same colours, e.g. a ring) are coloured."""
    present = [s for s in [*states, *extra] if s is not None]
    chosen = palette_of.state_scale(scale, present)
    title = chosen.label or title
    if chosen.numeric and all(isinstance(s, (int, float)) and not isinstance(s, bool) for s in present):
        unit = f" ({chosen.unit})" if chosen.unit else ""
        return Fill("numbers", title + unit, domain=domain or palette_of.numeric_domain(chosen, present), scale=chosen)
    if chosen.kind == "features":  # near states in near colours (what a legend of every culture would not show)
        low, high = palette_of.numeric_domain(chosen, [x for s in present for x in s])
        colours = {label(s): palette_of.features_colour(s, low, high) for s in present}
        if any(s is None for s in states):
            colours[EMPTY_LABEL] = palette_of.EMPTY
        return Fill("features", f"{title}: near states in near colours", colours=colours, scale=chosen)
    if chosen.kind == "ordinal":
        order = [label(v) for v in chosen.values]
        order += sorted({label(v) for v in present} - set(order), key=palette_of.natural_key)
        colours = palette_of.ordinal_colours(order)
    else:
        given = {label(k): v for k, v in {**dict(chosen.palette), **dict(palette or {})}.items()}
        colours = palette_of.category_colours([label(v) for v in present], given, [label(v) for v in chosen.values])
    if any(s is None for s in states):
        colours = {**colours, EMPTY_LABEL: palette_of.EMPTY}
    return Fill("categories", title, colours=colours, scale=chosen)


@dataclass(frozen=True)
class NetworkPicture:
    """One round of a game on a graph, as a page draws it.

    Attributes:
        graph: The network.
        layout: Node -> drawing position ``(x, y)``.
        state: Each node's state, in ``graph``'s node order: its fill (None: no agent there).
        round_number: The round drawn.
        palette: Category -> colour.
        ring: A second category per node, drawn as its ring (a preference).
        flagged: Nodes drawn as squares (an agent whose neighbourhood disagrees).
        marked: Nodes drawn inside a dashed black ring, whatever their shape (flippers, or agents that changed
            colour).
        details: Each node's tooltip rows.
        legend: What fill, ring, flagged and marked mean, and (``bands``, ``groups``) what a link between two
            agents of one state means.
        key: Tells one game from another (the page redraws when it changes).
        scale: What the state is (None: read from the values).
        domain: The range a continuous fill spans (the view keeps it steady between rounds).
        caption: The title's words after "Round t:" (default: the same-state groups, or the states held).
        chambers: Whether the map of same-state groups (echo chambers) means something in this game (where a
            link between two agents of one state is a conflict, a group of them is no chamber).
        names: Each node's agent as the game's tables name it (default: the node).
    """

    graph: nx.Graph
    layout: Mapping[Any, Sequence[float]]
    state: Sequence[Any]
    round_number: int
    palette: Mapping[str, str] = field(default_factory=dict)
    ring: Sequence[str] | None = None
    flagged: Sequence[bool] | None = None
    marked: tuple[int, ...] = ()
    details: Sequence[Mapping[str, Any]] | None = field(default=None, compare=False)
    legend: Mapping[str, str] = field(default_factory=dict)
    key: Any = None  # tells one game from another (a redraw when it changes)
    scale: Scale | None = None
    domain: tuple[float, float] | None = None
    caption: str | None = None
    chambers: bool = True
    names: Sequence[Any] | None = None

    def fill(self) -> Fill:
        """How the nodes are filled.

        Returns:
            The fill: each node's colour, the legend's entries or colour bar, the ink readable on each.
        """
        return self._fill

    def name(self, index: int) -> Any:
        """Node ``index``'s agent as the game's tables name it."""
        return self.names[index] if self.names is not None else list(self.graph.nodes)[index]

    @cached_property
    def _fill(self) -> Fill:  # computed once per picture (a picture never changes)
        return fill_of(self.state, self.scale, palette=self.palette, extra=self.ring or (), domain=self.domain,
                       title=self.legend.get("fill", "state"))

    def colours(self) -> dict[str, str]:
        """The legend's colours.

        Returns:
            Every category drawn -> its colour, in legend order (empty for numbers).
        """
        return dict(self.fill().colours)

    @cached_property
    def categorical(self) -> bool:
        """Unordered categories, few of them: same-state groups (echo chambers) mean something."""
        fill = self.fill()
        return (self.chambers and fill.kind == "categories" and fill.scale is not None
                and fill.scale.kind == "categorical" and len(fill.colours) - (EMPTY_LABEL in fill.colours) <= MAX_CATEGORIES)

    @cached_property
    def same_state_links(self) -> bool:
        """Do links between agents of one state mean something to draw (a band), chambers or not?"""
        fill = self.fill()
        return fill.kind == "categories" and (self.categorical or "bands" in self.legend)


@dataclass(frozen=True)
class GridPicture:
    """One round of a game on one of Mesa's discrete grids, as a page draws it.

    ``shape``: ``square`` (``OrthogonalMooreGrid``, ``OrthogonalVonNeumannGrid``) or ``hex``
    (``HexGrid``); ``coordinates``: each cell's Mesa coordinate; ``positions``: where its centre
    is drawn (x, y in units of one cell; hexagonal rows sit 0.866 apart and every other row is
    shifted half a cell, as the grid's neighbourhoods have it); ``state``: the fill of each cell
    (its agent's state; several agents: their mean, or their most common category; None: empty);
    ``agents``: the agents in each cell, as indices into the view's ``agents(model)``;
    ``agent_states``: every placed agent's own state (a cell of several agents shows one fill);
    ``names``: each agent (by index) as the game's tables name it (default: its index).
    """

    shape: str
    dimensions: tuple[int, int]
    coordinates: Sequence[tuple[int, int]]
    positions: Sequence[tuple[float, float]]
    state: Sequence[Any]
    agents: Sequence[tuple[int, ...]]
    round_number: int
    torus: bool = False
    scale: Scale | None = None
    palette: Mapping[str, str] = field(default_factory=dict)
    domain: tuple[float, float] | None = None
    details: Sequence[Mapping[str, Any]] | None = field(default=None, compare=False)
    legend: Mapping[str, str] = field(default_factory=dict)
    key: Any = None
    agent_states: Sequence[Any] = ()
    names: Sequence[Any] | None = None

    def fill(self) -> Fill:
        return self._fill

    def name(self, index: int) -> Any:
        """Agent ``index`` as the game's tables name it."""
        return self.names[index] if self.names is not None and index < len(self.names) else index

    @cached_property
    def _fill(self) -> Fill:
        return fill_of(self.state, self.scale, palette=self.palette, extra=self.agent_states, domain=self.domain,
                       title=self.legend.get("fill", "state"))

    @property
    def categorical(self) -> bool:
        return False  # a grid has no echo-chamber map

    @property
    def occupied(self) -> int:
        return sum(bool(a) for a in self.agents)


Picture = NetworkPicture | GridPicture

__all__ = ["EMPTY_LABEL", "Fill", "GridPicture", "MAX_CATEGORIES", "NetworkPicture", "Picture", "fill_of", "label"]
