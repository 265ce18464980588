"""The explorer's one chart component: a Vega-Lite spec drawn in the browser by a kept view.

Solara's own ``FigureAltair`` embeds a new Vega view at every change of the spec
and never finalizes the old one: stepping a 1,000-node game kept about 5 MB of
JavaScript heap per round, and every redraw waited 100 ms of debounce. This
widget finalizes the previous view before drawing the next, coalesces changes
that arrive while a drawing is under way (only the latest spec is drawn), and
reports a click on a mark with its datum. Vega, Vega-Lite and vega-embed load from
the same CDN paths as Solara's chart, so the offline asset cache serves them.
The template is inline (no data file to package).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
        spec() { this.schedule(); },
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
            if (this.view) { this.view.finalize(); this.view = null; }
        },
        async plot() {
            // not synced yet, or no longer shown (a grid re-mounts its items): drawn when it is
            if (!this.spec || !Object.keys(this.spec).length || !this.$refs.plotElement) { return; }
            const vegaEmbed = await new Promise((resolve, reject) => require(['vega-embed'], resolve, reject));
            this.finalize();
            if (!this.$refs.plotElement) { return; }
            const result = await vegaEmbed(this.$refs.plotElement, this.spec, {actions: false, renderer: 'svg'});
            this.view = result.view;
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
    spec = traitlets.Dict().tag(sync=True)
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


def filling(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` sized by its container, both ways (Vega-Lite's ``"container"`` sizes), titles and legends inside."""
    return {**spec, "width": "container", "height": "container", "autosize": {"type": "fit", "contains": "padding"}}


@solara.component
def VegaChart(spec: dict[str, Any], classes: Sequence[str] = (), on_click: Callable[[Any], None] | None = None,
              fill: bool = False):
    """Draw a Vega-Lite dict in the browser; ``on_click`` gets the clicked datum (or None).

    ``fill``: the chart takes the height its flex column leaves it (at least ``min_height``
    of the caller's style) instead of the spec's own, as in a cell of Mesa's grid.
    """
    style = {"width": "100%", "min-width": "0"}
    if fill:
        style.update({"flex": "1 1 0", "min-height": "0"})
    with solara.Div(classes=["llm-mesa-chart", *classes, *(["llm-mesa-chart-fill"] if fill else [])], style=style):
        KeptVega.element(spec=filling(spec) if fill else spec, on_click=on_click, listen_to_click=on_click is not None)


__all__ = ["KeptVega", "VegaChart", "filling"]
