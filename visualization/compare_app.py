"""Two policies side by side, for any game with a policy choice: one set of parameters, one seed.

Open it with ``llm-mesa viz --game NAME --compare``. Population A (by default the
game's LLM agents on the built-in loopback stand-in, when it has them) and population
B (its first rule policy) play the same game from the same seed, hence the same
graph and starting state, in two panels that step together; their per-round curves
are overlaid (dashes tell the populations apart), each panel has its agent panel
(one selection: the same agent in both), and the two echo-chamber maps share one
bubble scale. Each browser session has its own pair.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pandas as pd
import solara

from llm_mesa.views.controls import LLM, ControlError

from .controls import ControlPanel, ErrorNote, GameButtons, page_view, use_session
from .network_view import Banners, NetworkPanel
from .panels import AgentPanel, Charts, Messages, RoundLabel

POPULATIONS = ("A", "B")


def compare_controls(view) -> dict[str, dict[str, Any]]:
    """The game's controls once, and one policy per population (A: the LLM policy when there is one)."""
    base = dict(view.controls())
    policy = base.pop(view.policy_control)
    choices = list(policy["values"])
    first_rule = next((c for c in choices if c != LLM), choices[0])
    a = LLM if LLM in choices else first_rule
    b = next((c for c in choices if c not in (a, LLM)), first_rule)
    pair = {"policy_a": {**policy, "value": a, "label": "Population A: policies"},
            "policy_b": {**policy, "value": b, "label": "Population B: policies"}}
    names = list(base)
    at = names.index("seed") if "seed" in names else len(names)
    return {**{k: base[k] for k in names[:at]}, **pair, **{k: base[k] for k in names[at:]}}


def build_pair(view, values: dict[str, Any]) -> tuple[Any, Any]:
    """Both populations from the same values and seed; an error on a policy names that population's control."""
    common = {k: v for k, v in values.items() if k not in ("policy_a", "policy_b")}
    pair = []
    for key in ("policy_a", "policy_b"):
        try:
            model = view.build_from(common, policy=str(values[key]))
        except ControlError as exc:
            raise ControlError(key if exc.control == view.policy_control else exc.control, str(exc)) from None
        model._llm_mesa_population = f"{POPULATIONS[len(pair)]}: {values[key]}"
        pair.append(model)
    return tuple(pair)


def compared_rounds(view, pair) -> pd.DataFrame:
    """Both populations' per-round tables, one ``population`` column telling them apart."""
    frames = [view.rounds(m).assign(population=m._llm_mesa_population) for m in pair]
    joined = pd.concat(frames, ignore_index=True)
    joined.attrs.update(frames[0].attrs)
    return joined


#: the parts of a population's panel, one row of the page each: header, round, banners, picture, agent, messages
PARTS = 6
#: the two panels side by side; each panel's parts share the page's rows (CSS subgrid), so a banner that wraps
#: in one panel moves the rows below it in both, and the pictures, agent panels and messages stay in line
PAIR_GRID = {"display": "grid", "grid-template-columns": "minmax(0, 1fr) minmax(0, 1fr)", "column-gap": "16px",
             "row-gap": "4px", "align-items": "start"}
PANEL_GRID = {"display": "grid", "grid-template-rows": "subgrid", "grid-row": f"span {PARTS}", "min-width": "0"}


@solara.component
def PopulationPanel(view, model, selected: int, on_select, version: int, lock=None):
    with lock if lock is not None else contextlib.nullcontext():  # Play steps in a thread
        snapshot = view.snapshot(model, selected)
    name = model._llm_mesa_population
    with solara.Div(classes=["llm-mesa-panel", f"llm-mesa-panel-{name[0].lower()}"], style=PANEL_GRID):
        solara.Markdown(f"#### Population {name.split(':')[0]}: `{name.split(': ', 1)[1]}`")
        RoundLabel(snapshot.label, classes=("llm-mesa-panel-round",))
        with solara.Column(gap="2px", classes=["llm-mesa-panel-banners"]):
            Banners(snapshot.banners)
        if snapshot.picture is not None:
            NetworkPanel(snapshot.picture, selected=snapshot.selected, on_select=on_select, height=380)
        else:
            solara.Div()
        if snapshot.agents:
            AgentPanel(snapshot.agents, snapshot.selected, dict(snapshot.agent), on_select, names=snapshot.names)
        else:
            solara.Div()
        with solara.Column(gap="0px"):
            Messages(snapshot)


@solara.component
def ComparePage(view):
    specs = solara.use_memo(lambda: compare_controls(view), dependencies=[])
    session, values, version = use_session(lambda v: build_pair(view, v), specs,
                                           lambda search: _query(view, specs, search))
    pair = session.game
    selected, set_selected = solara.use_state(0)
    solara.Title(f"{view.title}: two policies")
    with solara.Sidebar():
        solara.Markdown("### One game, two populations")
        ControlPanel(specs, values, session.applied, session.errors)
    with solara.Column(style={"padding": "8px 16px"}, classes=["llm-mesa-page"]):
        with solara.Row(style={"align-items": "center", "flex-wrap": "wrap"}):
            with session.lock:
                label = view.round_label(max(pair, key=view.round_number)) if pair else "Round 0"
            RoundLabel(label)
            GameButtons(session, values, version)
        ErrorNote(session, "pair")
        if pair:
            solara.Text(f"Same parameters, same seed ({session.applied.get('seed')}): the same graph and start; "
                        "the panels step together.")
            with solara.Div(classes=["llm-mesa-pair"], style=PAIR_GRID):
                for model in pair:
                    PopulationPanel(view, model, selected, set_selected, version.value, session.lock)
            with session.lock:
                rounds = compared_rounds(view, pair)
                last = max(view.round_number(m) for m in pair)
            charts = view.charts(rounds, dash="population", last_round=last)
            with solara.Columns([1, 1], classes=["llm-mesa-plots"], style={"align-items": "flex-start"}):
                Charts(charts[: (len(charts) + 1) // 2])
                Charts(charts[(len(charts) + 1) // 2:])


def _query(view, specs, search):
    from llm_mesa.views.controls import query_values

    return query_values(specs, search, view.game.parameters)


@solara.component
def Page():
    view = solara.use_memo(page_view, dependencies=[])
    ComparePage(view)


__all__ = ["ComparePage", "Page", "build_pair", "compare_controls", "compared_rounds"]
