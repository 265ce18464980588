"""The lab's pages (``llm-mesa lab``): a seat's page, the host page, and the refusal.

One Solara page per browser; which one it is comes from its link's token
(``LabSession.admit``): ``?seat=TOKEN`` opens that seat (held by the first browser that
opens it; a reload resumes it), ``?host=TOKEN`` the host page, anything else the refusal,
which shows nothing of the game.

A seat's page is built from that seat alone: the question open there (the facts of its
agent's observation and the answer form), its own last answers and the lab's state, so
neither the page nor its websocket traffic carries another agent's private data. The host
page shows the whole game as the explorer draws it (its network view and charts, from the
snapshot the game thread takes after every round) and every seat's progress.

Pages follow the lab through one thread each (``use_lab``): it wakes on every change and,
while a question is open, every second, for the countdown.
"""

from __future__ import annotations

import threading
from typing import Any

import solara

from llm_mesa.lab.seat import Seat
from llm_mesa.lab.session import ENDED, PLAYING, STOPPED, WAITING, LabSession

from .lab_form import AnswerForm
from .network_view import Banners, NetworkPanel
from .panels import Charts

#: the lab this server holds (set by ``llm-mesa lab`` before it serves)
LAB: LabSession | None = None
#: where the finished game was written, for the host page
WRITTEN: list[str] = []
REFUSAL = ("This link opens nothing here: its token is wrong, or its seat is already held in another browser "
           "(a seat opens in one browser only; reloading that browser resumes it).")


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
def Refusal():
    with solara.Column(style={"padding": "24px", "max-width": "640px"}, classes=["llm-mesa-lab-refusal"]):
        solara.Error(REFUSAL)


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
def SeatPage(lab: LabSession, seat: Seat):
    use_lab(lab)
    question = seat.question
    last = seat.last_answer()
    with solara.Column(style={"padding": "16px 24px", "max-width": "900px"}, classes=["llm-mesa-lab-seat"]):
        solara.Text(f"Seat {seat.number}: you play {seat.label}", classes=["llm-mesa-lab-title"],
                    style={"font-size": "1.4em", "font-weight": "bold"})
        if question is not None and question.answer is None:
            facts = question.asked.facts
            solara.Text(facts.heading(), classes=["llm-mesa-round"], style={"font-size": "1.2em", "font-weight": "bold"})
            left = question.left()
            solara.Text(f"{left:.0f} s left to answer", classes=["llm-mesa-lab-countdown"])
            solara.ProgressLinear(value=100 * left / lab.deadline, color="primary")
            FactRows(facts)
            AnswerForm(question.asked.form, seat.submit).key(f"{facts.round}-{question.opened}")
            return
        if lab.state == WAITING:
            solara.Info(lab.status() + " The game starts when every seat has been opened, or when the host starts it.",
                        classes=["llm-mesa-lab-waiting"])
        elif lab.state == PLAYING and last is not None and last.round == lab.playing_round and not last.timeout:
            solara.Success(f"Your answer for round {last.round} is in: {last.words()}. The round closes when every "
                           "seat has answered, or at the deadline.", classes=["llm-mesa-lab-answered"])
        elif lab.state == PLAYING:
            solara.Info(lab.status() + " Your next question opens when your turn comes.", classes=["llm-mesa-lab-between"])
        elif lab.state == ENDED:
            solara.Success(f"The game has ended: {lab.outcome()}.", classes=["llm-mesa-lab-ended"])
        else:
            solara.Warning(lab.status(), classes=["llm-mesa-lab-stopped"])
        if last is not None:
            solara.Text(f"Your last answer, round {last.round}: {last.words()}.", classes=["llm-mesa-lab-last"])


@solara.component
def SeatRows(lab: LabSession, tick: int):
    """Every seat's progress: agent, opened, answering now, timeouts, the last answer's time (``tick``: redrawn
    at each change of the lab, whose seats are the same objects throughout)."""
    with solara.Column(gap="2px", classes=["llm-mesa-lab-seats"]):
        for seat in lab.seats:
            question = seat.question
            now = "given to the agents' policy" if seat.closed else "not opened" if not seat.joined else \
                f"answering ({question.left():.0f} s left)" if question is not None else \
                "answered" if lab.state == PLAYING and (last := seat.last_answer()) is not None \
                and last.round == lab.playing_round else "-"
            last = seat.last_answer()
            took = "-" if last is None else "missed" if last.timeout else f"{last.response_s:.1f} s"
            solara.Text(f"seat {seat.number} · {seat.label} · {now} · timeouts {seat.timeouts} · last answer {took}",
                        classes=["llm-mesa-lab-seat-row", f"llm-mesa-lab-seat-{seat.number}"])


@solara.component
def HostPage(lab: LabSession):
    tick = use_lab(lab)
    snapshot = lab.snapshot
    with solara.Column(style={"padding": "12px 20px"}, classes=["llm-mesa-lab-host"]):
        solara.Text(f"llm-mesa lab: {lab.game.summary or lab.game.name}", style={"font-size": "1.3em",
                                                                                  "font-weight": "bold"})
        with solara.Row(style={"align-items": "center"}):
            solara.Text(lab.status(), classes=["llm-mesa-lab-status"], style={"font-weight": "bold"})
            if lab.state == WAITING:
                solara.Button("Start now", on_click=lab.start, color="primary", classes=["llm-mesa-lab-start"])
        if lab.state == WAITING:
            solara.Text("Start now gives the seats nobody opened to the agents' policy.", style={"color": "#666"})
        if lab.state == ENDED:
            solara.Success(f"The game has ended: {lab.outcome()}." + (f" Written to {WRITTEN[0]}." if WRITTEN else ""),
                           classes=["llm-mesa-lab-ended"])
        if lab.state == STOPPED:
            solara.Warning(lab.status(), classes=["llm-mesa-lab-stopped"])
        SeatRows(lab, tick)
        solara.Text(f"The whole game, as of {snapshot.label.lower()}:", classes=["llm-mesa-lab-shown"],
                    style={"margin-top": "8px", "font-weight": "bold"})
        Banners(snapshot.banners)
        with solara.Row(style={"align-items": "flex-start", "flex-wrap": "wrap"}):
            if snapshot.picture is not None:
                with solara.Column(style={"flex": "1 1 520px", "min-width": "0"}):
                    NetworkPanel(snapshot.picture, height=440)
            with solara.Column(style={"flex": "1 1 360px", "min-width": "0"}):
                Charts(lab.view.charts(snapshot.rounds))


@solara.component
def Page():
    lab = LAB
    router = solara.use_router()
    session = solara.get_session_id()
    who = solara.use_memo(lambda: lab.admit(router.search or "", session) if lab is not None else None,
                          dependencies=[router.search])
    solara.Title("llm-mesa lab")
    if who is None:
        Refusal()
    elif who == "host":
        HostPage(lab)
    else:
        SeatPage(lab, who)


__all__ = ["HostPage", "LAB", "Page", "Refusal", "SeatPage"]
