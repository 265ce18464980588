"""Seven of Mesa's own example models as games through one adapter (``llm_mesa.MesaGame``), checked from outside.

On whichever Mesa is installed (CI runs this file on 3.5.1 and on 4.0.0a0), each against that Mesa's own example run
directly: ``--policy mesa --seed S`` is the example's run with ``rng=S`` (virus_on_network's graph comes from Python's
global ``random``: Mesa's run is ``random.seed(S)`` first); LLM agents answered by the stand-in's ``GAME:mesa`` play
the rule's game, step for step, where the rule draws nothing (virus_on_network's rule is a coin: its LLM game makes
calls); nothing is swapped or subclassed, so the examples count their agents by their own classes.
"""

from __future__ import annotations

import inspect
import random
import threading
from pathlib import Path

import pandas as pd
import pytest

import llm_mesa
from llm_mesa import play
from llm_mesa.game_types import PlayRequest
from llm_mesa.llm import Endpoint, ResponseStore
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.registry import get_game

MODELS = Path(__file__).resolve().parents[1] / "models"
#: each game, small parameters for a quick game, and the steps compared
SMALL = {
    "schelling": ({"width": 10, "height": 10}, 4),
    "boltzmann_wealth_model": ({"n": 30, "width": 5, "height": 5}, 4),
    "pd_grid": ({"width": 6, "height": 6}, 3),
    "virus_on_network": ({"num_nodes": 20, "initial_outbreak_size": 3}, 6),
    "epstein_civil_violence": ({"width": 12, "height": 12}, 4),
    "wolf_sheep": ({"width": 10, "height": 10, "initial_sheep": 30, "initial_wolves": 10}, 5),
    "sugarscape_g1mt": ({"initial_population": 40}, 3),
}
#: the games whose rule draws nothing: LLM agents answered by the rule play the rule's very game
CERTAIN = [name for name in SMALL if name != "virus_on_network"]


def mesa_run(game, parameters: dict, seed: int, steps: int) -> pd.DataFrame:
    """The installed example run directly, as Mesa's own notebooks run it: its DataCollector's series."""
    build = game.arguments
    given = {**{k: v for k, v in parameters.items() if k in build.keywords + build.fields}, **build.fixed}
    if build.arguments is not None:
        given = {**dict(build.arguments({**game.parameters.defaults(), **parameters})), **build.fixed}
        given = {k: v for k, v in given.items() if k in build.keywords + build.fields}
    if game.prepare is not None:
        random.seed(seed)
    keywords = {k: v for k, v in given.items() if k in build.keywords}
    if build.scenario is None:
        model = build.model_class(rng=seed, **keywords)
    else:
        fields = {k: v for k, v in given.items() if k in build.fields}
        model = build.model_class(scenario=build.scenario(rng=seed, **fields), **keywords)
    for _ in range(steps):
        model.step()
    return model.datacollector.get_model_vars_dataframe().reset_index(drop=True)


def game_rounds(name: str, policy, seed: int, steps: int, store=None) -> tuple[pd.DataFrame, dict]:
    game = get_game(name)
    parameters, _ = SMALL[name]
    request = PlayRequest({**parameters, "max_rounds": steps}, "mesa" if policy is None else "llm", seed, ("rounds",),
                          policy, store)
    result = play.play(game, request)
    return result.tables["rounds"].drop(columns="round"), result.row


@pytest.mark.parametrize("name", list(SMALL))
def test_the_mesa_policy_plays_mesas_own_run_seed_for_seed(name):
    game = get_game(name)
    parameters, steps = SMALL[name]
    for seed in (1, 7):
        mine, row = game_rounds(name, None, seed, steps)
        theirs = mesa_run(game, parameters, seed, steps)
        # every row of Mesa's own DataCollector, in order (a model that collects only after each step has no start
        # row of its own: the game's round 0 is read by its reporters as it begins)
        pd.testing.assert_frame_equal(mine.iloc[len(mine) - len(theirs):].reset_index(drop=True), theirs,
                                      check_dtype=False)
        assert len(mine) == steps + 1
        assert row["rounds"] == steps and row.get("mesa_agreement", 1.0) == 1.0


@pytest.fixture(scope="module")
def stand_in():
    with LoopbackServer(seed=1) as server:
        yield server


@pytest.mark.parametrize("name", CERTAIN)
def test_llm_agents_answered_as_the_rule_play_the_rules_game(name, stand_in, tmp_path):
    _, steps = SMALL[name]
    endpoint = Endpoint(base_url=stand_in.base_url, model=f"{name}:mesa", max_tokens=16)
    store = ResponseStore(tmp_path / "calls.sqlite")
    try:
        llm, row = game_rounds(name, endpoint, 5, steps, store)
    finally:
        store.close()
    rule, _ = game_rounds(name, None, 5, steps)
    pd.testing.assert_frame_equal(llm, rule, check_dtype=False)
    assert row["calls"] > 0 and row["failed_decisions"] == 0 and row["decisions"] > 0 and row["mesa_agreement"] == 1.0


def test_virus_on_network_llm_game_makes_calls_and_counts_each_decision(stand_in, tmp_path):
    endpoint = Endpoint(base_url=stand_in.base_url, model="virus_on_network:mesa", max_tokens=16)
    store = ResponseStore(tmp_path / "calls.sqlite")
    try:
        _, row = game_rounds("virus_on_network", endpoint, 3, 6, store)
    finally:
        store.close()
    assert row["calls"] > 0 and row["decisions"] >= row["calls"] - row.get("replayed_calls", 0) > 0
    assert row["failed_decisions"] == 0 and not row["invalid"]


@pytest.mark.parametrize("name", list(SMALL))
def test_each_examples_game_is_at_most_100_lines_of_its_own(name):
    files = sorted((MODELS / name).glob("*.py")) if (MODELS / name).is_dir() else [MODELS / f"{name}.py"]
    lines = sum(len(path.read_text().splitlines()) for path in files)
    assert files and lines <= 100, f"{name}: {lines} lines"


def test_the_game_contract_declares_at_most_15_public_members():
    public = [name for name in dir(llm_mesa.Game) if not name.startswith("_")]
    assert len(public) <= 15, public


def test_no_class_is_swapped_and_the_example_counts_its_animals_by_their_own_class(stand_in, tmp_path):
    from mesa.examples.advanced.wolf_sheep.agents import Sheep, Wolf

    game = get_game("wolf_sheep")
    model = play.make_model(game, {**SMALL["wolf_sheep"][0], "max_rounds": 3}, "mesa", 2)
    kinds = {type(agent) for agent in model.agents}
    assert Sheep in kinds and Wolf in kinds and all(k.__module__.startswith("mesa.examples") for k in kinds)
    model.step()
    assert len(model.agents_by_type[Sheep]) == sum(type(a) is Sheep for a in model.agents) > 0


def test_two_games_in_flight_in_one_process_never_see_each_others_hooks():
    """Games stepped together on two threads, each with its own policy, play what each plays alone."""
    alone = {seed: game_rounds("pd_grid", None, seed, 3)[0] for seed in (1, 2)}
    together: dict[int, pd.DataFrame] = {}

    def run(seed: int) -> None:
        together[seed] = game_rounds("pd_grid", None, seed, 3)[0]

    threads = [threading.Thread(target=run, args=(seed,)) for seed in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for seed in (1, 2):
        pd.testing.assert_frame_equal(together[seed], alone[seed])


def test_parameters_come_from_the_models_own_signature_or_scenario():
    virus = get_game("virus_on_network")
    from mesa.examples.basic.virus_on_network.model import VirusOnNetwork

    keywords = [n for n, p in inspect.signature(VirusOnNetwork.__init__).parameters.items() if n not in ("self", "rng")]
    assert [p.name for p in virus.parameters][:len(keywords)] == keywords
    schelling = get_game("schelling")
    assert {"density", "minority_pc", "homophily", "radius"} <= set(schelling.parameters.names)
    assert schelling.parameters["density"].low == 0.05  # declared where the example gives none: 0 agents is no game
