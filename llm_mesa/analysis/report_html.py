"""One self-contained HTML page: each figure beside the table it was drawn from.

A report is a list of studies; a study a list of :class:`Panel` (a figure, the
table behind it, the published numbers beside ours when there are any, and the
reason a test was skipped). Figures are SVG documents embedded as ``data:``
images; the page carries its own style and loads nothing.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field

import pandas as pd

__all__ = ["SCROLL_ROWS", "Panel", "Study", "drawn", "render_page"]

#: tables longer than this scroll in their own box; every row is in the page
SCROLL_ROWS = 30

STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1500px; }
h1 { font-size: 1.5em; } h2 { border-bottom: 2px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
h3 { font-size: 1.05em; margin-bottom: .3em; }
.panel { border: 1px solid #ddd; border-radius: 4px; padding: .6em 1em; margin: 1em 0; }
.row { display: flex; flex-wrap: wrap; gap: 1.2em; align-items: flex-start; }
figure { margin: 0; flex: 0 1 620px; } figure img { max-width: 100%; height: auto; }
figure.wide { flex: 1 1 100%; }
.tables { flex: 1 1 480px; overflow-x: auto; }
table { border-collapse: collapse; font-size: .8em; margin-bottom: .8em; }
th, td { border: 1px solid #ddd; padding: .15em .45em; text-align: right; } th { background: #f4f4f4; }
caption { caption-side: top; text-align: left; font-weight: bold; padding: .2em 0; }
.skipped { color: #8a4b00; } .caption { color: #555; font-size: .85em; } .more { color: #777; font-size: .8em; }
.scroll { max-height: 34em; overflow: auto; border: 1px solid #eee; margin-bottom: .8em; }
.run-card { border: 1px solid #ddd; border-radius: 4px; padding: .2em 1em; margin: 1em 0; }
"""


@dataclass
class Panel:
    """A figure and the table it was drawn from.

    ``figure`` is an SVG document (see ``llm_mesa.analysis.figures``); ``table``
    the numbers behind it; ``published`` the study's numbers beside ours;
    ``skipped`` why a test could not run (the panel is drawn all the same); no
    figure, nothing skipped and a table: a note (its caption and table alone).
    ``table_title`` heads the table (what its cells hold).
    """

    title: str
    figure: str | None
    table: pd.DataFrame | None
    caption: str = ""
    skipped: str | None = None
    published: pd.DataFrame | None = None
    table_title: str = "ours"


def drawn(title: str, draw, *args, **kwargs) -> Panel:
    """``draw(*args, **kwargs)``, or, if drawing fails, a panel that says so: a report is never lost to one figure."""
    from llm_mesa.analysis.figures import skipped_figure

    try:
        return draw(*args, **kwargs)
    except Exception as exc:  # a figure that cannot be drawn is reported, never a crash of the whole report
        reason = f"could not be drawn ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
        return Panel(title, skipped_figure(title, reason), None, skipped=reason)


@dataclass
class Study:
    """One game's sweeps: a heading, a line about them, and their panels."""

    title: str
    summary: str
    panels: list[Panel] = field(default_factory=list)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "panel"


def _table_html(frame: pd.DataFrame, title: str) -> str:
    """The whole table (a long one scrolls in its own box, with every row in the page)."""
    shown = frame.astype(object).where(frame.notna(), None)  # None and NaN alike print as an empty cell
    body = shown.to_html(float_format=lambda v: f"{v:.4g}", na_rep="", border=0, escape=True, classes="data",
                         index=False).replace("<td>None</td>", "<td></td>")
    body = body.replace('<table class="dataframe data">', f'<table class="data"><caption>{html.escape(title)}</caption>', 1)
    if len(frame) > SCROLL_ROWS:
        body = f'<div class="scroll">{body}</div><p class="more">{len(frame)} rows (scroll)</p>'
    return body


def _image(svg: str, alt: str) -> str:
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/svg+xml;base64,{data}">'


def _panel_html(panel: Panel, index: int) -> str:
    from llm_mesa.analysis.figures import skipped_figure

    table = panel.table if panel.table is not None else pd.DataFrame({"skipped": [panel.skipped or "no numbers"]})
    tables = _table_html(table, panel.table_title)
    if panel.published is not None:
        tables += _table_html(panel.published, "published (SPEC)")
    if panel.figure is None and panel.skipped is None and panel.table is not None:  # a note: words and a table
        return "\n".join([f'<div class="panel note" id="p{index}-{_slug(panel.title)}">',
                          f"<h3>{html.escape(panel.title)}</h3>", f'<p class="caption">{html.escape(panel.caption)}</p>',
                          f'<div class="tables">{tables}</div>', "</div>"])
    svg = panel.figure or skipped_figure(panel.title, panel.skipped or "nothing to draw")
    parts = [f'<div class="panel" id="p{index}-{_slug(panel.title)}">', f"<h3>{html.escape(panel.title)}</h3>"]
    if panel.skipped:
        parts.append(f'<p class="skipped">skipped: {html.escape(panel.skipped)}</p>')
    width = re.search(r'<svg[^>]*\swidth="([\d.]+)pt"', svg)
    wide = ' class="wide"' if width and float(width.group(1)) > 560 else ""  # small multiples: the page's width
    parts.append(f'<div class="row"><figure{wide}>{_image(svg, panel.title)}</figure><div class="tables">{tables}</div></div>')
    if panel.caption:
        parts.append(f'<p class="caption">{html.escape(panel.caption)}</p>')
    parts.append("</div>")
    return "\n".join(parts)


def render_page(title: str, studies: list[Study], manifests: pd.DataFrame, generated: str,
                cards: list[str] | None = None) -> str:
    """The whole page as text (``cards``: each sweep's run card, as HTML, before the manifests' summary)."""
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{html.escape(title)}</title>",
           f"<style>{STYLE}</style></head><body>", f"<h1>{html.escape(title)}</h1>",
           f'<p class="caption">{html.escape(generated)}</p>']
    index = 0
    for study in studies:
        out += [f"<h2>{html.escape(study.title)}</h2>", f"<p>{html.escape(study.summary)}</p>"]
        for panel in study.panels:
            out.append(_panel_html(panel, index))
            index += 1
    if cards:
        out += ["<h2>Run cards</h2>", *(f'<section class="run-card">{card}</section>' for card in cards)]
    out += ["<h2>Runs: manifests summarised</h2>",
            '<div class="tables">' + _table_html(manifests, "models, sampling, seeds, dialects, prompts, tokens, cost, "
                                                             "failed decisions") + "</div>", "</body></html>"]
    return "\n".join(out) + "\n"
