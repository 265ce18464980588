"""llm-mesa's explorer pieces as components for Mesa's own ``SolaraViz``.

A Mesa user writes ``SolaraViz(model, components=[...], model_params=...)`` as for any
Mesa model, and takes llm-mesa's pieces::

    from mesa.visualization import SolaraViz
    from llm_mesa.visualization.components import agent_component, charts_component, model_params, network_component

    page = SolaraViz(model, components=[network_component(), charts_component(), agent_component()],
                     model_params=model_params(GAME, policy=POLICY, rng=1))

(``GAME`` a game's name, ``POLICY`` one of its policies; ``examples/solaraviz_consensus.py`` is a whole page.)

* ``network_component()``: the round's banners and the model's space: its network
  (fill = state as the game declares it, ring, flagged squares, marked diamonds,
  same-state bands for categories) with its echo-chamber map, or its grid (square or
  hexagonal cells, empty ones grey); a click selects an agent (a model with no space:
  the round line and banners only);
* ``charts_component()``: the game's per-round charts;
* ``agent_component()``: the selected agent's panel (observation, last reason,
  message, diary where the game has them).

Each piece is a plain function of the model (Mesa redraws it after every step) and
draws what the game's view says (``view_of(Game)``), found from the model's class or
named with ``game=``; a model of no installed game gets the generic view (its Mesa
``Network`` or grid, its ``DataCollector``). These are the very pieces the explorer's own
pages draw with (``panels``, ``network_view``). The selected agent is a Solara
reactive value, so each visitor selects their own.

Offline: importing this module points Solara's asset proxy at llm-mesa's cache
(``python -m llm_mesa.visualization.assets fill``) when ``SOLARA_ASSETS_PROXY_CACHE_DIR``
is unset and the cache is complete, so the page renders without a route to a CDN, and
turns Solara's telemetry and install-check frames off (``offline``); run the page with
``solara run --no-check-version ...`` so that Solara does not ask PyPI for its version.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping
from typing import Any

import solara

from llm_mesa.games import Game
from llm_mesa.registry import game_names, get_game
from llm_mesa.views import GameView, view_of

from . import assets, offline  # noqa: F401 - offline: no telemetry, no check frames, under any solara run
from .network_view import Banners, NetworkPanel
from .panels import AgentPanel
from .vega_widget import VegaChart


def use_offline_cache() -> str | None:
    """Point Solara at llm-mesa's asset cache when the user set none and the cache is complete; the folder used."""
    if os.environ.get(assets.SOLARA_CACHE_ENV):
        return os.environ[assets.SOLARA_CACHE_ENV]
    cache = assets.default_cache_dir()
    if assets.missing_assets(cache):
        return None
    os.environ[assets.SOLARA_CACHE_ENV] = str(cache)
    try:  # a server already running (``solara run`` imports it first) reads this setting at each request
        import solara.server.settings as settings

        settings.assets.proxy_cache_dir = cache
    except ImportError:  # pragma: no cover - solara always has it
        pass
    return str(cache)


OFFLINE_CACHE = use_offline_cache()
selected_agent = solara.reactive(0)  # per visitor: Solara keeps a reactive value per session
_views: dict[Any, GameView] = {}
_checked: dict[Any, type] = {}  # one checked class per model class and game


class _AnyGame(Game):
    """The generic view's game for a model of no installed game: nothing but its model."""

    name = "model"

    def build(self, parameters, policy, seed):  # pragma: no cover - the components never build
        raise NotImplementedError


def view_for(model: Any, game: str | Game | GameView | None = None) -> GameView:
    """The view that draws ``model``: the one given, the game whose package defines the model's class, or the generic one."""
    if isinstance(game, GameView):
        return game
    if isinstance(game, Game):
        return view_of(game)
    if isinstance(game, str):
        return view_of(get_game(game))
    from llm_mesa.adapter.hooks import HOOKS

    if not isinstance(model, type) and model in HOOKS:  # a Mesa model played through the adapter: its game's hooks
        return view_of(HOOKS[model].game)
    kind = model if isinstance(model, type) else type(model)
    if kind not in _views:
        module = kind.__module__
        found = None
        for name in game_names():
            package = type(get_game(name)).__module__.rpartition(".")[0] or type(get_game(name)).__module__
            if module == package or module.startswith(package + "."):
                found = view_of(get_game(name))
                break
        _views[kind] = found or GameView(_AnyGame())
    return _views[kind]


#: each piece is a column as tall as its cell of Mesa's grid: its pictures share what its text leaves, so the
#: whole network and every chart show in the cell Mesa gives (about 390 px), and follow when the user resizes it;
#: below a chart's minimum the cell scrolls (nothing is cut off out of reach)
CELL = {"min-width": "0", "width": "100%", "height": "100%", "overflow": "auto", "display": "flex",
        "flex-direction": "column", "flex-wrap": "nowrap"}
#: banners in a cell take less of its height (smaller type, less padding)
CELL_BANNERS = ".llm-mesa-component-network .v-alert { font-size: 0.82em; padding: 4px 10px; margin-bottom: 2px; }"
#: the least height of one chart in a cell before the cell scrolls (its title, axes and a readable plot)
CHART_MIN_HEIGHT = 160


def network_component(game: str | Game | GameView | None = None, *, height: int | None = None) -> Callable[[Any], Any]:
    """The round's banners and the picture of a model's space, for ``SolaraViz(components=...)``: its network
    (and chamber map) or its grid; a model with no space gets its round line and banners alone.

    The picture fills the cell's height; ``height`` (pixels) fixes it instead.
    """

    def Network(model):
        view = view_for(model, game)
        picture = view.picture(model)
        with solara.Column(classes=["llm-mesa-component-network"], style=CELL, gap="4px"):
            solara.Style(CELL_BANNERS)
            solara.Text(view.round_label(model), classes=["llm-mesa-round"], style={"font-weight": "bold"})
            refused = refusal_words(model, view.game.parameters.controls())
            if refused is not None:
                solara.Error(refused[1], dense=True, classes=["llm-mesa-control-error", f"llm-mesa-refused-{refused[0]}"])
            Banners(view.banners(model))
            if picture is not None:
                NetworkPanel(picture, selected=selected_agent.value, on_select=selected_agent.set,
                             height=height or 300, fill=height is None)

    return Network


def charts_component(game: str | Game | GameView | None = None) -> Callable[[Any], Any]:
    """The game's per-round charts of a model, for ``SolaraViz(components=...)``: one column of them (two
    columns from three charts on), sharing the cell's height, each as tall as its row."""

    def RoundCharts(model):
        view = view_for(model, game)
        rounds = view.rounds(model)
        rounds.attrs["llm"] = view.uses_llm(model)
        charts = view.charts(rounds)
        columns = 1 if len(charts) <= 2 else 2  # a cell of Mesa's grid holds two rows of two charts, readable
        grid = {**CELL, "display": "grid", "grid-template-columns": f"repeat({columns}, minmax(0, 1fr))",
                "grid-auto-rows": f"minmax({CHART_MIN_HEIGHT}px, 1fr)", "gap": "6px"}
        with solara.Div(classes=["llm-mesa-component-charts", "llm-mesa-plots"], style=grid):
            for cls, spec in charts:
                with solara.Column(style={"min-height": "0", "min-width": "0", "height": "100%"}, gap="0px"):
                    VegaChart(spec, classes=[cls], fill=True)

    return RoundCharts


def agent_component(game: str | Game | GameView | None = None) -> Callable[[Any], Any]:
    """The selected agent's panel (click a node in the network component), for ``SolaraViz(components=...)``."""

    def Agent(model):
        view = view_for(model, game)
        count = len(view.agents(model))
        chosen = min(max(selected_agent.value, 0), max(count - 1, 0))
        with solara.Column(classes=["llm-mesa-component-agent"], style=CELL):
            if count:
                AgentPanel(count, chosen, view.agent_rows(model, chosen), selected_agent.set, names=view.names(model))

    return Agent


def checked(model_class: type, game: str | Game | GameView | None = None) -> type:
    """``model_class`` whose construction never raises a game's refusal: what Mesa's SolaraViz Reset builds.

    Mesa's Reset builds ``type(model)(**values)``; a combination of values the game refuses
    (``N = 2`` with a Barabási-Albert graph that needs N > 2) used to replace the whole page
    with a traceback. A model of this class builds instead with the refused control at its
    default (else every control at its default), keeps the refusal as ``refused`` (the
    control, the message in the page's words, the value played instead), and the page stays
    live: ``model_params(..., model=model)`` writes the message beside the control and
    ``network_component`` shows it above the picture. The class keeps ``model_class``'s name,
    module and signature, so Mesa and ``view_for`` see the game's own model.
    """
    from llm_mesa.errors import LlmMesaError
    from llm_mesa.views.controls import ControlError, blamed, page_words

    view = view_for(model_class, game)
    key = (model_class, view.game.name)
    if key in _checked:
        return _checked[key]
    parameters = view.game.parameters
    specs = parameters.controls()

    def __init__(self, *args: Any, **values: Any) -> None:
        try:
            model_class.__init__(self, *args, **values)
            self.refused = None
            return
        except (LlmMesaError, ValueError) as exc:
            control = blamed(str(exc), specs, parameters)
            message = page_words(str(exc), specs, parameters)
        fixed = {k: v for k, v in values.items() if k not in parameters}
        tries = [{**values, control: parameters[control].default}] if control in parameters else []
        tries += [fixed, {}]  # the game's defaults with the fixed values (policy, seed), else the model's own
        for instead in tries:
            vars(self).clear()  # nothing of the refused build stays (Mesa's Model wraps step() on the instance)
            try:
                model_class.__init__(self, *args, **instead)
            except (LlmMesaError, ValueError):
                continue
            self.refused = (control, message, instead.get(control), values.get(control))
            return
        raise ControlError(control, message)

    __init__.__signature__ = inspect.signature(model_class.__init__)  # Mesa checks the model's own arguments
    made = type(model_class.__name__, (model_class,), {"__init__": __init__, "__module__": model_class.__module__,
                                                       "__doc__": model_class.__doc__})
    made.__qualname__ = model_class.__qualname__
    _checked[key] = made
    return made


def refusal_words(model: Any, specs: Mapping[str, Mapping[str, Any]]) -> tuple[str, str, str] | None:
    """A refused Reset's control, its message with what the page plays instead, and the few words its control's
    label carries (``N (agents) ⚠ 2 refused: plays 36``); None when nothing was refused."""
    refused = getattr(model, "refused", None)
    if not refused:
        return None
    control, message, instead, asked = refused
    label = specs.get(control, {}).get("label", control)
    if instead is not None and control in specs:
        return control, f"{message}; the game shown plays {label} {instead}", f"{label} ⚠ {asked} refused: plays {instead}"
    return control, f"{message}; the game shown plays the defaults", f"{label} ⚠ refused: plays the defaults"


def components(game: str | Game | GameView | None = None) -> list[Callable[[Any], Any]]:
    """The network, the charts and the agent panel, in that order."""
    return [network_component(game), charts_component(game), agent_component(game)]


def model_params(game: str | Game, *, model: Any = None, **fixed: Any) -> dict[str, Any]:
    """Mesa ``model_params`` from the game's parameter definition, plus the model's other arguments given fixed.

    Every parameter with a control becomes a Mesa input whose slider stays within the
    parameter's declared bounds; ``fixed`` adds what the model's class also takes (its
    policy, its seed), e.g. ``policy="voter", rng=1``. ``model``: the model shown (of a
    ``checked`` class); a combination it refused is written beside the control at fault.
    """
    chosen = get_game(game) if isinstance(game, str) else game
    specs = chosen.parameters.controls()
    refused = refusal_words(model, specs) if model is not None else None
    if refused is not None and refused[0] in specs:  # beside the control, in a few words; the reason above the picture
        specs[refused[0]] = {**specs[refused[0]], "label": refused[2]}
    return {**specs, **fixed}


__all__ = ["OFFLINE_CACHE", "agent_component", "charts_component", "checked", "components", "model_params",
           "network_component", "refusal_words", "selected_agent", "use_offline_cache", "view_for"]
