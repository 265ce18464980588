"""Where a model keeps its agents, and the picture of it: a Mesa ``Network``, a discrete grid, or none.

The generic view (``GameView``) draws any model whose agents sit in one of Mesa's
discrete spaces, found among the model's attributes: a ``Network`` (nodes with their
agents), an ``OrthogonalMooreGrid`` or ``OrthogonalVonNeumannGrid`` (square cells) or a
``HexGrid`` (hexagonal cells), on Mesa 3.5 and Mesa 4 alike. A model with none is drawn
as charts alone. A cell may hold several agents (Boltzmann's wealth model): its fill is
their mean state (numbers) or their most common one (categories), its tooltip lists them.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llm_mesa.views.pictures import GridPicture, label

#: hexagonal rows sit this far apart, in units of one cell's width
HEX_ROW = 0.8660254037844386


def find_space(model: Any) -> Any:
    """The model's Mesa ``Network`` or two-dimensional discrete grid (the first among its attributes), or None."""
    try:
        from mesa.discrete_space import Network
        from mesa.discrete_space.grid import Grid
    except ImportError:  # pragma: no cover - every supported Mesa has them
        return None
    grids = []
    for value in vars(model).values():
        if isinstance(value, Network):
            return value
        if isinstance(value, Grid) and len(value.dimensions) == 2:
            grids.append(value)
    return grids[0] if grids else None


def find_network(model: Any) -> Any:
    """The model's ``mesa.discrete_space.Network`` (any attribute that is one), or None."""
    space = find_space(model)
    return space if space is not None and hasattr(space, "G") else None


def is_grid(space: Any) -> bool:
    return space is not None and hasattr(space, "dimensions") and not hasattr(space, "G")


def grid_shape(grid: Any) -> str:
    from mesa.discrete_space import HexGrid

    return "hex" if isinstance(grid, HexGrid) else "square"


def _odd_row_shift(grid: Any) -> float:
    """How far odd rows of a hexagonal grid are drawn shifted (-0.5 or +0.5 cells), read from the grid's
    own neighbourhoods so that a cell's six neighbours are the six cells around it in the picture."""
    width, height = grid.dimensions
    for row in range(1, height - 1, 2):
        for col in range(1, width - 1):
            cell = grid[(col, row)]
            above = {c.coordinate[0] - col for c in cell.neighborhood if c.coordinate[1] == row - 1}
            if above == {-1, 0}:
                return -0.5
            if above == {0, 1}:
                return 0.5
    return 0.5


def cell_positions(grid: Any) -> dict[tuple[int, int], tuple[float, float]]:
    """Each cell's centre as drawn: (x, y) = its coordinate; a hexagonal grid's rows 0.866 apart, odd rows shifted."""
    coordinates = [tuple(int(c) for c in cell.coordinate) for cell in grid.all_cells]
    if grid_shape(grid) == "square":
        return {c: (float(c[0]), float(c[1])) for c in coordinates}
    shift = _odd_row_shift(grid)
    return {c: (c[0] + (shift if c[1] % 2 else 0.0), c[1] * HEX_ROW) for c in coordinates}


def combined(states: Sequence[Any]) -> Any:
    """One cell's fill from its agents' states: the mean of numbers, the most common category (ties: the first
    in sorted order), None for no agent."""
    if len(states) == 1:  # most cells of most grids: one agent, its state (quick: a 50 x 50 grid redraws each step)
        return states[0]
    present = [s for s in states if s is not None]
    if not present:
        return None
    if all(isinstance(s, (int, float)) and not isinstance(s, bool) for s in present):
        return sum(present) / len(present) if len(present) > 1 else present[0]
    counts = Counter(label(s) for s in present)
    top = max(counts.values())
    return next(s for s in sorted(present, key=label) if counts[label(s)] == top)


@dataclass(frozen=True)
class GridLayout:
    """A grid's cells in drawing order (row by row), their coordinates and centres: fixed for the grid's life."""

    cells: tuple[Any, ...]
    coordinates: tuple[tuple[int, int], ...]
    positions: tuple[tuple[float, float], ...]


_layouts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def grid_layout(grid: Any) -> GridLayout:
    """``grid``'s ``GridLayout``, computed once per grid (a page redraws the grid at every step)."""
    try:
        return _layouts[grid]
    except (KeyError, TypeError):
        pass
    cells = sorted(grid.all_cells, key=lambda c: (c.coordinate[1], c.coordinate[0]))
    coordinates = tuple(tuple(int(c) for c in cell.coordinate) for cell in cells)
    positions = cell_positions(grid)
    made = GridLayout(tuple(cells), coordinates, tuple(positions[c] for c in coordinates))
    try:
        _layouts[grid] = made
    except TypeError:  # a grid that cannot be weakly referenced: laid out again each time
        pass
    return made


def grid_picture(grid: Any, agents: Sequence[Any], state_of: Callable[[Any], Any], round_number: int, *,
                 details_of: Callable[[Any], Mapping[str, Any]] | None = None, details_up_to: int = 2000,
                 **picture: Any) -> GridPicture:
    """The grid at this round: each cell filled by its agents' states; ``agents`` fixes their numbers."""
    index = {id(a): i for i, a in enumerate(agents)}
    layout = grid_layout(grid)
    states, members, details, placed = [], [], [], []
    keep_details = details_of is not None and len(layout.cells) <= details_up_to
    for cell, coordinate in zip(layout.cells, layout.coordinates):
        inside = [a for a in cell.agents if id(a) in index]
        values = [state_of(a) for a in inside]
        placed += values
        states.append(combined(values))
        members.append(tuple(index[id(a)] for a in inside))
        if keep_details:
            row: dict[str, Any] = {"cell": f"({coordinate[0]}, {coordinate[1]})"}
            if len(inside) == 1:
                row.update(details_of(inside[0]))
            elif inside:
                row["agents here"] = len(inside)
                row["their states"] = ", ".join(label(v) for v in values[:12]) + (" …" if len(values) > 12 else "")
            details.append(row)
    return GridPicture(shape=grid_shape(grid), dimensions=(int(grid.dimensions[0]), int(grid.dimensions[1])),
                       coordinates=layout.coordinates, positions=layout.positions, state=states,
                       agents=members, round_number=round_number, torus=bool(getattr(grid, "torus", False)),
                       details=details if keep_details else None, agent_states=placed, **picture)


def space_agents(model: Any, space: Any) -> list[Any]:
    """The agents a panel selects among, by number: a network's in node order (None where a node is empty),
    else every agent of the model in the order of its id."""
    if space is not None and hasattr(space, "G"):
        return [next(iter(space[v].agents), None) for v in space.G.nodes]
    return sorted(model.agents, key=lambda a: getattr(a, "unique_id", 0) or 0)


def neighbour_states(agent: Any, state_of: Callable[[Any], Any]) -> tuple[list[Any], int]:
    """The states of the agents in an agent's neighbouring cells, and how many of those cells are empty."""
    cell = getattr(agent, "cell", None)
    neighbourhood = getattr(cell, "neighborhood", None)
    if neighbourhood is None:
        return [], 0
    states, empty = [], 0
    for around in neighbourhood:
        inside = list(around.agents)
        empty += not inside
        states += [state_of(a) for a in inside]
    return states, empty


__all__ = ["HEX_ROW", "GridLayout", "cell_positions", "combined", "find_network", "find_space", "grid_layout",
           "grid_picture", "grid_shape",
           "is_grid", "neighbour_states", "space_agents"]
