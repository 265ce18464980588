"""The Solara explorer of the network consensus game: one game per visitor.

Run it with ``llm-mesa viz`` (which first makes the front-end available offline),
or ``solara run llm_mesa.visualization.app`` once the asset cache is filled and
``SOLARA_ASSETS_PROXY_CACHE_DIR`` points at it.

Each browser session builds its own game from the controls (two tabs never step
each other's game). This module only lays the page out: the game and its measures
come from ``llm_mesa.models.consensus``, the controls' checks from
``consensus_game``, the picture from ``network_view``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import pandas as pd
import solara

from .charts import VegaChart, consensus_charts, llm_charts
from .consensus_game import (
    LOOPBACK_ENDPOINT,
    LOOPBACK_MODEL,
    ExplorerConsensusModel,
    ExplorerError,
    agent_details,
    build_model,
    failure_line,
    llm_agents,
    model_params,
    parse_policy_mix,
)
from .controls import ControlPanel, ErrorNote, GameButtons, use_session
from .layout import drawing_layout
from .network_view import NetworkPanel, NetworkState

TITLE = "llm-mesa: network consensus"


def rounds_frame(model) -> pd.DataFrame:
    """The model's per-round table (round 0 is the initial state), numbers as floats."""
    rounds = model.rounds_table()
    numeric = [c for c in rounds.columns if c not in ("round", "flippers", "largest_component_colour")]
    return rounds.astype({c: float for c in numeric})


def round_label(model) -> str:
    stop = f" ({model.stop_reason})" if getattr(model, "stop_reason", None) else ""
    return f"Round {model.round} of {model.max_rounds}{stop}"


def agent_rows(model, node: int) -> dict[str, str]:
    """One agent's state and last decision, as label -> text."""
    agent = model.agents_by_node[node]
    decision = getattr(agent, "last_decision", None)
    neighbours = list(agent.neighbour_ids)
    shown = ", ".join(str(v) for v in neighbours[:40]) + (f" … ({len(neighbours)} in all)" if len(neighbours) > 40 else "")
    same = sum(model.agents_by_node[v].colour == agent.colour for v in neighbours)
    return {
        "agent": str(node),
        "colour / preference": f"{agent.colour} / {agent.preference}",
        "policy": agent.policy.spec() if hasattr(agent.policy, "spec") else str(agent.policy),
        "neighbours": shown or "-",
        "neighbours on its colour": f"{same} of {len(neighbours)}",
        "colour changes": str(agent.flips),
        "last reason": decision.reason if decision and decision.reason else "-",
        "message": (f"to {decision.message_to}: " if decision and decision.message_to is not None else "")
                   + (decision.message if decision and decision.message else "-"),
        "diary": decision.diary if decision and decision.diary else (agent.diary or "-"),
        "failure": decision.failed if decision and decision.failed else "-",
    }


@solara.component
def AgentPanel(n: int, node: int, rows: dict[str, str], on_select):
    """The selected agent (click a node in the picture, or type its number)."""
    with solara.Card("Agent", classes=["llm-mesa-agent"], margin=0):
        solara.InputInt(f"Agent (0..{n - 1}; or click a node)", value=node,
                        on_value=lambda v: on_select(min(max(int(v or 0), 0), n - 1)),
                        classes=["llm-mesa-agent-select"])
        for key, value in rows.items():
            with solara.Row(gap="6px", classes=["llm-mesa-agent-row"]):
                solara.Text(f"{key}:", style={"font-weight": "bold", "white-space": "nowrap"})
                solara.Text(value)


def LlmPanel(round_number: int, rounds: pd.DataFrame, messages: list, llm: bool):
    """Calls, tokens and failures per round, and this round's messages."""
    with solara.Column(classes=["llm-mesa-llm"]):
        if llm or rounds[["calls", "failures"]].to_numpy().sum() > 0:
            for cls, spec in llm_charts(rounds):
                VegaChart(spec, classes=[cls])
        solara.Text(f"Messages in round {round_number}: {len(messages)}", style={"font-weight": "bold"})
        if messages:
            solara.DataFrame(pd.DataFrame(
                [{"from": m.sender, "to": "neighbours/all" if m.to is None else m.to, "text": m.text}
                 for m in messages]), items_per_page=8)


@solara.component
def GameView(model, version: int, lock=None):
    """The running game: round, failures, the picture, the agent and the charts.

    Everything is read from the model under the session's lock: a game being played
    (Play steps in a thread) is never read half-way through a round.
    """
    selected, set_selected = solara.use_state(0)
    node = min(selected, model.n - 1)
    with lock if lock is not None else contextlib.nullcontext():
        rounds = rounds_frame(model)
        state = NetworkState.of_model(model, agent_details(model), layout=drawing_layout(model))
        failed = failure_line(model)
        rows = agent_rows(model, node)
        round_number, n = model.round, model.n
        messages = [m for m in model.message_log if m.round == round_number]
        llm = bool(llm_agents(model))
    if failed:
        solara.Error(f"Round {round_number}: {failed}.", dense=True, classes=["llm-mesa-failures"])
    with solara.Columns([3, 2], style={"align-items": "flex-start"}):
        NetworkPanel(state, selected=node, on_select=set_selected)
        with solara.Column(classes=["llm-mesa-plots"], style={"min-width": "0"}):
            for cls, spec in consensus_charts(rounds, n):
                VegaChart(spec, classes=[cls])
    with solara.Columns([2, 3], style={"align-items": "flex-start"}):
        AgentPanel(n, node, rows, set_selected)
        LlmPanel(round_number, rounds, messages, llm)


@solara.component
def Page():
    specs = solara.use_memo(model_params, dependencies=[])
    session, values, version = use_session(build_model, specs)
    model = session.game
    solara.Title(TITLE)
    with solara.Sidebar():
        solara.Markdown("### Game")
        ControlPanel(specs, values, session.applied, session.errors)
    with solara.Column(style={"padding": "8px 16px"}, classes=["llm-mesa-page"]):
        with solara.Row(style={"align-items": "center", "flex-wrap": "wrap"}):
            with session.lock:
                label = round_label(model) if model is not None else "Round 0"
            solara.Text(label, classes=["llm-mesa-round"],
                        style={"font-weight": "bold", "font-size": "1.15em", "margin-right": "12px"})
            GameButtons(session, values, version)
        ErrorNote(session)
        if model is not None:
            GameView(model, version.value, session.lock)


__all__: Sequence[str] = ("ExplorerConsensusModel", "ExplorerError", "LOOPBACK_ENDPOINT", "LOOPBACK_MODEL", "Page",
                          "agent_rows", "model_params", "parse_policy_mix", "round_label", "rounds_frame")
