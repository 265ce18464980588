"""People beside LLM agents: the round's LLM calls are in flight while the seats' questions are open.

Over real HTTP on loopback with the real openai client (the stand-in answering as
majority-with-inertia would, and talking). A seat sends a message instead of a move and it
reaches its neighbours; the LLM agents' calls and the people's answers share one store, and
the lab replaying it plays the same game with no call and no person.
"""

from __future__ import annotations

import time

import pandas as pd
import pytest
from lab_people import play

from llm_mesa import declared
from llm_mesa.lab import LabSession
from llm_mesa.lab.run_folder import lab_summary, lab_tables
from llm_mesa.llm.endpoint import Endpoint
from llm_mesa.llm.store import ResponseStore
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.registry import get_game

PARAMETERS = {"n": 12, "topology": "ws", "max_rounds": 3, "communication": "local"}
SEATS = [4, 9]


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(seed=3) as s:
        yield s


def lab(server, store) -> LabSession:
    game = get_game("consensus")
    endpoint = Endpoint(server.base_url, "rule:majority-inertia?inertia=0.2&talk=0.5", max_attempts=3, timeout=10.0)
    return LabSession(game, PARAMETERS, declared.llm_policy(game, endpoint, store), 5, 2, seat_agents=SEATS, deadline=20.0,
                      store=store)


def test_people_answer_while_the_llm_agents_calls_of_the_round_are_answered(server, tmp_path):
    server.reset()
    store = ResponseStore(tmp_path / "calls.sqlite")
    session = lab(server, store)
    others = PARAMETERS["n"] - len(SEATS)
    heard = []

    def after_the_models(round_number, facts):
        # answer only once every LLM agent of this round has been answered: were the calls to wait for the
        # people, this seat would never answer and its deadline would pass
        while server.stats()["answered"] < round_number * others:
            time.sleep(0.01)
        heard.extend(line for _, lines in facts.sections for line in lines if "said" in line)
        if round_number == 1:
            return {"message": "let us all go blue", "diary": "I asked for blue"}, 1  # a message instead of a move
        return {"colour": "blue"}

    play(session, {1: after_the_models, 2: lambda r, f: {"colour": "red"}})
    store.close()
    assert session.timeouts == 0
    summary = lab_summary(session, "llm")
    assert summary["calls"] == server.stats()["answered"] == others * summary["rounds"]
    assert summary["failed_decisions"] == 0 and not summary["invalid"]
    messages = session.model.messages_table()
    mine = messages[messages["sender"] == SEATS[0]]
    assert list(mine["text"]) == ["let us all go blue"] and list(mine["round"]) == [1]
    assert heard  # the stand-in's agents talk, and a seat reads what its neighbours said to it
    # one store: the LLM agents' calls and the people's answers, replayed with neither
    answered = server.stats()["answered"]
    replay = ResponseStore(tmp_path / "calls.sqlite", "replay")
    again = lab(server, replay)
    for seat in again.seats:
        seat.claim("replay")
    again.play()
    assert server.stats()["answered"] == answered
    first, second = lab_tables(session), lab_tables(again)
    for name in first:
        pd.testing.assert_frame_equal(first[name], second[name], obj=name)

