"""The lab's pages, rendered in this process (no server, no browser): what a participant is shown.

* A page that fails shows what to do, never a traceback, a server path or the error's words;
  the host's terminal gets one line of its kind and place.
* A seat page's form answers the question it was drawn for: a click on it after that question
  closed (the page not yet redrawn: its following thread held still here) is refused, the page
  says so, and the question open then is not answered by it.
* A page of a browser that no longer holds its seat (the host issued a new link) shows the
  refusal, which says what to do, and no form.
"""

from __future__ import annotations

import contextlib
import threading
import time

import ipyvuetify as v
import lab_pledge
import pytest
import reacton
import solara

from llm_mesa import register_game
from llm_mesa.lab import LabSession
from llm_mesa.registry import get_game, unregister_game
from llm_mesa.visualization import lab_app


@pytest.fixture(scope="module", autouse=True)
def pledge_registered():
    register_game(lab_pledge.GAME)
    yield
    unregister_game(lab_pledge.NAME)


def texts(widget) -> list[str]:
    """Every text a widget tree shows."""
    found = []
    for child in getattr(widget, "children", None) or []:
        found += [child] if isinstance(child, str) else texts(child)
    for name in ("label", "value", "description"):
        value = getattr(widget, name, None)
        if isinstance(value, str):
            found.append(value)
    return found


def test_a_page_that_fails_shows_what_to_do_and_never_a_traceback(monkeypatch, capsys):
    @solara.component
    def Failing(lab):
        raise ValueError("Max number of fields exceeded in /srv/lab/llm_mesa/lab/session.py")

    monkeypatch.setattr(lab_app, "LabPage", Failing)
    box, rc = reacton.render(lab_app.Page(), handle_error=False)
    shown = " ".join(texts(box))
    assert "Reload it" in shown and "ask the lab's host" in shown
    for word in ("Traceback", "ValueError", "fields", "/srv", ".py"):
        assert word not in shown
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("llm-mesa lab:")]
    assert lines == [lines[0]] and "ValueError" in lines[0] and "fields exceeded" not in lines[0]
    rc.close()


def playing_pledge(deadline: float = 20.0) -> LabSession:
    lab = LabSession(get_game("pledge"), {"n": 6, "max_rounds": 2}, "match", 7, 1, seat_agents=[2], deadline=deadline)
    lab.seats[0].claim("this-browser")

    def play() -> None:
        with contextlib.suppress(BaseException):  # the test stops the lab when it has seen enough
            lab.play()

    threading.Thread(target=play, daemon=True).start()
    return lab


def wait_question(seat, number: int):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        question = seat.question
        if question is not None and question.number == number and question.answer is None:
            return question
        time.sleep(0.005)
    raise AssertionError(f"question {number} never opened")


def test_a_click_on_a_form_whose_question_closed_is_refused_and_the_page_says_so(monkeypatch):
    monkeypatch.setattr(lab_app, "use_lab", lambda lab: 0)  # the page is not redrawn by the lab: it lags behind
    lab = playing_pledge()
    seat = lab.seats[0]
    first = wait_question(seat, 1)
    box, rc = reacton.render(lab_app.SeatPage(lab, seat, "this-browser"), handle_error=False)
    assert "Round 1 of 2" in texts(box)
    seat.submit({"pledge": 3, "note": "other tab"}, question=first.number, session="this-browser")  # another tab
    second = wait_question(seat, 2)
    send = rc.find(v.Btn, children=["Send"])
    send.widget.click()  # this tab's form, drawn for question 1
    shown = " ".join(texts(box))
    assert "Not recorded" in shown and "already answered" in shown
    assert seat.question is second and second.answer is None  # question 2 is still the person's to answer
    rc.close()
    lab.stop("done")


def test_a_page_of_a_browser_that_no_longer_holds_its_seat_shows_the_refusal_and_no_form(monkeypatch):
    monkeypatch.setattr(lab_app, "use_lab", lambda lab: 0)
    lab = playing_pledge()
    seat = lab.seats[0]
    wait_question(seat, 1)
    lab.reissue(seat)
    box, rc = reacton.render(lab_app.SeatPage(lab, seat, "this-browser"), handle_error=False)
    shown = " ".join(texts(box))
    assert "issued a new link" in shown and "ask the host for the new link" in shown
    assert not rc.find(v.Btn).widgets and "Round" not in shown
    rc.close()
    lab.stop("done")
