"""The Solara explorer of the network consensus game, on Mesa's SolaraViz.

Run it with ``llm-mesa viz`` (which first makes the front-end available offline),
or ``solara run llm_mesa.visualization.app`` once the asset cache is filled and
``SOLARA_ASSETS_PROXY_CACHE_DIR`` points at it.

This module only draws: the game, its measures (local agreement, same-colour
components, pseudo-equilibrium, flippers) and its accounting all come from
``llm_mesa.models.consensus`` and ``llm_mesa.models.consensus.measures``.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd
import solara
from matplotlib.figure import Figure
from mesa.visualization import SolaraViz
from mesa.visualization.utils import update_counter

from llm_mesa.visualization.builtin_endpoint import BUILTIN, resolve_endpoint

from llm_mesa.models.consensus import measures
from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.models.consensus.game import PARAMETERS
from llm_mesa.policy import available_policies

from .network_view import COLOUR_HEX, LLM_PLOTS, ROUND_PLOTS, draw_network, node_roles, round_chart
from .network_view import status_banner as show_status

#: The loopback stand-in endpoint (``llm-mesa serve``): the default, so the page works offline.
LOOPBACK_ENDPOINT = BUILTIN
LOOPBACK_MODEL = "rule:majority-inertia"
PREFERENCE_CHOICES = ("random", "minority")
#: Policy mixes offered in the controls: "default | selector=policy | ...".
POLICY_MIXES = (
    "majority-inertia",
    "majority-inertia:inertia=0.5",
    "voter",
    "random",
    "majority-inertia | hubs:5=stubborn",
    "llm",
    "llm | hubs:5=stubborn",
    "majority-inertia | random:6=llm",
)


class ExplorerError(ValueError):
    """A control value the explorer cannot turn into a game; the message names the fix."""


def parse_policy_mix(mix: str, endpoint: str, model_name: str) -> tuple[str, dict[str, str] | None]:
    """Turn a mix ``"default | selector=policy"`` into ConsensusModel's ``policy`` and ``assign``.

    ``llm`` stands for the LLM policy pointed at ``endpoint`` and ``model_name``, so
    rule and LLM agents are chosen the same way in the controls.
    """
    def expand(spec: str) -> str:
        spec = spec.strip()
        if spec == "llm":
            return f"llm:base_url={resolve_endpoint(endpoint)},model={model_name}"
        return spec

    parts = [p.strip() for p in mix.split("|") if p.strip()]
    if not parts:
        raise ExplorerError("empty policy mix; pick e.g. majority-inertia")
    assign: dict[str, str] = {}
    for part in parts[1:]:
        selector, eq, spec = part.partition("=")
        if not eq:
            raise ExplorerError(f"policy mix part {part!r} needs the form selector=policy, e.g. hubs:5=stubborn")
        assign[selector.strip()] = expand(spec)
    return expand(parts[0]), assign or None


class ExplorerConsensusModel(ConsensusModel):
    """ConsensusModel with the explorer's controls as keyword arguments.

    Only translates controls (a policy mix, an endpoint, a seed) into the model's
    arguments; Mesa's Reset re-creates it from these keywords.
    """

    def __init__(self, topology: str = "ba", n: int = 36, preferences: str = "random",
                 communication: str = "none", label: str = "llm",
                 policy_mix: str = "majority-inertia", llm_endpoint: str = LOOPBACK_ENDPOINT,
                 llm_model: str = LOOPBACK_MODEL, seed: int = 1, max_rounds: int = 50,
                 rng: int | None = None) -> None:
        policy, assign = parse_policy_mix(policy_mix, llm_endpoint, llm_model)
        super().__init__(n=int(n), topology=topology, policy=policy, assign=assign,
                         preferences=preferences, communication=communication, label=label,
                         max_rounds=int(max_rounds), rng=int(seed) if rng is None else rng,
                         baseline_permutations=0)


def _policy_choices() -> list[str]:
    """Mixes whose policies are registered here (the LLM policy may not be installed)."""
    known = set(available_policies("consensus"))
    def usable(mix: str) -> bool:
        default, *rest = mix.split("|")
        names = [default.split(":")[0].strip()] + [p.partition("=")[2].split(":")[0].strip() for p in rest]
        return all(n in known for n in names)
    return [m for m in POLICY_MIXES if usable(m)]


def model_params() -> dict:
    """The controls of SolaraViz's "Model Parameters" card."""
    game = PARAMETERS.controls(
        ["topology", "n", "preferences", "communication", "label"],
        n={"min": 8, "max": 100, "step": 4},
        preferences={"values": list(PREFERENCE_CHOICES)})
    return {
        **game,
        "policy_mix": {"type": "Select", "value": "majority-inertia", "values": _policy_choices(),
                       "label": "Policies (default | selector=policy)"},
        "llm_endpoint": {"type": "InputText", "value": LOOPBACK_ENDPOINT, "label": "LLM endpoint (base URL, or loopback: the built-in stand-in)"},
        "llm_model": {"type": "InputText", "value": LOOPBACK_MODEL, "label": "LLM model"},
        "seed": {"type": "SliderInt", "value": 1, "min": 0, "max": 999, "step": 1, "label": "Seed"},
        **PARAMETERS.controls(["max_rounds"], max_rounds={"min": 5, "max": 200, "step": 5}),
    }


# --- what the views read from a game -------------------------------------------------


def _satisfied(model) -> list[bool]:
    return measures.locally_satisfied(model.graph, list(model.colours),
                                      getattr(model, "satisfied_threshold", 0.5)).tolist()


def agent_roles(model) -> dict[int, str]:
    """Each node's role in the echo-chamber picture, from the model's own measures."""
    return node_roles(list(model.colours), _satisfied(model), model.flippers)


def network_figure(model) -> Figure:
    """The network now: the same drawing as the replay viewer's, from the live model."""
    return draw_network(model.graph, model.layout, list(model.colours), list(model.preferences),
                        flippers=model.flippers, satisfied=_satisfied(model), round_number=model.round)


def status_banner(model) -> None:
    """Consensus, pseudo-equilibrium (echo chambers), or still moving."""
    colours = list(model.colours)
    show_status(model.round, colours, model.pseudo_equilibrium, model.flippers,
                measures.local_agreement(model.graph, colours, getattr(model, "satisfied_threshold", 0.5)))


def NetworkView(model):
    """The network, the round counter and the status banner."""
    with solara.Column(classes=["llm-mesa-network"]):
        stop = f" ({model.stop_reason})" if getattr(model, "stop_reason", None) else ""
        solara.Text(f"Round {model.round} of {model.max_rounds}{stop}", classes=["llm-mesa-round"],
                    style={"font-weight": "bold", "font-size": "1.1em"})
        status_banner(model)
        solara.FigureMatplotlib(network_figure(model), format="png", dependencies=[update_counter.value])


def _line_chart(rounds: pd.DataFrame, columns: dict[str, str], title: str) -> alt.TopLevelMixin:
    return round_chart(rounds, columns, title)


def rounds_frame(model) -> pd.DataFrame:
    """The model's per-round table (round 0 is the initial state)."""
    rounds = model.rounds_table()
    return rounds.astype({c: float for c in (*ROUND_PLOTS, *LLM_PLOTS) if c in rounds.columns})


def RoundPlots(model):
    """Share of blue, largest same-colour component, local agreement, stubborn moves."""
    with solara.Column(classes=["llm-mesa-plots"]):
        solara.FigureAltair(_line_chart(rounds_frame(model), ROUND_PLOTS, "per round"))


def _has_llm_agents(model) -> bool:
    return any(getattr(a.policy, "is_async", False) or getattr(a.policy, "needs_history", False)
               for a in model.agents_by_node)


def LlmPanel(model):
    """Tokens and failures per round, and this round's message feed."""
    with solara.Column(classes=["llm-mesa-llm"]):
        rounds = rounds_frame(model)
        if _has_llm_agents(model) or rounds[list(LLM_PLOTS)].to_numpy().sum() > 0:
            solara.FigureAltair(_line_chart(rounds, LLM_PLOTS, "LLM calls per round"))
        else:
            solara.Text("No LLM agents in this game: no tokens or failures to plot.")
        messages = [m for m in model.message_log if m.round == model.round]
        solara.Text(f"Messages in round {model.round}: {len(messages)}", style={"font-weight": "bold"})
        if messages:
            solara.DataFrame(pd.DataFrame(
                [{"from": m.sender, "to": "neighbours/all" if m.to is None else m.to, "text": m.text}
                 for m in messages]), items_per_page=8)


@solara.component
def AgentInspector(model):
    """One agent's last decision: its reason, message and diary."""
    update_counter.get()
    node, set_node = solara.use_state("0")
    solara.Select("Agent", values=[str(v) for v in range(len(model.agents_by_node))], value=node,
                  on_value=set_node)
    agent = model.agents_by_node[min(int(node), len(model.agents_by_node) - 1)]
    decision = agent.last_decision
    neighbours = ", ".join(str(v) for v in agent.neighbour_ids)
    rows = {
        "colour / preference": f"{agent.colour} / {agent.preference}",
        "policy": agent.policy.spec() if hasattr(agent.policy, "spec") else str(agent.policy),
        "neighbours": neighbours,
        "colour changes": str(agent.flips),
        "reason": decision.reason if decision and decision.reason else "-",
        "message": (f"to {decision.message_to}: " if decision and decision.message_to is not None else "")
                   + (decision.message if decision and decision.message else "-"),
        "diary": decision.diary if decision and decision.diary else (agent.diary or "-"),
        "failure": decision.failed if decision and decision.failed else "-",
    }
    with solara.Column(classes=["llm-mesa-agent"]):
        for key, value in rows.items():
            solara.Text(f"{key}: {value}")


def AgentPanel(model):
    return AgentInspector(model)


def build_page(model=None, params: dict | None = None):
    """SolaraViz over a consensus game."""
    if model is None:
        model, params = ExplorerConsensusModel(), model_params()
    return SolaraViz(
        model,
        components=[NetworkView, RoundPlots, LlmPanel, AgentPanel],
        model_params=params or {},
        name="llm-mesa: network consensus",
        play_interval=300,
    )


page = build_page()


__all__: Sequence[str] = ("ExplorerConsensusModel", "ExplorerError", "agent_roles", "build_page",
                          "model_params", "network_figure", "page", "parse_policy_mix")
