"""The colouring game's LLM policy: one call per agent and round it decides, answered in JSON.

One policy object serves every agent of a game; ``adecide`` is a coroutine, so the
round runner has the whole round's calls in flight together. Every call goes
through ``llm_mesa.llm.ask`` (one reminder on an unreadable answer) and the
``ResponseStore`` it is given, so a recorded game replays exactly with no call.
An answer that still decides nothing never stops the game: the agent keeps its
colour and the decision counts as failed.
"""

from __future__ import annotations

import random
from typing import Any

from llm_mesa import Facts, Policy, Question, register_policy, turn_key
from llm_mesa.llm import Endpoint, LLMRequest, ResponseStore, Usage, ask, parse_json_answer

from .policies import NAME, Move, View
from .prompt import ColouringPrompt, answer_schema


def decode_answer(text: str, view: View) -> Move | None:
    """The move in an answer (a colour of the game, any case, ``color`` accepted), or None."""
    data = parse_json_answer(text)
    if not data:
        return None
    colour = str(data.get("colour", data.get("color", ""))).strip().lower()
    if colour not in view.colours:
        return None
    return Move(colour, reason=str(data.get("reason", ""))[:2000], outcome="ok")


@register_policy("llm", NAME, "an LLM agent behind any OpenAI-compatible endpoint")
class ColouringLLM(Policy):
    """Ask an LLM for each decision.

    Args:
        endpoint: where and how to call (or ``base_url``/``model`` and endpoint options
            as keywords, e.g. ``make_policy("llm:base_url=...,model=...", "colouring")``).
        store: the record/replay store (None: calls are not recorded).
        prompt: the templates (``ColouringPrompt``).
    """

    is_async = True

    def __init__(self, endpoint: Endpoint | None = None, *, store: ResponseStore | None = None,
                 prompt: ColouringPrompt | None = None, **endpoint_options: Any) -> None:
        self.endpoint = endpoint or Endpoint.from_url_and_env(
            endpoint_options.pop("base_url", None), endpoint_options.pop("model", None), **endpoint_options)
        self.store = store
        self.prompt = prompt or ColouringPrompt()
        self.usage = Usage(NAME)

    def params(self) -> dict[str, Any]:
        return {"base_url": self.endpoint.base_url, "model": self.endpoint.model}

    def identity(self) -> str:
        return f"llm:model={self.endpoint.model}"

    def request(self, view: View) -> LLMRequest:
        key = turn_key(view.game_key, view.agent, view.round, view.activation)
        if self.endpoint.prompt_mode == "completion":
            return LLMRequest(prompt=self.prompt.completion_prompt(view), sample_key=key,
                              template_hash=self.prompt.template_hash, purpose="decide")
        return LLMRequest(messages=self.prompt.messages(view), schema=answer_schema(view.colours, self.endpoint.max_tokens),
                          sample_key=key, template_hash=self.prompt.template_hash, purpose="decide",
                          schema_name="decision")

    async def adecide(self, observation: View, rng: random.Random) -> Move:
        answer = await ask(self.endpoint, self.request(observation), lambda text: decode_answer(text, observation),
                           self.prompt.reminder(observation), store=self.store, usage=self.usage)
        if answer.ok and answer.value is not None:
            return Move(answer.value.colour, answer.value.reason, answer.outcome)
        return Move(observation.colour, outcome=answer.outcome)


    # --- a person in this agent's place (llm-mesa lab): the seam of ``llm_mesa.LLMPolicy`` ----------------
    def question(self, view: View) -> Question:
        """What the agent is asked (the request ``adecide`` sends, under its key), for a seat to put to a person."""
        request = self.request(view)
        return Question(lambda text: decode_answer(text, view), messages=request.messages, prompt=request.prompt,
                        schema=request.schema, reminder=self.prompt.reminder(view),
                        template_hash=request.template_hash, schema_name=request.schema_name,
                        sample_key=request.sample_key)

    def failed(self, view: View) -> Move:
        """The game's default action: the agent keeps its colour."""
        return Move(view.colour, outcome="default")

    def facts(self, view: View) -> Facts:
        """What a person in this agent's place reads: the prompt's facts, as a page."""
        return seat_facts(view)


LABELS = {"colour": "Your colour for the next round", "reason": "Why: what you saw that made you choose it"}


def seat_facts(view: View) -> Facts:
    """The facts of the colouring prompt (``prompt.py``) for one agent, from its view alone."""
    if view.neighbour_degrees is None:
        around = [f"agent {v} {c}" for v, c in zip(view.neighbours, view.neighbour_colours)]
    else:
        around = [f"agent {v} {c} ({d} neighbours)"
                  for v, c, d in zip(view.neighbours, view.neighbour_colours, view.neighbour_degrees)]
    rows = [("You are", f"agent {view.agent}"), ("Your colour now", view.colour),
            ("Your neighbours' colours", ", ".join(around) or "none"),
            ("In conflict", "yes: a neighbour holds your colour" if view.in_conflict else "no"),
            ("Colours", ", ".join(view.colours)),
            ("The other players", f"{view.n_players - 1}, each on a node of the network"),
            ("Payoff", f"${view.payoff:.2f} for every player if the network has no conflict by round "
                       f"{view.max_rounds}; $0 otherwise (the game ends as soon as there is none)")]
    if view.conflicts is not None:
        rows.append(("Conflicts in the whole network", str(view.conflicts)))
    if view.inertia:
        rows.append(("Sitting out", f"each round every player is asked with probability {1 - view.inertia:.0%}"))
    return Facts(f"agent {view.agent}", tuple(rows), (), view.round, view.max_rounds, LABELS)


def game_policy(endpoint: Any, store: ResponseStore | None = None) -> ColouringLLM:
    """The game contract's LLM policy factory (``ColouringGame.llm.policy``)."""
    return ColouringLLM(endpoint, store=store)
