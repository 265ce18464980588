"""What a page shows of the consensus game (``GameView``): echo chambers, flippers, preferences, LLM use.

The picture fills each agent with its colour now and rings it with its preference;
agents whose neighbourhood disagrees are squares, the pseudo-equilibrium's
flippers ringed diamonds. The banner says consensus, pseudo-equilibrium (how many
same-colour groups, who flips) or still moving, and a line counts the round's failed
LLM decisions with their cause. The charts: share of blue and local agreement,
the largest same-colour component, stubborn moves, then calls, failures and tokens.
Plain data only: the explorer and Mesa's SolaraViz draw it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import pandas as pd

from llm_mesa.policy import PolicyError
from llm_mesa.views import Banner, GameView, NetworkPicture
from llm_mesa.views.agent_panel import decision_heading, observation_heading
from llm_mesa.views.charts import dashed_rows, line_spec, numeric_rounds
from llm_mesa.views.controls import BUILTIN, ControlError, shorten
from llm_mesa.views.layout import drawing_layout

from . import measures
from .parameters import PARAMETERS
from .view_policy import LOOPBACK_MODEL, MIX, Mix, failure_line, llm_agents, mix_choices, parse_mix

COLOUR_HEX = {"red": "#d62728", "blue": "#1f77b4"}
#: the largest network the page offers (the picture stays readable and quick there)
MAX_N = 1000
SHARES = {"blue_share": "share of blue", "local_agreement": "local agreement"}
COMPONENT = {"largest_component": "largest same-colour component"}
LLM_TOKENS = {"prompt_tokens": "prompt tokens", "completion_tokens": "completion tokens"}
LLM_FAILURES = {"failures": "failed decisions", "calls": "calls"}
LEGEND = {"fill": "colour now", "ring": "preference", "flagged": "neighbourhood disagrees", "marked": "flippers",
          "plain": "neighbourhood agrees", "groups": "same-colour groups",
          "bands": "links within a same-colour group (echo chambers)"}
GAME_CONTROLS = ("topology", "ring_degree", "n", "preferences", "communication", "label", "update")


def consensus_charts(rounds: pd.DataFrame, n: int, *, current_round: int | None = None,
                     last_round: int | None = None, dash: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The game's per-round charts, most important first, as (class, spec)."""
    last = int(rounds["round"].max()) if last_round is None else int(last_round)
    common = {"last_round": last, "current_round": current_round, "dash": dash}
    return [
        ("llm-mesa-chart-shares", line_spec(dashed_rows(rounds, SHARES, dash), "Share of blue and local agreement",
                                            "share of agents", y_domain=(0, 1), series=list(SHARES.values()), **common)),
        ("llm-mesa-chart-component", line_spec(dashed_rows(rounds, COMPONENT, dash), "Largest same-colour component",
                                               "agents", y_domain=(0, n), series=list(COMPONENT.values()),
                                               counts=True, **common)),
        ("llm-mesa-chart-moves", line_spec(dashed_rows(rounds, {"stubborn_moves": "stubborn moves"}, dash),
                                           "Stubborn moves per round", "agents", series=["stubborn moves"], height=110,
                                           subtitle="kept its colour against its neighbours' majority", counts=True,
                                           **common)),
    ]


def llm_charts(rounds: pd.DataFrame, *, current_round: int | None = None) -> list[tuple[str, dict[str, Any]]]:
    last = int(rounds["round"].max())
    return [
        ("llm-mesa-chart-failures", line_spec(dashed_rows(rounds, LLM_FAILURES, None), "LLM calls and failed decisions",
                                              "per round", last_round=last, current_round=current_round, height=110,
                                              counts=True)),
        ("llm-mesa-chart-tokens", line_spec(dashed_rows(rounds, LLM_TOKENS, None), "Tokens per round", "tokens",
                                            last_round=last, current_round=current_round, height=110, counts=True)),
    ]


def chamber_words(graph, colours: list[str], flippers: tuple[int, ...], satisfied: list[bool], round_number: int,
                  pseudo: bool) -> Banner:
    """Consensus, pseudo-equilibrium (echo chambers) or still moving, counting the groups the picture draws."""
    n = len(colours)
    if measures.is_consensus(colours):
        return Banner("done", f"Consensus on {colours[0]} at round {round_number}: all {n} agents agree.",
                      "llm-mesa-consensus")
    groups = measures.same_colour_components(graph, colours)
    largest = max((len(g) for g in groups), default=0)
    words = f"{len(groups)} same-colour groups (largest {largest} of {n})"
    if pseudo:
        names = ", ".join(str(v) for v in flippers) or "none"
        agree = sum(bool(s) for s in satisfied) / max(n, 1)
        return Banner("warning", f"Pseudo-equilibrium at round {round_number}: {agree:.0%} of agents see their "
                                 f"neighbourhood agree, yet the network is split into {words}. "
                                 f"Flippers (◆, black ring): {names}.", "llm-mesa-pseudo-equilibrium")
    disagree = sum(not s for s in satisfied)
    return Banner("info", f"No consensus yet at round {round_number}: {words}; {disagree} agent"
                          f"{'' if disagree == 1 else 's'} (■) see{'s' if disagree == 1 else ''} their neighbourhood "
                          "disagree.", "llm-mesa-moving")


def consensus_picture(graph, layout, colours: list[str], preferences: list[str], round_number: int, *,
                      flippers: tuple[int, ...], satisfied: list[bool], details, key) -> NetworkPicture:
    agreed = measures.is_consensus(colours)
    return NetworkPicture(graph=graph, layout=layout, state=colours, round_number=round_number, palette=COLOUR_HEX,
                          ring=list(preferences), flagged=None if agreed else [not s for s in satisfied],
                          marked=() if agreed else tuple(flippers), details=details, legend=LEGEND, key=key)


class ConsensusView(GameView):
    """The consensus game's page: a policy mix, echo chambers, the pseudo-equilibrium and LLM use."""

    policy_control = MIX

    @property
    def title(self) -> str:
        return "llm-mesa: network consensus"

    def controls(self) -> dict[str, dict[str, Any]]:
        game = PARAMETERS.controls(list(GAME_CONTROLS), n={"min": 8, "max": MAX_N, "step": 4},
                                   ring_degree={"min": 2, "max": 12, "step": 2, "when": {"topology": ["ws"]}},
                                   preferences={"values": ["random", "minority"]})
        return {
            **game,
            MIX: {"type": "Combobox", "value": "majority-inertia", "values": mix_choices(),
                  "label": "Policies (default | selector=policy)"},
            "llm_endpoint": {"type": "InputText", "value": BUILTIN,
                             "label": "LLM endpoint (base URL, or loopback: the built-in stand-in)"},
            "llm_model": {"type": "InputText", "value": LOOPBACK_MODEL, "label": "LLM model"},
            "seed": {"type": "InputInt", "value": 1, "min": 0, "label": "Seed"},
            **PARAMETERS.controls(["max_rounds"], max_rounds={"min": 5, "max": 200, "step": 5}),
        }

    def policy_choices(self) -> list[str]:
        return mix_choices()

    def loopback_model(self) -> str:
        return LOOPBACK_MODEL

    def make_policy(self, values: Mapping[str, Any], policy: str | None = None) -> Mix:
        return parse_mix(policy if policy is not None else values.get(MIX, "majority-inertia"),
                         values.get("llm_endpoint", BUILTIN), values.get("llm_model", LOOPBACK_MODEL), check=True)

    def build(self, parameters: Mapping[str, Any], policy: Any, seed: int):
        from .model import ConsensusModel

        mix = policy if isinstance(policy, Mix) else Mix(policy)
        values = {"baseline_permutations": 0, **parameters}
        try:
            return ConsensusModel(policy=mix.policy, assign=mix.assign, rng=int(seed), **values)
        except (PolicyError, ValueError) as exc:
            if isinstance(exc, PolicyError) or "selector" in str(exc) or "policy" in str(exc):
                raise ControlError(MIX, str(exc)) from None
            raise  # about the game's parameters: the page names the control it is about

    # --- one round -----------------------------------------------------------------------
    def round_number(self, model) -> int:
        return int(model.round)

    def round_label(self, model) -> str:
        stop = f" ({model.stop_reason})" if getattr(model, "stop_reason", None) else ""
        return f"Round {model.round} of {model.max_rounds}{stop}"

    def rounds(self, model) -> pd.DataFrame:
        return numeric_rounds(model.rounds_table())

    def charts(self, rounds, *, current_round=None, last_round=None, dash=None):
        n = int(rounds.attrs.get("n", 0)) or int(rounds.get("largest_component", pd.Series([1])).max())
        charts = consensus_charts(rounds, n, current_round=current_round, last_round=last_round, dash=dash)
        if dash is None and {"calls", "failures"} <= set(rounds.columns) and rounds[["calls", "failures"]].to_numpy().sum() > 0:
            charts += llm_charts(rounds, current_round=current_round)
        return charts

    def satisfied(self, model) -> list[bool]:
        return measures.locally_satisfied(model.adjacency, list(model.colours),
                                          getattr(model, "satisfied_threshold", 0.5)).tolist()

    def picture(self, model) -> NetworkPicture:
        colours = list(model.colours)
        return consensus_picture(model.graph, drawing_layout(model.graph, model, lambda: model.layout,
                                                             getattr(model, "_layout_seed", 0) or 0),
                                 colours, list(model.preferences), model.round, flippers=tuple(model.flippers),
                                 satisfied=self.satisfied(model), details=agent_details(model), key=id(model))

    def agents(self, model) -> list[Any]:
        return list(model.agents_by_node)

    def agent_rows(self, model, index: int) -> dict[str, str]:
        return agent_rows(model, index)

    def banners(self, model) -> list[Banner]:
        out = []
        failed = failure_line(model)
        if failed:
            out.append(Banner("error", f"Round {model.round}: {failed}.", "llm-mesa-failures"))
        out.append(chamber_words(model.graph, list(model.colours), tuple(model.flippers), self.satisfied(model),
                                 model.round, bool(model.pseudo_equilibrium)))
        return out

    def messages(self, model) -> pd.DataFrame | None:
        sent = [m for m in model.message_log if m.round == model.round]
        if model.communication == "none" and not sent and not llm_agents(model):
            return None
        return pd.DataFrame([{"from": m.sender, "to": "neighbours/all" if m.to is None else m.to, "text": m.text}
                             for m in sent], columns=["from", "to", "text"])

    def snapshot(self, model, selected: int = 0):
        snap = super().snapshot(model, selected)
        snap.rounds.attrs["n"] = model.n
        return snap

    # --- recorded runs and sweeps ----------------------------------------------------------
    def recording(self, path):
        from .view_replay import ConsensusRun

        return ConsensusRun.load(self, path)

    def sweep_game(self, sweep, condition: str, policy: str, seed: int):
        from .view_replay import sweep_game

        return sweep_game(self, sweep, condition, policy, seed)

    def sweep_table(self, games: pd.DataFrame) -> pd.DataFrame:
        from .tables import consensus_table

        return consensus_table(games).reset_index() if not games.empty else pd.DataFrame()

    def sweep_measures(self, games: pd.DataFrame) -> list[str]:
        found = super().sweep_measures(games)
        first = [c for c in ("rounds", "consensus", "largest_component", "local_agreement") if c in found]
        return first + [c for c in found if c not in first and c not in ("n", "minority", "max_rounds")]


def agent_details(model) -> list[dict[str, Any]]:
    """Per agent: policy and last reason, for the picture's tooltip."""
    out = []
    for agent in model.agents_by_node:
        decision = getattr(agent, "last_decision", None)
        reason = decision.reason if decision is not None and decision.reason else None
        if decision is not None and decision.failed:
            reason = f"failed ({decision.failed})"
        out.append({"policy": agent.policy.spec() if hasattr(agent.policy, "spec") else str(agent.policy),
                    "last reason": reason})
    return out


def agent_rows(model, node: int) -> dict[str, str]:
    """One agent's state, its decision in the round shown and what it observes for the next, as label -> text:
    each headed with its round, so that a reason (about the neighbours it saw then) never sits beside an
    observation of another round unmarked."""
    agent = model.agents_by_node[node]
    decision = getattr(agent, "last_decision", None)
    neighbours = list(agent.neighbour_ids)
    shown = ", ".join(str(v) for v in neighbours[:40]) + (f" … ({len(neighbours)} in all)" if len(neighbours) > 40 else "")
    same = sum(model.agents_by_node[v].colour == agent.colour for v in neighbours)
    rows = {
        "agent": str(node),
        "colour / preference": f"{agent.colour} / {agent.preference}",
        "policy": agent.policy.spec() if hasattr(agent.policy, "spec") else str(agent.policy),
        "neighbours": shown or "-",
        "neighbours on its colour": f"{same} of {len(neighbours)}",
        "colour changes": str(agent.flips),
    }
    t = int(model.round)
    if t > 0 and decision is not None:  # what it chose, and what an LLM agent said of it (a rule says nothing more)
        said = decision_heading(t)
        message = (f"to {decision.message_to}: " if decision.message_to is not None else "") + (decision.message or "")
        rows.update({f"{said} · {label}": str(value) for label, value in (
            ("colour", decision.colour), ("reason", decision.reason), ("message", message if decision.message else ""),
            ("diary", decision.diary or agent.diary), ("failure", decision.failed)) if value})
    if model.running:
        rows[observation_heading(t + 1)] = shorten(_observation(agent), 600)
    else:
        rows["next round"] = "none: the game has ended"
    return rows


def _observation(agent) -> str:
    """What the agent sees now: its colour, how many neighbours hold each colour, and the messages it got."""
    colours = Counter(agent.model.agents_by_node[v].colour for v in agent.neighbour_ids)
    held = ", ".join(f"{count} {colour}" for colour, count in sorted(colours.items())) or "none"
    inbox = [f"{m.sender}: {m.text}" for m in agent.inbox]
    return f"holds {agent.colour}; neighbours hold {held}" + (f"; messages: {' | '.join(inbox)}" if inbox else "")


__all__ = ["COLOUR_HEX", "ConsensusView", "MAX_N", "agent_details", "agent_rows", "chamber_words", "consensus_charts",
           "consensus_picture", "llm_charts"]
