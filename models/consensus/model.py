"""The network consensus game (Kearns-style voting game) as a Mesa model.

One agent per node of a graph, each with a private preferred colour. Rounds
are synchronous: every agent observes the same state, all decide (LLM calls
in flight together), then all apply. The game stops on consensus or at
``max_rounds``. Payoff: ``payoff_preferred`` if the network ends on the agent's
preferred colour, ``payoff_other`` if on the other, 0 without consensus.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

import networkx as nx
import numpy as np
from mesa import Model

from llm_mesa.graph_measures import BlockGraph
from llm_mesa.graphs import NetworkError, seeded_layout
from llm_mesa.mesa_versions import game_ended, model_arguments, network_space, scenario_fields, seed_streams, track_rounds
from llm_mesa.policy import PolicyError
from llm_mesa.rounds import play_round
from llm_mesa.update import activation_stream

from . import measures
from .agents import ConsensusAgent
from .array_state import Rounds, rule_stream
from .mixing import assignment_of
from .observation import ConsensusDecision, Message, colour_code
from .policies import RulePolicy, StreamPolicy, combine_rules, rule_step
from .record import ROUND_COLUMNS, ArrayDataCollector, ConsensusRecord
from .setup import Assignment, ConsensusConfigError, PolicyLike, game_setup
from .turns import _Draw, play_turns, transcript_row

COMMUNICATION_MODES = ("none", "local", "global")
LABELS = ("llm", "human")


class ConsensusModel(ConsensusRecord, Model):
    """The network consensus game.

    Every parameter of the game's one definition (``parameters.PARAMETERS``: size,
    topology, preference design, communication, label, rules wording, round limit,
    payoffs, measures) is a keyword; what is not given takes its default there.
    ``n`` and ``topology`` may also be given first, by position.

    Args:
        graph: a networkx graph to play on instead of a drawn topology (``n`` is then its size).
        policy: the default policy of every agent (a registry spec or a Policy).
        assign: per-agent exceptions to ``policy``: a mapping of selector to
            policy (selectors: ``hubs:K`` the K highest-degree nodes,
            ``nodes:1,2,3``, ``random:K`` K nodes drawn from the model's rng,
            ``red``/``blue`` by preference), the same as a text of
            ``SELECTOR=POLICY`` entries joined by ``;`` (the game's ``assign``
            parameter, ``mixing.py``), a sequence of one policy per node, or a
            callable ``(model, node) -> policy``.
        explicit_preferences: a colour per node, with ``preferences="explicit"``.
        initial (a parameter): ``preference``, ``random``, or here also a list of colours by node.
        max_game_tokens, max_game_cost: spending limits; a game that passes one
            stops after that round and is marked incomplete.
        collect_agents: keep the per-agent, per-round table (kept as arrays:
            cheap; off to save memory on very large graphs).
        fast_rules: when every agent follows a rule policy, decide each round as
            arrays (off: agent by agent through ``Policy.decide``, from the same
            draws, so the same game).
        rng: the seed; everything random derives from it. Graph, preferences,
            selectors and LLM/mixed rounds draw from the model's ``random``, seeded
            from the seed itself on every Mesa version (``seed_streams``); a game
            whose agents all follow rule policies draws its rounds from its rule
            stream (``array_state.rule_stream``), as the batched engine does.
        scenario: a Mesa ``Scenario`` (``Experiment.scenarios()``) whose fields are game
            parameters and whose ``seed`` is the game's seed; keywords given win.
    """

    def __init__(
        self,
        n: int | None = None,
        topology: str | None = None,
        *,
        graph: nx.Graph | None = None,
        policy: PolicyLike = "majority-inertia",
        assign: Assignment | None = None,
        explicit_preferences: Sequence[str] | None = None,
        max_game_tokens: int | None = None,
        max_game_cost: float | None = None,
        collect_agents: bool = True,
        fast_rules: bool = True,
        rng: int | None = None,
        scenario: Any = None,
        **parameters: Any,
    ) -> None:
        mesa_arguments = model_arguments(rng, scenario)
        if scenario is not None:  # a Mesa scenario lends its parameters (and, unless rng is given, its seed)
            fields, scenario_seed = scenario_fields(scenario)
            parameters = {**fields, **parameters}
            rng = scenario_seed if rng is None else rng
        assign = assignment_of(assign)  # the game's 'assign' parameter is a text of --assign entries
        if isinstance(rng, int) and rng < 0:
            raise ConsensusConfigError(f"the seed must be a non-negative integer (got {rng})")
        super().__init__(**mesa_arguments)
        mesa_seed = seed_streams(self, rng)  # the seed's own stream, on Mesa 3 and 4 alike
        self.seed = rng
        given = {k: v for k, v in (("n", n), ("topology", topology)) if v is not None}
        initial = parameters.get("initial")
        initial_colours = None
        if initial is not None and not isinstance(initial, str):  # a colour per node
            initial_colours = list(parameters.pop("initial"))
        setup = game_setup(
            self.random, rng, mesa_seed, parameters={**parameters, **given}, graph=graph,
            policy=policy, assign=assign, explicit_preferences=explicit_preferences, initial_colours=initial_colours,
            max_game_tokens=max_game_tokens, max_game_cost=max_game_cost, model=self)
        values = setup.parameters
        self.topology = setup.topology
        self.graph = setup.graph
        self.n = self.graph.number_of_nodes()
        self.adjacency = measures.Adjacency.from_graph(self.graph)
        self.communication = values["communication"]
        self.direct_messages = values["direct_messages"]
        self.message_replaces_move = values["message_replaces_move"]
        self.label = values["label"]
        self.prompt_variant = values["prompt"]
        self.max_rounds = values["max_rounds"]
        self.history_rounds = values["history"]
        self.message_cost = values["message_cost"]
        self.update = values["update"]  # how turns are taken (turns.py when not synchronous)
        self.activation: int | None = None  # the turn being taken (None under synchronous rounds)
        self.depth = 0  # the dependency depth of the rounds played: one per synchronous round
        self.payoff_preferred = values["payoff_preferred"]
        self.payoff_other = values["payoff_other"]
        self.baseline_permutations = values["baseline_permutations"]
        self.satisfied_threshold = satisfied_threshold = values["satisfied_threshold"]
        self.pseudo_window = pseudo_window = values["pseudo_window"]
        self.pseudo_level = pseudo_level = values["pseudo_level"]
        self.max_game_tokens = max_game_tokens
        self.max_game_cost = max_game_cost
        self.max_failure_share = values["max_failure_share"]
        self.preference_design = values["preferences"]
        self.parameters = setup.parameters
        self.minority = self.parameters["minority"]
        self.game_key = setup.game_key
        self._layout_seed = setup.layout_seed
        prefs, policies = setup.preferences, setup.policies

        # The game's state lives in arrays (``Rounds``): agents read and write their colour there.
        self._preference_codes = np.array([colour_code(p) for p in prefs], dtype=np.int8)
        self._rounds = Rounds(BlockGraph([self.adjacency]), self._preference_codes,
                              np.array([colour_code(c) for c in setup.colours], dtype=np.int8),
                              satisfied_threshold=satisfied_threshold, pseudo_window=pseudo_window,
                              pseudo_level=pseudo_level, agents=collect_agents)
        self.space = network_space(self.graph, self.random)
        self.agents_by_node: list[ConsensusAgent] = [
            ConsensusAgent(self, self.space[v], v, prefs[v], policies[v]) for v in range(self.n)
        ]
        for agent in self.agents_by_node:
            agent.link_neighbours(self.agents_by_node)
        # Every agent on a rule policy: rounds are drawn from the game's rule stream, one
        # uniform per agent (decided as arrays, or agent by agent from the same draws).
        self._rule = None
        self._vector_policy = None
        self._rule_arrays = False
        self._stream = all(isinstance(p, StreamPolicy) for p in policies)  # rule agents, talking ones too
        if self._stream:
            self._rule_rng = rule_stream(int(self.game_key, 16) if rng is None else rng)
        if all(isinstance(p, RulePolicy) for p in policies):
            self._rule = combine_rules([p.rule() for p in policies])
            self._rule_arrays = fast_rules
            self._vector_policy = policies[0] if fast_rules else None
        elif fast_rules and policies[0].vectorised and all(p is policies[0] for p in policies):
            self._vector_policy = policies[0]  # a vectorised policy of another package: its own contract

        self.round = 0
        self.stop_reason: str | None = None
        self.message_log: list[Message] = []
        self.transcript: list[dict[str, Any]] = []  # LLM decisions, for message-content analysis
        self._inbox_by_round: dict[int, dict[int, list[Message]]] = {}
        self._unread: list[list[Message]] = [[] for _ in range(self.n)]  # sent to each agent since its last turn
        # the order of turns has a stream of its own: one seed, one game, under every scheme
        self.order_rng = activation_stream(int(self.game_key, 16) if rng is None else rng)
        self.totals = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0, "cost": 0.0,
                       "failures": 0, "decisions": 0}
        self.outcomes: dict[str, int] = {}
        self._first_round = None  # round 1's calls, sent before the model was built (prefetch.py)
        self.datacollector = ArrayDataCollector(self, collect_agents)
        self.datacollector.collect(self)
        self.running = not self._round_stats["consensus"]
        track_rounds(self)  # Mesa 4's data recorders may record the rounds beside the DataCollector
        if not self.running:
            self.stop_reason = "consensus"
            game_ended(self)

    @cached_property
    def layout(self) -> dict[int, tuple[float, float]]:
        """A fixed drawing layout, computed on first use (sweeps never draw)."""
        return seeded_layout(self.graph, self._layout_seed)

    # --- the round --------------------------------------------------------

    def step(self) -> None:
        """One round: synchronous (observe, decide together, apply together), or turns (``turns.py``)."""
        if not self.running:
            return
        rounds = self._rounds
        if self.update != "synchronous":
            play_turns(self, rounds)
        elif self._rule_arrays:
            self._rule_round(rounds)
        else:
            self._agent_round(rounds)
        self.depth += self.update == "synchronous"  # a synchronous round's calls are all in flight at once
        self.datacollector.collect(self)
        self._check_stop()
        if not self.running:
            game_ended(self)

    def _rule_round(self, rounds: Rounds) -> None:
        """Every agent on a rule policy: the whole round as arrays, from the rule stream."""
        graph = rounds.graph
        before = rounds.codes
        rounds.codes = rule_step(before, self._preference_codes, rounds.blue, graph.degree,
                                 self._rule_rng.random(self.n), self._rule, graph.indptr, graph.indices)
        self.round += 1
        self.totals["decisions"] += self.n
        rounds.moved(before)

    def _agent_round(self, rounds: Rounds) -> None:
        """Agent by agent: observe, decide (LLM calls together), then apply."""
        agents = self.agents_by_node
        if self._stream:  # rule agents one by one, from the rule stream's draws
            draw, decisions = _Draw(), []
            for agent, value in zip(agents, self._rule_rng.random(self.n).tolist()):
                draw.value = value
                decisions.append(agent.policy.decide(agent.observe(), draw))
        elif self._vector_policy is not None:
            chosen = self._vector_policy.decide_vector(rounds.codes.copy(), self._preference_codes,
                                                       self.adjacency, self.random)
            decisions = [ConsensusDecision("blue" if c else "red") for c in np.asarray(chosen).tolist()]
        elif (early := self._take_first_round(agents)) is not None:
            decisions = early
        else:
            decisions = play_round(agents, self.random, advance=False)
        for agent, decision in zip(agents, decisions):
            agent.pending = decision
            if decision.outcome:
                self.transcript.append(transcript_row(self, agent, decision, agent.colour))
        before = rounds.codes.copy()
        self.agents.do("advance")  # each agent writes its new colour into rounds.codes
        self.round += 1
        self._deliver_messages(decisions)
        per_agent, per_round = self._account(decisions)
        rounds.moved(before, per_agent, per_round)

    def adopt_first_round(self, first) -> None:
        """Take round 1's calls made before the model was built (``prefetch.start``), if round 1 is still to come."""
        if self.round == 0 and self.running:
            self._first_round = first
        else:
            first.decisions.cancel()

    def _take_first_round(self, agents) -> list | None:
        """Round 1's decisions from the calls sent early, when every agent sees what was sent (else None)."""
        first, self._first_round = self._first_round, None
        if first is None:
            return None
        if self.round != 0 or [agent.observe() for agent in agents] != first.observations:
            first.decisions.cancel()  # not this game's round 1 after all: its calls are made again
            return None
        from llm_mesa.llm.runtime import deferred_collection

        try:
            with deferred_collection():
                return first.decisions.result()
        except KeyboardInterrupt:  # a signal while waiting: no new call, the calls in flight get their grace
            from llm_mesa.llm.stopping import interrupted

            interrupted(first.decisions)
            raise
        except BaseException:  # the round failed: no call goes on after it
            first.decisions.cancel()
            raise

    def _deliver_messages(self, decisions) -> None:
        inboxes: dict[int, list[Message]] = {}
        first_new = len(self.message_log)
        for agent in self.agents_by_node:
            agent.inbox = []
        for agent, decision in zip(self.agents_by_node, decisions):
            if not self.deliverable(agent, decision):
                continue
            message = Message(sender=agent.node, round=self.round, text=decision.message, to=decision.message_to)
            self.message_log.append(message)
            for v in self.recipients(agent, decision):
                inboxes.setdefault(v, []).append(message)
        for v, received in inboxes.items():
            self.agents_by_node[v].inbox = received
        self._inbox_by_round[self.round] = inboxes
        sent = self.message_log[first_new:]
        self._sent_this_round = (len(sent), sum(m.to is not None for m in sent))

    def recipients(self, agent: ConsensusAgent, decision) -> list[int]:
        """Who a deliverable decision's message reaches: its addressee, or the audience of the communication."""
        if decision.message_to is not None:
            return [decision.message_to]
        if self.communication == "local":
            return list(agent.neighbour_ids)
        return [v for v in range(self.n) if v != agent.node]

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


__all__ = ["ConsensusModel", "ConsensusConfigError", "NetworkError", "PolicyError", "ROUND_COLUMNS"]
