"""The lab's pages (``llm-mesa lab``): a seat's page, the host page (``lab_host``), and the refusal.

One Solara page per browser tab; which one it is comes from its link's token
(``LabSession.admit``): ``?seat=TOKEN`` opens that seat (held by the first browser that
opens it; a reload, or a second tab of that browser, resumes it), ``?host=TOKEN`` the host
page, anything else the refusal, which shows nothing of the game and says what to do.

A seat's page is built from that seat alone: the question open there (the facts of its
agent's observation and the answer form), its own answers so far and the lab's state, so
neither the page nor its websocket traffic carries another agent's private data. Its form
answers the question it was drawn for and no other (``Seat.submit`` checks the question's
number): a click on a form of an earlier question, in this tab or another, is refused and
the page says so. A page whose browser no longer holds the seat (the host issued a new
link) shows the refusal.

Nothing a person meets is a traceback: a page that fails shows what to do (reload it, or
ask the host) and the host's terminal gets one line.

Pages follow the lab through one thread each (``use_lab``): it wakes on every change and,
while a question is open, every second, for the countdown.
"""

from __future__ import annotations

import threading
from typing import Any

import solara

from llm_mesa.lab.seat import Seat, answer_words
from llm_mesa.lab.session import ENDED, PLAYING, WAITING, LabSession

from .lab_form import AnswerForm
from .lab_host import HostPage, report
from .lab_presence import presence_of

#: the lab this server holds (set by ``llm-mesa lab`` before it serves)
LAB: LabSession | None = None
#: where the finished game was written, for the host page
WRITTEN: list[str] = []
REFUSAL = ("This link opens nothing here: its token is wrong, its seat is held in another browser, or the host "
           "issued a new link for it. Ask the lab's host for your seat's link (a seat opens in one browser; "
           "reloading that browser resumes it).")
REISSUED = ("The host issued a new link for this seat, so this page no longer holds it. If the seat is yours, "
            "ask the host for the new link: it resumes your seat with your answers so far.")
TROUBLE = ("Something went wrong on this page. Reload it; if this shows again, ask the lab's host for your "
           "seat's link.")


def use_lab(lab: LabSession) -> int:
    """Re-render on every change of the lab, and each second while a countdown runs; the render count."""
    tick = solara.use_reactive(0)

    def follow():
        stop = threading.Event()

        def loop() -> None:
            seen = lab.version
            while not stop.is_set():
                now = lab.wait(seen, timeout=1.0)
                if now == seen and not lab.counting():
                    continue
                seen = now
                try:
                    tick.set(tick.value + 1)
                except Exception:  # noqa: BLE001 - the page has gone (its kernel closed): stop following
                    return

        threading.Thread(target=loop, name="llm-mesa-lab-page", daemon=True).start()
        return stop.set

    solara.use_effect(follow, [])
    return tick.value


@solara.component
def Refusal(words: str = REFUSAL):
    with solara.Column(style={"padding": "24px", "max-width": "640px"}, classes=["llm-mesa-lab-refusal"]):
        solara.Error(words)


@solara.component
def FactRows(facts: Any):
    """The agent's facts: a row a fact, then each section's lines (plain text: nothing a message says is markup)."""
    with solara.Column(gap="2px", classes=["llm-mesa-lab-facts"]):
        for label, value in facts.rows:
            with solara.Row(gap="8px", classes=["llm-mesa-lab-fact"]):
                solara.Text(f"{label}:", style={"font-weight": "bold", "white-space": "nowrap"})
                solara.Text(value)
        for title, lines in facts.sections:
            solara.Text(title, style={"font-weight": "bold", "margin-top": "8px"}, classes=["llm-mesa-lab-section"])
            for line in lines:
                solara.Text(line, style={"white-space": "pre-wrap", "font-family": "monospace", "font-size": "0.85em"})


@solara.component
def Answers(seat: Seat):
    """The seat's answers so far, newest first (a person back on a new link finds them here)."""
    if not seat.answers:
        return
    with solara.Column(gap="0px", classes=["llm-mesa-lab-history"], style={"margin-top": "12px"}):
        last = seat.answers[-1]
        solara.Text(f"Your last answer, round {last.round}: {last.words()}.", classes=["llm-mesa-lab-last"])
        if len(seat.answers) > 1:
            solara.Text("Your answers so far:", style={"font-weight": "bold", "margin-top": "6px"})
            for answer in reversed(seat.answers):
                solara.Text(f"round {answer.round}: {answer.words()}", classes=["llm-mesa-lab-history-row"],
                            style={"font-size": "0.9em"})


@solara.component
def SeatPage(lab: LabSession, seat: Seat, session: str):
    use_lab(lab)
    notice, set_notice = solara.use_state("")
    context = solara.use_memo(_current_context, [])
    solara.use_effect(lambda: presence_of(lab).page(seat, context) if context is not None else None, [])
    if not seat.holds(session):
        Refusal(REISSUED)
        return
    question = seat.question
    last = seat.last_answer()
    with solara.Column(style={"padding": "16px 24px", "max-width": "900px"}, classes=["llm-mesa-lab-seat"]):
        solara.Text(f"Seat {seat.number}: you play {seat.label}", classes=["llm-mesa-lab-title"],
                    style={"font-size": "1.4em", "font-weight": "bold"})
        if notice:
            solara.Warning(notice, classes=["llm-mesa-lab-refused"])
        if question is not None and question.answer is None:
            facts, number = question.asked.facts, question.number

            def send(values, alternative: int) -> str:
                text = seat.submit(values, alternative, question=number, session=session)
                set_notice("")
                return text

            solara.Text(facts.heading(), classes=["llm-mesa-round"], style={"font-size": "1.2em", "font-weight": "bold"})
            left = question.left()
            solara.Text(f"{left:.0f} s left to answer", classes=["llm-mesa-lab-countdown"])
            solara.ProgressLinear(value=100 * left / lab.deadline, color="primary")
            FactRows(facts)
            AnswerForm(question.asked.form, send, set_notice).key(f"question-{number}")
            Answers(seat)
            return
        if lab.state == WAITING:
            solara.Info(lab.status() + " The game starts when every seat has been opened, or when the host starts it.",
                        classes=["llm-mesa-lab-waiting"])
        elif lab.state == PLAYING and last is not None and last.round == lab.playing_round and not last.timeout:
            solara.Success(f"Your answer for round {last.round} is in: {last.words()}. The round closes when every "
                           "seat has answered, or at the deadline.", classes=["llm-mesa-lab-answered"])
        elif lab.state == PLAYING and question is not None:
            solara.Success(f"Your answer is in: {answer_words(question.answer)}. The round closes when every seat has "
                           "answered, or at the deadline.", classes=["llm-mesa-lab-answered"])
        elif lab.state == PLAYING:
            solara.Info(lab.status() + " Your next question opens when your turn comes.", classes=["llm-mesa-lab-between"])
        elif lab.state == ENDED:
            solara.Success(f"The game has ended: {lab.outcome()}.", classes=["llm-mesa-lab-ended"])
        else:
            solara.Warning(lab.status(), classes=["llm-mesa-lab-stopped"])
        Answers(seat)


def _current_context() -> Any:
    """This tab's kernel (for the seat's connection), or None outside a served page."""
    try:
        from solara.server.kernel_context import get_current_context

        return get_current_context()
    except Exception:  # noqa: BLE001 - rendered outside Solara's server (a test): no connection to follow
        return None


@solara.component
def LabPage(lab: LabSession | None):
    solara.Title("llm-mesa lab")
    router = solara.use_router()
    session = solara.get_session_id()
    who = solara.use_memo(lambda: lab.admit(router.search or "", session) if lab is not None else None,
                          dependencies=[router.search])
    if who is None:
        Refusal()
    elif who == "host":
        HostPage(lab, use_lab(lab), WRITTEN)
    else:
        SeatPage(lab, who, session)


@solara.component
def Page():
    """Every page of the lab, behind one guard: whatever fails below shows what to do, never a traceback.
    (The page's title is set below the guard: Solara's ``Title`` above it would render the guard again and again.)"""
    failed, _ = solara.use_exception()
    reported = solara.use_ref(None)
    if failed is not None:
        if reported.current is not failed:
            reported.current = failed
            report(failed)
        with solara.Column(style={"padding": "24px", "max-width": "640px"}, classes=["llm-mesa-lab-trouble"]):
            solara.Error(TROUBLE)
        return
    LabPage(LAB)


__all__ = ["HostPage", "LAB", "LabPage", "Page", "REFUSAL", "Refusal", "SeatPage"]
