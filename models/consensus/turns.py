"""A round of the consensus game in which agents take turns (``update`` random-sequential or random-asynchronous).

Each activation observes the game as it is at its turn (the colours now, the messages
sent to it since its last turn, the moves and messages of the turns before it this
round) and applies its decision at once: its colour changes, and its message reaches
its audience, who read it at their next turn. The order comes from the game's own
activation stream (``llm_mesa.activation_stream``), so one seed plays the same graph
and preferences under every scheme.

Draws: rule agents decide from the rule stream, one uniform per activation in
activation order (a synchronous round draws one per agent in node order); other
games give each activation a ``random.Random`` seeded from the model's ``random``
in activation order. So a run is the same however its LLM calls overlap.

Which turns must wait (``llm_mesa.dependencies``): an agent's moves are seen by its
neighbours and its messages by its audience, so a turn waits for the earlier turns of
its neighbours (no or local communication) or of everyone (global communication).
Turns that do not wait for each other see nothing of each other: LLM calls of such
turns are in flight together (``llm_mesa.play_activations``), and the game equals a
strictly one-at-a-time run. Messages and transcript rows carry their turn
(``activation``) and are kept in turn order, whatever call finished first.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from llm_mesa.update import dependencies, depth, play_activations, turn_order

from .observation import Message

if TYPE_CHECKING:
    from .agents import ConsensusAgent
    from .array_state import Rounds
    from .model import ConsensusModel


class _Draw(random.Random):
    """A ``random.Random`` whose ``random()`` returns a set value: one activation's draw of the rule stream."""

    def __init__(self, value: float = 0.0) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:  # noqa: D102
        return self.value


def transcript_row(model: ConsensusModel, agent: ConsensusAgent, decision: Any, colour_before: str) -> dict[str, Any]:
    """One LLM decision as a row of the transcript table."""
    return {
        "round": model.round + 1, "agent": agent.node, "colour_before": colour_before,
        "colour": decision.colour, "reason": decision.reason, "message": decision.message,
        "message_to": decision.message_to, "diary": decision.diary, "outcome": decision.outcome,
        "failed": decision.failed, "calls": decision.calls, "prompt_tokens": decision.prompt_tokens,
        "completion_tokens": decision.completion_tokens, "cached_tokens": decision.cached_tokens,
        "latency_s": decision.latency_s, "queue_s": decision.queue_s, "server": decision.server,
        "answer": decision.raw,
    }


def play_turns(model: ConsensusModel, rounds: Rounds) -> None:
    """One round of turns (see the module doc); consensus is checked after it, as after a synchronous one."""
    agents = model.agents_by_node
    order = turn_order(model.update, model.n, model.order_rng)
    if model.communication == "global":
        everyone = range(model.n)
        waits = dependencies(order, lambda v: everyone)
    else:
        waits = dependencies(order, lambda v: agents[v].neighbour_ids)
    model.depth += depth(waits)
    if model._stream:
        rngs: list[random.Random] = [_Draw(u) for u in model._rule_rng.random(len(order)).tolist()]
    else:
        rngs = [random.Random(model.random.getrandbits(64)) for _ in order]
    now = model.round + 1
    inboxes: dict[int, list[Message]] = model._inbox_by_round.setdefault(now, {})
    first_message, first_row = len(model.message_log), len(model.transcript)
    before = rounds.codes.copy()

    def observe(agent: ConsensusAgent, k: int):
        model.activation = k
        agent.inbox = sorted(model._unread[agent.node], key=lambda m: (m.round, m.activation))
        model._unread[agent.node] = []  # read now; what later turns send it waits for its next turn
        return agent.observe()

    def apply(agent: ConsensusAgent, decision: Any, k: int) -> None:
        if decision.outcome:
            model.transcript.append({**transcript_row(model, agent, decision, agent.colour), "activation": k})
        agent.pending = decision
        agent.advance()  # its colour is in the game's arrays at once: later turns see it
        if not model.deliverable(agent, decision):
            return
        message = Message(sender=agent.node, round=now, text=decision.message, to=decision.message_to, activation=k)
        model.message_log.append(message)
        for v in model.recipients(agent, decision):
            inboxes.setdefault(v, []).append(message)
            model._unread[v].append(message)

    try:
        decisions = play_activations(agents, order, waits, rngs, observe=observe, apply=apply)
    finally:
        model.activation = None
    # calls that did not wait for each other finished in any order: keep what they left in turn order
    model.message_log[first_message:] = sorted(model.message_log[first_message:], key=lambda m: m.activation)
    model.transcript[first_row:] = sorted(model.transcript[first_row:], key=lambda row: row["activation"])
    for received in inboxes.values():
        received.sort(key=lambda m: m.activation)
    sent = model.message_log[first_message:]
    model._sent_this_round = (len(sent), sum(m.to is not None for m in sent))
    model.round += 1
    per_agent, per_round = model._account(decisions, order)
    rounds.moved(before, per_agent, per_round)


__all__ = ["play_turns", "transcript_row"]
