"""The colouring game's LLM policy against its stand-in over real HTTP: prompt, schema, record and replay."""

from __future__ import annotations

import json

import jsonschema
import pandas as pd
import pytest

from llm_mesa import PlayRequest, declared, get_game
from llm_mesa import play as playing
from llm_mesa.cli import main
from llm_mesa.llm import Endpoint, ResponseStore
from llm_mesa.loopback import LoopbackError, LoopbackServer, PromptNotUnderstood, PromptView
from llm_mesa.models.colouring.behaviours import BestResponseBehaviour, read_prompt
from llm_mesa.models.colouring.llm_policy import ColouringLLM, decode_answer
from llm_mesa.models.colouring.model import ColouringModel
from llm_mesa.models.colouring.prompt import ColouringPrompt
from llm_mesa.sweep import read_sweep

GAME = get_game("colouring")
TABLES = ("rounds", "agents", "edges")


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(seed=11) as running:
        yield running


def play(server, model: str, store: ResponseStore | None, seed: int = 2, **parameters):
    parameters = {"topology": "pa", "k": 3, "links": 2, "n": 20, "max_rounds": 15, **parameters}
    request = PlayRequest(parameters, "llm", seed, TABLES, Endpoint(server.base_url, model), store)
    return playing.play(GAME, request)


def test_the_prompt_puts_the_games_own_rules_first_and_the_state_last():
    model = ColouringModel("best-response", 4, n=12, k=3, topology="pa", show_degrees=True, show_conflicts=True,
                           max_rounds=7, payoff=2.5)
    views = [p.observe() for p in model.players]
    prompt = ColouringPrompt()
    rules = {prompt.messages(v)[0]["content"] for v in views}
    assert len(rules) == 1  # identical for every agent
    text = rules.pop()
    assert "11 other players" in text and "3 colours: red, blue, green" in text and "$2.50" in text
    assert "at most 7 rounds" in text and "how many neighbours each of them has" in text and "conflicts the whole" in text
    state = prompt.messages(views[3])[1]["content"]
    neighbours = ", ".join(f"{v}: {model.players[v].state} ({len(model.neighbours[v])} neighbours)"
                           for v in model.neighbours[3])
    assert f"Your neighbours' current colours: {neighbours}" in state
    assert f"Conflicts in the whole network: {model.conflicts}" in state and state.startswith("Round: 1 of 7")
    assert "asked" not in text
    plain = ColouringModel("best-response", 4, n=12, k=3, topology="pa").players[3].observe()
    assert "degree" not in prompt.rules_text(plain) and "Conflicts" not in prompt.state_text(plain)
    sitting = ColouringModel("best-response", 4, n=12, k=3, topology="pa", inertia=0.25).players[3].observe()
    assert "Each player is asked in a round with probability 75%; one not asked keeps its colour that round." in prompt.rules_text(sitting)


def test_the_stand_in_reads_the_prompt_as_the_game_wrote_it():
    model = ColouringModel("best-response", 4, n=12, k=4, topology="pa", show_degrees=True)
    view = model.players[2].observe()
    messages = ColouringPrompt().messages(view)
    seen = read_prompt(PromptView(messages[1]["content"], "\n".join(m["content"] for m in messages), True))
    assert seen == (view.colours, view.colour, list(view.neighbour_colours))
    with pytest.raises(PromptNotUnderstood):
        read_prompt(PromptView("hello", "hello", True))
    with pytest.raises(LoopbackError, match="probability"):
        BestResponseBehaviour({"inertia": "2"}, "colouring:best-response?inertia=2")


def test_answers_decode_to_the_games_colours_only():
    view = ColouringModel("best-response", 1, k=2).players[0].observe()
    assert decode_answer('```json\n{"color": "Blue", "reason": "x"}\n```', view).colour == "blue"
    assert decode_answer('{"colour": "green", "reason": "x"}', view) is None  # not a colour of this game
    assert decode_answer("blue", view) is None


def test_an_llm_game_records_and_replays_exactly_with_zero_calls(server, tmp_path):
    path = tmp_path / "calls.sqlite"
    before = server.stats()["requests"]
    live = play(server, "colouring:best-response?inertia=0.2", ResponseStore(path, "record"))
    calls = server.stats()["requests"] - before
    row = live.row
    assert row["calls"] == calls > 0 and row["failed_decisions"] == 0 and row["model"].startswith("colouring:")
    assert calls == 20 * row["rounds"]  # every agent asked every round (the game's inertia is 0)
    assert row["prompt_template_hash"] == ColouringPrompt().template_hash
    before = server.stats()["requests"]
    again = play(server, "colouring:best-response?inertia=0.2", ResponseStore(path, "replay"))
    assert server.stats()["requests"] == before  # zero calls
    assert again.row["replayed_calls"] == calls
    assert {k: v for k, v in again.row.items() if k != "replayed_calls"} == \
        {k: v for k, v in row.items() if k != "replayed_calls"}
    for name in TABLES:
        pd.testing.assert_frame_equal(again.tables[name], live.tables[name])
    for stored in ResponseStore(path).rows():  # every answer fits the schema the request sent
        answer = json.loads(stored["response"]["text"])
        jsonschema.validate(answer, stored["request"]["schema"])
        assert answer["colour"] in ("red", "blue", "green")


def test_the_stand_in_plays_as_best_response_where_best_response_has_no_tie(server):
    """Bipartite, k = 2, all the same, no inertia: the rule's 2-cycle, through the LLM policy."""
    parameters = {"topology": "leader-cycle", "k": 2, "n": 20, "initial": "same", "max_rounds": 6}
    llm = play(server, "colouring:best-response", None, **parameters)
    rule = playing.play(GAME, PlayRequest(parameters, "best-response", 2, TABLES))
    pd.testing.assert_frame_equal(llm.tables["agents"], rule.tables["agents"])
    assert not llm.row["solved"] and llm.row["changes"] == 20 * 6


def test_the_games_inertia_saves_the_calls_of_agents_that_sit_out(server):
    before = server.stats()["requests"]
    result = play(server, "colouring:random", None, inertia=0.5, max_rounds=10)
    calls = server.stats()["requests"] - before
    assert calls == result.row["calls"] and 0.3 * 200 < calls < 0.7 * 200


def test_an_unreadable_answer_keeps_the_colour_and_counts_as_failed(server):
    model = ColouringModel(ColouringLLM(Endpoint(server.base_url, "fixed?text=no idea")), 3, n=10, max_rounds=2)
    start = model.history[0]
    while model.running:
        model.step()
    assert model.history[-1] == start and model.failures == 10 * 2
    assert model.summary()["failed_decisions"] == 20


def test_the_cli_records_and_replays_an_llm_game(server, tmp_path, capsys):
    common = ["colouring", "--policy", "llm", "--base-url", server.base_url, "--model", "colouring:best-response?inertia=0.3",
              "--n", "16", "--topology", "cycle", "--chords", "5", "--max-rounds", "8", "--seed", "5", "--json"]
    assert main([*common, "--record", str(tmp_path / "r.sqlite")]) == 0
    first = json.loads(capsys.readouterr().out)
    before = server.stats()["requests"]
    assert main([*common, "--replay", str(tmp_path / "r.sqlite")]) == 0
    again = json.loads(capsys.readouterr().out)
    assert server.stats()["requests"] == before and again["replayed_calls"] == again["calls"] == first["calls"] > 0
    assert {k: v for k, v in again.items() if k != "replayed_calls"} == {k: v for k, v in first.items() if k != "replayed_calls"}


def test_an_llm_sweep_plays_against_the_stand_in_and_resumes_without_a_call(server, tmp_path, capsys):
    out = tmp_path / "llm"
    argv = ["sweep", "--game", "colouring", "--conditions", "cycle,pa-2-global", "--policies", "llm;best-response",
            "--model", "colouring:best-response?inertia=0.2", "--base-url", server.base_url, "--seeds", "2",
            "--set", "max_rounds=6", "--set", "n=12", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    games = read_sweep(out)
    llm = games[games.policy.str.startswith("llm")]
    assert len(games) == 8 and len(llm) == 4 and int(llm["calls"].sum()) == 12 * int(llm["rounds"].sum())
    assert (out / "calls.sqlite").exists()
    before = server.stats()["answered"]
    assert main(argv) == 0 and server.stats()["answered"] == before  # all present: nothing played, no call answered
    capsys.readouterr()


def test_the_llm_estimate_counts_one_call_per_agent_and_round():
    estimate = declared.estimate(GAME, {"n": 38, "max_rounds": 100, "topology": "pa", "k": 3}, Endpoint("http://127.0.0.1:9/v1", "m"))
    assert estimate.calls == 3800 and estimate.rounds == 100 and estimate.may_stop_early
    shown = declared.estimate(GAME, {"n": 38, "max_rounds": 100, "show_degrees": True, "show_conflicts": True},
                                    Endpoint("http://127.0.0.1:9/v1", "m", max_tokens=50))
    plain = declared.estimate(GAME, {"n": 38, "max_rounds": 100}, Endpoint("http://127.0.0.1:9/v1", "m"))
    assert shown.completion_tokens_per_call == 50 and shown.prompt_tokens_per_call > plain.prompt_tokens_per_call
