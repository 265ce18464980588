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
def AgentPanel(model, selected: int, on_select):
    """The selected agent (click a node in the picture, or type its number)."""
    node = min(max(int(selected), 0), model.n - 1)
    with solara.Card("Agent", classes=["llm-mesa-agent"], margin=0):
        solara.InputInt(f"Agent (0..{model.n - 1}; or click a node)", value=node,
                        on_value=lambda v: on_select(min(max(int(v or 0), 0), model.n - 1)),
                        classes=["llm-mesa-agent-select"])
        for key, value in agent_rows(model, node).items():
            with solara.Row(gap="6px", classes=["llm-mesa-agent-row"]):
                solara.Text(f"{key}:", style={"font-weight": "bold", "white-space": "nowrap"})
                solara.Text(value)


def LlmPanel(model, rounds: pd.DataFrame):
    """Calls, tokens and failures per round, and this round's messages."""
    with solara.Column(classes=["llm-mesa-llm"]):
        if llm_agents(model) or rounds[["calls", "failures"]].to_numpy().sum() > 0:
            for cls, spec in llm_charts(rounds):
                VegaChart(spec, classes=[cls])
        messages = [m for m in model.message_log if m.round == model.round]
        solara.Text(f"Messages in round {model.round}: {len(messages)}", style={"font-weight": "bold"})
        if messages:
            solara.DataFrame(pd.DataFrame(
                [{"from": m.sender, "to": "neighbours/all" if m.to is None else m.to, "text": m.text}
                 for m in messages]), items_per_page=8)


@solara.component
def GameView(model, version: int):
    """The running game: round, failures, the picture, the agent and the charts."""
    selected, set_selected = solara.use_state(0)
    rounds = solara.use_memo(lambda: rounds_frame(model), dependencies=[id(model), model.round, version])
    state = NetworkState.of_model(model, agent_details(model), layout=drawing_layout(model))
    failed = failure_line(model)
    if failed:
        solara.Error(f"Round {model.round}: {failed}.", dense=True, classes=["llm-mesa-failures"])
    with solara.Columns([3, 2], style={"align-items": "flex-start"}):
        NetworkPanel(state, selected=min(selected, model.n - 1), on_select=set_selected)
        with solara.Column(classes=["llm-mesa-plots"], style={"min-width": "0"}):
            for cls, spec in consensus_charts(rounds, model.n):
                VegaChart(spec, classes=[cls])
    with solara.Columns([2, 3], style={"align-items": "flex-start"}):
        AgentPanel(model, min(selected, model.n - 1), set_selected)
        LlmPanel(model, rounds)


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
            solara.Text(round_label(model) if model is not None else "Round 0", classes=["llm-mesa-round"],
                        style={"font-weight": "bold", "font-size": "1.15em", "margin-right": "12px"})
            GameButtons(session, values, version)
        ErrorNote(session)
        if model is not None:
            GameView(model, version.value)


__all__: Sequence[str] = ("ExplorerConsensusModel", "ExplorerError", "LOOPBACK_ENDPOINT", "LOOPBACK_MODEL", "Page",
                          "agent_rows", "model_params", "parse_policy_mix", "round_label", "rounds_frame")
