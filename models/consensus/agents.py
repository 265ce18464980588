"""The consensus game's agent: a Mesa ``FixedAgent`` on a network node."""

from __future__ import annotations

from mesa.discrete_space import FixedAgent

from .observation import ConsensusDecision, ConsensusObservation, Message, RoundRecord
from llm_mesa.policy import Policy
from llm_mesa.rounds import PolicyAgent

HISTORY_ROUNDS = 10  # rounds of history an LLM agent is shown (the study's cut)


class ConsensusAgent(FixedAgent, PolicyAgent):
    """One player: a preferred colour, a current colour and a policy.

    Its step is split in two so that rounds are synchronous: ``observe`` (the
    policy then decides, for all agents together) and ``advance``.
    """

    def __init__(self, model, cell, node: int, preference: str, colour: str, policy: Policy):
        super().__init__(model)
        self.cell = cell
        self.node = node
        self.preference = preference
        self.colour = colour
        self.policy = policy
        self.diary = ""
        self.inbox: list[Message] = []  # messages received last round
        self.pending: ConsensusDecision | None = None
        self.last_decision: ConsensusDecision | None = None
        self.flips = 0
        self.flipped = False
        self.neighbour_ids: tuple[int, ...] = ()
        self.neighbours: tuple[ConsensusAgent, ...] = ()

    def link_neighbours(self, agents_by_node: list["ConsensusAgent"]) -> None:
        """Cache neighbours once: the graph is fixed for the game."""
        self.neighbour_ids = tuple(sorted(a.node for a in self.cell.neighborhood.agents))
        self.neighbours = tuple(agents_by_node[i] for i in self.neighbour_ids)

    def observe(self) -> ConsensusObservation:
        """What this agent may see now: its own state and its neighbours' colours."""
        model = self.model
        obs = ConsensusObservation(
            agent_id=self.node,
            round=model.round + 1,
            preference=self.preference,
            colour=self.colour,
            neighbour_ids=self.neighbour_ids,
            neighbour_colours=tuple(a.colour for a in self.neighbours),
            communication=model.communication,
            direct_messages=model.direct_messages,
            label=model.label,
            rounds_left=model.max_rounds - model.round,
            max_rounds=model.max_rounds,
            n_players=model.n,
            payoff_preferred=model.payoff_preferred,
            payoff_other=model.payoff_other,
            game_key=model.game_key,
        )
        if self.policy.needs_history:
            obs.diary = self.diary
            obs.inbox = list(self.inbox)
            obs.history = self._history()
        return obs

    def _history(self) -> list[RoundRecord]:
        model = self.model
        history = model.colour_history
        records = []
        for r in range(max(0, len(history) - HISTORY_ROUNDS), len(history)):
            colours = history[r]
            records.append(RoundRecord(
                round=r,
                own_colour=colours[self.node],
                neighbour_colours={i: colours[i] for i in self.neighbour_ids},
                messages=model.messages_received(self.node, r),
            ))
        return records

    def advance(self) -> None:
        """Apply this round's decision (all agents apply after all decided)."""
        decision = self.pending
        self.last_decision = decision
        self.pending = None
        if decision is None:
            return
        if decision.diary is not None:
            self.diary = decision.diary
        new_colour = decision.colour
        if self.model.message_replaces_move and self.model.deliverable(self, decision):
            new_colour = self.colour  # a message is sent instead of a move
        self.flipped = new_colour != self.colour
        self.flips += self.flipped
        self.colour = new_colour
