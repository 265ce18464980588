"""A state of several features (a culture of traits) is declarable and drawn so that near states look near.

A game the test registers itself keeps, on a grid, agents whose state is a tuple of three traits (Axelrod's
culture model's shape). Theory of the colouring: identical cultures are drawn alike; a culture one trait away is
drawn nearer (in RGB) than one that differs in every trait; and no legend lists every culture.
"""

from __future__ import annotations

import math

import mesa
from mesa.discrete_space import CellAgent, OrthogonalMooreGrid

from llm_mesa import Game, Parameter, ParameterSet, PolicyCatalog, features, infer_scale
from llm_mesa.views import view_of
from llm_mesa.views.colours import features_colour
from llm_mesa.views.pictures import fill_of
from llm_mesa.visualization.grid_chart import grid_spec


def _rgb(colour: str) -> tuple[int, ...]:
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def test_an_undeclared_tuple_state_is_read_as_features_and_a_declared_one_kept():
    inferred = infer_scale("culture", [(1, 2, 3), (0, 9, 4)])
    assert inferred.kind == "features" and len(inferred.values) == 3 and inferred.bounds() == (0.0, 9.0)
    assert features(5, 0, "q").bounds({"q": 9}) == (0.0, 9.0)


def test_near_cultures_are_drawn_in_near_colours():
    same, one_off, far = (2, 5, 7, 1), (2, 5, 8, 1), (9, 0, 0, 8)
    base = _rgb(features_colour(same, 0, 9))
    assert base == _rgb(features_colour(tuple(same), 0, 9))
    near = math.dist(base, _rgb(features_colour(one_off, 0, 9)))
    assert 0 < near < math.dist(base, _rgb(features_colour(far, 0, 9)))


class Trader(CellAgent):
    def __init__(self, model, cell, culture):
        super().__init__(model)
        self.cell, self.state = cell, culture


class Cultures(mesa.Model):
    def __init__(self, seed=0, side=6):
        super().__init__(rng=seed)
        self.grid = OrthogonalMooreGrid((side, side), random=self.random)
        for cell in self.grid.all_cells:
            Trader(self, cell, tuple(self.random.randrange(10) for _ in range(3)))

    def step(self):
        self.running = False


class CultureGame(Game):
    name = "cultures_test"
    parameters = ParameterSet.of(Parameter("side", int, 6, "grid side", low=2, high=20))
    state_scale = features(3, 0, 9, label="culture")
    policies = PolicyCatalog()

    def build(self, parameters, policy, seed):
        return Cultures(seed, parameters["side"])


def test_a_page_draws_a_culture_grid_without_a_legend_of_every_culture():
    game = CultureGame()
    model = game.build({"side": 6}, None, 3)
    picture = view_of(game).picture(model)
    fill = picture.fill()
    assert fill.kind == "features" and len(fill.colours) > 12
    spec = grid_spec(picture)
    filled = next(layer for layer in spec["layer"] if layer.get("name") == "cells")
    assert filled["encoding"]["fill"]["legend"] is None
    direct = fill_of([a.state for a in model.agents], game.state_scale)
    assert direct.colours == fill.colours
