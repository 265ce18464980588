"""The guide's first game: Mesa's Schelling with LLM agents in at most 40 lines, and Mesa's Game of Life (an example
the project's games leave out) in a few more, both checked against Mesa's own runs from outside.

The guide's block is ``examples/schelling_llm.py`` line for line; each example plays Mesa's own run under ``mesa``,
and LLM agents answered by the stand-in as the rule play that very game.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from llm_mesa import play
from llm_mesa.game_types import PlayRequest
from llm_mesa.llm import Endpoint
from llm_mesa.loopback.server import LoopbackServer

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "write-a-game.md"


@pytest.fixture
def load():
    """An example's module, its game registered in this process (as its own script does) until the test ends."""
    from llm_mesa.registry import register_game, unregister_game

    games = []

    def loaded(name: str):
        spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        games.append(register_game(module.GAME))
        return module

    yield loaded
    for game in games:
        unregister_game(game.name)


def test_the_guides_schelling_is_the_example_file_and_at_most_40_lines():
    block = re.search(r"<!-- file: schelling_llm.py -->\n```python\n(.*?)```", GUIDE.read_text(), re.DOTALL).group(1)
    assert block == (ROOT / "examples" / "schelling_llm.py").read_text()
    assert len(block.splitlines()) <= 40


def test_the_guides_schelling_plays_mesas_own_run_and_its_llm_agents_play_the_rule(load):
    from mesa.examples.basic.schelling.model import Schelling, SchellingScenario

    game = load("schelling_llm").GAME
    rule = play.play(game, PlayRequest({"width": 12, "height": 12, "max_rounds": 4}, "mesa", 9, ("rounds",)))
    mesa = Schelling(SchellingScenario(rng=9, width=12, height=12))
    for _ in range(4):
        mesa.step()
    theirs = mesa.datacollector.get_model_vars_dataframe().reset_index(drop=True)
    pd.testing.assert_frame_equal(rule.tables["rounds"].drop(columns="round"), theirs, check_dtype=False)
    with LoopbackServer(seed=1) as server:
        llm = play.play(game, PlayRequest({"width": 12, "height": 12, "max_rounds": 4}, "llm", 9, ("rounds",),
                                          Endpoint(server.base_url, "my_schelling:mesa")))
    assert llm.row["calls"] > 0 and llm.tables["rounds"].equals(rule.tables["rounds"])


def test_the_game_of_life_follows_conways_rule_as_mesas_own_model_does(load):
    from mesa.examples.basic.conways_game_of_life.model import ConwaysGameOfLife

    game = load("conways_game_of_life_llm").GAME
    model = play.make_model(game, {"width": 12, "height": 12, "max_rounds": 5}, "mesa", 4)
    mesa = ConwaysGameOfLife(width=12, height=12, rng=4)
    for _ in range(5):
        model.step()
        mesa.step()
        assert [a.state for a in model.agents] == [a.state for a in mesa.agents]
    with LoopbackServer(seed=1) as server:
        llm = play.play(game, PlayRequest({"width": 8, "height": 8, "max_rounds": 3}, "llm", 4, ("agents",),
                                          Endpoint(server.base_url, "game_of_life:mesa")))
    rule = play.play(game, PlayRequest({"width": 8, "height": 8, "max_rounds": 3}, "mesa", 4, ("agents",)))
    assert llm.row["mesa_agreement"] == 1.0 and llm.row["alive"] == rule.row["alive"]
    assert llm.tables["agents"]["state"].tolist() == rule.tables["agents"]["state"].tolist()


@pytest.mark.parametrize("script, game", [("schelling_llm", "my_schelling"), ("conways_game_of_life_llm", "game_of_life")])
def test_each_example_runs_llm_mesa_commands_for_its_game(script, game, tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "examples" / f"{script}.py"), "sweep", "--game", game,
                           "--policies", "mesa;random", "--seeds", "2", "--set", "max_rounds=3", "--out",
                           str(tmp_path / "sweep"), "--quiet"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "sweep" / "manifest.json").exists()
