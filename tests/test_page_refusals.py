"""A combination of values a game refuses never becomes a traceback on a page: it is said beside its control.

In the explorer a refused Reset keeps the running game and names the control at fault in
the page's words (its label, never a command-line option such as ``--n``), once. In Mesa's
own SolaraViz (whose Reset builds ``type(model)(**values)``) a ``checked`` model class builds
the game's default for the refused control instead, keeps the refusal, and the controls'
labels and the network component say it. Sliders run within each parameter's declared bounds.
Games the test registers itself (``space_games``) and the in-tree ones.
"""

from __future__ import annotations

import inspect

import pytest
from space_games import SEGREGATE, Segregation, registered

from llm_mesa.registry import game_names, get_game
from llm_mesa.views import view_of
from llm_mesa.views.controls import GENERAL, ControlError, blamed, initial_values, page_words
from llm_mesa.visualization.components import checked, model_params, refusal_words


@pytest.fixture(scope="module", autouse=True)
def games():
    with registered() as games:
        yield games


def test_a_refused_build_names_its_control_in_the_pages_words():
    view = view_of(get_game("colouring"))
    values = {**initial_values(view.controls()), "n": 10, "topology": "cycle", "chords": 60}
    with pytest.raises(ControlError) as refused:
        view.build_from(values)
    assert refused.value.control == "chords"  # the first control the message names, not N
    assert "--" not in str(refused.value) and "“Chords”" in str(refused.value) and "“N (agents)”" in str(refused.value)
    view = view_of(get_game("consensus"))
    with pytest.raises(ControlError) as refused:  # a graph the game cannot build: N, never "no control"
        view.build_from({**initial_values(view.controls()), "n": 8, "topology": "ws", "ring_degree": 12})
    assert refused.value.control == "n" and "use a larger “N (agents)”" in str(refused.value)


def test_a_message_is_blamed_on_the_first_option_it_names_else_a_word_else_no_control():
    specs = {"n": {"label": "N (agents)"}, "ring_degree": {"label": "WS ring degree"}}
    assert blamed("use --ring-degree 4 or a larger --n", specs) == "ring_degree"
    assert blamed("ring_degree must be even", specs) == "ring_degree"
    assert blamed("the server is away", specs) == GENERAL
    assert page_words("use --n 8, not --nodes", specs) == "use “N (agents)” 8, not --nodes"  # whole options only


def test_a_checked_model_builds_the_default_for_the_refused_control_and_plays_on():
    made = checked(Segregation, "segregate")
    assert made.__name__ == "Segregation" and made.__module__ == Segregation.__module__
    assert inspect.signature(made.__init__) == inspect.signature(Segregation.__init__)  # what Mesa checks
    model = made(policy="unhappy-moves", seed=3, width=1)  # below the grid's minimum of 3 columns
    control, message, played, asked = model.refused
    default = SEGREGATE.parameters["width"].default
    assert (control, played, asked) == ("width", default, 1) and "width" in message
    assert model.grid.dimensions[0] == default
    model.step()
    model.step()
    assert model.round == 2  # a game like any other: its own step runs (nothing of the refused build is left)
    words = refusal_words(model, SEGREGATE.parameters.controls())
    assert words[2] == f"width ⚠ 1 refused: plays {default}" and words[1].endswith(f"plays width {default}")
    params = model_params(SEGREGATE, model=model, policy="unhappy-moves")
    assert params["width"]["label"] == words[2] and params["height"]["label"] == "height"
    assert made(policy="stay", seed=3, width=5).refused is None
    assert checked(Segregation, "segregate") is made  # one class per model class and game


@pytest.mark.parametrize("name", sorted(game_names()))
def test_every_slider_runs_within_its_parameters_declared_bounds(name):
    game = get_game(name)
    sliders = {k: s for k, s in model_params(game).items() if isinstance(s, dict) and s.get("type", "").startswith("Slider")}
    for key, spec in sliders.items():
        parameter = game.parameters[key]
        assert parameter.low is None or spec["min"] >= parameter.low, (key, spec["min"], parameter.low)
        assert parameter.high is None or spec["max"] <= parameter.high, (key, spec["max"], parameter.high)
    view = view_of(game)
    for key, spec in view.controls().items():
        if key in game.parameters and spec.get("type", "").startswith("Slider"):
            parameter = game.parameters[key]
            assert parameter.low is None or spec["min"] >= parameter.low, (key, spec["min"], parameter.low)
            assert parameter.high is None or spec["max"] <= parameter.high, (key, spec["max"], parameter.high)
