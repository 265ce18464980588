"""The pages of Mesa's example games, through the generic view: controls, Step, charts, replays, sweeps.

The three games bring no view of their own: their agents sit on the cells of the example's
Mesa grid with a ``state`` (Schelling's type, Boltzmann's wealth, pd_grid's move) for a
generic page to draw, and their rounds are the example's DataCollector.
"""

from __future__ import annotations

import pandas as pd
import pytest

from llm_mesa import declared, play
from llm_mesa.cli import main
from llm_mesa.registry import get_game
from llm_mesa.sweep import run_sweep
from llm_mesa.views import GameView, view_of
from llm_mesa.views.controls import ControlError, initial_values
from llm_mesa.views.sweeps import SweepGames

GAMES = ("schelling", "boltzmann_wealth_model", "pd_grid", "virus_on_network", "epstein_civil_violence", "wolf_sheep",
         "sugarscape_g1mt")
SMALL = {"schelling": {"width": 10, "height": 10}, "boltzmann_wealth_model": {"n": 40},
         "pd_grid": {"width": 10, "height": 10}, "virus_on_network": {"num_nodes": 20},
         "epstein_civil_violence": {"width": 12, "height": 12},
         "wolf_sheep": {"width": 10, "height": 10, "initial_sheep": 30, "initial_wolves": 10},
         "sugarscape_g1mt": {"initial_population": 40}}
#: what a page draws each game's agents by (what the game declares of Mesa's own agents)
STATE_OF = {"schelling": lambda a: a.type, "boltzmann_wealth_model": lambda a: a.wealth, "pd_grid": lambda a: a.move,
            "virus_on_network": lambda a: a.state.name, "epstein_civil_violence": lambda a: getattr(a, "state", None)
            and a.state.name or "COP", "wolf_sheep": lambda a: type(a).__name__ if type(a).__name__ != "GrassPatch"
            else ("grass" if a.fully_grown else "soil"), "sugarscape_g1mt": lambda a: a.sugar}


@pytest.mark.parametrize("name", GAMES)
def test_the_controls_are_the_parameters_over_their_declared_ranges_with_the_mesa_rule_and_the_stand_in(name):
    game = get_game(name)
    view = view_of(game)
    controls = view.controls()
    assert type(view) is GameView
    assert list(controls) == [*game.parameters.names, "policy", "llm_endpoint", "llm_model", "seed"]
    assert controls["policy"]["values"] == ["mesa", "random", "llm"] and controls["policy"]["value"] == "mesa"
    assert controls["llm_endpoint"]["value"] == "loopback" and controls["llm_model"]["value"] == f"{name}:mesa"
    for parameter in game.parameters:
        spec = controls[parameter.name]
        if parameter.control_range is not None:
            assert (spec["min"], spec["max"]) == parameter.control_range and spec["min"] <= spec["value"] <= spec["max"]
        if spec["type"].startswith("Slider"):  # a default off the slider's steps would snap ("Reset to apply")
            steps = (spec["value"] - spec["min"]) / spec["step"]
            assert steps == pytest.approx(round(steps), abs=1e-9), parameter.name
    values, errors = view.query_values("max_rounds=0&policy=mesa")
    assert values == {"policy": "mesa"} and list(errors) == ["max_rounds"]


@pytest.mark.parametrize("name", GAMES)
def test_step_plays_the_example_on_its_grid_and_the_charts_draw_its_datacollector(name):
    view = view_of(get_game(name))
    model = view.build_from({**initial_values(view.controls()), **SMALL[name], "seed": 3})
    assert view.snapshot(model).label.startswith("Round 0 of ")  # every game on the adapter has a round limit
    model.step()
    snapshot = view.snapshot(model, selected=2)
    assert snapshot.label.startswith("Round 1 of ") and snapshot.round_number == 1
    agents = view.agents(model)
    assert snapshot.agents == len(agents) == len(model.agents)
    cells = set(model.grid.all_cells)
    assert all(agent.cell in cells and view.state_of(agent) == STATE_OF[name](agent) for agent in agents)
    assert snapshot.agent["state"] == str(view.state_of(agents[2])) and snapshot.agent["policy"] == "mesa"
    collected = model.datacollector.get_model_vars_dataframe()
    assert list(snapshot.rounds.columns) == ["round", *collected.columns] and len(snapshot.rounds) == 2
    from llm_mesa.views.charts import series_title

    game = get_game(name)
    charts = dict(view.charts(snapshot.rounds))
    drawn = {row["series"] for chart in charts.values() for row in chart["data"]["values"] if "series" in row}
    unchanged = {row["line"].rsplit(":", 1)[0] for row in charts.get("llm-mesa-chart-unchanged", {"data": {"values": []}})
                 ["data"]["values"]}  # a column that has not moved is listed, not drawn flat
    assert {series_title(c, declared.scale_of(game, c, collected[c])) for c in collected.columns} <= drawn | unchanged
    assert not drawn & unchanged


@pytest.mark.parametrize("name", [g for g in GAMES if g != "virus_on_network"])  # its rule draws: not one game
def test_the_page_plays_llm_agents_on_the_built_in_stand_in_as_the_mesa_rule(name):
    view = view_of(get_game(name))
    values = {**initial_values(view.controls()), **SMALL[name], "seed": 4}
    rule, llm = view.build_from(values), view.build_from({**values, "policy": "llm"})
    for model in (rule, llm):
        model.step()
        model.step()
    pd.testing.assert_frame_equal(view.rounds(llm), view.rounds(rule))
    assert view.banners(llm) == [] and view.snapshot(llm, selected=1).agent["policy"].startswith("llm")


def test_a_bad_control_is_named():
    view = view_of(get_game("pd_grid"))
    with pytest.raises(ControlError) as caught:
        view.build_from({**initial_values(view.controls()), "activation_order": "Backwards"})
    assert caught.value.control == "activation_order"


@pytest.mark.parametrize("name", GAMES)
def test_a_run_directory_replays_as_it_was_played(tmp_path, name):
    """``viz --replay DIR``: a rule game is played again from its seed and matches its record."""
    out = tmp_path / "run"
    small = [item for k, v in SMALL[name].items() for item in (f"--{k.replace('_', '-')}", str(v))]
    assert main([name, "--policy", "mesa", "--seed", "5", "--max-rounds", "4", *small, "--out", str(out)]) == 0
    view = view_of(get_game(name))
    recording = view.recording(out)
    played = view.rounds(_played(name, SMALL[name], 5, 4))
    assert recording.note == "" and (recording.first_round, recording.last_round) == (0, len(played) - 1)
    pd.testing.assert_frame_equal(recording.rounds, played, check_dtype=False)
    kept = pd.read_parquet(out / "rounds.parquet")
    pd.testing.assert_frame_equal(recording.rounds.drop(columns="round").reset_index(drop=True),
                                  kept.drop(columns="round").reset_index(drop=True), check_dtype=False)  # NaN equals NaN
    assert recording.snapshot(1).label == f"Round 1 of {recording.last_round}"


def _played(name: str, parameters: dict, seed: int, steps: int):
    model = play.make_model(get_game(name), {**parameters, "max_rounds": steps}, "mesa", seed)
    while model.running:
        model.step()
    return model


@pytest.mark.parametrize("name", GAMES)
def test_a_sweep_browses_and_replays_its_games(tmp_path, name):
    """``viz --sweep DIR``: the table per condition and a game replayed from its seed."""
    out = tmp_path / "sweep"
    axis = {"schelling": "homophily=0.25,0.5", "boltzmann_wealth_model": "n=20,40", "pd_grid": "payoff_dc=1.2,1.8",
            "virus_on_network": "virus_spread_chance=0.2,0.6", "epstein_civil_violence": "legitimacy=0.5,0.8",
            "wolf_sheep": "sheep_reproduce=0.02,0.08", "sugarscape_g1mt": "initial_population=30,40"}[name]
    fixed = {k: v for k, v in SMALL[name].items() if k != axis.split("=")[0]}
    run_sweep(None, "mesa", 2, out, game=name, axes=[axis], tables=["rounds"], model_options={**fixed, "max_rounds": 3})
    sweep = SweepGames.open(out)
    view = view_of(get_game(name))
    assert sweep.game_name == name and len(sweep.conditions) == 2
    assert list(view.sweep_table(sweep.games)["games"]) == [2, 2]
    condition = sweep.conditions[1]
    seed = int(sweep.games[sweep.games["condition"] == condition].iloc[0]["seed"])
    recording = view.sweep_game(sweep, condition, "mesa", seed)
    assert recording.note == "" and recording.last_round == 3


@pytest.mark.parametrize("name", GAMES)
def test_viz_takes_each_game_by_name(name):
    import argparse

    from llm_mesa.visualization import cli as viz_cli

    parser = argparse.ArgumentParser()
    viz_cli.configure(parser)
    assert viz_cli.chosen_game(parser.parse_args(["--game", name]))[0] == name


@pytest.mark.parametrize("name", GAMES)
def test_mesas_solaraviz_components_find_each_game_from_its_model(name):
    from llm_mesa.visualization import components

    game = get_game(name)
    model = play.make_model(game, {**SMALL[name], "max_rounds": 2}, "mesa", 1)
    assert components.view_for(model).game.name == name and len(components.components(name)) == 3
    params = components.model_params(name, policy="mesa", seed=2)
    assert list(params)[:len(game.parameters.names)] == list(game.parameters.names) and params["policy"] == "mesa"


@pytest.mark.parametrize("name", GAMES)
def test_the_agents_table_keeps_each_agents_state_first_and_its_cell_every_round(name):
    """What a replay draws a grid from: one row per agent and round, its ``state`` the first field, its x and y."""
    game = get_game(name)
    view = view_of(game)
    model = play.make_model(game, {**SMALL[name], "max_rounds": 3}, "mesa", 2)
    while model.running:
        model.step()
    table = declared.table(game, model, "agents")
    on_grid = name != "virus_on_network"  # a network's agents are named by their node, and have no x and y
    assert list(table.columns[:2]) == ["round", "agent"] and ({"x", "y"} <= set(table.columns)) == on_grid
    last = table[table["round"] == view.round_number(model)].set_index("agent")
    if not on_grid:
        assert {i: row[table.columns[2]] for i, row in last.iterrows()} == {a.cell.coordinate: view.state_of(a)
                                                                             for a in model.agents}
        return
    now = {a.unique_id: (view.state_of(a), tuple(a.cell.coordinate)) for a in model.agents}
    assert {i: (row[table.columns[2]], (row["x"], row["y"])) for i, row in last.iterrows()} == now
    assert sorted(table["round"].unique()) == list(range(view.round_number(model) + 1))


@pytest.mark.parametrize("name", GAMES)
def test_mesas_solaraviz_reset_builds_each_example_game_again(name):
    """SolaraViz's Reset splits the page's values between the model and a fresh scenario of the model's class
    (the example's own): the game is built again from both, the same as from its parameters."""
    from mesa.visualization.solara_viz import _build_model_init_kwargs

    game = get_game(name)
    model = game.build(game.parameters.validate({**SMALL[name], "max_rounds": 3}, complete=True), "mesa", 4)
    values = {**game.parameters.validate({**SMALL[name], "max_rounds": 3}, complete=True), "policy": "mesa", "seed": 4}
    kwargs = _build_model_init_kwargs(model, values, add_scenario_when_empty=True, require_model_accepts_scenario=True)
    assert "scenario" in kwargs or game.arguments.scenario is None  # a model of keywords only has none to split
    again = type(model)(**kwargs)
    for built in (model, again):
        while built.running:
            built.step()
    pd.testing.assert_frame_equal(declared.table(game, again, "rounds"), declared.table(game, model, "rounds"))
