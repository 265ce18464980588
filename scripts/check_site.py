"""Check a built documentation site: it loads nothing from another machine, and its notebooks ran.

Usage: python scripts/check_site.py SITE [--sources DOCS]

Every ``.html`` page, ``.js`` script and ``.css`` style sheet of SITE is read:

* a page fails on any element that loads from an absolute or protocol-relative URL
  (``<script src>``, ``<link href>`` of a style sheet, icon, font or preload, ``<img>``,
  ``<iframe>``, ``<source>``, ``srcset``...) and on such a URL in its inline styles;
* a style sheet fails on ``url(...)`` or ``@import`` of such a URL (comments aside);
* a script fails on a URL of an asset (a script, style sheet, font, image, data or
  WebAssembly file, or any address on a CDN) in its code; its comments, links to
  documentation and XML namespaces (``http://www.w3.org/2000/svg``) load nothing.

With ``--sources DOCS``, each notebook under DOCS must have its page, holding at least
one output (the build executes them; they are committed without outputs). Prints one
line per finding and exits 1 if there is any, else a one-line summary and 0.
"""

from __future__ import annotations

import argparse
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

#: an address elsewhere: http(s)://..., or //host/... (the page's own scheme)
REMOTE = re.compile(r"^\s*(https?:)?//", re.IGNORECASE)
#: attributes that make the browser fetch what they name
LOADING_ATTRIBUTES = {"src", "data", "poster", "background", "formaction"}
#: <link rel> values that fetch (a rel="canonical" or "alternate" link only names an address)
LOADING_RELS = {"stylesheet", "icon", "shortcut", "apple-touch-icon", "preload", "prefetch", "modulepreload",
                "manifest", "mask-icon", "dns-prefetch", "preconnect"}
CSS_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
CSS_LOAD = re.compile(r"""(url\(\s*['"]?|@import\s+['"])\s*((https?:)?//[^'")\s]+)""", re.IGNORECASE)
JS_URL = re.compile(r"""(?<![\w/])((?:https?:)?//[\w.-]+\.[a-z]{2,}(?::\d+)?(?:/[^\s'"`)<>]*)?)""", re.IGNORECASE)
ASSET = re.compile(r"\.(m?js|css|woff2?|ttf|otf|eot|png|jpe?g|gif|svg|webp|json|wasm)(\?[^\s'\"`]*)?$", re.IGNORECASE)
CDN = re.compile(r"cdn|unpkg|jsdelivr|googleapis|gstatic|mathjax|cloudflare|polyfill|plotly|requirejs|jquery", re.IGNORECASE)


class LoadsFinder(HTMLParser):
    """The off-machine addresses one page's elements would fetch."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name.lower(): value or "" for name, value in attrs}
        for name, value in values.items():
            if name in LOADING_ATTRIBUTES and REMOTE.match(value):
                self.found.append(f"<{tag} {name}={value}>")
            elif name in ("srcset", "imagesrcset") and any(REMOTE.match(part) for part in value.split(",")):
                self.found.append(f"<{tag} {name}={value}>")
            elif name == "style":
                self.found += [f"<{tag} style> {m.group(2)}" for m in CSS_LOAD.finditer(value)]
        if tag == "link" and REMOTE.match(values.get("href", "")) and set(values.get("rel", "").lower().split()) & LOADING_RELS:
            self.found.append(f"<link rel={values['rel']} href={values['href']}>")
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.found += [f"<style> {m.group(2)}" for m in CSS_LOAD.finditer(CSS_COMMENT.sub("", data))]


def page_loads(text: str) -> list[str]:
    finder = LoadsFinder()
    finder.feed(text)
    return finder.found


def stylesheet_loads(text: str) -> list[str]:
    return [m.group(2) for m in CSS_LOAD.finditer(CSS_COMMENT.sub("", text))]


def without_js_comments(text: str) -> str:
    """The script with its ``/* */`` and ``//`` comments blanked (strings, where a ``//`` is an address, kept)."""
    out, i, quote = [], 0, None
    while i < len(text):
        char = text[i]
        if quote:
            out.append(char)
            if char == "\\":
                out.append(text[i + 1: i + 2])
                i += 2
                continue
            if char == quote:
                quote = None
        elif char in "'\"`":
            quote = char
            out.append(char)
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
            continue
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        else:
            out.append(char)
        i += 1
    return "".join(out)


def script_loads(text: str) -> list[str]:
    code = without_js_comments(text)
    return [url for url in (m.group(1) for m in JS_URL.finditer(code))
            if "www.w3.org/" not in url and (ASSET.search(url) or CDN.search(url.split("/")[2] if "//" in url else url))]


def check_offline(site: Path) -> list[str]:
    """Every off-machine load in the site, as ``FILE: what``."""
    findings = []
    for path in sorted(site.rglob("*")):
        if path.suffix not in (".html", ".htm", ".js", ".mjs", ".css") or not path.is_file():
            continue
        text = path.read_text(errors="replace")
        loads = page_loads(text) if path.suffix in (".html", ".htm") else (
            stylesheet_loads(text) if path.suffix == ".css" else script_loads(text))
        findings += [f"{path.relative_to(site)}: loads {what} from another machine" for what in loads]
    return findings


def check_notebooks(site: Path, sources: Path) -> list[str]:
    """Each notebook of the sources has its page, with at least one output of a cell the build executed."""
    findings = []
    for notebook in sorted(sources.rglob("*.ipynb")):
        if "_build" in notebook.parts or ".ipynb_checkpoints" in notebook.parts:
            continue
        page = site / notebook.relative_to(sources).with_suffix(".html")
        if not page.exists():
            findings.append(f"{notebook}: no page {page.relative_to(site)} was built for it")
        elif 'class="cell_output' not in page.read_text(errors="replace"):
            findings.append(f"{page.relative_to(site)}: no cell output (was {notebook.name} executed?)")
    return findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="the built HTML site (docs/_build/html)")
    parser.add_argument("--sources", type=Path, help="the documentation's sources (docs): check each notebook's page")
    args = parser.parse_args(argv)
    if not (args.site / "index.html").is_file():
        print(f"check_site: {args.site} holds no index.html; build the site first (bash scripts/docs.sh)", file=sys.stderr)
        return 2
    findings = check_offline(args.site) + (check_notebooks(args.site, args.sources) if args.sources else [])
    for finding in findings:
        print(f"check_site: {finding}", file=sys.stderr)
    if findings:
        return 1
    pages = sum(1 for _ in args.site.rglob("*.html"))
    print(f"check_site: {pages} pages, nothing loaded from another machine"
          + (", every notebook executed" if args.sources else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
