"""The explorer's controls, and one game per visitor.

``ControlPanel`` draws controls from Mesa-style ``model_params`` specs (which a
game's view derives from its parameter definition): sliders show their value, a
seed is a number field, a ``Combobox`` takes any text and offers its usual values, a control whose value differs from the running game's says
"Reset to apply", and an error is shown beside the control it concerns, with every
control kept in place.

``GameSession`` holds the game(s) of one browser session: each tab builds its own
(``use_session``), so two visitors never step each other's game. Building a game
from control values goes through the view's ``build_from``, which raises
``ControlError`` that names the control at fault. A link's values (``?NAME=VALUE``) are
checked like the controls: a bad one shows its control's message, and the page
starts with the rest.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import solara
import solara.lab

from llm_mesa.views.controls import GENERAL, ControlError, initial_values


def _shown(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@solara.component
def Control(name: str, spec: Mapping[str, Any], value: Any, on_value: Callable[[Any], None],
            applied: Any = None, error: str | None = None):
    """One control, its value, its error and whether a Reset is needed to apply it."""
    kind = spec.get("type", "InputText")
    label = spec.get("label", name)
    with solara.Column(gap="0px", classes=["llm-mesa-control", f"llm-mesa-control-{name}"]):
        if name == "seed" or kind == "InputInt":
            solara.InputInt(label, value=int(value), on_value=lambda v: on_value(int(v)) if v is not None else None)
        elif kind in ("SliderInt", "SliderFloat"):
            solara.Text(f"{label}: {_shown(value)}", classes=["llm-mesa-slider-label"],
                        style={"font-size": "0.85em", "color": "#555"})
            slider = solara.SliderInt if kind == "SliderInt" else solara.SliderFloat
            low, high = spec.get("min", 0), spec.get("max", 100)
            widen = bool(spec.get("widen")) and isinstance(value, (int, float))
            if widen:  # a value beyond the offered range (a link's, a typed one) widens the slider, never clamped
                low, high = min(low, value), max(high, value)
            with solara.Row(gap="8px", style={"align-items": "center"}):
                slider("", value=value, min=low, max=high, step=spec.get("step", 1), on_value=on_value,
                       thumb_label=True)
                if widen:  # type any value the game takes, beyond the slider's range too
                    typed = solara.InputInt if kind == "SliderInt" else solara.InputFloat
                    typed("", value=value, on_value=lambda v: on_value(v) if v is not None else None,
                          continuous_update=False, classes=["llm-mesa-typed"], style={"max-width": "90px"})
        elif kind == "Select":
            solara.Select(label, values=list(spec.get("values", [])), value=value, on_value=on_value)
        elif kind == "Combobox":  # any text, its usual values offered (e.g. a policy mix of one's own)
            solara.v.Combobox(label=label, items=list(spec.get("values", [])), v_model=value,
                              on_v_model=lambda v: on_value("" if v is None else str(v)), hide_details=True)
        elif kind == "Checkbox":
            solara.Checkbox(label=label, value=bool(value), on_value=on_value)
        else:
            solara.InputText(label, value=str(value), on_value=on_value, continuous_update=True)
        if error:
            solara.Error(error, dense=True, classes=["llm-mesa-control-error"])
        elif applied is not None and value != applied:
            solara.Text("Reset to apply", classes=["llm-mesa-reset-hint"],
                        style={"color": "#e65100", "font-size": "0.8em", "font-weight": "bold"})


@solara.component
def ControlPanel(specs: Mapping[str, Mapping[str, Any]], values: solara.Reactive[dict[str, Any]],
                 applied: Mapping[str, Any], errors: Mapping[str, str]):
    """Every control of a page, in the order of ``specs``; a control whose ``when`` does not hold (e.g. a ring
    degree ``{"topology": ["ws"]}`` beside another network) is not shown, unless it has an error to show. An error
    about no control is said once, in the page (``ErrorNote``), never here as well."""
    with solara.Column(classes=["llm-mesa-controls"], gap="6px"):
        for name, spec in specs.items():
            if not applies(spec, values.value) and not errors.get(name):
                continue
            Control(name, spec, values.value.get(name, spec.get("value")),
                    lambda v, name=name: values.set({**values.value, name: v}),
                    applied=applied.get(name), error=errors.get(name))


def applies(spec: Mapping[str, Any], values: Mapping[str, Any]) -> bool:
    """Does a control matter for these values: every control its ``when`` names holds one of the listed values?"""
    return all(values.get(other) in allowed for other, allowed in (spec.get("when") or {}).items())


class GameSession:
    """The game(s) of one browser session, built from control values by ``build``.

    ``build(values)`` returns the new game state (a model, or a tuple of models) or
    raises ``ControlError``; any other exception is reported against no control.
    A failed Reset keeps the running game and its controls.
    """

    def __init__(self, build: Callable[[dict[str, Any]], Any], values: Mapping[str, Any],
                 errors: Mapping[str, str] | None = None) -> None:
        self.build = build
        self.lock = threading.RLock()
        self.errors: dict[str, str] = {}
        self.applied = dict(values)
        self.game = None
        self.reset(values)
        if errors:  # a link's bad values: the page starts without them and says so beside each control
            self.errors = {**dict(errors), **self.errors}

    def reset(self, values: Mapping[str, Any]) -> bool:
        """A new game from ``values``; on an error keep the old one and record the message."""
        try:
            game = self.build(dict(values))
        except ControlError as exc:
            self.errors = {exc.control: str(exc)}
            return False
        except Exception as exc:  # noqa: BLE001 - a page never shows a traceback
            self.errors = {GENERAL: f"{type(exc).__name__}: {exc}"}
            return False
        with self.lock:
            self.game, self.errors, self.applied = game, {}, dict(values)
        return True

    def models(self) -> tuple:
        return self.game if isinstance(self.game, tuple) else (self.game,)

    @property
    def running(self) -> bool:
        return self.game is not None and any(m.running for m in self.models())

    def step(self) -> bool:
        """One round of every game that still runs (they step together); False, with a message, if it broke."""
        with self.lock:
            try:
                for model in self.models():
                    if model.running:
                        model.step()
            except Exception as exc:  # noqa: BLE001 - a page never shows a traceback
                self.errors = {GENERAL: f"the round could not be played: {type(exc).__name__}: {exc}"}
                return False
        return True


def ErrorNote(session: GameSession, what: str = "game"):
    """In the main area: a round that broke, or a pointer to the control that needs fixing."""
    if session.errors.get(GENERAL):
        solara.Error(session.errors[GENERAL], dense=True, classes=["llm-mesa-errors-note"])
    elif session.errors:
        solara.Warning(f"A control needs fixing (see the sidebar); the {what} shown is the last one that started.",
                       dense=True, classes=["llm-mesa-errors-note"])


def use_session(build: Callable[[dict[str, Any]], Any], specs: Mapping[str, Mapping[str, Any]],
                query: Callable[[str], tuple[dict[str, Any], dict[str, str]]] | None = None):
    """This browser session's game, its control values, and a counter that moves at every change.

    The page's query string may preset controls (``?NAME=VALUE``): a link reopens a game;
    ``query`` checks its values like the controls (a bad one keeps its default and shows its message).
    """
    router = solara.use_router()

    def start():
        given, errors = query(router.search or "") if query is not None else ({}, {})
        values = {**initial_values(specs), **given}
        session = GameSession(build, values, errors)
        if session.game is None and given:  # the link's values together make no game: the defaults play, the
            refused = dict(session.errors)  # controls keep the link's values and say what is wrong beside them
            session.reset(initial_values(specs))
            session.errors = {**refused, **session.errors}
        return session, values

    session, first = solara.use_memo(start, dependencies=[])
    values = solara.use_reactive(first)
    version = solara.use_reactive(0)
    return session, values, version


@solara.component
def GameButtons(session: GameSession, values: solara.Reactive[dict[str, Any]], version: solara.Reactive[int],
                interval: float = 0.3, settled: solara.Reactive[int] | None = None):
    """Reset, Step, Play/Pause: they act on this session's game only.

    The buttons read ``version`` themselves, so every change of the game (a Reset, a
    Step, each round of Play, an error) redraws them with its state: Step and Play
    are enabled exactly while the game runs. Passing only the reactive object, and not
    reading it, left them as they were drawn (disabled after Play to the end, still
    enabled after a Reset or at the last round). ``settled`` moves at a Reset and at a round that failed
    (what the controls say changes then), never at a plain Step.
    """
    playing = solara.use_reactive(False)
    _ = version.value  # subscribe: redraw at every change of the game
    with session.lock:
        running = session.running

    def bump():
        version.set(version.value + 1)

    def settle():
        if settled is not None:
            settled.set(settled.value + 1)

    def reset():
        playing.set(False)
        session.reset(values.value)
        bump()
        settle()

    def step():
        ok = False
        try:
            ok = session.step()
        finally:
            bump()
            if not ok:
                settle()

    def play_loop():
        while playing.value and session.running:
            started = time.monotonic()
            ok = session.step()
            bump()
            if not ok:
                settle()
                break
            time.sleep(max(0.0, interval - (time.monotonic() - started)))
        playing.set(False)

    solara.lab.use_task(play_loop, dependencies=[playing.value], prefer_threaded=True)
    with solara.Row(classes=["llm-mesa-buttons"], style={"align-items": "center", "flex-wrap": "wrap"}):
        solara.Button("Reset", on_click=reset, outlined=True, classes=["llm-mesa-reset"])
        solara.Button("Step", on_click=step, disabled=playing.value or not running, color="primary",
                      classes=["llm-mesa-step"])
        if playing.value:
            solara.Button("Pause", on_click=lambda: playing.set(False), classes=["llm-mesa-pause"])
        else:
            solara.Button("Play", on_click=lambda: playing.set(True), disabled=not running,
                          classes=["llm-mesa-play"])





#: the environment variable through which ``llm-mesa viz --game NAME`` names the game
GAME_ENV = "LLM_MESA_GAME"


def page_view(name: str | None = None):
    """The view of the game a page shows: ``name``, else ``$LLM_MESA_GAME``, else the only game installed."""
    import os

    from llm_mesa.registry import default_game
    from llm_mesa.views import view_of

    return view_of(default_game(name or os.environ.get(GAME_ENV) or None))


__all__ = ["Control", "ControlError", "ControlPanel", "ErrorNote", "GAME_ENV", "GENERAL", "GameButtons", "GameSession", "applies",
           "initial_values", "page_view", "use_session"]
