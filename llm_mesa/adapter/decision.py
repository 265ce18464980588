"""One decision an LLM takes in a Mesa model that was not written for llm-mesa: what a researcher declares.

A ``Decision`` names, for the agents of one class, the method in which the model's own rule
decides (``method``), what the agent sees there (``view``), the rule itself as a function of
that view (``rule``, which becomes the ``mesa`` policy's answer and the stand-in's), the answers
it may take (``choices``), what the agent is told (``rules`` first, the same for every agent, so
servers cache them; ``state`` last), how an answer is carried out (``act``), and when it is taken
(``timing``). ``llm_mesa.MesaGame`` turns a model class and its decisions into a game.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from llm_mesa.errors import GameError
from llm_mesa.policy import parse_value
from llm_mesa.prompt_templates import pattern

#: the most characters one field of a prompt holds; a longer one is cut, and the prompt says how much was left out
FIELD_CHARS = 600

#: when a decision is taken: on the state at the start of the model's step (all of a step's calls at once), or at
#: the agent's own turn, seeing the turns before it (calls wait only on the turns they depend on)
TIMINGS = ("step", "turn")


class View(dict):
    """What one agent sees at one decision, and which decision: what every policy of a ``MesaGame`` decides on.

    A dict of the view's fields (as the prompt's templates name them), also read as attributes (``view.round``).
    Which decision is part of what is seen, so two decisions on one view are never one situation.

    Args:
        fields: The view's fields (``Decision.view``'s, with ``round``).
        decision: The decision's name.
        variant: The prompt variant asked in (``study``: the declared wording).
        choices: The answers the decision may take.
    """

    def __init__(self, fields: Mapping[str, Any], decision: str, variant: str = "study",
                 choices: tuple[str, ...] = ()) -> None:
        super().__init__(fields)
        self.decision, self.variant, self.choices = decision, variant, choices

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:  # which decision is part of what is seen: two decisions on one view differ
        return f"View({self.decision!r}, {self.variant!r}, {dict.__repr__(self)})"


def when(*answers: str) -> Callable[[Any, str, Callable[[], Any]], Any]:
    """An ``act`` for a decision whose answer says whether the model's own method runs at all.

    Args:
        *answers: The answers under which the model's own method runs.

    Returns:
        ``act(agent, answer, original)``, which runs ``original()`` when the answer is one of ``answers`` and
        skips it otherwise (a sheep that chose not to eat does not eat).
    """
    def act(agent: Any, answer: str, original: Callable[[], Any]) -> Any:
        return original() if answer in answers else None

    return act


@dataclass(frozen=True)
class Decision:
    """One decision an LLM may take in a Mesa model, for the agents of one class: what a researcher declares.

    The model's own method keeps being called as the model calls it; the decision is taken there, by the game's
    policy: the model's own rule (``mesa``), a ``random`` baseline, or an LLM asked with the declared prompt.

    Args:
        agents: the agents' class (or classes): every agent that is an instance decides.
        method: the agent's method in which the decision is taken; the model calls it as it always does.
        choices: the answers the decision may take (``{"choice": one of them}`` is the answer's schema).
        view: what the agent sees, ``view(agent) -> {field: value}``: every field the templates name.
        rule: the model's own rule, ``rule(view) -> answer``, or how likely it makes each answer
            (``{answer: probability}``) for a rule that draws.
        rules: the rules the agent is told (the system message), ``str.format`` fields from the view.
        state: the agent's state (the user message), likewise; ``{round}`` is the step.
        act: how an answer is carried out, ``act(agent, answer, original)``, ``original`` the model's own method
            bound to the agent (``when("eat")``: run it when the answer is ``eat``).
        name: the decision's name in tables and prompts' keys (default: the method's).
        ask: whether a call of ``method`` is a decision at all, ``ask(agent) -> bool`` (else the model's own
            method runs); default: always.
        timing: ``"step"`` or ``"turn"`` (``TIMINGS``), or ``timing(model)`` giving one of them.
        depends_on: for turns, the agents whose turns can change what an agent sees, ``depends_on(agent)``; its
            call is asked as soon as those turns are done (default: every turn before it, one call at a time).
        failed: what a failed LLM decision becomes (an answer, or ``failed(view) -> answer``; default the first
            choice).
        answer_field: the answer's field name in its JSON object.
        read: how the stand-in server turns the texts it reads in a prompt back into a view (``read(texts) ->
            view``); default: numbers and words read as they look.
        render: the template fields from a view (``render(view) -> fields``), where a field is not printed as is.
        prompts: further variants of the prompt, ``{name: (rules, state)}``, offered as the game's ``prompt``
            parameter; the declared ``rules`` and ``state`` are the variant ``study``.
        template_hash: what identifies the prompt's wording in recorded calls (default: a hash of the templates).
        numbered_turns: recorded calls carry the turn's place in the step (as older recordings of a game did).
    """

    agents: type | tuple[type, ...]
    method: str
    choices: tuple[str, ...]
    view: Callable[[Any], Mapping[str, Any]]
    rule: Callable[[Mapping[str, Any]], Any]
    rules: str
    state: str
    act: Callable[[Any, str, Callable[[], Any]], Any]
    name: str = ""
    ask: Callable[[Any], bool] | None = None
    timing: str | Callable[[Any], str] = "turn"
    depends_on: Callable[[Any], Iterable[Any]] | None = None
    failed: Any = None
    answer_field: str = "choice"
    read: Callable[[Mapping[str, str]], Mapping[str, Any]] | None = None
    render: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    prompts: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    template_hash: str | None = None
    numbered_turns: bool = False

    def __post_init__(self) -> None:
        if not self.choices or len(set(self.choices)) != len(self.choices):
            raise GameError(f"a decision needs distinct choices (got {self.choices!r})")
        if not self.name:
            object.__setattr__(self, "name", self.method)
        if isinstance(self.timing, str) and self.timing not in TIMINGS:
            raise GameError(f"a decision's timing is one of {', '.join(TIMINGS)} (got {self.timing!r})")
        if "study" in self.prompts:
            raise GameError("the declared rules and state are the prompt variant 'study'; name the others otherwise")

    # --- the answer ---------------------------------------------------------------------------
    @property
    def schema(self) -> dict[str, Any]:
        """The answer's JSON schema: one object whose ``answer_field`` is one of ``choices``."""
        return {"type": "object", "properties": {self.answer_field: {"type": "string", "enum": list(self.choices)}},
                "required": [self.answer_field], "additionalProperties": False}

    @property
    def reminder(self) -> str:
        """What an unreadable answer is asked again with: the JSON object each choice is."""
        shown = " or ".join(json.dumps({self.answer_field: choice}) for choice in self.choices)
        return f"Answer only with the JSON object {shown}."

    def decode(self, text: str) -> str | None:
        """The answer in a reply.

        Args:
            text: The model's reply.

        Returns:
            The choice it names (in any case), or None: the reply decides nothing.
        """
        from llm_mesa.llm import parse_json_answer

        data = parse_json_answer(text)
        said = str(data.get(self.answer_field, "")).strip().lower() if data else ""
        return next((choice for choice in self.choices if choice.lower() == said), None)

    def failed_answer(self, view: Mapping[str, Any]) -> str:
        """What a failed LLM decision on ``view`` becomes: ``failed`` (a choice, or a function of the view), else
        the first choice."""
        if self.failed is None:
            return self.choices[0]
        return self.failed(view) if callable(self.failed) else self.failed

    def distribution(self, view: Mapping[str, Any]) -> dict[str, float]:
        """How likely the model's own rule makes each answer: its likelihood, for ``llm-mesa fit``.

        Args:
            view: What the agent sees.

        Returns:
            Choice -> probability: the rule's own, for a rule that draws; 1 for its answer otherwise.
        """
        said = self.rule(view)
        if isinstance(said, Mapping):
            return {choice: float(said.get(choice, 0.0)) for choice in self.choices}
        return {choice: float(choice == said) for choice in self.choices}

    def certain(self, view: Mapping[str, Any]) -> str | None:
        """The rule's answer on ``view`` where it is certain (a rule that does not draw), else None: what
        ``mesa_agreement`` compares an answer with."""
        chances = self.distribution(view)
        best = max(chances, key=chances.get)
        return best if chances[best] == 1.0 else None

    def timing_of(self, model: Any) -> str:
        """When the decision is taken in ``model``: ``step`` or ``turn`` (``timing`` may depend on the model)."""
        return self.timing(model) if callable(self.timing) else self.timing

    # --- the prompt ---------------------------------------------------------------------------
    def variants(self) -> dict[str, tuple[str, str]]:
        """Every wording of the prompt, ``{name: (rules, state)}``: the declared one as ``study``, then ``prompts``."""
        return {"study": (self.rules, self.state), **self.prompts}

    def hash_of(self, variant: str) -> str:
        """The template hash recorded calls of ``variant`` carry (``template_hash`` for the study's, if declared):
        an edited wording never replays stale answers."""
        if variant == "study" and self.template_hash:
            return self.template_hash
        rules, state = self.variants()[variant]
        return hashlib.sha256((rules + state).encode()).hexdigest()[:12]

    def fields(self, view: Mapping[str, Any]) -> dict[str, Any]:
        """The templates' fields from a view, each at most ``FIELD_CHARS`` long, so every prompt is bounded.

        Args:
            view: What the agent sees.

        Returns:
            Field -> value (``render``'s, where declared); a longer value is cut and says how much was left out.
        """
        fields = dict(self.render(view)) if self.render is not None else dict(view)
        for name, value in fields.items():
            text = str(value)
            if len(text) > FIELD_CHARS:
                kept = text[:FIELD_CHARS - 48]
                fields[name] = f"{kept} ... ({len(text) - len(kept)} more characters left out)"
        return fields

    def messages(self, view: Mapping[str, Any], variant: str = "study") -> list[dict[str, str]]:
        """The chat messages of one decision.

        Args:
            view: What the agent sees.
            variant: The prompt's wording (``variants``).

        Returns:
            The rules as the system message (the same for every agent, so servers cache them), the agent's state
            as the user's.
        """
        rules, state = self.variants()[variant]
        fields = self.fields(view)
        return [{"role": "system", "content": rules.format(**fields)}, {"role": "user", "content": state.format(**fields)}]

    def prompt(self, messages: list[dict[str, str]]) -> str:
        """The same call as one raw prompt, for a server in completion mode.

        Args:
            messages: ``messages``' two messages.

        Returns:
            The rules, a blank line, the state and ``Answer:``.
        """
        return f"{messages[0]['content']}\n\n{messages[1]['content']}\nAnswer:"

    def parse(self, full: str) -> dict[str, Any] | None:
        """The view a prompt of this decision was written from, read back: how the stand-in answers as the rule.

        Args:
            full: The prompt's text as the stand-in server sees it: chat messages joined as a role's name, a new
                line and its text, or one raw prompt; of any variant.

        Returns:
            The view's fields (``read``'s, where declared; else numbers and words read as they look), or None when
            the text is not one of this decision's prompts.
        """
        for rules, state in self.variants().values():
            for shape in (f"system\n{rules}\nuser\n{state}", f"{rules}\n\n{state}\nAnswer:"):
                texts = _match(shape, full)
                if texts is not None:
                    return dict(self.read(texts)) if self.read is not None else {k: parse_value(v) for k, v in texts.items()}
        return None


@functools.lru_cache(maxsize=256)
def _pattern(template: str) -> re.Pattern[str]:
    """A regular expression that matches what ``template.format(...)`` writes, each field a named group (kept:
    the stand-in reads every prompt of a game against the same few templates)."""
    return re.compile(pattern(template, {}) + r"(?=\n|\Z)", re.DOTALL)


def _match(template: str, text: str) -> dict[str, str] | None:
    found = _pattern(template).match(text)
    return None if found is None else found.groupdict()


def draw(chances: Mapping[str, float], rng: random.Random) -> str:
    """One answer drawn from ``rng`` with these chances (answer -> probability)."""
    return rng.choices(list(chances), weights=list(chances.values()))[0]


__all__ = ["Decision", "FIELD_CHARS", "TIMINGS", "View", "when"]
