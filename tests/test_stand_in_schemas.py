"""The stand-in obeys the request: every behaviour of every installed game answers within the schema it was sent.

A server that decodes under a response_format schema never answers outside it; the loopback stand-in
must not either, or a game counts as valid what no real server would send. The test knows no game:
it plays every installed game (the tiny outside game too) under each of the game's named conditions,
with each behaviour the game registers, on its own seed, records every call and checks each answer
against the schema of its own request.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from llm_mesa import play
from llm_mesa.game_types import PlayRequest
from llm_mesa.llm.endpoint import Endpoint
from llm_mesa.llm.store import ResponseStore
from llm_mesa.loopback import LoopbackServer, behaviours_of
from llm_mesa.registry import game_names, get_game


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(seed=3) as s:
        yield s


def small(game, parameters: dict) -> dict:
    """The condition, with few agents, rounds and grid cells where the game has such parameters."""
    values = dict(parameters)
    for name, wanted in (("n", 12), ("max_rounds", 3), ("width", 8), ("height", 8)):
        if name in game.parameters:
            low = game.parameters[name].low or 0
            values[name] = max(int(low), wanted)
    return game.parameters.validate(values, complete=True)


def games_with_behaviours() -> list[tuple[str, str]]:
    pairs = []
    for name in game_names():
        declared = get_game(name).llm.behaviours  # a module that registers them, or the behaviours as values
        named = list(declared) if isinstance(declared, dict) else (behaviours_of(declared) if declared else {})
        pairs += [(name, behaviour) for behaviour in named]
    return pairs


def test_every_installed_game_with_behaviours_is_covered():
    covered = {game for game, _ in games_with_behaviours()}
    assert {"consensus", "tinyvote"} <= covered
    assert {b for g, b in games_with_behaviours() if g == "consensus"} >= {"rule:majority-inertia", "random"}


@pytest.mark.parametrize("game_name, behaviour", games_with_behaviours())
def test_each_answer_validates_against_its_own_request_schema(tmp_path, server, game_name, behaviour):
    game = get_game(game_name)
    conditions = dict(game.design.conditions) or {"default": {}}
    store = ResponseStore(tmp_path / "calls.sqlite", "record")
    endpoint = Endpoint(server.base_url, behaviour, timeout=10.0, max_attempts=1, **game.llm.endpoint_defaults)
    for seed, parameters in enumerate(conditions.values()):
        play.play(game, PlayRequest(parameters=small(game, parameters), policy="llm", seed=seed, endpoint=endpoint,
                                    store=store))
    rows = store.rows()
    store.close()
    checked = 0
    for row in rows:
        request, response = row["request"], row["response"]
        assert response.get("error") is None, (behaviour, response.get("error"))  # no stand-in bug answered 500
        if request.get("schema") is None:
            continue
        answer = json.loads(response["text"])
        jsonschema.validate(answer, request["schema"])  # raises, naming what does not fit
        checked += 1
    assert rows and (checked or all(r["request"].get("schema") is None for r in rows))


@pytest.mark.parametrize("extra", [{"direct_messages": True, "message_replaces_move": False},
                                   {"communication": "global", "message_replaces_move": False},
                                   {"communication": "local", "direct_messages": True}])
@pytest.mark.parametrize("max_tokens", [None, 48])
def test_consensus_answers_fit_every_answer_form_and_text_bound(tmp_path, server, extra, max_tokens):
    """The forms the study's conditions do not reach (a message beside the move) and a tight text bound."""
    game = get_game("consensus")
    store = ResponseStore(tmp_path / "calls.sqlite", "record")
    endpoint = Endpoint(server.base_url, "rule:majority-inertia?talk=0.6&dm=0.5", timeout=10.0, max_tokens=max_tokens)
    for seed in range(4):
        parameters = small(game, {"topology": "ws", "communication": "local", **extra})
        play.play(game, PlayRequest(parameters=parameters, policy="llm", seed=seed, endpoint=endpoint, store=store))
    rows = store.rows()
    store.close()
    whole = [r for r in rows if r["response"]["finish_reason"] != "length"]  # not cut by the token limit
    assert len(whole) >= 0.5 * len(rows)  # a cut answer is the token limit's, counted by the game as truncated
    answers = [json.loads(r["response"]["text"]) for r in whole]
    for row, answer in zip(whole, answers):
        jsonschema.validate(answer, row["request"]["schema"])
    assert any("message" in a for a in answers) and any("message" not in a for a in answers)


def test_an_answer_that_cannot_fit_is_a_stand_in_bug_not_an_answer(server):
    import openai

    from llm_mesa.loopback.protocol import SchemaMismatch, shape_to_schema

    schema = {"type": "object", "properties": {"state": {"type": "string", "enum": ["a", "b"]}},
              "required": ["state"], "additionalProperties": False}
    with pytest.raises(SchemaMismatch, match="stand-in bug"):
        shape_to_schema({"colour": "red"}, schema)
    two_forms = {"anyOf": [{"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"],
                            "additionalProperties": False},
                           {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"],
                            "additionalProperties": False}]}
    assert shape_to_schema({"message": "hi", "message_to": None}, two_forms) == {"message": "hi"}
    client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    with pytest.raises(openai.InternalServerError, match="stand-in bug"):
        client.chat.completions.create(model="random", messages=[{"role": "user", "content": "hi"}],
                                       response_format={"type": "json_schema",
                                                        "json_schema": {"name": "s", "schema": schema}})
