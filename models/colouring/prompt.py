"""The colouring game's prompt: rules first (identical for every agent of a game), state last.

The rules carry the game the agent is really in (its number of players, its k
colours, its round limit, its payoff and what the agents are shown), never
defaults from here. Identical rule text first lets servers with prefix caching
reuse it across all agents of a round. The templates are plain ``str.format``
strings: read them, or pass your own ``ColouringPrompt``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from llm_mesa import TURN_RULES

from .policies import View

RULES = """You are a player in a networked colouring game with {n_others} other players, who are LLM agents.
Each player sits on a node of a network and {sees}.
There are {k} colours: {colour_list}. Every player holds one of them.
Two neighbours holding the same colour are a conflict. The group succeeds when the network has no conflict at all, and the game ends as soon as it has none.
The game lasts at most {max_rounds} rounds. {turns}{asked}
Payoff, the same for every player: ${payoff:.2f} if the network has no conflict by the last round; $0 otherwise.{conflicts}{network}
Answer with one JSON object with these keys: "colour": the colour you choose, one of {colour_list}; "reason": what you saw that made you choose it. Write nothing else."""
SEES_LOCAL = "sees only its own colour and its direct neighbours' colours{degrees}, never the whole network"
SEES_ALL = ("sees the whole network: every player's colour and every link between players (a player can change "
            "only its own colour)")
NETWORK_RULE = "\nThe network's links (node-node): {links}"
DEGREES_RULE = " and how many neighbours each of them has"
CONFLICTS_RULE = "\nYou are also told how many conflicts the whole network has."
ASKED_RULE = " (Each player is asked in a round with probability {share:.0%}; one not asked keeps its colour that round.)"

STATE = """Round: {round} of {max_rounds}
You are node {agent}.
Your current colour: {colour}
Your neighbours' current colours: {neighbours}{conflicts}{network}
Choose your colour for the next round."""
CONFLICTS_STATE = "\nConflicts in the whole network: {conflicts}"
NETWORK_STATE = "\nEvery node's current colour: {colours}"

REMINDER = ('Your last reply could not be read. Reply with exactly one JSON object with the keys '
            '"colour" (one of {colour_list}) and "reason", and nothing else.')

#: the reason's bound without a token budget; with one, what fits beside the keys
MAX_REASON_CHARS = 200
FORMAT_TOKENS = 12
CHARS_PER_TOKEN = 2.5


def answer_schema(colours: tuple[str, ...], max_tokens: int | None = None) -> dict[str, Any]:
    """The JSON schema of an answer: one of the game's colours, and a reason that fits the budget."""
    bound = MAX_REASON_CHARS if max_tokens is None else int(
        min(MAX_REASON_CHARS, max(8, (max_tokens - FORMAT_TOKENS) * CHARS_PER_TOKEN)))
    return {"type": "object",
            "properties": {"colour": {"type": "string", "enum": list(colours)},
                           "reason": {"type": "string", "maxLength": bound}},
            "required": ["colour", "reason"], "additionalProperties": False}


@dataclass(frozen=True)
class ColouringPrompt:
    """The templates, and how a view fills them."""

    rules: str = RULES
    state: str = STATE
    reminder_text: str = REMINDER
    #: rules in their own (system) message, so a server's prompt cache reuses them at the boundary
    system_role: bool = True

    @cached_property
    def template_hash(self) -> str:
        """Changes whenever any template text changes, so stale answers never replay."""
        parts = [self.rules, self.state, self.reminder_text, DEGREES_RULE, CONFLICTS_RULE, ASKED_RULE, CONFLICTS_STATE,
                 SEES_LOCAL, SEES_ALL, NETWORK_RULE, NETWORK_STATE, str(self.system_role), *TURN_RULES.values()]
        return hashlib.sha256("\x1e".join(parts).encode()).hexdigest()[:16]

    def rules_text(self, view: View) -> str:
        """The game's rules; with the whole network shown, its links too (the same for every player of the game)."""
        local = SEES_LOCAL.format(degrees=DEGREES_RULE if view.neighbour_degrees is not None else "")
        links = (NETWORK_RULE.format(links=", ".join(f"{u}-{v}" for u, v in view.links))
                 if view.links is not None else "")
        return self.rules.format(
            n_others=view.n_players - 1, sees=SEES_ALL if view.network_colours is not None else local,
            k=len(view.colours), network=links, colour_list=", ".join(view.colours), max_rounds=view.max_rounds,
            turns=TURN_RULES[view.update],
            asked=ASKED_RULE.format(share=1 - view.inertia) if view.inertia else "",
            payoff=view.payoff, conflicts=CONFLICTS_RULE if view.conflicts is not None else "")

    def state_text(self, view: View) -> str:
        if view.neighbour_degrees is None:
            pairs = [f"{v}: {c}" for v, c in zip(view.neighbours, view.neighbour_colours)]
        else:
            pairs = [f"{v}: {c} ({d} neighbours)"
                     for v, c, d in zip(view.neighbours, view.neighbour_colours, view.neighbour_degrees)]
        return self.state.format(
            round=view.round, max_rounds=view.max_rounds, agent=view.agent, colour=view.colour,
            neighbours=", ".join(pairs) or "none",
            conflicts=CONFLICTS_STATE.format(conflicts=view.conflicts) if view.conflicts is not None else "",
            network=NETWORK_STATE.format(colours=", ".join(f"{v}: {c}" for v, c in enumerate(view.network_colours)))
            if view.network_colours is not None else "")

    def messages(self, view: View) -> list[dict[str, str]]:
        rules, state = self.rules_text(view), self.state_text(view)
        if self.system_role:
            return [{"role": "system", "content": rules}, {"role": "user", "content": state}]
        return [{"role": "user", "content": f"{rules}\n\n{state}"}]

    def completion_prompt(self, view: View) -> str:
        """The same content as one raw prompt, for ``prompt_mode="completion"``."""
        return f"{self.rules_text(view)}\n\n{self.state_text(view)}\nAnswer: "

    def reminder(self, view: View) -> str:
        return self.reminder_text.format(colour_list=", ".join(view.colours))
