"""LLM against rules, side by side: one graph, one set of preferences, one seed, two populations.

Open it with ``llm-mesa viz --compare``. Population A (by default LLM agents on the
built-in loopback stand-in, or any endpoint) and population B (by default
majority-with-inertia) play the very same network from the very same preferences
and seed, in two panels that step together; their per-round curves are overlaid
(dashes tell the populations apart). Each browser session has its own pair.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pandas as pd
import solara

from llm_mesa.models.consensus import ConsensusModel

from .app import rounds_frame
from .charts import VegaChart, consensus_charts
from .consensus_game import (
    ExplorerConsensusModel,
    agent_details,
    build_model,
    checked_values,
    failure_line,
    model_params,
)
from .controls import ControlError, ControlPanel, ErrorNote, GameButtons, use_session
from .layout import drawing_layout
from .network_view import NetworkPanel, NetworkState

TITLE = "llm-mesa: LLM against rules"
POPULATIONS = ("A", "B")


def compare_params() -> dict[str, dict[str, Any]]:
    """The game's controls once, and one policy mix per population."""
    base = model_params()
    mix = base.pop("policy_mix")
    endpoint, model_name = base.pop("llm_endpoint"), base.pop("llm_model")
    return {
        **base,
        "policy_a": {**mix, "value": "llm" if "llm" in mix["values"] else mix["values"][0],
                     "label": "Population A: policies"},
        "policy_b": {**mix, "value": "majority-inertia", "label": "Population B: policies"},
        "llm_endpoint": endpoint,
        "llm_model": model_name,
    }


class ComparedModel(ExplorerConsensusModel):
    """One population of the pair: the shared graph and preferences, its own policies."""

    def __init__(self, population: str, reference: ConsensusModel, **controls: Any) -> None:
        controls = {k: v for k, v in controls.items() if k not in ("n", "topology", "preferences")}
        super().__init__(graph=reference.graph, preferences="explicit",
                         explicit_preferences=list(reference.preferences), **controls)
        self.population = population
        self.mix = controls.get("policy_mix", "")
        if "llm" in self.mix.split("|")[0].split(":")[0] or "=llm" in self.mix.replace(" ", ""):
            self.mix += f" (LLM: {controls.get('llm_model')} at {controls.get('llm_endpoint')})"
        self.shared_layout = drawing_layout(reference)


def build_pair(values: dict[str, Any]) -> tuple[ComparedModel, ComparedModel]:
    """The reference draw (graph, preferences) and both populations on it."""
    values = checked_values(values)
    reference = ConsensusModel(n=values["n"], topology=values["topology"], preferences=values["preferences"],
                               policy="stubborn", baseline_permutations=0, rng=values["seed"])
    common = {k: v for k, v in values.items() if k not in ("policy_a", "policy_b")}
    pair = []
    for population, key in zip(POPULATIONS, ("policy_a", "policy_b")):
        try:
            build_model({**common, "policy_mix": values[key]})  # the checks, the endpoint asked first
        except ControlError as exc:
            raise ControlError(key if exc.control == "policy_mix" else exc.control, str(exc)) from None
        pair.append(ComparedModel(population, reference, **common, policy_mix=values[key]))
    return tuple(pair)


def compared_rounds(pair) -> pd.DataFrame:
    """Both populations' per-round tables, one ``population`` column telling them apart."""
    frames = []
    for model in pair:
        frame = rounds_frame(model)
        frame["population"] = f"{model.population}: {model.mix.split(' (LLM:')[0]}"
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def outcome_rows(pair) -> pd.DataFrame:
    rows = []
    for model in pair:
        table = model.rounds_table()
        stats = table.iloc[-1]
        rows.append({"population": model.population, "policies": model.mix,
                     "round": model.round, "outcome": model.stop_reason or "playing",
                     "share of blue": round(float(stats["blue_share"]), 3),
                     "largest group": int(stats["largest_component"]),
                     "local agreement": round(float(stats["local_agreement"]), 3),
                     "stubborn moves": int(table["stubborn_moves"].sum()),
                     "failed decisions": int(model.totals["failures"])})
    return pd.DataFrame(rows)


@solara.component
def PopulationPanel(model: ComparedModel, version: int, lock=None):
    selected, set_selected = solara.use_state(0)
    node = min(selected, model.n - 1)
    with lock if lock is not None else contextlib.nullcontext():  # Play steps in a thread
        stop = f" ({model.stop_reason})" if model.stop_reason else ""
        round_number = model.round
        failed = failure_line(model)
        state = NetworkState.of_model(model, agent_details(model), layout=model.shared_layout)
    with solara.Column(classes=["llm-mesa-panel", f"llm-mesa-panel-{model.population.lower()}"],
                       style={"min-width": "0"}, gap="4px"):
        solara.Markdown(f"#### Population {model.population}: `{model.mix}`")
        solara.Text(f"Round {round_number}{stop}", classes=["llm-mesa-panel-round"], style={"font-weight": "bold"})
        if failed:
            solara.Error(f"Round {round_number}: {failed}.", dense=True, classes=["llm-mesa-failures"])
        NetworkPanel(state, selected=node, on_select=set_selected, height=380)


@solara.component
def Page():
    specs = solara.use_memo(compare_params, dependencies=[])
    session, values, version = use_session(build_pair, specs)
    pair = session.game
    solara.Title(TITLE)
    with solara.Sidebar():
        solara.Markdown("### One network, two populations")
        ControlPanel(specs, values, session.applied, session.errors)
    with solara.Column(style={"padding": "8px 16px"}, classes=["llm-mesa-page"]):
        with solara.Row(style={"align-items": "center", "flex-wrap": "wrap"}):
            with session.lock:
                label = f"Round {max(m.round for m in pair)} of {pair[0].max_rounds}" if pair else "Round 0"
            solara.Text(label, classes=["llm-mesa-round"],
                        style={"font-weight": "bold", "font-size": "1.15em", "margin-right": "12px"})
            GameButtons(session, values, version)
        ErrorNote(session, "pair")
        if pair:
            solara.Text(f"Same graph ({pair[0].n} agents, {session.applied.get('topology')}), same preferences, "
                        f"seed {session.applied.get('seed')}; the panels step together.")
            with solara.Columns([1, 1], style={"align-items": "flex-start"}):
                for model in pair:
                    PopulationPanel(model, version.value, session.lock)
            with session.lock:
                rounds = compared_rounds(pair)
                last = max(m.round for m in pair)
                outcomes = outcome_rows(pair)
            charts = consensus_charts(rounds, pair[0].n, dash="population", last_round=last)
            with solara.Columns([1, 1, 1], classes=["llm-mesa-plots"], style={"align-items": "flex-start"}):
                for cls, spec in charts:
                    VegaChart(spec, classes=[cls])
            solara.DataFrame(outcomes, items_per_page=2)


__all__ = ["ComparedModel", "Page", "build_pair", "compare_params", "compared_rounds", "outcome_rows"]
