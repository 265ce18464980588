"""One round of any game, drawn from its ``Snapshot``: the pieces every page shares.

The live page, the side-by-side page, the replay viewer, the sweep browser and the
components for Mesa's ``SolaraViz`` all draw a round with these: its banners, the
network panel, the charts, the agent panel and the round's messages. What is drawn
comes from the game's view (``llm_mesa.views``); nothing here knows a game.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import pandas as pd
import solara

from llm_mesa.views import Snapshot

from . import offline  # noqa: F401 - every page draws with these pieces: no telemetry, no check frames
from .network_view import Banners, NetworkPanel
from .vega_widget import VegaChart


def agent_range(names: Sequence[Any]) -> str:
    """The agents' names in a few words: "1..400" when they run on, else the first few."""
    if names and all(isinstance(v, int) and not isinstance(v, bool) for v in names) \
            and list(names) == list(range(names[0], names[0] + len(names))):
        return f"{names[0]}..{names[-1]}"
    shown = ", ".join(map(str, names[:4]))
    return shown + (f", … ({len(names)} agents)" if len(names) > 4 else "")


@solara.component
def AgentPanel(count: int, selected: int, rows: dict[str, str], on_select: Callable[[int], None] | None,
               clickable: bool = True, names: Sequence[Any] = ()):
    """The selected agent (type its name, or click its node when there is a picture).

    Agents are named as the game's tables name them (``names``; default 0..count-1). A name
    the game lacks is refused with a message beside the field, and the agent shown stays (it
    never quietly becomes the nearest agent).
    """
    names = list(names) if len(names) == count else list(range(count))
    refused, set_refused = solara.use_state(cast(str | None, None))

    def choose(value: str | None) -> None:
        text = str(value or "").strip()
        if not text:
            return
        found = next((i for i, name in enumerate(names) if str(name) == text), None)
        if found is None:
            set_refused(f"there is no agent {text}: choose {agent_range(names)}")
            return
        set_refused(None)
        on_select(found)

    with solara.Card("Agent", classes=["llm-mesa-agent"], margin=0):
        if on_select is not None:
            solara.InputText(f"Agent ({agent_range(names)}" + ("; or click it in the picture)" if clickable else ")"),
                             value=str(names[selected]) if 0 <= selected < count else "", on_value=choose,
                             continuous_update=False, classes=["llm-mesa-agent-select"])
            if refused:
                solara.Error(refused, dense=True, classes=["llm-mesa-agent-error"])
        for key, value in rows.items():
            with solara.Row(gap="6px", classes=["llm-mesa-agent-row"]):
                solara.Text(f"{key}:", style={"font-weight": "bold", "white-space": "nowrap"})
                solara.Text(value)


def Charts(charts: Sequence[tuple[str, dict[str, Any]]]):
    """The game's charts, one under another, each with its CSS class."""
    with solara.Column(classes=["llm-mesa-plots"], style={"min-width": "0"}):
        for cls, spec in charts:
            VegaChart(spec, classes=[cls])


def whole_numbers(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its whole-number float columns as whole numbers: a recipient 11 reads "11", never "11.0" (a
    column of numbers with gaps is read back as floats); a gap reads "–"."""
    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if pd.api.types.is_float_dtype(values) and values.dropna().map(float.is_integer).all():
            out[column] = values.map(lambda v: "–" if pd.isna(v) else str(int(v)))
        elif values.dtype == object:
            out[column] = values.map(lambda v: str(int(v)) if isinstance(v, float) and v.is_integer() else v)
    return out


def Messages(snapshot: Snapshot):
    """The round's messages (or utterances), when the game has them."""
    frame = snapshot.messages
    if frame is None:
        return
    with solara.Column(classes=["llm-mesa-messages"]):
        solara.Text(f"{snapshot.messages_title} in round {snapshot.round_number}: {len(frame)}",
                    style={"font-weight": "bold"})
        if len(frame):
            solara.DataFrame(whole_numbers(pd.DataFrame(frame).reset_index(drop=True)), items_per_page=10)


@solara.component
def RoundPanel(snapshot: Snapshot, charts: Sequence[tuple[str, dict[str, Any]]],
               on_select: Callable[[int], None] | None, height: int = 460):
    """A round: banners, then the picture beside the charts (or the charts alone), then agent and messages."""
    Banners(snapshot.banners)
    if snapshot.picture is not None:
        with solara.Columns([3, 2], style={"align-items": "flex-start"}):
            NetworkPanel(snapshot.picture, selected=snapshot.selected, on_select=on_select, height=height)
            Charts(charts)
    else:
        with solara.Columns([1, 1], style={"align-items": "flex-start"}):
            Charts(charts[: (len(charts) + 1) // 2])
            Charts(charts[(len(charts) + 1) // 2:])
    with solara.Columns([2, 3], style={"align-items": "flex-start"}):
        if snapshot.agents:
            AgentPanel(snapshot.agents, snapshot.selected, dict(snapshot.agent), on_select,
                       clickable=snapshot.picture is not None, names=snapshot.names)
        else:
            solara.Text("")
        Messages(snapshot)


def RoundLabel(text: str, classes: Sequence[str] = ("llm-mesa-round",)):
    """The round line ("Round t ..."), in the place every page keeps it."""
    solara.Text(text, classes=list(classes), style={"font-weight": "bold", "font-size": "1.15em", "margin-right": "12px"})


__all__ = ["AgentPanel", "agent_range", "Charts", "Messages", "RoundLabel", "RoundPanel"]
