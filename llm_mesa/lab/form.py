"""The answer form a person fills in, built from the JSON schema an LLM agent's answer follows.

Why from the schema: it is the one statement of what a decision is, for any game
(``Question.schema``), so a seat needs no form of the game's own, and a person's answer
is an answer the game's own decoder reads, exactly as it reads a model's.

* an ``enum`` (or a boolean) is a row of buttons labelled with its values;
* an integer with both bounds is a slider with them; any other number a number box;
* a string is a text box with its ``maxLength``;
* a field the game narrows for this agent (``Facts.choices``: a private message's recipient,
  which the schema types as any integer but the game delivers only to a neighbour) offers
  only those values: buttons, or a list to pick from where it may be left empty. An answer
  that names any other value is refused with the field's words, never sent to be dropped.

A person answers the **decision** fields only: free-text fields an LLM is asked for
(reasons, diaries) are optional, and sent empty when left so, so a decision that is one
enum is one click. A schema of alternatives (``anyOf``/``oneOf``: say, a move or a
message instead) is one tab each; an alternative with no field but free text (a message)
asks for its first required one. ``Form.answer`` checks the values (what a browser sends
is checked again here) and writes the answer as the JSON text a model would have sent.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from llm_mesa.errors import LlmMesaError

#: a text box with no ``maxLength`` holds at most this many characters (what a model's answer may carry)
DEFAULT_TEXT_CHARS = 2000


class FormError(LlmMesaError):
    """An answer that does not fit its form (or a schema no form can be built from); the message says which field."""


@dataclass(frozen=True)
class Field:
    """One field of an answer: its kind (``choice``, ``integer``, ``number``, ``text``) and its bounds."""

    name: str
    kind: str
    label: str
    #: a decision field must be answered; a free-text field (a reason, a diary) may be left empty
    decision: bool
    #: the schema requires it (an empty free-text field is then sent as "")
    required: bool
    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | None = None
    max_length: int | None = None

    @property
    def widget(self) -> str:
        """What the page draws: ``buttons``, ``select`` (a choice that may be left empty), ``slider``, ``number``
        or ``text``."""
        if self.kind == "choice":
            return "buttons" if self.decision else "select"
        if self.kind == "integer" and self.low is not None and self.high is not None:
            return "slider"
        return "number" if self.kind in ("integer", "number") else "text"

    def value(self, given: Any) -> Any:
        """``given`` (from the page) as the field's value; None when left empty; ``FormError`` when it does not fit."""
        if given is None or (isinstance(given, str) and not given.strip() and (self.kind != "choice" or not self.decision)):
            return None
        if self.kind == "choice":
            for choice in self.choices:
                if given == choice or str(given) == str(choice):
                    return choice
            raise FormError(f"{self.label}: choose one of {', '.join(map(str, self.choices))}")
        if self.kind in ("integer", "number"):
            return self._number(given)
        text = str(given)
        if self.max_length is not None and len(text) > self.max_length:
            raise FormError(f"{self.label}: at most {self.max_length} characters (this has {len(text)})")
        return text

    def _number(self, given: Any) -> int | float:
        try:
            number = float(str(given).strip()) if not isinstance(given, (int, float)) or isinstance(given, bool) \
                else float(given)
        except ValueError:
            raise FormError(f"{self.label}: give a number") from None
        if not math.isfinite(number):
            raise FormError(f"{self.label}: give a finite number")
        if self.kind == "integer":
            if not number.is_integer():
                raise FormError(f"{self.label}: give a whole number")
            number = int(number)
        if (self.low is not None and number < self.low) or (self.high is not None and number > self.high):
            raise FormError(f"{self.label}: give a number from {_shown(self.low)} to {_shown(self.high)}")
        return number


@dataclass(frozen=True)
class Alternative:
    """One form of answer (the whole schema, or one of its ``anyOf`` alternatives)."""

    label: str
    fields: tuple[Field, ...]

    @property
    def decisions(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.decision)

    @property
    def one_click(self) -> bool:
        """A decision that is one row of buttons: a click on one answers (the free text goes with it)."""
        return len(self.decisions) == 1 and self.decisions[0].widget == "buttons"


@dataclass(frozen=True)
class Form:
    """Every way to answer one question; ``answer`` turns a person's values into the answer's JSON text."""

    alternatives: tuple[Alternative, ...]

    def answer(self, values: Mapping[str, Any], alternative: int = 0) -> str:
        """The answer as JSON text: decision fields given and checked, free text as typed ("" when
        required and left empty, left out when optional and empty); ``FormError`` names what is missing."""
        if not 0 <= alternative < len(self.alternatives):
            raise FormError(f"this question has {len(self.alternatives)} form(s) of answer, not {alternative + 1}")
        chosen = self.alternatives[alternative]
        unknown = sorted(set(values) - {f.name for f in chosen.fields})
        if unknown:
            raise FormError(f"this answer has no field {unknown[0]!r}")
        answer: dict[str, Any] = {}
        for field in chosen.fields:
            value = field.value(values.get(field.name))
            if value is None and field.decision:
                raise FormError(f"{field.label}: this is the decision; give it")
            if value is None and field.required:
                value = ""  # a free-text field the schema requires of a model, left empty by a person
            if value is not None:
                answer[field.name] = value
        return json.dumps(answer, ensure_ascii=False)


def form_of(schema: Mapping[str, Any] | None, labels: Mapping[str, str] | None = None,
            choices: Mapping[str, Sequence[Any]] | None = None) -> Form:
    """The form of an answer with this JSON schema; ``labels`` (by field name) are the words a person reads;
    ``choices`` (by field name) the only values a field may take for this agent (none at all: the field is
    not offered).

    ``FormError`` for a schema with nothing a person can answer (no object of fields).
    """
    labels = labels or {}
    narrowed = {str(name): tuple(values) for name, values in (choices or {}).items()}
    if not isinstance(schema, Mapping):
        raise FormError("the question has no answer schema to build a form from; the game's LLM policy must "
                        "give one (Question.schema)")
    branches = schema.get("anyOf") or schema.get("oneOf") or [schema]
    alternatives = tuple(_alternative(branch, labels, narrowed) for branch in branches if isinstance(branch, Mapping))
    if not alternatives or not any(a.fields for a in alternatives):
        raise FormError("the answer schema names no field a person can answer (an object with properties)")
    return Form(tuple(a for a in alternatives if a.fields))


def _alternative(schema: Mapping[str, Any], labels: Mapping[str, str],
                 narrowed: Mapping[str, tuple[Any, ...]]) -> Alternative:
    properties = schema.get("properties") or {}
    required = [str(n) for n in schema.get("required") or () if n in properties]
    fields = [_narrowed(_field(str(name), spec, str(name) in required, labels), narrowed)
              for name, spec in properties.items() if isinstance(spec, Mapping)]
    fields = [f for f in fields if f is not None]
    if fields and not any(f.decision for f in fields):  # free text alone (a message): its first required field
        first = next((f for f in fields if f.required), fields[0])
        fields = [replace(f, decision=True) if f is first else f for f in fields]
    decided = [f.label for f in fields if f.decision]
    return Alternative(" and ".join(decided) or "answer", tuple(fields))


def _field(name: str, spec: Mapping[str, Any], required: bool, labels: Mapping[str, str]) -> Field | None:
    label = labels.get(name) or str(spec.get("title") or spec.get("description") or name.replace("_", " "))
    kind = spec.get("type")
    kind = next((k for k in kind if k != "null"), None) if isinstance(kind, Sequence) and not isinstance(kind, str) \
        else kind
    if "enum" in spec or "const" in spec:
        choices = tuple(spec["enum"]) if "enum" in spec else (spec["const"],)
        return Field(name, "choice", label, True, required, choices=choices)
    if kind == "boolean":
        return Field(name, "choice", label, True, required, choices=(True, False))
    if kind in ("integer", "number"):
        low = spec.get("minimum", _exclusive(spec.get("exclusiveMinimum"), kind, 1))
        high = spec.get("maximum", _exclusive(spec.get("exclusiveMaximum"), kind, -1))
        return Field(name, kind, label, required, required, low=low, high=high)
    if kind == "string":
        bound = spec.get("maxLength")
        return Field(name, "text", label, False, required,
                     max_length=int(bound) if isinstance(bound, int) and bound >= 0 else DEFAULT_TEXT_CHARS)
    return None  # an object or an array: nothing a person types in one box


def _narrowed(field: Field | None, narrowed: Mapping[str, tuple[Any, ...]]) -> Field | None:
    """``field`` offering only the values the game narrows it to (none: not offered); a field it leaves alone as is.
    A required field left with no value keeps its schema's form: the game's decoder then says what it takes."""
    if field is None or field.name not in narrowed:
        return field
    values = narrowed[field.name]
    if not values:
        return field if field.required else None
    return replace(field, kind="choice", choices=values, low=None, high=None, max_length=None)


def _exclusive(bound: Any, kind: str, step: int) -> Any:
    if not isinstance(bound, (int, float)) or isinstance(bound, bool):
        return None
    return bound + step if kind == "integer" else bound


def _shown(value: float | None) -> str:
    if value is None:
        return "any"
    return f"{value:g}" if isinstance(value, float) else str(value)


__all__ = ["Alternative", "DEFAULT_TEXT_CHARS", "Field", "Form", "FormError", "form_of"]
