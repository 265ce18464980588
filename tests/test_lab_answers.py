"""A person's answer belongs to the question they saw, and nothing they send is dropped in silence.

* Each question put to a seat has a number; a page's form answers that number only
  (``Seat.submit(..., question=N, session=S)``). Two tabs of one browser on one seat: a tab
  still clicking the form of the previous question (not yet redrawn) is refused every time,
  however close to the next question's opening its click comes, and the recorded answers are
  all the live tab's; two tabs answering one question: one answer counts, the other is told.
* A private message's recipient is offered among the seat's neighbours only; a crafted answer
  naming any other node is refused with the field's words; and every answer the seat takes
  is one the game delivers: in the messages table, or refused before it is sent.
"""

from __future__ import annotations

import json
import random
import threading
import time

import lab_pledge
import pytest

from llm_mesa import declared, play, register_game
from llm_mesa.lab import FormError, LabSession, SeatError, form_of
from llm_mesa.lab.asking import facts_of, human_endpoint
from llm_mesa.lab.run_folder import lab_tables
from llm_mesa.llm.store import ResponseStore
from llm_mesa.models.consensus.llm_policy import decode_answer as consensus_decode
from llm_mesa.models.consensus.prompt import answer_schema as consensus_schema
from llm_mesa.registry import get_game, unregister_game

PRIVATE = {"n": 10, "max_rounds": 2, "communication": "local", "direct_messages": True}


@pytest.fixture(scope="module", autouse=True)
def pledge_registered():
    register_game(lab_pledge.GAME)
    yield
    unregister_game(lab_pledge.NAME)


def pledge_lab(tmp_path, rounds=3, deadline=5.0) -> LabSession:
    store = ResponseStore(tmp_path / "calls.sqlite")
    return LabSession(get_game("pledge"), {"n": 6, "max_rounds": rounds}, "match", 7, 1, seat_agents=[2],
                      deadline=deadline, store=store)


def playing(session: LabSession) -> threading.Thread:
    game = threading.Thread(target=session.play, daemon=True)
    game.start()
    return game


def next_question(seat, after: int = 0, timeout: float = 30.0):
    """The seat's open question numbered above ``after`` (waits for it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        question = seat.question
        if question is not None and question.number > after and question.answer is None:
            return question
        time.sleep(0.002)
    raise AssertionError(f"no question after number {after} opened at seat {seat.number}")


def test_outside_an_open_question_and_from_a_browser_that_does_not_hold_the_seat_nothing_is_taken(tmp_path):
    session = pledge_lab(tmp_path, rounds=1)
    seat = session.seats[0]
    assert seat.claim("tab-browser")
    with pytest.raises(SeatError, match="Not recorded: that answer was for a question that has closed"):
        seat.submit({"pledge": 1}, question=1, session="tab-browser")
    game = playing(session)
    question = next_question(seat)
    with pytest.raises(SeatError, match="no longer holds the seat"):
        seat.submit({"pledge": 1}, question=question.number, session="another-browser")
    with pytest.raises(SeatError, match="that answer was for a question that has closed"):
        seat.submit({"pledge": 1}, question=question.number + 1, session="tab-browser")  # a question never asked
    seat.submit({"pledge": 4, "note": "mine"}, question=question.number, session="tab-browser")
    game.join(timeout=30)
    assert [json.loads(a.answer) for a in session.answers] == [{"pledge": 4, "note": "mine"}]


def test_two_tabs_answering_one_question_one_answer_counts_and_the_other_tab_is_told(tmp_path):
    session = pledge_lab(tmp_path, rounds=1)
    seat = session.seats[0]
    seat.claim("browser")
    game = playing(session)
    question = next_question(seat)
    said: dict[str, str] = {}

    def tab(name: str, pledge: int) -> None:
        try:
            seat.submit({"pledge": pledge, "note": name}, question=question.number, session="browser")
            said[name] = "taken"
        except SeatError as exc:
            said[name] = str(exc)

    tabs = [threading.Thread(target=tab, args=(name, pledge)) for name, pledge in (("a", 1), ("b", 2))]
    for t in tabs:
        t.start()
    for t in tabs:
        t.join()
    game.join(timeout=30)
    taken = [name for name, words in said.items() if words == "taken"]
    (refusal,) = [words for words in said.values() if words != "taken"]
    assert len(taken) == 1 and "already answered" in refusal
    assert [json.loads(a.answer)["note"] for a in session.answers] == taken


def test_a_tab_clicking_the_previous_questions_form_never_answers_the_next_one(tmp_path):
    """The issue's race: a second tab's click on the last question's form arrives 1-7 ms after the next opened.

    A stale tab sends its previous question's answer the moment each new question opens, and
    keeps sending it; the live tab answers 20 ms later. Every stale click is refused, every
    recorded answer is the live tab's.
    """
    rounds = 6
    session = pledge_lab(tmp_path, rounds=rounds)
    seat = session.seats[0]
    seat.claim("browser")
    refused: list[str] = []
    stop = threading.Event()

    def stale_tab() -> None:
        while not stop.is_set():
            question = seat.question
            if question is not None and question.number > 1:
                try:
                    seat.submit({"pledge": 5, "note": "stale"}, question=question.number - 1, session="browser")
                except SeatError as exc:
                    refused.append(str(exc))
            time.sleep(0.0005)

    clicker = threading.Thread(target=stale_tab, daemon=True)
    clicker.start()
    game = playing(session)
    number = 0
    for r in range(1, rounds + 1):
        question = next_question(seat, after=number)
        number = question.number
        time.sleep(0.02)
        seat.submit({"pledge": r % 5, "note": "live"}, question=number, session="browser")
    game.join(timeout=60)
    stop.set()
    clicker.join(timeout=5)
    assert [json.loads(a.answer) for a in session.answers] == [{"pledge": r % 5, "note": "live"}
                                                             for r in range(1, rounds + 1)]
    assert len(refused) >= rounds - 1 and all(words.startswith("Not recorded") for words in refused)
    assert not any(json.loads(a)["note"] == "stale" for a in lab_tables(session)["seats"]["answer"])


def test_the_recipient_of_a_private_message_is_chosen_among_the_neighbours_only():
    schema = consensus_schema("local", True)
    form = form_of(schema, {"message_to": "Only to one neighbour"}, {"message_to": (2, 5)})
    talk = form.alternatives[1]
    recipient = next(f for f in talk.fields if f.name == "message_to")
    assert recipient.widget == "select" and recipient.choices == (2, 5) and not recipient.decision
    assert json.loads(form.answer({"message": "hi", "message_to": "5"}, 1))["message_to"] == 5
    assert "message_to" not in json.loads(form.answer({"message": "to all", "message_to": ""}, 1))
    for other in (0, 1, 3, 7, -1, "x", 2.5):
        with pytest.raises(FormError, match=r"Only to one neighbour: choose one of 2, 5"):
            form.answer({"message": "hi", "message_to": other}, 1)
    lonely = form_of(schema, {}, {"message_to": ()})  # no neighbour: no recipient to offer
    assert all(f.name != "message_to" for f in lonely.alternatives[1].fields)
    with pytest.raises(FormError, match="no field 'message_to'"):
        lonely.answer({"message": "hi", "message_to": 2}, 1)


def test_a_crafted_private_message_to_a_non_neighbour_is_refused_and_one_to_a_neighbour_is_in_the_tables(tmp_path):
    session = LabSession(get_game("consensus"), PRIVATE, "majority-inertia", 3, 1, seat_agents=[3], deadline=20.0)
    seat = session.seats[0]
    seat.claim("browser")
    neighbours = sorted(session.model.graph.neighbors(3))
    game = playing(session)
    question = next_question(seat)
    offered = next(f for f in question.asked.form.alternatives[1].fields if f.name == "message_to")
    assert sorted(offered.choices) == neighbours  # the form offers only them
    for node in sorted(set(range(PRIVATE["n"])) - set(neighbours)):
        with pytest.raises(FormError, match="choose one of"):
            seat.submit({"message": f"to {node}", "message_to": node}, 1, question=question.number, session="browser")
    seat.submit({"message": "psst", "message_to": neighbours[0]}, 1, question=question.number, session="browser")
    question = next_question(seat, after=question.number)
    seat.submit({"message": "to you all"}, 1, question=question.number, session="browser")
    game.join(timeout=60)
    sent = lab_tables(session)["messages"]
    mine = sent[sent["sender"] == 3].sort_values("round")
    assert list(mine["text"]) == ["psst", "to you all"] and mine["to"].iloc[0] == neighbours[0]
    assert mine["to"].isna().iloc[1] and session.model.summary()["private_messages"] == 1


def test_every_answer_a_seat_takes_is_one_the_game_delivers():
    """Theory: whatever values reach the form (a crafted post), an answer it takes is delivered by the model."""
    game = get_game("consensus")
    model = play.make_model(game, game.parameters.validate(PRIVATE, complete=True), "majority-inertia", 5)
    policy = declared.llm_policy(game, human_endpoint(), None)
    draw = random.Random(11)
    taken = refused = 0
    for agent in model.agents_by_node:
        obs = agent.observe()
        facts = facts_of(policy, obs, agent.node)
        form = form_of(policy.question(obs).schema, facts.labels, facts.choices)
        for _ in range(40):
            values = {"message": draw.choice(["hi", " ", "", "x" * 5]),
                      "message_to": draw.choice([None, "", *range(-1, PRIVATE["n"] + 1), "7", 3.0])}
            try:
                text = form.answer({k: v for k, v in values.items() if v is not None}, 1)
            except FormError:
                refused += 1
                continue
            taken += 1
            decision = consensus_decode(text, obs)
            assert decision is not None and model.deliverable(agent, decision), (agent.node, values, text)
    assert taken > 50 and refused > 50
