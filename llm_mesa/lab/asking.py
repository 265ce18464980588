"""The seam between a game and a seat: what its LLM policy would ask, put to a person.

A seat needs four things of any game, and finds them on the game's LLM policy (the one
``llm_mesa.declared.llm_policy`` makes), so that a game whose LLM policy is an ``llm_mesa.LLMPolicy``
gets seats with no code of its own:

* ``question(observation) -> Question``: what a model is asked (its messages, the answer's
  JSON schema, the decoder, the template hash; its sample key where the game keys its calls
  itself): the form is built from the schema, the answer read by the decoder, and recorded
  under the request's key;
* ``failed(observation)``: the game's default action, what a missed answer becomes;
* optionally ``facts(observation) -> Facts``: the page a person reads (default: the
  observation's fields, ``facts.observation_facts``).

The policy is built on ``human_endpoint()`` (model ``human``, nothing sampled), so that the
key a person's answer is recorded under is the key the game's LLM policy on that endpoint
replays (``llm:model=human``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from llm_mesa.decisions import request_of
from llm_mesa.errors import LlmMesaError
from llm_mesa.game_hooks import call
from llm_mesa.lab.facts import Facts, observation_facts
from llm_mesa.lab.form import Form, form_of

if TYPE_CHECKING:
    from llm_mesa.llm.endpoint import Endpoint
    from llm_mesa.llm.types import LLMRequest, LLMResult

#: the model people's answers are recorded under
HUMAN = "human"
#: where the ``human`` endpoint points: the discard port of this machine (a replay never calls it)
HUMAN_BASE_URL = "http://127.0.0.1:9/v1"
#: the failure a missed answer is recorded as: no answer by the deadline
NO_ANSWER = "no_answer"


class SeatingError(LlmMesaError):
    """A game whose LLM policy cannot be put to a person; the message names what it lacks."""


def human_endpoint() -> Endpoint:
    """The endpoint people's answers are recorded under: model ``human``, no sampling parameter."""
    from llm_mesa.llm.endpoint import Endpoint

    return Endpoint(base_url=HUMAN_BASE_URL, model=HUMAN)


@dataclass(frozen=True)
class Asked:
    """One decision put to a person: the call an LLM agent would make, its form, its facts and its default."""

    request: LLMRequest
    decode: Callable[[str], Any]
    default: Any
    facts: Facts
    form: Form

    def identity(self, endpoint: Endpoint) -> dict[str, Any]:
        """What the store keys this decision by on ``endpoint`` (as ``llm_mesa.llm.complete`` keys a call)."""
        from llm_mesa.llm.store_keys import request_identity

        return request_identity(endpoint, self.request)

    def key(self, endpoint: Endpoint) -> str:
        from llm_mesa.llm.store_keys import request_key

        return request_key(self.identity(endpoint))

    def result(self, text: str | None, taken: float, deadline: float) -> LLMResult:
        """The person's answer as a recorded call: its text, or a failure of kind ``no_answer``."""
        from llm_mesa.llm.types import LLMResult

        if text is None:
            return LLMResult(error=NO_ANSWER, error_message=f"no answer within the deadline of {deadline:g} s",
                             latency_s=float(taken), model=HUMAN, attempts=1)
        return LLMResult(text=text, finish_reason="stop", latency_s=float(taken), model=HUMAN, attempts=1)


def check_seatable(game_name: str, policy: Any) -> None:
    """Refuse, before any seat opens, a game's LLM policy that cannot say what it asks."""
    if not callable(getattr(policy, "question", None)) or not callable(getattr(policy, "failed", None)):
        raise SeatingError(f"the {game_name} game's LLM policy does not say what it asks: give it "
                           "question(observation) -> llm_mesa.Question and failed(observation), as llm_mesa.LLMPolicy "
                           "does (docs/write-a-game.md, 'People in the game')")


def facts_of(policy: Any, observation: Any, agent: Any, round_number: int | None = None,
             rounds: int | None = None) -> Facts:
    """What a person in ``agent``'s place reads: the policy's own ``facts``, else the observation's fields."""
    own = getattr(policy, "facts", None)
    if callable(own):  # the game's own code: what it raises is one line that names the game and the hook
        return call(_game_of(policy), "LLM policy's facts()", own, observation)
    return observation_facts(observation, f"agent {agent}", round_number, rounds)


def _game_of(policy: Any) -> SimpleNamespace:
    return SimpleNamespace(name=getattr(policy, "game", "") or "?")


def asked_of(policy: Any, observation: Any, agent: Any, round_number: int | None = None,
             rounds: int | None = None) -> Asked:
    """What ``policy`` (the game's LLM policy on ``human_endpoint()``) asks of ``agent`` now, as a seat's question.

    Called within the agent's turn (the round runners say whose it is), so the request's
    sample key is the one an LLM decision of that agent, round and turn carries.
    """
    game = _game_of(policy)
    question = call(game, "LLM policy's question()", policy.question, observation)
    facts = facts_of(policy, observation, agent, round_number, rounds)
    default = call(game, "LLM policy's failed()", policy.failed, observation)
    return Asked(request_of(question), question.decode, default, facts, form_of(question.schema, facts.labels, facts.choices))


__all__ = ["Asked", "HUMAN", "HUMAN_BASE_URL", "NO_ANSWER", "SeatingError", "asked_of", "check_seatable", "facts_of",
           "human_endpoint"]
