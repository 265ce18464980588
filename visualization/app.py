"""The explorer's live page, for any game: controls, Step/Play/Reset, the network, charts, agent panel.

Run it with ``llm-mesa viz --game NAME`` (which first makes the front-end available
offline), or ``solara run llm_mesa.visualization.app`` once the asset cache is
filled (the game: ``$LLM_MESA_GAME``, else the only one installed).

Each browser session builds its own game from the controls (two tabs never step
each other's game). Everything drawn comes from the game's view (``view_of(Game)``):
this module only lays the page out.
"""

from __future__ import annotations

import contextlib

import solara

from .controls import ControlPanel, ErrorNote, GameButtons, page_view, use_session
from .panels import RoundLabel, RoundPanel


@solara.component
def LiveRound(view, model, version: int, lock=None):
    """The running game's round, read under the session's lock: Play steps in a thread, never read half-way."""
    selected, set_selected = solara.use_state(0)
    with lock if lock is not None else contextlib.nullcontext():
        snapshot = view.snapshot(model, selected)
    charts = view.charts(snapshot.rounds)
    RoundPanel(snapshot, charts, on_select=set_selected)


@solara.component
def Sidebar(view, specs, values, session, settled):
    """The controls, redrawn when a value is typed or a Reset (or a failed round) settles them; never at a Step."""
    _ = settled.value  # subscribe: a Reset changes what "Reset to apply" and the errors say
    solara.Markdown(f"### {view.game.summary or view.game.name}")
    ControlPanel(specs, values, session.applied, session.errors)


@solara.component
def RoundArea(view, session, values, version, settled):
    """The round line, the buttons, an error, and the round itself: all that a Step redraws."""
    model = session.game
    with solara.Row(style={"align-items": "center", "flex-wrap": "wrap"}):
        with session.lock:
            label = view.round_label(model) if model is not None else "Round 0"
        RoundLabel(label)
        GameButtons(session, values, version, settled=settled)
    ErrorNote(session)
    if model is not None:
        LiveRound(view, model, version.value, session.lock)


@solara.component
def GamePage(view):
    """One game per visitor: its controls in the sidebar, its round in the page. A Step redraws the round alone
    (the sidebar's controls stay as they are drawn: a 50 x 50 grid's page redraws in less time)."""
    specs = solara.use_memo(view.controls, dependencies=[])
    session, values, version = use_session(view.build_from, specs, view.query_values)
    settled = solara.use_reactive(0)
    solara.Title(view.title)
    with solara.Sidebar():
        Sidebar(view, specs, values, session, settled)
    with solara.Column(style={"padding": "8px 16px"}, classes=["llm-mesa-page"]):
        RoundArea(view, session, values, version, settled)


@solara.component
def Page():
    view = solara.use_memo(page_view, dependencies=[])
    GamePage(view)


__all__ = ["GamePage", "LiveRound", "Page", "RoundArea", "Sidebar"]
