"""The network consensus game (Kearns-style voting game) as a Mesa model.

One agent per node of a graph, each with a private preferred colour. Rounds
are synchronous: every agent observes the same state, all decide (LLM calls
in flight together), then all apply. The game stops on consensus or at
``max_rounds``. Payoff: ``payoff_preferred`` if the network ends on the agent's
preferred colour, ``payoff_other`` if on the other, 0 without consensus.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any

import networkx as nx
import numpy as np
from mesa import DataCollector, Model
from mesa.discrete_space import Network

from llm_mesa.graphs import NetworkError, build_topology, highest_degree_nodes, normalise_graph, seeded_layout
from llm_mesa.parameters import ParameterError
from llm_mesa.policy import Policy, PolicyError, make_policy
from llm_mesa.rounds import play_round

from . import measures
from .agents import ConsensusAgent
from .game import PARAMETERS
from .observation import COLOURS, ConsensusDecision, Message, colour_code
from .preferences import assign_preferences
from .record import ROUND_COLUMNS, ConsensusRecord, round_stat

COMMUNICATION_MODES = ("none", "local", "global")
LABELS = ("llm", "human")
BASELINE_STREAM = 0x5EED_BA5E  # spawn key of the baseline's own random stream

# A rule decision is only a colour: the vectorised path shares these two (read-only).
_RULE_DECISIONS = (ConsensusDecision(COLOURS[0]), ConsensusDecision(COLOURS[1]))

PolicyLike = str | Policy
Assignment = Mapping[str, PolicyLike] | Sequence[PolicyLike] | Callable[["ConsensusModel", int], PolicyLike]


class ConsensusConfigError(ParameterError):
    """An impossible game configuration; the message names the fix."""


class ConsensusModel(ConsensusRecord, Model):
    """The network consensus game.

    Args:
        n: number of agents (ignored when ``graph`` is given).
        topology: ``er``, ``ba``, ``ws`` or ``caveman`` (see ``llm_mesa.graphs``).
        graph: a networkx graph to play on instead of a drawn topology.
        policy: the default policy of every agent (a registry spec or a Policy).
        assign: per-agent exceptions to ``policy``: a mapping of selector to
            policy (selectors: ``hubs:K`` the K highest-degree nodes,
            ``nodes:1,2,3``, ``random:K`` K nodes drawn from the model's rng,
            ``red``/``blue`` by preference), a sequence of one policy per node,
            or a callable ``(model, node) -> policy``.
        preferences: ``random`` (half red), ``minority`` (the ``minority``
            highest-degree nodes prefer ``minority_colour``), or ``explicit``
            with ``explicit_preferences``.
        initial: ``preference`` (each agent starts on its preferred colour),
            ``random`` (a fair coin each), or a list of colours by node.
        communication: ``none``, ``local`` (messages reach the sender's
            neighbours) or ``global`` (everyone); ``direct_messages`` adds the
            private message to one neighbour.
        message_replaces_move: a message is sent instead of changing colour,
            as in the study (set False to allow both in one round).
        label: what the rules call the other players: ``llm`` or ``human``.
        max_rounds, payoff_preferred, payoff_other: the study's 50, 0.20, 0.15.
        baseline_permutations: random recolourings for the largest-component
            baseline at the end of the game (0 to skip).
        max_game_tokens, max_game_cost: spending limits; a game that passes one
            stops after that round and is marked incomplete.
        max_failure_share: a game whose share of failed decisions exceeds this
            is marked invalid in its summary.
        collect_agents: keep the per-agent, per-round table (off for speed on
            very large graphs).
        fast_rules: when every agent shares one rule policy, decide each round
            as arrays (same draws, same game; off to force the per-agent path).
        rng: the seed; everything random derives from it.
    """

    def __init__(
        self,
        n: int = 36,
        topology: str = "ba",
        *,
        graph: nx.Graph | None = None,
        policy: PolicyLike = "majority-inertia",
        assign: Assignment | None = None,
        preferences: str = "random",
        minority: int = 5,
        minority_colour: str = "red",
        explicit_preferences: Sequence[str] | None = None,
        initial: str | Sequence[str] = "preference",
        communication: str = "none",
        direct_messages: bool = False,
        message_replaces_move: bool = True,
        label: str = "llm",
        max_rounds: int = 50,
        payoff_preferred: float = 0.20,
        payoff_other: float = 0.15,
        baseline_permutations: int = 1000,
        satisfied_threshold: float = 0.5,
        pseudo_window: int = 3,
        pseudo_level: float = 0.9,
        max_game_tokens: int | None = None,
        max_game_cost: float | None = None,
        max_failure_share: float = 0.1,
        collect_agents: bool = True,
        fast_rules: bool = True,
        rng: int | None = None,
    ) -> None:
        if isinstance(rng, int) and rng < 0:
            raise ConsensusConfigError(f"the seed must be a non-negative integer (got {rng})")
        super().__init__(rng=rng)
        self.seed = rng
        checked = {"n": n} if graph is None else {}  # the topology is checked where graphs are built
        checked.update(
            preferences=preferences, minority=minority, minority_colour=minority_colour, communication=communication,
            direct_messages=direct_messages, message_replaces_move=message_replaces_move, label=label,
            max_rounds=max_rounds, payoff_preferred=payoff_preferred, payoff_other=payoff_other,
            baseline_permutations=baseline_permutations, satisfied_threshold=satisfied_threshold,
            pseudo_window=pseudo_window, pseudo_level=pseudo_level, max_failure_share=max_failure_share)
        if isinstance(initial, str):
            checked["initial"] = initial
        try:
            PARAMETERS.validate(checked)  # the game's one parameter definition
        except ParameterError as exc:
            raise ConsensusConfigError(str(exc)) from None
        if direct_messages and communication == "none":
            raise ConsensusConfigError("private messages need communication local or global; add --comm local")

        self.topology = "custom" if graph is not None else topology
        self.graph = normalise_graph(graph) if graph is not None else build_topology(topology, n, self.random)
        self.n = self.graph.number_of_nodes()
        self.adjacency = measures.Adjacency.from_graph(self.graph)
        self.communication = communication
        self.direct_messages = direct_messages
        self.message_replaces_move = message_replaces_move
        self.label = label
        self.max_rounds = max_rounds
        self.payoff_preferred = payoff_preferred
        self.payoff_other = payoff_other
        self.baseline_permutations = baseline_permutations
        self.satisfied_threshold = satisfied_threshold
        self.pseudo_window = pseudo_window
        self.pseudo_level = pseudo_level
        self.max_game_tokens = max_game_tokens
        self.max_game_cost = max_game_cost
        self.max_failure_share = max_failure_share
        self.preference_design = preferences
        self.minority = minority if preferences == "minority" else 0
        self.parameters = {
            "n": self.n, "topology": self.topology, "policy": _spec(policy),
            "assign": _assignment_manifest(assign), "preferences": preferences,
            "minority": self.minority, "minority_colour": minority_colour,
            "initial": initial if isinstance(initial, str) else list(initial),
            "communication": communication, "direct_messages": direct_messages,
            "message_replaces_move": message_replaces_move, "label": label,
            "max_rounds": max_rounds, "payoff_preferred": payoff_preferred,
            "payoff_other": payoff_other, "baseline_permutations": baseline_permutations,
            "satisfied_threshold": satisfied_threshold, "pseudo_window": pseudo_window,
            "pseudo_level": pseudo_level, "max_game_tokens": max_game_tokens,
            "max_game_cost": max_game_cost, "max_failure_share": max_failure_share,
            "seed": rng,
        }

        prefs = assign_preferences(self.graph, preferences, self.random, minority=minority,
                                   minority_colour=minority_colour, explicit=explicit_preferences)
        colours = self._initial_colours(initial, prefs)
        policies = self._policies(policy, assign, prefs)
        # The key of this game in call records: parameters and seed, with every agent's
        # policy by its identity (an LLM policy's model, not its server URL, so a
        # replay against a moved server still finds its calls).
        identity = {k: v for k, v in self.parameters.items() if k not in ("policy", "assign")}
        identity["policies"] = [p.identity() for p in policies]
        identity["mesa_seed"] = getattr(self, "_seed", None)  # tells unseeded games apart
        self.game_key = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:16]

        self._layout_seed = self.random.getrandbits(32)  # drawn now, so the layout never moves the game's stream
        self.space = Network(self.graph, random=self.random, layout=None)
        self.agents_by_node: list[ConsensusAgent] = [
            ConsensusAgent(self, self.space[v], v, prefs[v], colours[v], policies[v]) for v in range(self.n)
        ]
        for agent in self.agents_by_node:
            agent.link_neighbours(self.agents_by_node)
        # One rule policy shared by every agent decides the whole round as arrays:
        # the same draws in the same order as agent by agent, so the same game.
        shared = policies[0]
        self._vector_policy = shared if (
            fast_rules and shared.vectorised and all(p is shared for p in policies)) else None
        self._preference_codes = np.array([colour_code(p) for p in prefs], dtype=np.int8)

        self.round = 0
        self.stop_reason: str | None = None
        self.colour_history: list[list[str]] = [list(colours)]
        self.agreement_history: list[float] = []
        self.message_log: list[Message] = []
        self.transcript: list[dict[str, Any]] = []  # LLM decisions, for message-content analysis
        self._inbox_by_round: dict[int, dict[int, list[Message]]] = {}
        self.totals = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0, "cost": 0.0,
                       "failures": 0, "decisions": 0, "stubborn_moves": 0, "opportunities": 0}
        self.outcomes: dict[str, int] = {}
        self.pseudo_equilibrium = False
        self.flippers: tuple[int, ...] = ()
        self._round_stats: dict[str, Any] = {}
        self._measure_round(None)

        agent_reporters = {
            "node": "node", "colour": "colour", "preference": "preference",
            "opportunity": "had_opportunity", "stubborn_move": "made_stubborn_move",
            "flipped": "flipped", "failed": "decision_failed", "calls": "round_calls",
            "prompt_tokens": "round_prompt_tokens", "completion_tokens": "round_completion_tokens",
        } if collect_agents else None
        self.datacollector = DataCollector(
            model_reporters={key: round_stat(key) for key in ROUND_COLUMNS},
            agent_reporters=agent_reporters,
        )
        for agent in self.agents_by_node:
            agent.had_opportunity = False
            agent.made_stubborn_move = False
            agent.decision_failed = False
            agent.round_calls = agent.round_prompt_tokens = agent.round_completion_tokens = 0
        self.datacollector.collect(self)
        self.running = not measures.is_consensus(colours)
        if not self.running:
            self.stop_reason = "consensus"

    @cached_property
    def layout(self) -> dict[int, tuple[float, float]]:
        """A fixed drawing layout, computed on first use (sweeps never draw)."""
        return seeded_layout(self.graph, self._layout_seed)

    # --- set-up -----------------------------------------------------------

    def _initial_colours(self, initial, prefs: list[str]) -> list[str]:
        if initial == "preference":
            return list(prefs)
        if initial == "random":
            return ["blue" if self.random.random() < 0.5 else "red" for _ in range(self.n)]
        if isinstance(initial, str):
            raise ConsensusConfigError(f"unknown initial colouring {initial!r}; choose preference, random, or give a list")
        colours = list(initial)
        if len(colours) != self.n or any(c not in ("red", "blue") for c in colours):
            raise ConsensusConfigError(f"initial colours need {self.n} entries, each red or blue")
        return colours

    def _policies(self, default: PolicyLike, assign: Assignment | None, prefs: list[str]) -> list[Policy]:
        base = make_policy(default, "consensus")
        policies: list[Policy] = [base] * self.n
        if assign is None:
            return policies
        if callable(assign):
            return [make_policy(assign(self, v), "consensus") for v in range(self.n)]
        if not isinstance(assign, Mapping):
            specs = list(assign)
            if len(specs) != self.n:
                raise ConsensusConfigError(f"a per-node policy list needs {self.n} entries (got {len(specs)})")
            return [make_policy(s, "consensus") for s in specs]
        for selector, spec in assign.items():
            chosen = make_policy(spec, "consensus")
            for v in self._select(selector, prefs):
                policies[v] = chosen
        return policies

    def _select(self, selector: str, prefs: list[str]) -> list[int]:
        kind, _, arg = selector.partition(":")
        try:
            if kind == "hubs":
                return highest_degree_nodes(self.graph, self._count(int(arg), selector))
            if kind == "random":
                return self.random.sample(range(self.n), self._count(int(arg), selector))
            if kind == "nodes":
                nodes = [int(x) for x in arg.split(",") if x.strip()]
                bad = [v for v in nodes if not 0 <= v < self.n]
                if bad:
                    raise ConsensusConfigError(f"selector {selector!r} names nodes outside 0..{self.n - 1}: {bad}")
                return nodes
            if kind in ("red", "blue") and not arg:
                return [v for v in range(self.n) if prefs[v] == kind]
        except ValueError as exc:
            if isinstance(exc, ConsensusConfigError):
                raise
        raise ConsensusConfigError(
            f"bad agent selector {selector!r}; use hubs:K, random:K, nodes:1,2,3, red or blue")

    def _count(self, k: int, selector: str) -> int:
        if not 0 <= k <= self.n:
            raise ConsensusConfigError(f"selector {selector!r} asks for {k} of {self.n} agents")
        return k

    # --- the round --------------------------------------------------------

    def step(self) -> None:
        """One synchronous round: observe, decide together, apply together."""
        if not self.running:
            return
        agents = self.agents_by_node
        before = [a.colour for a in agents]
        if self._vector_policy is not None:
            codes = np.fromiter((c == "blue" for c in before), dtype=np.int8, count=self.n)
            chosen = self._vector_policy.decide_vector(codes, self._preference_codes, self.adjacency, self.random)
            decisions = [_RULE_DECISIONS[c] for c in chosen.tolist()]
        else:
            decisions = play_round(agents, self.random, advance=False)
        for agent, decision in zip(agents, decisions):
            agent.pending = decision
            if decision.outcome:
                self.transcript.append({
                    "round": self.round + 1, "agent": agent.node, "colour_before": agent.colour,
                    "colour": decision.colour, "reason": decision.reason, "message": decision.message,
                    "message_to": decision.message_to, "diary": decision.diary, "outcome": decision.outcome,
                    "failed": decision.failed, "calls": decision.calls, "prompt_tokens": decision.prompt_tokens,
                    "completion_tokens": decision.completion_tokens, "cached_tokens": decision.cached_tokens,
                    "latency_s": decision.latency_s, "queue_s": decision.queue_s, "server": decision.server,
                    "answer": decision.raw,
                })
        self.agents.do("advance")
        self.round += 1
        self._deliver_messages(decisions)
        self._account(decisions)
        self.colour_history.append([a.colour for a in agents])
        self._measure_round(before)
        self.datacollector.collect(self)
        self._check_stop()

    def _deliver_messages(self, decisions) -> None:
        inboxes: dict[int, list[Message]] = {}
        first_new = len(self.message_log)
        for agent in self.agents_by_node:
            agent.inbox = []
        for agent, decision in zip(self.agents_by_node, decisions):
            if not self.deliverable(agent, decision):
                continue
            if decision.message_to is not None:
                recipients = [decision.message_to]
            elif self.communication == "local":
                recipients = list(agent.neighbour_ids)
            else:
                recipients = [v for v in range(self.n) if v != agent.node]
            message = Message(sender=agent.node, round=self.round, text=decision.message, to=decision.message_to)
            self.message_log.append(message)
            for v in recipients:
                inboxes.setdefault(v, []).append(message)
        for v, received in inboxes.items():
            self.agents_by_node[v].inbox = received
        self._inbox_by_round[self.round] = inboxes
        sent = self.message_log[first_new:]
        self._sent_this_round = (len(sent), sum(m.to is not None for m in sent))

    def deliverable(self, agent: ConsensusAgent, decision) -> bool:
        """Does this decision's message reach anyone? (Only then does it replace the move.)

        Private messages go only to a neighbour, and only where they are allowed.
        """
        if not decision.message or self.communication == "none":
            return False
        if decision.message_to is None:
            return True
        return self.direct_messages and decision.message_to in agent.neighbour_ids

    def messages_received(self, node: int, round_: int) -> list[Message]:
        """Messages that reached ``node`` in round ``round_``."""
        return self._inbox_by_round.get(round_, {}).get(node, [])

    def _check_stop(self) -> None:
        if self._round_stats["consensus"]:
            self.running, self.stop_reason = False, "consensus"
        elif self.max_game_tokens is not None and (
                self.totals["prompt_tokens"] + self.totals["completion_tokens"] >= self.max_game_tokens):
            self.running, self.stop_reason = False, "token limit"
        elif self.max_game_cost is not None and self.totals["cost"] >= self.max_game_cost:
            self.running, self.stop_reason = False, "cost limit"
        elif self.round >= self.max_rounds:
            self.running, self.stop_reason = False, "max rounds"

    def run(self) -> "ConsensusModel":
        """Play until consensus, the round limit or a spending limit."""
        while self.running:
            self.step()
        return self


def _spec(policy: PolicyLike) -> str:
    return policy.spec() if isinstance(policy, Policy) else str(policy)


def _assignment_manifest(assign) -> Any:
    if assign is None:
        return None
    if isinstance(assign, Mapping):
        return {k: _spec(v) for k, v in assign.items()}
    if callable(assign):
        return getattr(assign, "__name__", "callable")
    return [_spec(v) for v in assign]


__all__ = ["ConsensusModel", "ConsensusConfigError", "NetworkError", "PolicyError", "ROUND_COLUMNS"]
