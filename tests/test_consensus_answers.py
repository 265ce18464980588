"""The consensus answer: a move or, where a message replaces the move, a message.

Why: the study's agent answers a colour and a reason, or instead sends a message, and
rewrites its diary. The answer schema (what a server decodes with) and the decoder (what
the game reads) must agree on that: a message alone keeps the agent's colour, a
placeholder is no message, and neither form carries the other's fields, so an answer
fits a small token budget. Checked with ``jsonschema`` against the schema sent.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from llm_mesa.llm.endpoint import Endpoint
from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy, decode_answer, placeholder_share
from llm_mesa.models.consensus.observation import ConsensusObservation
from llm_mesa.models.consensus.prompt import (
    ANSWER_FORMAT,
    FIELD_TEXT,
    MAX_TEXT_CHARS,
    MIN_TEXT_CHARS,
    ConsensusPrompt,
    answer_schema,
    text_chars,
)

MOVE = {"colour": "blue", "reason": "two neighbours are blue", "diary": "follow the majority"}
TALK = {"message": "let us all pick blue", "diary": "asked for blue"}


def observation(communication: str = "local", direct: bool = False, replaces: bool = True) -> ConsensusObservation:
    return ConsensusObservation(agent_id=3, round=2, preference="red", colour="red", neighbour_ids=(1, 2),
                                neighbour_colours=("blue", "blue"), communication=communication,
                                direct_messages=direct, message_replaces_move=replaces)


def valid(answer: dict, communication: str = "local", direct: bool = False, replaces: bool = True) -> bool:
    try:
        jsonschema.validate(answer, answer_schema(communication, direct, replaces))
    except jsonschema.ValidationError:
        return False
    return True


def test_where_a_message_replaces_the_move_an_answer_is_one_or_the_other():
    assert valid(MOVE) and valid(TALK)
    assert not valid(MOVE | {"message": "hello"})  # both at once: the move form has no message
    assert not valid({"message": "hello"})  # the diary is rewritten every round
    assert not valid({"colour": "green", "reason": "r", "diary": "d"})
    assert valid(TALK | {"message_to": 2}, direct=True) and not valid(TALK | {"message_to": 2})


def test_a_message_alone_keeps_the_colour_and_a_move_sends_nothing():
    obs = observation()
    talk = decode_answer(json.dumps(TALK), obs)
    assert talk is not None and (talk.colour, talk.message, talk.diary) == ("red", TALK["message"], TALK["diary"])
    move = decode_answer(json.dumps(MOVE), obs)
    assert move is not None and (move.colour, move.message, move.reason) == ("blue", None, MOVE["reason"])


@pytest.mark.parametrize("placeholder", ["...", "", " ", "null", "N/A", "…", None])
def test_a_placeholder_is_no_message(placeholder):
    obs = observation()
    assert decode_answer(json.dumps({"message": placeholder, "diary": "d"}), obs) is None  # decides nothing
    decision = decode_answer(json.dumps(MOVE | {"message": placeholder}), obs)
    assert decision is not None and decision.colour == "blue" and decision.message is None


def test_where_a_message_goes_with_the_move_the_colour_is_required_and_the_message_optional():
    assert valid(MOVE, replaces=False) and valid(MOVE | {"message": "hi"}, replaces=False)
    assert not valid(TALK, replaces=False)
    obs = observation(replaces=False)
    assert decode_answer(json.dumps(TALK), obs) is None
    both = decode_answer(json.dumps(MOVE | {"message": "hi"}), obs)
    assert both is not None and (both.colour, both.message) == ("blue", "hi")


def test_without_communication_there_is_no_message_private_or_not():
    for direct in (False, True):
        assert answer_schema("none", direct) == answer_schema("none", False)
        assert not valid(TALK, "none", direct)
        decision = decode_answer(json.dumps(MOVE | {"message": "hi", "message_to": 1}), observation("none", direct))
        assert decision is not None and decision.message is None and decision.message_to is None


CONDITIONS = [("none", False, True), ("local", False, True), ("global", True, True), ("local", True, False)]


def text_bounds(schema: dict) -> list[int]:
    forms = schema.get("anyOf", [schema])
    return [spec["maxLength"] for form in forms for spec in form["properties"].values()
            if spec["type"] == "string" and "enum" not in spec]


@pytest.mark.parametrize("budget", [None, 16, 48, 64, 300])
def test_free_text_is_bounded_by_the_token_budget_and_the_format_shows_nothing_to_copy(budget):
    for communication, direct, replaces in CONDITIONS:
        bound = text_chars(budget, communication, direct, replaces)
        bounds = text_bounds(answer_schema(communication, direct, replaces, budget))
        assert bounds and set(bounds) == {bound}
        assert MIN_TEXT_CHARS <= bound <= MAX_TEXT_CHARS
        too_long = {"colour": "red", "reason": "x" * (bound + 1), "diary": "d"}
        schema = answer_schema(communication, direct, replaces, budget)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(too_long, schema)
    assert not any('"..."' in text for text in ANSWER_FORMAT.values())


def test_a_larger_budget_never_bounds_text_tighter_and_a_third_field_shares_it():
    budgets = range(1, 400)
    for condition in CONDITIONS:
        bounds = [text_chars(b, *condition) for b in budgets]
        assert bounds == sorted(bounds) and bounds[0] == MIN_TEXT_CHARS and bounds[-1] == MAX_TEXT_CHARS
    assert text_chars(48, "local", False, False) < text_chars(48, "local", False, True) < 48
    assert text_chars(None) == MAX_TEXT_CHARS == text_chars(300)  # the study's budget: a whole message
    assert text_chars(300, "local", False, False) == 233  # three fields share it
    assert text_chars(48, "local", True, False) < text_chars(48, "local", False, False)  # a private message's keys


@pytest.mark.parametrize("budget", [None, 48, 300])
def test_the_policy_bounds_text_by_its_own_endpoints_budget(budget):
    endpoint = Endpoint("http://127.0.0.1:9/v1", "m", max_tokens=budget)
    schema = LLMConsensusPolicy(endpoint).request(observation()).schema
    assert set(text_bounds(schema)) == {text_chars(budget)}


@pytest.mark.parametrize("replaces", [True, False])
def test_the_rules_say_whether_a_message_replaces_the_move(replaces):
    rules, state = (m["content"] for m in ConsensusPrompt().messages(observation("local", True, replaces)))
    assert ("Instead of choosing a colour" in rules) is replaces
    assert ("Besides choosing a colour" in rules) is not replaces
    assert ("in one of two forms" in rules) is replaces
    assert '"message_to"' in rules
    none_rules = ConsensusPrompt().messages(observation("none", True))[0]["content"]
    assert "message" not in none_rules.split("There is no communication")[1]


def test_a_custom_prompt_keeps_its_own_words_where_a_message_goes_with_the_move():
    own = ConsensusPrompt(alongside_text={"local": "You may also tell your neighbours something."},
                          answer_format={"none": "Answer in JSON."})
    rules = own.messages(observation("local", False, replaces=False))[0]["content"]
    assert "You may also tell your neighbours something." in rules and "Besides choosing" not in rules
    assert ANSWER_FORMAT["talk+move"] in rules  # a format key the custom one lacks comes from the default
    assert own.template_hash != ConsensusPrompt().template_hash


def test_the_placeholder_share_reads_each_form_and_empty_table_cells():
    nan = float("nan")
    rows = [
        {"colour": "red", "reason": "two neighbours are red", "diary": "stay", "message": None},  # a real move
        {"colour": "red", "reason": "...", "diary": "stay", "message": None},  # placeholder reason
        {"colour": "red", "reason": "", "diary": "asked for blue", "message": "pick blue"},  # a message: no reason
        {"colour": "red", "reason": "...", "diary": "d", "message": "pick blue"},  # a move with a message (alongside)
        {"colour": "red", "reason": nan, "diary": nan, "message": nan},  # empty cells read back from a table
    ]
    assert placeholder_share(rows) == 3 / 5


def test_a_field_that_copies_its_own_name_or_description_is_a_placeholder():
    # Gemma 3 270M copied descriptions ("why" under "why, in a few words of your own") and key names
    reason_words, diary_words = FIELD_TEXT["reason"].split(), FIELD_TEXT["diary"].split()
    copied = [{"colour": "red", "reason": " ".join(reason_words[:3]).title(), "diary": "stay", "message": None},
              {"colour": "red", "reason": "both are red", "diary": " ".join(diary_words[1:]) + ".", "message": None},
              {"colour": "red", "reason": "Reason", "diary": "stay", "message": None},
              {"colour": "red", "reason": "", "diary": "stay", "message": "Your words"},
              {"colour": "red", "reason": "you", "diary": "remember", "message": None}]  # one word alone
    own = [{"colour": "red", "reason": "why not red", "diary": "Round 2: stay red", "message": None},
           {"colour": "red", "reason": "", "diary": "d", "message": "to 2"}]  # digits are words of their own
    assert placeholder_share(copied) == 1 and placeholder_share(own) == 0
    obs = observation()
    for message in ("to 2", "The others", "your words"):  # the game keeps every real-looking message
        assert decode_answer(json.dumps({"message": message, "diary": "d"}), obs).message == message
