"""The consensus game's agent: a Mesa ``FixedAgent`` on a network node."""

from __future__ import annotations

from mesa.discrete_space import FixedAgent

from llm_mesa.policy import Policy
from llm_mesa.rounds import PolicyAgent

from .observation import COLOURS, ConsensusDecision, ConsensusObservation, Message, RoundRecord, colour_code


class ConsensusAgent(FixedAgent, PolicyAgent):
    """One player: a preferred colour, a current colour and a policy.

    Its step is split in two so that rounds are synchronous: ``observe`` (the
    policy then decides, for all agents together) and ``advance``. Its colour and
    what happened to it last round live in the model's arrays (``model._rounds``):
    the attributes below read them, so a round of rule agents touches no agent.
    """

    def __init__(self, model, cell, node: int, preference: str, policy: Policy):
        super().__init__(model)
        self.cell = cell
        self.node = node
        self.preference = preference
        self.policy = policy
        self.diary = ""
        self.inbox: list[Message] = []  # messages received last round
        #: the records of rounds played (final once played: built once, shown in every later window)
        self._played: dict[int, RoundRecord] = {}
        self.pending: ConsensusDecision | None = None
        self.last_decision: ConsensusDecision | None = None
        self.neighbour_ids: tuple[int, ...] = ()
        self.neighbours: tuple[ConsensusAgent, ...] = ()

    @property
    def colour(self) -> str:
        return COLOURS[self.model._rounds.codes[self.node]]

    @colour.setter
    def colour(self, value: str) -> None:
        self.model._rounds.codes[self.node] = colour_code(value)

    @property
    def flips(self) -> int:
        """How many times this agent changed colour so far."""
        return int(self.model._rounds.flip_counts[self.node])

    @property
    def flipped(self) -> bool:
        """Did it change colour last round?"""
        return bool(self.model._rounds.flipped[-1][self.node])

    @property
    def had_opportunity(self) -> bool:
        """Did an opposing strict majority surround it at the start of last round?"""
        rounds = self.model._rounds
        return bool(rounds.opportunity[-1][self.node]) if rounds.agents else False

    @property
    def made_stubborn_move(self) -> bool:
        rounds = self.model._rounds
        return bool(rounds.stubborn[-1][self.node]) if rounds.agents else False

    def _accounting(self, key: str):
        rounds = self.model._rounds
        last = rounds.accounting[-1] if rounds.agents else None
        return 0 if last is None else last[key][self.node].item()

    decision_failed = property(lambda self: bool(self._accounting("failed")))
    round_calls = property(lambda self: self._accounting("calls"))
    round_prompt_tokens = property(lambda self: self._accounting("prompt_tokens"))
    round_completion_tokens = property(lambda self: self._accounting("completion_tokens"))

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
            message_replaces_move=model.message_replaces_move,
            label=model.label,
            rounds_left=model.max_rounds - model.round,
            max_rounds=model.max_rounds,
            n_players=model.n,
            payoff_preferred=model.payoff_preferred,
            payoff_other=model.payoff_other,
            message_cost=model.message_cost,
            prompt=model.prompt_variant,
            game_key=model.game_key,
            history_rounds=model.history_rounds,
            update=model.update,
            activation=model.activation,
        )
        if self.policy.needs_history or getattr(self.policy, "reads_messages", False):
            obs.diary = self.diary  # what a talking rule policy reads: its diary and last round's messages
            obs.inbox = list(self.inbox)
        if self.policy.needs_history:
            obs.history = self._history()
        return obs

    def _history(self) -> list[RoundRecord]:
        """The rounds played so far, the last ``history`` of them: colours after each, messages received in it.

        Round 1 has none (``Rounds.history[0]`` is the start, not a round played). When agents take
        turns (``update`` not synchronous) the last ``history`` rounds played are followed by the
        round being played, as far as this agent can see it at its turn: the colours now and the
        messages received so far in it (a window of 10 shows 10 rounds played, then the round so far).
        """
        model = self.model
        history = model._rounds.history
        records = []
        turns = model.activation is not None and model.history_rounds > 0
        first = max(1, model.round - model.history_rounds + 1)
        played = self._played
        for r in range(first, model.round + 1):
            record = played.get(r)
            if record is None:
                codes = history[r]
                record = played[r] = RoundRecord(
                    round=r,
                    own_colour=COLOURS[codes[self.node]],
                    neighbour_colours={i: COLOURS[codes[i]] for i in self.neighbour_ids},
                    messages=model.messages_received(self.node, r),
                )
            records.append(record)
        for r in [r for r in played if r < first]:  # out of the window for good
            del played[r]
        if turns:
            now = model.round + 1
            records.append(RoundRecord(
                round=now, own_colour=self.colour, neighbour_colours={a.node: a.colour for a in self.neighbours},
                messages=sorted(model.messages_received(self.node, now), key=lambda m: m.activation), current=True))
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
        if self.model.message_replaces_move and self.model.deliverable(self, decision):
            return  # a message is sent instead of a move
        self.colour = decision.colour
