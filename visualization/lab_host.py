"""The lab's host page: the whole game as the explorer draws it, every seat's progress and connection.

Each seat's row says whether its person is on their page (connected, or disconnected since
when: ``lab_presence``), and offers a new link for the seat (a browser that crashed, a link
lost): the old link then opens nothing, and the person who opens the new one resumes the
seat with its answers. The picture marks the people's nodes (or cells) with a ring and names
every agent as the game's tables do, so the host reads one numbering on every page.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import solara

from llm_mesa.lab.seat import Seat
from llm_mesa.lab.session import ENDED, PLAYING, STOPPED, WAITING, LabSession, Shown
from llm_mesa.views import GridPicture, Picture

from .network_view import VIEWS, Banners, spec_of
from .panels import Charts
from .vega_widget import VegaChart

#: the ring that marks a person's node or cell
PERSON_COLOUR = "#7b1fa2"


def clock(moment: float | None) -> str:
    return "-" if moment is None else time.strftime("%H:%M:%S", time.localtime(moment))


def connection(lab: LabSession, seat: Seat) -> str:
    """The seat's person and their page, in a few words."""
    if seat.closed:
        return "given to the agents' policy"
    if seat.holder is None:
        return f"new link issued at {clock(seat.since)}, not opened yet" if seat.reissued else "not opened"
    return "connected" if seat.connected else f"disconnected since {clock(seat.since)}"


def progress(lab: LabSession, seat: Seat) -> str:
    question = seat.question
    if question is not None:
        return "answered" if question.answer is not None else f"answering ({question.left():.0f} s left)"
    last = seat.last_answer()
    return "answered" if lab.state == PLAYING and last is not None and last.round == lab.playing_round else "-"


def people_spec(spec: dict[str, Any], shown: Shown, grid: bool) -> dict[str, Any]:
    """``spec`` (a network's or a grid's picture) with the agents named as the tables name them and each person's
    node or cell ringed, their seat in its tooltip and in the subtitle."""
    name = "cells" if grid else "nodes"
    rows = spec["datasets"][name]
    seats = {shown.names[index]: seat for index, seat in shown.people.items()}  # the pictures name agents already
    for row in rows:
        members = row.get("members", [row.get("agent")]) if grid else [row["agent"]]
        row["person"] = ", ".join(f"seat {seats[m].number}" for m in members if m is not None and m in seats)
    if not shown.people:
        return spec
    drawn = next(layer for layer in spec["layer"] if layer.get("name") == name)
    size = drawn["mark"]["size"]
    tooltip = [*drawn["encoding"]["tooltip"], {"field": "person", "title": "person"}]
    ring = {"data": {"name": name}, "transform": [{"filter": "datum.person != ''"}],
            "mark": {"type": "point", "shape": drawn["mark"]["shape"] if grid else "circle", "filled": False,
                     "stroke": PERSON_COLOUR, "strokeWidth": 3, "size": size * (1.5 if grid else 3.2), "cursor": "pointer"},
            "encoding": {"x": drawn["encoding"]["x"], "y": drawn["encoding"]["y"], "tooltip": tooltip}}
    seats = ", ".join(f"seat {seat.number}: {seat.label}" for _, seat in sorted(shown.people.items(),
                                                                               key=lambda item: item[1].number))
    subtitle = spec["title"].get("subtitle", [])
    title = {**spec["title"], "subtitle": [*([subtitle] if isinstance(subtitle, str) else subtitle),
                                           f"purple ring: a person ({seats})"]}
    return {**spec, "title": title, "layer": [*spec["layer"], ring]}


@solara.component
def PeoplePicture(picture: Picture, shown: Shown, height: int = 440):
    """The game's picture (its network, or its grid) with the people marked."""
    grid = isinstance(picture, GridPicture)
    spec = solara.use_memo(lambda: people_spec(spec_of(picture, VIEWS[0], None, height), shown, grid),
                           dependencies=[picture.key, picture.round_number, tuple(picture.state), id(shown)])
    with solara.Column(classes=["llm-mesa-grid" if grid else "llm-mesa-network", "llm-mesa-lab-picture"], gap="4px",
                       style={"min-width": "0", "overflow-x": "auto"}):
        solara.Text(f"purple ring: a person's seat; hover a {'cell' if grid else 'node'} for its details",
                    style={"font-size": "0.8em", "color": "#666"})
        VegaChart(spec, classes=["llm-mesa-grid-chart" if grid else "llm-mesa-network-chart"])


@solara.component
def SeatRows(lab: LabSession, tick: int):
    """Every seat: its agent, its person's connection, what it is doing, its timeouts and last answer's time, and a
    new link on the host's word (``tick``: redrawn at each change of the lab, whose seats are the same objects)."""
    issued, set_issued = solara.use_state({})
    live = lab.state in (WAITING, PLAYING)

    def reissue(seat: Seat) -> None:
        try:
            url = lab.reissue(seat)
        except Exception as exc:  # noqa: BLE001 - the host page says why, never a traceback
            set_issued({**issued, seat.number: f"no new link: {exc}"})
            return
        print(f"seat {seat.number} (new link; the old one opens nothing now): {url}", flush=True)
        set_issued({**issued, seat.number: url})

    with solara.Column(gap="2px", classes=["llm-mesa-lab-seats"]):
        for seat in lab.seats:
            last = seat.last_answer()
            took = "-" if last is None else "missed" if last.timeout else f"{last.response_s:.1f} s"
            with solara.Row(style={"align-items": "center"}, classes=[f"llm-mesa-lab-seat-line-{seat.number}"]):
                solara.Text(f"seat {seat.number} · {seat.label} · {connection(lab, seat)} · {progress(lab, seat)} · "
                            f"timeouts {seat.timeouts} · last answer {took}",
                            classes=["llm-mesa-lab-seat-row", f"llm-mesa-lab-seat-{seat.number}"])
                if live and not seat.closed:
                    solara.Button("New link", on_click=lambda seat=seat: reissue(seat), small=True, outlined=True,
                                  classes=["llm-mesa-lab-reissue", f"llm-mesa-lab-reissue-{seat.number}"])
            if seat.number in issued:
                solara.Text(f"seat {seat.number}'s new link (the old one opens nothing now): {issued[seat.number]}",
                            classes=["llm-mesa-lab-new-link", f"llm-mesa-lab-new-link-{seat.number}"],
                            style={"font-family": "monospace", "font-size": "0.85em", "margin-left": "16px"})


@solara.component
def HostPage(lab: LabSession, tick: int, written: list[str]):
    snapshot, shown = lab.snapshot, lab.shown
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
            solara.Success(f"The game has ended: {lab.outcome()}." + (f" Written to {written[0]}." if written else ""),
                           classes=["llm-mesa-lab-ended"])
        if lab.state == STOPPED:
            solara.Warning(lab.status(), classes=["llm-mesa-lab-stopped"])
        SeatRows(lab, tick)
        solara.Text("A person whose browser crashed or who lost their link: press New link and give them the new "
                    "one; they resume their seat, with their answers so far.", style={"color": "#666",
                                                                                        "font-size": "0.85em"})
        solara.Text(f"The whole game, as of {snapshot.label.lower()}:", classes=["llm-mesa-lab-shown"],
                    style={"margin-top": "8px", "font-weight": "bold"})
        Banners(snapshot.banners)
        with solara.Row(style={"align-items": "flex-start", "flex-wrap": "wrap"}):
            if snapshot.picture is not None:
                with solara.Column(style={"flex": "1 1 520px", "min-width": "0"}):
                    PeoplePicture(snapshot.picture, shown)
            with solara.Column(style={"flex": "1 1 360px", "min-width": "0"}):
                Charts(lab.view.charts(snapshot.rounds))


def report(exc: BaseException) -> None:
    """A page that failed, in one line for the host's terminal: its kind and where (never a token)."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
    print(f"llm-mesa lab: a page failed ({type(exc).__name__}{where}); its person was asked to reload it",
          file=sys.stderr, flush=True)


__all__ = ["HostPage", "PERSON_COLOUR", "PeoplePicture", "SeatRows", "connection", "people_spec", "report"]
