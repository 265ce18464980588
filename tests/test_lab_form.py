"""The seat's answer form, built from the answer's JSON schema (``llm_mesa.lab.form``).

An enum is buttons with its values, a bounded integer a slider with its bounds, a string a
text box with its length limit; free text an LLM is asked for is optional; and whatever a
person sends becomes JSON the game's own decoder reads as the decision (tested with the
consensus and colouring games' real schemas and decoders, and a schema of the test's own).
"""

from __future__ import annotations

import json

import pytest

from llm_mesa.lab.form import DEFAULT_TEXT_CHARS, FormError, form_of
from llm_mesa.models.colouring.llm_policy import decode_answer as colouring_decode
from llm_mesa.models.colouring.policies import View
from llm_mesa.models.colouring.prompt import answer_schema as colouring_schema
from llm_mesa.models.consensus.llm_policy import decode_answer as consensus_decode
from llm_mesa.models.consensus.observation import ConsensusObservation
from llm_mesa.models.consensus.prompt import answer_schema as consensus_schema


def observation(**kw) -> ConsensusObservation:
    return ConsensusObservation(agent_id=3, round=1, preference="red", colour="blue", neighbour_ids=(1, 2),
                                neighbour_colours=("red", "red"), **kw)


def test_an_enum_is_buttons_with_its_values_and_one_click_answers():
    form = form_of(consensus_schema("none", False))
    (choose,) = form.alternatives
    colour = next(f for f in choose.fields if f.name == "colour")
    assert colour.widget == "buttons" and colour.choices == ("red", "blue") and colour.decision
    assert choose.one_click  # the decision is one enum: a click on a button is the whole answer
    text = form.answer({"colour": "red"})
    assert json.loads(text) == {"colour": "red", "reason": "", "diary": ""}  # required free text sent empty
    decision = consensus_decode(text, observation())
    assert decision.colour == "red" and decision.message is None


def test_free_text_is_optional_kept_as_typed_and_bounded_by_its_length_limit():
    form = form_of(consensus_schema("none", False, max_tokens=48))
    reason = next(f for f in form.alternatives[0].fields if f.name == "reason")
    assert reason.widget == "text" and not reason.decision and reason.required
    bound = reason.max_length
    assert bound == consensus_schema("none", False, max_tokens=48)["properties"]["reason"]["maxLength"] < 280
    typed = json.loads(form.answer({"colour": "blue", "reason": "x" * bound}))
    assert typed["reason"] == "x" * bound
    with pytest.raises(FormError, match=f"at most {bound} characters"):
        form.answer({"colour": "blue", "reason": "x" * (bound + 1)})


def test_the_decision_must_be_given_and_be_one_of_the_values():
    form = form_of(consensus_schema("none", False))
    with pytest.raises(FormError, match="decision"):
        form.answer({"reason": "nothing chosen"})
    with pytest.raises(FormError, match="red, blue"):
        form.answer({"colour": "green"})
    with pytest.raises(FormError, match="no field"):
        form.answer({"colour": "red", "password": "x"})


def test_a_message_instead_of_a_move_is_a_second_form_whose_decision_is_the_message():
    form = form_of(consensus_schema("local", True))  # a move, or a message (privately to one neighbour) instead
    assert len(form.alternatives) == 2
    talk = form.alternatives[1]
    message = next(f for f in talk.fields if f.name == "message")
    assert message.decision and message.widget == "text" and not talk.one_click
    to = next(f for f in talk.fields if f.name == "message_to")
    assert to.widget == "number" and not to.decision and not to.required  # optional: to all neighbours
    obs = observation(communication="local", direct_messages=True)
    sent = consensus_decode(form.answer({"message": "let us all go red", "message_to": "2"}, alternative=1), obs)
    assert sent.message == "let us all go red" and sent.message_to == 2 and sent.colour == "blue"  # kept
    broadcast = consensus_decode(form.answer({"message": "red please"}, alternative=1), obs)
    assert broadcast.message == "red please" and broadcast.message_to is None
    with pytest.raises(FormError, match="decision"):
        form.answer({"diary": "only a diary"}, alternative=1)


def test_a_message_beside_the_move_is_an_optional_field_of_the_one_form():
    form = form_of(consensus_schema("global", False, message_replaces_move=False))
    (one,) = form.alternatives
    assert one.one_click and not next(f for f in one.fields if f.name == "message").decision
    decision = consensus_decode(form.answer({"colour": "red", "message": "red!"}),
                                observation(communication="global", message_replaces_move=False))
    assert decision.colour == "red" and decision.message == "red!"


def test_the_colouring_games_k_colours_are_k_buttons():
    colours = ("red", "green", "blue", "yellow")
    form = form_of(colouring_schema(colours))
    field = form.alternatives[0].fields[0]
    assert field.widget == "buttons" and field.choices == colours
    view = View(agent=0, round=1, colour="red", neighbours=(1,), neighbour_colours=("red",), colours=colours,
                n_players=4, max_rounds=5, payoff=5.0)
    assert colouring_decode(form.answer({"colour": "yellow"}), view).colour == "yellow"


def test_a_bounded_integer_is_a_slider_with_its_bounds_and_refuses_what_lies_outside():
    schema = {"type": "object", "required": ["give", "why"],
              "properties": {"give": {"type": "integer", "minimum": 0, "maximum": 10},
                             "ask": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 4},
                             "share": {"type": "number"}, "why": {"type": "string"}}}
    form = form_of(schema)
    fields = {f.name: f for f in form.alternatives[0].fields}
    assert fields["give"].widget == "slider" and (fields["give"].low, fields["give"].high) == (0, 10)
    assert fields["ask"].widget == "slider" and (fields["ask"].low, fields["ask"].high) == (1, 3)
    assert fields["share"].widget == "number" and not fields["share"].decision
    assert fields["why"].max_length == DEFAULT_TEXT_CHARS  # no maxLength: the bound a model's answer has
    assert json.loads(form.answer({"give": 10})) == {"give": 10, "why": ""}
    for bad, words in ((11, "from 0 to 10"), (-1, "from 0 to 10"), (2.5, "whole number"), ("many", "a number")):
        with pytest.raises(FormError, match=words):
            form.answer({"give": bad})
    with pytest.raises(FormError, match="finite"):
        form.answer({"give": 3, "share": "inf"})
    assert json.loads(form.answer({"give": "7", "share": "0.25"}))["share"] == 0.25


def test_a_boolean_is_two_buttons():
    form = form_of({"type": "object", "properties": {"cooperate": {"type": "boolean"}}, "required": ["cooperate"]})
    field = form.alternatives[0].fields[0]
    assert field.widget == "buttons" and field.choices == (True, False)
    assert json.loads(form.answer({"cooperate": "False"})) == {"cooperate": False}


def test_a_schema_with_nothing_to_answer_is_refused_in_one_line():
    for schema in (None, {"type": "string"}, {"type": "object", "properties": {"list": {"type": "array"}}}):
        with pytest.raises(FormError, match="schema"):
            form_of(schema)
