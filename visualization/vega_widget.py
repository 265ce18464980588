"""The explorer's one chart component: a Vega-Lite spec drawn in the browser by a kept view.

Solara's own ``FigureAltair`` embeds a new Vega view at every change of the spec
and never finalizes the old one: stepping a 1,000-node game kept about 5 MB of
JavaScript heap per round, and every redraw waited 100 ms of debounce. This
widget finalizes the previous view before drawing the next, coalesces changes
that arrive while a drawing is under way (only the latest spec is drawn), and
reports a click on a mark with its datum. A spec names its renderer in
``usermeta.embedOptions.renderer`` (SVG by default; a grid of thousands of cells asks for a
canvas), and the drawn chart's title is kept in its element's ``data-title``, whatever
the renderer. Vega, Vega-Lite and vega-embed load from
the same CDN paths as Solara's chart, so the offline asset cache serves them.
The template is inline (no data file to package).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipyvuetify as v
import solara
import traitlets

TEMPLATE = r"""
<template>
    <div class="llm-mesa-vega"><div ref="plotElement"></div></div>
</template>
<script>
module.exports = {
    created() {
        this.vegaLoaded = this.loadVega();
        this.chain = this.vegaLoaded;
        this.queued = false;
        this.view = null;
    },
    mounted() {
        this.observer = new ResizeObserver(() => { if (this.view) { this.view.resize().runAsync(); } });
        this.observer.observe(this.$refs.plotElement);
        this.schedule();
    },
    destroyed() {
        if (this.observer) { this.observer.disconnect(); }
        this.finalize();
    },
    unmounted() {
        this.$options.destroyed.call(this);
    },
    watch: {
        spec_json() { this.schedule(); },
        listen_to_click() { this.schedule(); },
    },
    methods: {
        schedule() {
            if (this.queued) { return; }  // a drawing is queued: it will take the latest spec
            this.queued = true;
            this.chain = this.chain.then(() => { this.queued = false; return this.plot(); })
                                   .catch((error) => console.error(error));
        },
        finalize() {
            if (this.view) { this.view.finalize(); this.view = null; this.shape = null; }
        },
        shapeOf(spec) {
            // everything but the data and the parameters' values: the same shape is redrawn by new data alone
            const {datasets, params, ...rest} = spec;
            return JSON.stringify([rest, (params || []).map((p) => p.name), this.listen_to_click]);
        },
        keepTitle(spec) {
            // what is drawn, readable whatever the renderer (a canvas holds no text a test or a benchmark can read)
            const said = (spec.params || []).find((p) => p.name === 'llm_mesa_title');
            const title = said ? said.value : spec.title && (spec.title.text !== undefined ? spec.title.text : spec.title);
            this.$refs.plotElement.dataset.title = Array.isArray(title) ? title.join(' ') : String(title || '');
        },
        async plot() {
            // not synced yet, or no longer shown (a grid re-mounts its items): drawn when it is
            if (!this.spec_json || !this.$refs.plotElement) { return; }
            const spec = JSON.parse(this.spec_json);
            const shape = this.shapeOf(spec);
            if (this.view && spec.datasets && shape === this.shape) {
                // the next round of one picture: its data and titles change, the view stays (no parse, no compile)
                for (const [name, values] of Object.entries(spec.datasets)) { this.view.data(name, values); }
                for (const p of spec.params || []) { this.view.signal(p.name, p.value); }
                await this.view.runAsync();
                this.keepTitle(spec);
                return;
            }
            const vegaEmbed = await new Promise((resolve, reject) => require(['vega-embed'], resolve, reject));
            this.finalize();
            if (!this.$refs.plotElement) { return; }
            const options = (spec.usermeta && spec.usermeta.embedOptions) || {};
            const result = await vegaEmbed(this.$refs.plotElement, spec, {actions: false, renderer: options.renderer || 'svg'});
            this.view = result.view;
            this.shape = shape;
            this.keepTitle(spec);
            if (this.listen_to_click) {
                this.view.addEventListener('click', (event, item) => {
                    this.vega_click(item && item.datum ? JSON.parse(JSON.stringify(item.datum)) : null);
                });
            }
        },
        async loadVega() {
            await this.loadRequire();
            require.config({
                map: {
                    '*': {
                        'vega': `${this.getCdn()}/vega@5/build/vega.min.js`,
                        'vega-lite': `${this.getCdn()}/vega-lite@5/build/vega-lite.min.js`,
                        'vega-embed': `${this.getCdn()}/vega-embed@6/build/vega-embed.min.js`,
                    }
                }
            });
            await new Promise((resolve, reject) => require(['vega', 'vega-lite', 'vega-embed'], resolve, reject));
        },
        loadRequire() {
            if (window.requirejs) { return Promise.resolve(); }
            return new Promise((resolve, reject) => {
                const script = document.createElement('script');
                script.src = `${this.getCdn()}/requirejs@2.3.6/require.js`;
                script.onload = resolve;
                script.onerror = reject;
                document.head.appendChild(script);
            });
        },
        getJupyterBaseUrl() {
            if (document.getElementsByTagName("base").length) { return "./"; }
            const labConfigData = document.getElementById('jupyter-config-data');
            if (labConfigData) { return JSON.parse(labConfigData.textContent).baseUrl; }
            let base = document.body.dataset.baseUrl || document.baseURI;
            if (!base.endsWith('/')) { base += '/'; }
            return base;
        },
        getCdn() {
            return this.cdn || (window.solara ? window.solara.cdn : `${this.getJupyterBaseUrl()}_solara/cdn`);
        },
    },
}
</script>
<style id="llm-mesa-vega">
.llm-mesa-vega, .llm-mesa-vega .vega-embed { width: 100%; }
.llm-mesa-chart-fill .llm-mesa-vega, .llm-mesa-chart-fill .vega-embed { height: 100%; }
</style>
"""


class KeptVega(v.VuetifyTemplate):
    """A Vega-Lite chart whose browser view is finalized before each redraw."""

    template = traitlets.Unicode(TEMPLATE).tag(sync=True)
    spec_json = traitlets.Unicode("").tag(sync=True)  # the spec as JSON text: see ``Drawn``
    listen_to_click = traitlets.Bool(False).tag(sync=True)
    on_click = traitlets.Callable(None, allow_none=True)
    cdn = traitlets.Unicode(None, allow_none=True).tag(sync=True)

    def vue_vega_click(self, datum=None):
        if self.on_click is not None:
            self.on_click(datum)

    @traitlets.default("cdn")
    def _cdn(self):
        import solara.settings

        if not solara.settings.assets.proxy:
            return solara.settings.assets.cdn
        return None


class Drawn:
    """A Vega-Lite spec as the JSON text the browser gets, made once.

    Solara's renderer (reacton) walks every list and dict among a component's arguments,
    looking for components inside them: a 50 x 50 grid's spec holds 2,500 rows, and that
    walk cost more than playing the round. Text is a leaf it never enters; two pieces of
    text compare at once, where two dicts compare item by item.
    """

    __slots__ = ("text",)

    def __init__(self, spec: Mapping[str, Any] | str) -> None:
        self.text = spec if isinstance(spec, str) else json.dumps(spec, default=_plain, separators=(",", ":"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Drawn) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


def _plain(value: Any) -> Any:
    """A value JSON lacks, as JSON has it (a numpy number as a number, anything else as its text)."""
    item = getattr(value, "item", None)
    return item() if callable(item) else str(value)


def steady(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A picture's spec (named ``datasets``) whose titles are parameters: the next round of the same picture then
    differs in data and parameter values alone, and the browser redraws it without building a new view."""
    title = spec.get("title")
    if "datasets" not in spec or not isinstance(title, Mapping) or isinstance(title.get("text"), Mapping):
        return dict(spec)
    params = [{"name": "llm_mesa_title", "value": title.get("text", "")},
              {"name": "llm_mesa_subtitle", "value": title.get("subtitle", "")}]
    return {**spec, "params": [*spec.get("params", []), *params],
            "title": {**title, "text": {"expr": "llm_mesa_title"}, "subtitle": {"expr": "llm_mesa_subtitle"}}}


def filling(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` sized by its container, both ways (Vega-Lite's ``"container"`` sizes), titles and legends inside."""
    return {**spec, "width": "container", "height": "container", "autosize": {"type": "fit", "contains": "padding"}}


@solara.component
def VegaChart(spec: dict[str, Any] | Drawn, classes: Sequence[str] = (), on_click: Callable[[Any], None] | None = None,
              fill: bool = False):
    """Draw a Vega-Lite spec in the browser (a dict, or a ``Drawn`` made once for a large picture); ``on_click``
    gets the clicked datum (or None).

    ``fill``: the chart takes the height its flex column leaves it (at least ``min_height``
    of the caller's style) instead of the spec's own, as in a cell of Mesa's grid.
    """
    style = {"width": "100%", "min-width": "0"}
    if fill:
        style.update({"flex": "1 1 0", "min-height": "0"})
    if isinstance(spec, Drawn):
        text = Drawn(filling(json.loads(spec.text))).text if fill else spec.text
    else:
        text = Drawn(steady(filling(spec) if fill else spec)).text
    with solara.Div(classes=["llm-mesa-chart", *classes, *(["llm-mesa-chart-fill"] if fill else [])], style=style):
        KeptVega.element(spec_json=text, on_click=on_click, listen_to_click=on_click is not None)


__all__ = ["Drawn", "KeptVega", "VegaChart", "filling", "steady"]
