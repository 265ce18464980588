"""A person's seat as a policy (``llm_mesa.lab.seat``): answers, deadlines, and the recording that replays.

People here are scripted threads answering at their seat as a page would (``lab_people``).
The games: consensus and colouring (adapters of their own), the guide's ``tinyvote`` and
``pledge``, a game this module registers itself, both on ``LLMPolicy`` with no code for seats.
The recording is checked where it matters: the game's own LLM policy on the ``human``
endpoint, replaying the store strictly (no server answers at its address), plays the very
same game, so every answer was recorded under the key an LLM decision of that agent has.
"""

from __future__ import annotations

import lab_pledge
import pandas as pd
import pytest
from lab_people import play

from llm_mesa import declared, register_game
from llm_mesa import play as playing
from llm_mesa.lab import NO_ANSWER, LabSession, human_endpoint
from llm_mesa.lab.run_folder import lab_tables
from llm_mesa.lab.seat import LabStoreError
from llm_mesa.llm.store import ResponseStore
from llm_mesa.registry import get_game, unregister_game

#: the columns of a rounds table that count LLM use (a replay by the LLM policy counts what the lab did not)
ACCOUNTING = {"calls", "prompt_tokens", "completion_tokens", "cached_tokens", "cost", "failures", "failed"}


@pytest.fixture(scope="module", autouse=True)
def pledge_registered():
    register_game(lab_pledge.GAME)
    yield
    unregister_game(lab_pledge.NAME)


def first_choice(round_number, facts):
    """What a person clicks: consensus and colouring: the first colour that is not theirs now; pledge: 5 - round."""
    rows = dict(facts.rows)
    if "Your colour now" in rows:
        colours = [c.strip() for c in rows.get("Colours", "red, blue").split(",")]
        return {"colour": next(c for c in colours if c != rows["Your colour now"])}
    if "secret" in rows:
        return {"pledge": 5 - round_number, "note": "my own"}
    return {"state": "b"}


#: the game, its parameters, its other agents' policy
GAMES = {"consensus": ({"n": 10, "max_rounds": 3}, "majority-inertia"),
         "colouring": ({"n": 10, "topology": "cycle", "max_rounds": 3}, "best-response"),
         "tinyvote": ({"n": 8, "max_rounds": 3}, "follow"),
         "pledge": ({"n": 6, "max_rounds": 3}, "match")}


def lab(name, tmp_path, mode="record", seats=2, deadline=2.0, **kw):
    parameters, policy = GAMES[name]
    store = ResponseStore(tmp_path / "calls.sqlite", mode)
    return LabSession(get_game(name), parameters, policy, 7, seats, deadline=deadline, store=store, **kw), store


def states(game, model):
    """What the game's rounds were, without the LLM accounting, and every agent's state at the end."""
    rounds = declared.table(game, model, "rounds")
    from llm_mesa.views import view_of

    return rounds.drop(columns=[c for c in rounds.columns if c in ACCOUNTING]), list(view_of(game).picture(model).state)


@pytest.mark.parametrize("name", sorted(GAMES))
def test_people_are_recorded_under_the_keys_the_games_llm_policy_replays(name, tmp_path):
    session, store = lab(name, tmp_path)
    people = play(session, {1: first_choice, 2: lambda r, f: first_choice(r, f) if r == 1 else None})
    store.close()
    assert session.state == "ended" and session.timeouts == session.view.round_number(session.model) - 1
    assert people[1].seen and people[1].seen[0].heading().startswith("Round 1")
    # the game's own LLM policy on the human endpoint, from the store alone: the same game
    game = get_game(name)
    replay = ResponseStore(tmp_path / "calls.sqlite", "replay")
    llm = declared.llm_policy(game, human_endpoint(), replay)
    again = playing.place(game, session.parameters, GAMES[name][1], 7, {seat.agent: llm for seat in session.seats})
    while again.running:
        again.step()
    recorded, replayed = states(game, session.model), states(game, again)
    pd.testing.assert_frame_equal(recorded[0], replayed[0])
    assert recorded[1] == replayed[1]
    assert llm.usage.calls == llm.usage.replayed == len(session.answers)  # nothing was called: all from the store


def test_the_clicked_colour_is_played_and_a_missed_deadline_keeps_the_colour(tmp_path):
    session, store = lab("consensus", tmp_path, deadline=1.2)
    play(session, {1: lambda r, f: {"colour": "red"}, 2: lambda r, f: {"colour": "blue"} if r == 1 else None})
    store.close()
    agents = session.model.agents_table()
    one, two = (s.agent for s in session.seats)

    def colour(node, r):
        return agents.loc[(agents["node"] == node) & (agents["round"] == r), "colour"].item()

    assert colour(one, 1) == "red" and colour(two, 1) == "blue"
    assert all(colour(two, r) == colour(two, r - 1) for r in range(2, session.view.round_number(session.model) + 1))
    missed = [a for a in session.answers if a.timeout]
    assert missed and all(a.agent == two and a.response_s == session.deadline for a in missed)
    summary = session.model.summary()
    assert summary["failures"] == 0 and not summary["invalid"]  # a person's timeout is no LLM failure
    rows = ResponseStore(tmp_path / "calls.sqlite", "replay").rows()
    assert sorted(r["response"].get("error") or "" for r in rows).count(NO_ANSWER) == len(missed)
    assert all(r["request"]["model"] == "human" for r in rows)


def test_a_missed_answer_replays_as_a_failed_call_of_the_llm_policy_with_the_same_move(tmp_path):
    """Documented: the game's LLM policy replays a timeout as a failed decision, whose move is the default."""
    session, store = lab("consensus", tmp_path, seats=1, deadline=0.6, seat_agents=[4])
    play(session, {1: lambda r, f: None})
    store.close()
    llm = declared.llm_policy(get_game("consensus"), human_endpoint(), ResponseStore(tmp_path / "calls.sqlite", "replay"))
    again = playing.place(get_game("consensus"), session.parameters, "majority-inertia", 7, {4: llm})
    again.run()
    assert list(again.agents_table()["colour"]) == list(session.model.agents_table()["colour"])
    assert again.summary()["call_failures"] == session.timeouts == 3 and session.model.summary()["failures"] == 0


@pytest.mark.parametrize("name", ["consensus", "pledge"])
def test_the_lab_replaying_its_store_writes_the_same_run_folder(name, tmp_path):
    session, store = lab(name, tmp_path, deadline=1.5)
    play(session, {1: first_choice, 2: lambda r, f: first_choice(r, f) if r != 2 else None})
    store.close()
    again, replay = lab(name, tmp_path, mode="replay", deadline=1.5)
    for seat in again.seats:
        seat.claim("replay")
    again.play()
    first, second = lab_tables(session), lab_tables(again)
    assert set(first) == set(second) and "seats" in first
    for table in first:
        pd.testing.assert_frame_equal(first[table], second[table], obj=table)
    assert second["seats"]["timeout"].sum() == session.timeouts > 0


def test_a_replay_of_a_store_without_the_answer_is_refused_in_one_line(tmp_path):
    session, store = lab("pledge", tmp_path, deadline=1.0)
    play(session, {1: lambda r, f: None, 2: lambda r, f: None})
    store.close()
    other, _ = lab("pledge", tmp_path, mode="replay", seat_agents=[0, 5])  # other seats: never recorded
    for seat in other.seats:
        seat.claim("replay")
    with pytest.raises(LabStoreError, match=r"holds no answer for agent [05]'s decision in round 1: .* --seat-agents") as refused:
        other.play()
    assert "replay-fill" not in str(refused.value)  # a fix the lab refuses is never named


def test_recording_the_same_game_again_into_one_store_is_refused(tmp_path):
    session, store = lab("pledge", tmp_path, deadline=1.0)
    play(session, {1: lambda r, f: None, 2: lambda r, f: None})
    store.close()
    again, _ = lab("pledge", tmp_path, deadline=1.0)
    for seat in again.seats:
        seat.claim("b")
    with pytest.raises(Exception, match="already holds an answer"):
        again.play()


def test_a_seat_shows_its_own_agents_facts_and_no_other_agents_secret(tmp_path):
    session, store = lab("pledge", tmp_path, deadline=1.5)
    people = play(session, {1: lambda r, f: {"pledge": 1}, 2: lambda r, f: None})
    seat = session.seats[0]
    mine = lab_pledge.secret_of(7, seat.agent)
    others = [lab_pledge.secret_of(7, a) for a in range(6) if a != seat.agent]
    for facts in people[1].seen:
        text = repr(facts)
        assert mine in text and not any(secret in text for secret in others)
        assert facts.agent == f"agent {seat.agent}" and facts.rounds == 3  # the guide's round limit, found


@pytest.mark.parametrize("name, update", [("consensus", "random-sequential"), ("colouring", "random-asynchronous")])
def test_under_turns_a_seat_is_asked_at_each_of_its_turns_and_replays_turn_by_turn(name, update, tmp_path):
    parameters, policy = GAMES[name]
    store = ResponseStore(tmp_path / "calls.sqlite")
    session = LabSession(get_game(name), {**parameters, "update": update}, policy, 7, 2, deadline=10.0, store=store)
    play(session, {1: first_choice, 2: first_choice})
    store.close()
    turns = [(a.round, a.activation) for a in session.answers]
    assert all(activation is not None for _, activation in turns) and len(set(turns)) == len(turns)
    assert session.timeouts == 0
    game = get_game(name)
    llm = declared.llm_policy(game, human_endpoint(), ResponseStore(tmp_path / "calls.sqlite", "replay"))
    again = playing.place(game, session.parameters, policy, 7, {seat.agent: llm for seat in session.seats})
    while again.running:
        again.step()
    recorded, replayed = states(game, session.model), states(game, again)
    pd.testing.assert_frame_equal(recorded[0], replayed[0])
    assert recorded[1] == replayed[1] and llm.usage.replayed == len(session.answers)


#: Mesa's own example games (grids, no network), small enough for a seat's agent to decide every round
EXAMPLE_GAMES = {"schelling": ({"width": 6, "height": 6, "max_rounds": 3}, "mesa"),
                 "boltzmann_wealth_model": ({"n": 30, "width": 3, "height": 3, "max_rounds": 3}, "mesa"),
                 "pd_grid": ({"width": 4, "height": 4, "max_rounds": 3, "activation_order": "Random"}, "mesa")}


@pytest.mark.parametrize("name", sorted(EXAMPLE_GAMES))
def test_a_person_seated_in_a_mesa_example_game_answers_from_its_form_and_the_llm_policy_replays_it(name, tmp_path):
    """No seat code in these games: the form comes from the game's answer schema, the keys from the core's."""
    parameters, policy = EXAMPLE_GAMES[name]
    store = ResponseStore(tmp_path / "calls.sqlite", "record")
    session = LabSession(get_game(name), parameters, policy, 7, 1, deadline=5.0, store=store)
    seat = session.seats[0]

    def last_offered(round_number, facts):  # the last value of every decision field: not always the rule's choice
        form = seat.question.asked.form.alternatives[0]
        return {f.name: f.choices[-1] if f.choices else f.high for f in form.decisions}

    play(session, {1: last_offered})
    store.close()
    assert session.state == "ended" and session.answers and session.timeouts == 0
    game = get_game(name)
    llm = declared.llm_policy(game, human_endpoint(), ResponseStore(tmp_path / "calls.sqlite", "replay"))
    again = playing.place(game, session.parameters, policy, 7, {seat.agent: llm})
    while again.running:
        again.step()
    recorded, replayed = states(game, session.model), states(game, again)
    pd.testing.assert_frame_equal(recorded[0], replayed[0])
    assert recorded[1] == replayed[1]
    assert llm.usage.calls == llm.usage.replayed == len(session.answers)
