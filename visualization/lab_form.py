"""The answer form of a seat's page, drawn from ``llm_mesa.lab.form.Form`` (itself built from the answer's schema).

An enum is a row of buttons labelled with its values (a decision that is one enum is
one click: the buttons send the answer, with whatever free text was typed above them),
a bounded integer a slider with its bounds, any other number a number box, a string a
text box that holds at most its length limit, a choice that may be left empty (a private
message's recipient, among the agent's neighbours only) a list to pick from. Free-text
fields are optional. A schema of alternatives (a move, or a message instead) shows one tab
each. What the browser sends is checked again by the seat (``Seat.submit``): an answer that
does not fit shows the reason here and nothing is sent; an answer the seat does not take
(its question closed, or was answered in another tab) is handed to ``refused``, which the
page shows whatever question it draws next.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import solara

from llm_mesa.lab.form import Alternative, Field, Form, FormError
from llm_mesa.lab.seat import SeatError
from llm_mesa.views import NAMED_COLOURS


def _colour(choice: Any) -> str:
    """A choice that names a colour is drawn in it (as the explorer draws states); any other in the theme's."""
    return NAMED_COLOURS.get(str(choice).lower(), "primary")


def _css(value: Any) -> str:
    return "".join(c if c.isalnum() else "-" for c in str(value).lower())


@solara.component
def TextField(field: Field, value: str, on_value: Callable[[str], None]):
    """A text box that keeps at most ``max_length`` characters, and says how many are left."""
    bound = field.max_length
    label = field.label if field.decision else f"{field.label} (optional)"

    def typed(text: str | None) -> None:
        on_value((text or "")[:bound] if bound is not None else (text or ""))

    solara.InputText(label, value=value, on_value=typed, continuous_update=True,
                     classes=["llm-mesa-lab-text", f"llm-mesa-lab-field-{_css(field.name)}"])
    if bound is not None:
        solara.Text(f"{len(value)} of at most {bound} characters", classes=["llm-mesa-lab-counter"],
                    style={"font-size": "0.75em", "color": "#666"})


@solara.component
def NumberField(field: Field, value: Any, on_value: Callable[[Any], None]):
    """A slider with the field's bounds (a bounded integer), else a number box."""
    label = field.label if field.decision else f"{field.label} (optional)"
    if field.widget == "slider":
        current = int(value) if value not in (None, "") else int(field.low)
        solara.Text(f"{label}: {current} (from {field.low:g} to {field.high:g})", classes=["llm-mesa-lab-slider-label"])
        with solara.Column(classes=["llm-mesa-lab-slider", f"llm-mesa-lab-field-{_css(field.name)}"]):
            solara.SliderInt("", value=current, min=int(field.low), max=int(field.high), on_value=on_value,
                             thumb_label=True)
        return
    bounds = "" if field.low is None and field.high is None else \
        f" (from {'any' if field.low is None else f'{field.low:g}'} to {'any' if field.high is None else f'{field.high:g}'})"
    solara.InputText(label + bounds, value="" if value is None else str(value), on_value=on_value,
                     continuous_update=True, classes=["llm-mesa-lab-number", f"llm-mesa-lab-field-{_css(field.name)}"])


#: what a list to pick from shows for "none of them" (the field left out of the answer)
LEFT_EMPTY = "(none)"


@solara.component
def SelectField(field: Field, value: Any, on_value: Callable[[Any], None]):
    """A choice that may be left empty: a list of the values it may take, and "(none)"."""
    shown = {str(choice): choice for choice in field.choices}

    def picked(text: str | None) -> None:
        on_value(shown.get(str(text)) if text not in (None, LEFT_EMPTY) else None)

    solara.Select(f"{field.label} (optional)", values=[LEFT_EMPTY, *shown], value=LEFT_EMPTY if value is None
                  else str(value), on_value=picked, classes=["llm-mesa-lab-select", f"llm-mesa-lab-field-{_css(field.name)}"])


@solara.component
def AlternativeForm(alternative: Alternative, send: Callable[[dict[str, Any]], None]):
    """One form of answer: its fields, then its buttons (or a Send button)."""
    values, set_values = solara.use_state({}, key=alternative.label)

    def put(name: str, value: Any) -> None:
        set_values({**values, name: value})

    def given() -> dict[str, Any]:
        out = {f.name: values.get(f.name) for f in alternative.fields}
        for f in alternative.fields:  # a slider never moved answers its shown value
            if f.widget == "slider" and out[f.name] in (None, ""):
                out[f.name] = int(f.low)
        return {k: v for k, v in out.items() if v not in (None, "")}

    buttons = [f for f in alternative.fields if f.widget == "buttons"]
    others = [f for f in alternative.fields if f.widget != "buttons"]
    with solara.Column(gap="4px", classes=["llm-mesa-lab-alternative"]):
        for field in sorted(others, key=lambda f: not f.decision):  # what decides first, then the free text
            if field.widget == "text":
                TextField(field, str(values.get(field.name) or ""), lambda v, n=field.name: put(n, v))
            elif field.widget == "select":
                SelectField(field, values.get(field.name), lambda v, n=field.name: put(n, v))
            else:
                NumberField(field, values.get(field.name), lambda v, n=field.name: put(n, v))
        for field in buttons:
            solara.Text(field.label, style={"font-weight": "bold"}, classes=["llm-mesa-lab-choice-label"])
            with solara.Row(classes=["llm-mesa-lab-choices"], style={"flex-wrap": "wrap"}):
                for choice in field.choices:
                    chosen = values.get(field.name) == choice

                    def click(choice=choice, name=field.name):
                        if alternative.one_click:
                            send({**given(), name: choice})
                        else:
                            put(name, choice)

                    solara.Button(str(choice).lower() if isinstance(choice, bool) else str(choice), on_click=click,
                                  color=_colour(choice) if chosen or alternative.one_click else None,
                                  outlined=not (chosen or alternative.one_click),
                                  style={"text-transform": "none", "min-width": "88px", "color": "white"}
                                  if chosen or alternative.one_click else {"text-transform": "none"},
                                  classes=["llm-mesa-lab-choice", f"llm-mesa-lab-choice-{_css(choice)}"])
        if not alternative.one_click:
            solara.Button("Send", on_click=lambda: send(given()), color="primary",
                          classes=["llm-mesa-lab-send"])


@solara.component
def AnswerForm(form: Form, submit: Callable[[Mapping[str, Any], int], str], refused: Callable[[str], None]):
    """Every form of answer of one question (one tab each), and the reason an answer was not taken.

    ``submit`` sends an answer to this form's own question (the page binds its number), ``refused``
    shows a refusal on the page: the form may be gone by then (another question drawn in its place).
    """
    chosen, set_chosen = solara.use_state(0)
    error, set_error = solara.use_state("")
    labels = [a.label for a in form.alternatives]
    index = min(chosen, len(labels) - 1)

    def send(values: dict[str, Any]) -> None:
        try:
            submit(values, index)
            set_error("")
        except FormError as exc:  # the answer does not fit: fix it here
            set_error(str(exc))
        except SeatError as exc:  # not taken at all: the page says so, whatever it shows next
            refused(str(exc))
        except Exception:  # noqa: BLE001 - a page never shows a traceback
            set_error("This answer could not be taken; send it again, or ask the host.")

    with solara.Column(classes=["llm-mesa-lab-form"], gap="6px"):
        if len(labels) > 1:
            solara.ToggleButtonsSingle(value=labels[index], values=labels, on_value=lambda v: set_chosen(labels.index(v)),
                                       classes=["llm-mesa-lab-alternatives"])
        AlternativeForm(form.alternatives[index], send)
        if error:
            solara.Error(error, dense=True, classes=["llm-mesa-lab-form-error"])


__all__ = ["AlternativeForm", "AnswerForm", "LEFT_EMPTY", "NumberField", "SelectField", "TextField"]
