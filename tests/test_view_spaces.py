"""The generic view draws Mesa's discrete grids (square and hexagonal) as well as networks, and no space as charts.

Games the test registers itself (``space_games``): residents of two kinds on an
``OrthogonalMooreGrid`` (empty cells, agents that move), opinions on a ``HexGrid``, coins
changing hands with no space; and grids built here (``OrthogonalVonNeumannGrid``, a cell
holding several agents). The hexagonal picture is checked against the grid's own
neighbourhoods: every cell's neighbours sit at distance 1 from it, and no other cell does.
The same tests run on Mesa 3.5 and Mesa 4.
"""

from __future__ import annotations

import math
import random

import mesa
import pytest
from mesa.discrete_space import CellAgent, HexGrid, OrthogonalMooreGrid, OrthogonalVonNeumannGrid
from space_games import HEXOP, SEGREGATE, WALLET, registered

from llm_mesa import Game, continuous
from llm_mesa.views import GameView, GridPicture, view_of
from llm_mesa.views.controls import initial_values
from llm_mesa.views.spaces import cell_positions, combined, find_space
from llm_mesa.visualization.grid_chart import grid_spec
from llm_mesa.visualization.network_view import spec_of


@pytest.fixture(scope="module", autouse=True)
def games():
    with registered() as games:
        yield games


def live(view: GameView, rounds: int = 0, **values):
    model = view.build_from({**initial_values(view.controls()), **values})
    for _ in range(rounds):
        model.step()
    return model


def cells_layer(spec):
    return next(layer for layer in spec["layer"] if layer.get("name") == "cells")


def test_a_moore_grid_is_drawn_cell_by_cell_with_its_empty_cells_and_its_agents_where_they_stand():
    view = view_of(SEGREGATE)
    model = live(view, rounds=2, seed=4)
    picture = view.picture(model)
    agents = view.agents(model)
    assert isinstance(picture, GridPicture) and picture.shape == "square" and picture.dimensions == (12, 9)
    assert len(picture.coordinates) == 12 * 9 and picture.occupied == len(agents) < 12 * 9
    for coordinate, members, state in zip(picture.coordinates, picture.agents, picture.state):
        assert [agents[i].cell.coordinate for i in members] == [coordinate] * len(members)
        assert state == (agents[members[0]].state if members else None)
    spec = grid_spec(picture)
    cells = spec["datasets"]["cells"]
    assert sum(c["fill"] is None for c in cells) == 12 * 9 - len(agents)  # empty cells drawn, not dropped
    for cell in cells:  # a click on a cell selects its agent: the datum names it
        if cell["agents"]:
            assert agents[cell["index"]].cell.coordinate == picture.coordinates[cell["cell"]]
            assert cell["agent"] == agents[cell["index"]].unique_id  # named as the game's tables name it
    fill = cells_layer(spec)["encoding"]["fill"]
    assert fill["scale"] == {"domain": ["A", "B", "empty"], "range": ["#1b9e77", "#d95f02", "#e8e8e8"]}
    assert "12 x 9 grid" in spec["title"]["subtitle"][0]
    assert spec_of(picture) == spec  # the panel draws a grid as a grid


def test_a_moving_agent_is_drawn_in_its_new_cell_and_the_panel_says_where_it_is():
    view = view_of(SEGREGATE)
    model = live(view, seed=4)
    before = {a.unique_id: a.cell.coordinate for a in model.ordered}
    model.step()
    moved = [a for a in model.ordered if a.cell.coordinate != before[a.unique_id]]
    assert moved
    picture = view.picture(model)
    index = view.agents(model).index(moved[0])
    at = picture.coordinates[next(k for k, members in enumerate(picture.agents) if index in members)]
    assert at == moved[0].cell.coordinate
    rows = view.agent_rows(model, index)
    assert rows["cell"] == f"({at[0]}, {at[1]})" and rows["state"] == moved[0].state
    around = [a.state for c in moved[0].cell.neighborhood for a in c.agents]
    assert rows["neighbours hold"].split(" (")[0] == (", ".join(around) or "-")


@pytest.mark.parametrize("torus", [False, True])
def test_a_hex_grid_puts_each_cells_six_neighbours_around_it(torus):
    grid = HexGrid((8, 6), torus=torus, random=random.Random(1))
    positions = cell_positions(grid)
    for cell in grid.all_cells:
        here = positions[cell.coordinate]
        near = {c for c, p in positions.items() if c != cell.coordinate and math.dist(p, here) < 1.0 + 1e-9}
        neighbours = {c.coordinate for c in cell.neighborhood}
        if not torus:
            assert near == neighbours, cell.coordinate
        else:  # wrapped neighbours sit across the picture; those drawn next to it are neighbours still
            assert near <= neighbours and all(abs(math.dist(positions[c], here) - 1) < 1e-9 for c in near)


def test_the_hex_game_is_drawn_as_hexagons_on_a_continuous_scale():
    view = view_of(HEXOP)
    model = live(view, rounds=1, seed=2)
    picture = view.picture(model)
    assert picture.shape == "hex" and picture.occupied == 9 * 7 and picture.fill().domain == (0.0, 1.0)
    spec = grid_spec(picture)
    layer = cells_layer(spec)
    assert layer["mark"]["shape"].startswith("M0,-1") and layer["encoding"]["fill"]["type"] == "quantitative"
    by_cell = {a.cell.coordinate: a.state for a in model.ordered}
    assert [c["fill"] for c in spec["datasets"]["cells"]] == [by_cell[c] for c in picture.coordinates]


class _Wealth(CellAgent):
    def __init__(self, model, cell, wealth):
        super().__init__(model)
        self.cell, self.state = cell, wealth


class _Crowded(mesa.Model):
    """Agents several to a cell on a von Neumann grid (as Boltzmann's wealth model puts them)."""

    def __init__(self, kind=OrthogonalVonNeumannGrid, seed=1):
        super().__init__(rng=seed)
        self.grid = kind((4, 4), torus=True, random=random.Random(seed))
        cells = sorted(self.grid.all_cells, key=lambda c: c.coordinate)
        self.wealthy = [_Wealth(self, cells[i % 5], w) for i, w in enumerate([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])]


class _CrowdedGame(Game):
    name = "crowded_test"
    state_scale = continuous(0, 12, label="wealth")

    def build(self, parameters, policy, seed):
        return _Crowded(seed=seed)


def test_a_cell_of_several_agents_shows_their_mean_and_their_number():
    view = GameView(_CrowdedGame())
    model = _Crowded()
    picture = view.picture(model)
    first = picture.coordinates.index((0, 0))
    inside = [view.agents(model)[i] for i in picture.agents[first]]
    assert len(inside) == 3 and picture.state[first] == pytest.approx(sum(a.state for a in inside) / 3)
    spec = grid_spec(picture)
    datum = spec["datasets"]["cells"][first]
    assert datum["agents"] == 3 and datum["count"] == "×3" and datum["their states"] == "1, 6, 11"
    assert sorted(picture.agent_states) == list(range(1, 12))
    assert combined(["a", "b", "b"]) == "b" and combined([None]) is None and combined([2, 4]) == 3


@pytest.mark.parametrize("kind", [OrthogonalMooreGrid, OrthogonalVonNeumannGrid, HexGrid])
def test_every_discrete_grid_is_found_and_drawn(kind):
    model = _Crowded(kind=kind)
    assert find_space(model) is model.grid
    picture = GameView(_CrowdedGame()).picture(model)
    assert picture.shape == ("hex" if kind is HexGrid else "square") and len(picture.coordinates) == 16
    assert picture.torus


def test_a_model_with_no_space_is_charts_and_an_agent_panel_alone():
    view = view_of(WALLET)
    model = live(view, rounds=3, seed=1)
    snapshot = view.snapshot(model, selected=4)
    assert snapshot.picture is None and snapshot.agents == 20
    assert snapshot.agent["state"] == str(model.ordered[4].state)
    assert [cls for cls, _ in view.charts(snapshot.rounds)] == ["llm-mesa-chart-richest", "llm-mesa-chart-shares"]


def test_a_view_reads_the_state_under_the_name_a_games_agents_keep_it():
    class Rich(_Wealth):
        @property
        def wealth(self):
            return self.state * 10

    class WealthView(GameView):
        state_attribute = "wealth"

    model = _Crowded()
    for agent in list(model.agents):
        agent.__class__ = Rich
    picture = WealthView(_CrowdedGame()).picture(model)
    assert sorted(picture.agent_states) == [10 * v for v in range(1, 12)]
