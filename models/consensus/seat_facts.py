"""What a person seated at a consensus agent reads (``llm-mesa lab``): the prompt's facts, as a page.

The same facts an LLM agent's prompt carries (``prompt.py``), from its observation alone:
its preference and colour, its neighbours' colours, the game's rules in a few rows, its
diary, and the history window with the messages it received, each message as delivered
(cut and neutralised, as the prompt quotes it). Nothing of any other agent's preference,
diary or messages to others is in an observation, so nothing of it can be here.
"""

from __future__ import annotations

from llm_mesa import TURN_RULES, Facts

from .observation import ConsensusObservation, Message, RoundRecord
from .prompt import FIELD_TEXT, ConsensusPrompt, plural

LABELS = {"colour": "Your colour for the next round", "reason": "Why: " + FIELD_TEXT["reason"],
          "diary": "Your diary: " + FIELD_TEXT["diary"], "message": "Your message to the others",
          "message_to": "Only to one neighbour (leave it empty to tell them all)"}


def consensus_facts(obs: ConsensusObservation, prompt: ConsensusPrompt) -> Facts:
    others = obs.n_players - 1
    players = "humans" if obs.label == "human" else "LLM agents"
    neighbours = ", ".join(f"node {v} {c}" for v, c in zip(obs.neighbour_ids, obs.neighbour_colours)) or "none"
    rows = [("You are", f"node {obs.agent_id}"), ("Your preferred colour", obs.preference),
            ("Your colour now", obs.colour), ("Your neighbours' colours", neighbours),
            ("The other players", f"{others} other {plural(others, 'player')}, who are {players}"),
            ("Payoff", f"£{obs.payoff_preferred:.2f} if the whole network ends on your preferred colour; "
                       f"£{obs.payoff_other:.2f} if it ends on the other colour; £0 if it has not reached one colour "
                       f"by round {obs.max_rounds}"),
            ("Communication", _communication(obs, prompt))]
    if obs.update != "synchronous":
        rows.append(("Turns", TURN_RULES[obs.update]))
    if obs.communication != "none" or obs.diary:
        rows.append(("Your diary", obs.diary or "(empty)"))
    sections = []
    if obs.history:
        sections.append((f"The last {len(obs.history)} {plural(len(obs.history), 'round')}",
                         tuple(line for record in obs.history for line in _round(record, obs, prompt))))
    elif obs.inbox:
        sections.append(("Messages you received last round", tuple(_message(m, prompt) for m in obs.inbox)))
    # a private message goes to a neighbour only (the model delivers no other): the form offers just them
    private = {"message_to": tuple(obs.neighbour_ids)} if obs.direct_messages and obs.communication != "none" else {}
    return Facts(f"node {obs.agent_id}", tuple(rows), tuple(sections), obs.round, obs.max_rounds, LABELS, private)


def _communication(obs: ConsensusObservation, prompt: ConsensusPrompt) -> str:
    texts = prompt.communication_text if obs.message_replaces_move or obs.communication == "none" \
        else prompt.alongside_text
    words = texts[obs.communication]
    if obs.direct_messages and obs.communication != "none":
        words += " You may also send it privately to one neighbour."
    if obs.message_cost and obs.communication != "none":
        words += f" Each message costs £{obs.message_cost:.2f} of your payoff."
    return words


def _round(record: RoundRecord, obs: ConsensusObservation, prompt: ConsensusPrompt) -> list[str]:
    around = ", ".join(f"node {v} {c}" for v, c in record.neighbour_colours.items()) or "none"
    head = f"Round {record.round}{' so far' if record.current else ''}: you {record.own_colour}; neighbours {around}"
    said = [f"  {_message(m, prompt)}" for m in record.messages] if obs.communication != "none" else []
    return [head, *said]


def _message(message: Message, prompt: ConsensusPrompt) -> str:
    scope = " privately to you" if message.to is not None else ""
    return f"node {message.sender} said{scope}: “{prompt.delivered(message.text)}”"


__all__ = ["LABELS", "consensus_facts"]
