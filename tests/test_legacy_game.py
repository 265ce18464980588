"""A game written to the older contract (docs/write-a-game.md before hooks were values) keeps working unchanged.

``tests/data/legacy_game/tinyvote_before.py`` is that guide's game word for word (but for its name): it registers its
policies with decorators, overrides ``Game.estimate`` and subclasses ``Game`` as it was. Each path a user takes plays
it; where a hook moved, one ``DeprecationWarning`` names the hook's new place.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import warnings
from pathlib import Path

import pytest

from llm_mesa import declared, play
from llm_mesa.cli import main
from llm_mesa.game_types import PlayRequest
from llm_mesa.llm import Endpoint
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.registry import register_game, unregister_game

SOURCE = Path(__file__).resolve().parent / "data" / "legacy_game" / "tinyvote_before.py"


@pytest.fixture(scope="module")
def legacy():
    spec = importlib.util.spec_from_file_location("tinyvote_before", SOURCE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["tinyvote_before"] = module  # as an installed module is (its declarations name it by its module)
    spec.loader.exec_module(module)
    game = register_game(module.GAME)
    yield game
    unregister_game(game.name)
    sys.modules.pop("tinyvote_before", None)


def test_it_plays_from_the_command_line_as_it_did(legacy, capsys):
    assert main(["tinyvote_before", "--n", "12", "--seed", "3", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["game"] == "tinyvote_before" and row["rounds"] >= 1 and 0 <= row["share_a"] <= 1


def test_its_overridden_estimate_is_used_with_a_warning_that_names_its_new_place(legacy):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimate = declared.estimate(legacy, {"n": 12, "max_rounds": 5}, Endpoint("http://127.0.0.1:9/v1", "m"))
    assert estimate.calls == 60 and estimate.prompt_tokens_per_call == 60
    moved = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert any("estimate" in m and "LlmSupport(estimate=...)" in m for m in moved), moved


def test_the_older_service_calls_on_the_game_still_answer(legacy):
    with pytest.warns(DeprecationWarning, match="llm_mesa.play.play"):
        result = legacy.play(PlayRequest({"n": 8}, "follow", 2, ("rounds",)))
    assert result.row == play.play(legacy, PlayRequest({"n": 8}, "follow", 2, ("rounds",))).row
    assert len(result.tables["rounds"]) == result.row["rounds"] + 1


def test_its_llm_agents_on_its_stand_in_behaviour_play_its_follow_rule(legacy, tmp_path):
    with LoopbackServer(seed=1) as server:
        llm = play.play(legacy, PlayRequest({"n": 12, "max_rounds": 6}, "llm", 4, ("rounds",),
                                            Endpoint(server.base_url, "tinyvote_before:follow")))
    rule = play.play(legacy, PlayRequest({"n": 12, "max_rounds": 6}, "follow", 4, ("rounds",)))
    assert llm.row["calls"] > 0 and llm.row["failed_decisions"] == 0
    assert llm.tables["rounds"].equals(rule.tables["rounds"])


def test_a_sweep_of_it_runs(legacy, tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main(["sweep", "--game", "tinyvote_before", "--set", "n=8,12", "--policies", "follow;coin", "--seeds", "3",
                 "--out", str(out), "--quiet"]) == 0
    assert (out / "manifest.json").exists()
