"""Links as people have them: rewritten by mail and chat programs, re-issued after a crash, and one numbering.

* A seat's link with any extra query parameters (tracking added by a mail program, a parameter
  with no value, hundreds of them) opens the seat; ``admit`` never raises, whatever the query.
* The host's new link for a seat: the old link opens nothing, the old browser's pages hold
  nothing (their answers are refused), and whoever opens the new link resumes the seat with
  its answers so far.
* A game whose observation counts its agents from 0 while its tables name them by Mesa's
  ``unique_id`` (a game of the test's own): the seat's page and its facts name the agent as the
  tables do, and the host's picture numbers its agents the same way, the people marked.
"""

from __future__ import annotations

import random
import string
import threading

import lab_pledge
import pytest
from lab_people import play

from llm_mesa import register_game
from llm_mesa.games import agent_names
from llm_mesa.lab import LabSession, SeatError
from llm_mesa.lab.session import MAX_QUERY_CHARS
from llm_mesa.registry import get_game, unregister_game
from llm_mesa.visualization.lab_host import people_spec
from llm_mesa.visualization.network_view import spec_of

TRACKING = ["&utm_source&utm_medium&utm_campaign&fbclid", "&utm_source=newsletter&utm_medium=email&fbclid=IwAR0x",
            "&fbclid=a&fbclid=b&gclid=c&mc_eid=d&_hsenc=e", "&" + "&".join(f"p{i}={i}" for i in range(300)),
            "&seat=someone-else", "&=&&==&%zz&%", "#fragment"]


class RingByIds(lab_pledge.PledgeModel):
    """The pledge game with its ring out of the tables' sight: they then name agents by Mesa's ``unique_id``
    (1..N), while each observation still counts from 0 (``PledgeView.agent``)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.ring = [self.network]
        del self.network


class PledgeByIds(lab_pledge.PledgeGame):
    name = "pledge-ids"

    def build(self, parameters, policy, seed):
        return RingByIds(policy, seed, **parameters)


@pytest.fixture(scope="module", autouse=True)
def games_registered():
    register_game(lab_pledge.GAME)
    register_game(PledgeByIds())
    yield
    unregister_game("pledge-ids")
    unregister_game(lab_pledge.NAME)


def consensus_lab(seats=2) -> LabSession:
    return LabSession(get_game("consensus"), {"n": 10, "max_rounds": 2}, "majority-inertia", 3, seats, deadline=5.0)


@pytest.mark.parametrize("extra", TRACKING)
def test_a_seat_link_with_any_extra_parameters_opens_the_seat(extra):
    lab = consensus_lab()
    seat = lab.seats[0]
    assert lab.admit(f"?seat={seat.token}{extra}", "browser-a") is seat
    assert lab.admit(f"?host={lab.host_token}{extra}", "browser-h") == "host"
    assert lab.admit(f"?utm_source=x&seat={lab.seats[1].token}{extra}", "browser-b") is lab.seats[1]  # anywhere in it


def test_no_query_whatever_makes_admit_raise_and_junk_opens_nothing():
    lab = consensus_lab()
    draw = random.Random(5)
    alphabet = string.printable + "éß%&=?#"
    for _ in range(2000):
        junk = "".join(draw.choice(alphabet) for _ in range(draw.randrange(0, 200)))
        assert lab.admit(junk, "browser") is None
    assert lab.admit(f"seat={lab.seats[0].token}&" + "x" * MAX_QUERY_CHARS, "browser") is None  # refused unread
    assert all(not seat.joined for seat in lab.seats)


def test_a_reissued_link_opens_the_seat_with_its_answers_and_the_old_one_and_its_pages_hold_nothing():
    lab = LabSession(get_game("consensus"), {"n": 10, "max_rounds": 3}, "majority-inertia", 3, 1, seat_agents=[4],
                     deadline=0.5)
    seat = lab.seats[0]
    old = seat.token
    assert lab.admit(f"seat={old}", "crashed-browser") is seat
    lab.base = "http://127.0.0.1:8522"
    game = threading.Thread(target=lab.play, daemon=True)
    game.start()
    game.join(timeout=30)  # nobody answers: every round's deadline passes
    assert len(seat.answers) == 3 and seat.holds("crashed-browser")
    link = lab.reissue(seat)
    assert link == f"http://127.0.0.1:8522/?seat={seat.token}" and seat.token != old and seat.reissued == 1
    assert not seat.holds("crashed-browser") and not seat.joined
    for browser in ("crashed-browser", "another-browser"):
        assert lab.admit(f"seat={old}", browser) is None
    with pytest.raises(SeatError, match="no longer holds the seat"):
        seat.submit({"colour": "red"}, question=1, session="crashed-browser")
    assert lab.admit(link.split("?", 1)[1], "new-browser") is seat and seat.holds("new-browser")
    assert len(seat.answers) == 3  # its history came with it
    assert lab.admit(link.split("?", 1)[1], "third-browser") is None  # the new link is held in its turn


def test_a_seat_given_to_the_agents_policy_has_no_link_to_reissue():
    lab = consensus_lab(seats=1)
    lab.start()
    with pytest.raises(SeatError, match="given to the agents' policy"):
        lab.reissue(lab.seats[0])


def test_a_seat_and_the_hosts_picture_name_agents_as_the_tables_do_when_the_observation_counts_otherwise():
    lab = LabSession(get_game("pledge-ids"), {"n": 6, "max_rounds": 2}, "match", 7, 1, seat_agents=[3], deadline=5.0)
    seat = lab.seats[0]
    model_agent = {name: agent for agent, name in agent_names(lab.model).items()}[3]
    assert model_agent.observe().agent == 2  # the observation's own count, from 0
    assert seat.label == "agent 3"
    seen = []
    play(lab, {1: lambda r, facts: seen.append(facts) or {"pledge": 1}})
    assert seen and all(facts.agent == "agent 3" and facts.rows[0] == ("You are", "agent 3") for facts in seen)
    assert all("agent" != label for facts in seen for label, _ in facts.rows)  # the observation's own number: not shown


def test_the_hosts_network_picture_rings_the_people_and_names_nodes_as_the_tables_do():
    lab = LabSession(get_game("consensus"), {"n": 10, "max_rounds": 2}, "majority-inertia", 3, 2, seat_agents=[2, 7],
                     deadline=5.0)
    spec = people_spec(spec_of(lab.snapshot.picture), lab.shown, grid=False)
    nodes = {row["agent"]: row for row in spec["datasets"]["nodes"]}
    assert {name for name, row in nodes.items() if row["person"]} == {2, 7}
    assert nodes[2]["person"] == "seat 1" and nodes[7]["person"] == "seat 2"
    ring = spec["layer"][-1]
    assert ring["transform"] == [{"filter": "datum.person != ''"}] and ring["mark"]["filled"] is False
    assert "seat 1: node 2, seat 2: node 7" in spec["title"]["subtitle"][-1]


def test_the_hosts_grid_picture_marks_the_persons_cell_and_names_its_agents_by_the_tables():
    lab = LabSession(get_game("schelling"), {"width": 6, "height": 6, "max_rounds": 2}, "mesa", 7, 1, deadline=5.0)
    seat = lab.seats[0]
    spec = people_spec(spec_of(lab.snapshot.picture), lab.shown, grid=True)
    cells = spec["datasets"]["cells"]
    marked = [cell for cell in cells if cell["person"]]
    members = [cell.get("members", [cell.get("agent")]) for cell in cells]  # a cell of one agent names it alone
    assert len(marked) == 1 and marked[0]["person"] == "seat 1"
    assert seat.agent in marked[0].get("members", [marked[0].get("agent")])
    names = set(agent_names(lab.model).values())
    assert {m for held in members for m in held if m is not None} == names  # every agent by its tables' name
