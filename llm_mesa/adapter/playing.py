"""The policies of a Mesa model's game beyond its own rule: a random baseline, the LLM, and the stand-in's rule.

* ``RandomChoice``: each answer of a decision equally likely (a baseline that knows nothing);
* ``decision_llm(game)``: the game's LLM policy factory: each decision asked as its ``Decision``
  words it (rules first, the agent's state last, the answer's JSON schema), keyed, recorded and
  counted by the core;
* ``stand_in(game)``: the loopback server's ``GAME:mesa`` behaviour, which reads a prompt back into
  what the agent saw and answers as the model's own rule would (drawing, with the server's own
  stream, where the rule draws), so LLM agents answered by it play the rule's game;
* ``estimate``: one game's LLM use at most, for dry runs and budgets.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from llm_mesa.adapter.decision import FIELD_CHARS, draw
from llm_mesa.decisions import LLMPolicy, Question
from llm_mesa.game_types import LlmEstimate
from llm_mesa.policy import Policy

if TYPE_CHECKING:
    from llm_mesa.adapter.game import MesaGame


class RandomChoice(Policy):
    """Each answer of a decision equally likely: a baseline that sees nothing."""

    name = "random"

    def decide(self, observation: Any, rng: random.Random) -> Any:
        return rng.choice(observation.choices)

    def distribution(self, observation: Any) -> dict[Any, float]:
        return {choice: 1 / len(observation.choices) for choice in observation.choices}


class DecisionLLM(LLMPolicy):
    """Asks the endpoint each decision of a Mesa model's game; the core keys, records and counts each call.

    Args:
        game: The game: its decisions word each question.
        endpoint: Where and how to call.
        store: The record/replay store (None: not recorded).
        **options: Endpoint options, where no endpoint is given.
    """

    def __init__(self, game: MesaGame, endpoint: Any = None, store: Any = None, **options: Any) -> None:
        self.game = game.name
        self.decisions = {d.name: d for d in game.decisions}
        super().__init__(endpoint, store, **options)

    def question(self, view: Any) -> Question[str]:
        """The decision's prompt in the view's wording, its one-field JSON schema, reminder and template hash."""
        decision = self.decisions[view.decision]
        messages = decision.messages(view, view.variant)
        return Question(decision.decode, messages=messages, prompt=decision.prompt(messages), schema=decision.schema,
                        reminder=decision.reminder, template_hash=decision.hash_of(view.variant))

    def failed(self, view: Any) -> str:
        """The decision's declared fallback (``Decision.failed_answer``)."""
        return self.decisions[view.decision].failed_answer(view)


def decision_llm(game: MesaGame) -> Any:
    """The game's LLM policy factory (``LlmSupport.policy``).

    Args:
        game: The game.

    Returns:
        ``factory(endpoint, store) -> DecisionLLM``.
    """
    def factory(endpoint: Any, store: Any = None) -> DecisionLLM:
        return DecisionLLM(game, endpoint, store)

    return factory


def stand_in(game: MesaGame) -> Any:
    """The stand-in's ``GAME:mesa`` behaviour (``LlmSupport.behaviours``).

    Args:
        game: The game.

    Returns:
        Its factory, ``factory(params, model)``: the behaviour reads a prompt of any of the game's decisions back
        into its view and answers as the model's own rule would (drawing, with the server's own stream, where the
        rule draws); a prompt it cannot read is refused (HTTP 400).
    """
    from llm_mesa.loopback import Behaviour, PromptNotUnderstood

    class RuleBehaviour(Behaviour):
        kind = f"{game.name}:mesa"
        json_answer = True
        uses_rng = True

        def answer(self, prompt: Any, rng: random.Random | None) -> dict[str, Any]:
            for decision in game.decisions:
                view = decision.parse(prompt.full)
                if view is None:
                    continue
                chances = decision.distribution(view)
                certain = decision.certain(view)
                said = certain if certain is not None else draw(chances, rng or random.Random(0))
                return {decision.answer_field: said}
            raise PromptNotUnderstood(f"{game.name}:mesa reads the prompts of the {game.name} game's decisions "
                                      f"({', '.join(d.name for d in game.decisions)}); this prompt is none of them")

    RuleBehaviour.__doc__ = f"answers the {game.name} game's prompts as the model's own rule would"
    return lambda params, model: RuleBehaviour()


def observed(game: MesaGame) -> Any:
    """The game's reader of recorded decisions for ``llm-mesa fit`` (``PolicyCatalog.observed``).

    Args:
        game: The game.

    Returns:
        ``read(tables, parameters, seed)``, which yields each row of a game's ``decisions`` table as ``(agent,
        round, view, answer)``, the view rebuilt from its ``view_*`` columns (a JSON text read back).
    """
    from llm_mesa.adapter.decision import View

    def read(tables: Mapping[str, Any], parameters: Mapping[str, Any], seed: int) -> Any:
        made = tables.get("decisions")
        if made is None or not len(made):
            return
        by_name = {d.name: d for d in game.decisions}
        columns = [c for c in made.columns if c.startswith("view_")]
        for row in made.to_dict("records"):
            decision = by_name.get(row["decision"])
            if decision is None or row.get("answer") is None or row["answer"] != row["answer"]:
                continue  # a decision the model's own code took by a draw: its answer is not recorded
            fields = {c[len("view_"):]: _read_back(row[c]) for c in columns if row[c] == row[c]}
            fields["round"] = int(row["round"])
            yield row["agent"], int(row["round"]), View(fields, decision.name, choices=decision.choices), row["answer"]

    return read


def _read_back(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        import json

        try:
            return json.loads(value)
        except ValueError:
            return value
    return value.item() if hasattr(value, "item") else value


def estimate(game: MesaGame, parameters: Mapping[str, Any], endpoint: Any) -> LlmEstimate:
    """One game's LLM use at most (``LlmSupport.estimate``).

    Every agent that may decide (``max_agents``, else ``most_agents``, else those of the game built) decides every
    step, each decision once, on a prompt as long as its templates with every field at its longest
    (``FIELD_CHARS``). Its rounds of waiting: one a step where decisions are asked at the step's start; one a call
    where each turn waits for the one before; where turns wait only on those they depend on, the depth of a step
    played by the model's own rule, every step.

    Args:
        game: The game.
        parameters: Its parameters.
        endpoint: The endpoint (its token limit bounds a completion; 12 tokens otherwise).

    Returns:
        The estimate: calls, rounds of waiting, tokens per call, and that a game may stop early.
    """
    from llm_mesa.adapter.hooks import hooks_of
    from llm_mesa.play import make_model

    full = game.parameters.validate(parameters, complete=True)
    model = make_model(game, full, "mesa", 0)
    rounds = int(full["max_rounds"])
    bound = full.get("max_agents") or (game.most_agents(full) if game.most_agents is not None else None)
    agents = {d.name: bound or sum(isinstance(a, d.agents) for a in model.agents) for d in game.decisions}
    calls = sum(agents[d.name] * rounds for d in game.decisions)
    timings = {d.timing_of(model) for d in game.decisions}
    if timings == {"step"}:
        waits = rounds
    elif all(d.depends_on is not None for d in game.decisions if d.timing_of(model) == "turn"):
        model.step()  # one step of the model's own order: how long its chains of turns are
        waits = max(1, hooks_of(model).depth) * rounds
    else:
        waits = calls
    tokens = max(decision_tokens(d) for d in game.decisions)
    completion = endpoint.max_tokens or endpoint.max_completion_tokens or 12
    return LlmEstimate(calls=max(calls, 1), rounds=min(waits, max(calls, 1)), prompt_tokens_per_call=tokens,
                       completion_tokens_per_call=completion, may_stop_early=True)


def decision_tokens(decision: Any) -> int:
    """The most prompt tokens one call of ``decision`` can take.

    Args:
        decision: A ``Decision``.

    Returns:
        Its templates' own tokens, each field at its longest (a token is at least one character), with the
        reminder a retry adds; the most over its prompt variants.
    """
    import string

    from llm_mesa.loopback.behaviours import count_tokens

    most = 0
    for rules, state in decision.variants().values():
        literal = "".join(part for template in (rules, state) for part, *_ in string.Formatter().parse(template))
        fields = sum(1 for template in (rules, state) for _, name, *_ in string.Formatter().parse(template) if name)
        most = max(most, count_tokens(literal) + fields * FIELD_CHARS + count_tokens(decision.reminder) + 8)
    return most


__all__ = ["DecisionLLM", "RandomChoice", "decision_llm", "decision_tokens", "draw", "estimate",
           "stand_in"]
