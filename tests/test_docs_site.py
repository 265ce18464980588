"""The documentation site: its references cannot drift, and its pages load nothing from another machine.

The fast tests hold the pieces: the command-line reference is each command's ``--help``
(every installed game's included, the suite's own ``tinyvote`` among them), the API page
documents every public name, and ``scripts/check_site.py`` catches an asset from a CDN in
a page, a style sheet or a script (and lets links, comments and XML namespaces be). The
slow one builds the whole site as ``scripts/docs.sh`` does, into a folder of its own, the
notebooks executed, and opens every page in Chromium with every request logged.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llm_mesa.registry import game_names

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


check_site = load(ROOT / "scripts" / "check_site.py", "check_site")


def docs_extension(name: str):
    """An extension of docs/_ext (it imports Sphinx: the docs extra)."""
    pytest.importorskip("sphinx", reason="the docs extra is not installed (bash scripts/setup.sh docs)")
    return load(DOCS / "_ext" / f"{name}.py", name)


# -- the command-line reference ---------------------------------------------------------------

def test_the_command_reference_is_every_commands_help_as_the_command_prints_it():
    helps = docs_extension("llm_mesa_cli").command_helps()
    commands = [command for command, _, _ in helps]
    assert commands[0] == "llm-mesa"
    assert set(commands[1:]) == {f"llm-mesa {name}" for name in game_names()} | {
        "llm-mesa sweep", "llm-mesa serve", "llm-mesa local", "llm-mesa viz", "llm-mesa lab", "llm-mesa analyze",
        "llm-mesa report", "llm-mesa fit", "llm-mesa card"}
    assert "llm-mesa tinyvote" in commands  # a game the suite installed, not the tree's
    env = {**os.environ, "COLUMNS": "80"}
    for command, _, text in helps[:1] + [h for h in helps if h[0] in ("llm-mesa tinyvote", "llm-mesa sweep")]:
        printed = subprocess.run([sys.executable, "-m", "llm_mesa.cli", *command.split()[1:], "--help"], env=env,
                                 capture_output=True, text=True, check=True).stdout
        assert printed == text, command


# -- the API reference ------------------------------------------------------------------------

def test_the_api_page_documents_every_public_name():
    """Each name in ``llm_mesa.__all__`` is defined in a module an ``{llm-mesa-api}`` directive of api.md names."""
    api = docs_extension("llm_mesa_api")
    import llm_mesa

    listed = {module for line in re.findall(r"^```\{llm-mesa-api\} llm_mesa (.*)$", (DOCS / "api.md").read_text(), re.M)
              for module in line.split()}
    missing = sorted(name for name in llm_mesa.__all__ if api.defining_module("llm_mesa", name) not in listed)
    assert missing == []


def test_a_constant_is_documented_by_its_comment_where_it_is_defined():
    api = docs_extension("llm_mesa_api")
    lines = api.directives_for("llm_mesa", "ROUNDS")
    assert lines[0] == ".. py:data:: llm_mesa.ROUNDS"
    assert any(line.strip() and not line.lstrip().startswith(":value:") for line in lines[2:])  # its #: comment


# -- nothing from another machine -------------------------------------------------------------

def write_site(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


CLEAN = {
    "index.html": '<html><head><link rel="stylesheet" href="_static/theme.css"><script src="_static/app.js"></script>'
                  '<link rel="canonical" href="https://example.org/docs/"></head>'
                  '<body><a href="https://mesa.readthedocs.io">Mesa</a><img src="_images/plot.png"></body></html>',
    "_static/theme.css": "/* see https://example.org/theme.css */ body { background: url('img/bg.png'); }"
                         ' .x { background: url("data:image/svg+xml,%3Csvg xmlns=\'http://www.w3.org/2000/svg\'") }',
    "_static/app.js": "// https://developer.mozilla.org/en-US/docs/Web/API\n/* from https://cdn.example.com/lib.js */\n"
                      'const svg = document.createElementNS("http://www.w3.org/2000/svg", "tspan");\n'
                      'console.log("see https://pydata-sphinx-theme.readthedocs.io/en/stable/index.html");\n',
}


def test_the_site_check_passes_a_site_that_loads_only_its_own_files(tmp_path):
    assert check_site.check_offline(write_site(tmp_path, CLEAN)) == []


@pytest.mark.parametrize("name, text", [
    ("page.html", '<script src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.4/require.min.js"></script>'),
    ("page.html", '<script async src="//cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"></script>'),
    ("page.html", '<link rel="stylesheet" href="https://fonts.googleapis.com/css2?family=Lato">'),
    ("page.html", '<link rel="preload" as="font" href="https://example.org/font.woff2">'),
    ("page.html", '<img srcset="a.png 1x, https://example.org/b.png 2x">'),
    ("page.html", '<div style="background: url(https://example.org/bg.png)"></div>'),
    ("page.html", '<style>@import "https://example.org/more.css";</style>'),
    ("page.html", '<iframe src="https://solara.dev/static/public/success.html"></iframe>'),
    ("_static/s.css", '@font-face { src: url("https://fonts.gstatic.com/s/lato.woff2"); }'),
    ("_static/s.js", 'var s = document.createElement("script"); s.src = "https://unpkg.com/@jupyter-widgets/html-manager";'),
    ("_static/s.js", 'require.config({paths: {plotly: "https://cdn.plot.ly/plotly-2.35.2.min"}});'),
    ("_static/s.js", 'fetch("https://example.org/switcher.json")'),
])
def test_the_site_check_catches_an_asset_from_another_machine(tmp_path, name, text):
    site = write_site(tmp_path, {**CLEAN, name: text})
    found = check_site.check_offline(site)
    assert len(found) == 1 and found[0].startswith(name), found


def test_the_site_check_catches_a_notebook_that_was_not_executed(tmp_path):
    sources, site = tmp_path / "docs", tmp_path / "html"
    write_site(sources, {"tutorials/a.ipynb": "{}", "tutorials/b.ipynb": "{}", "index.md": "# x"})
    write_site(site, {"index.html": "<p>x</p>", "tutorials/a.html": '<div class="cell_output docutils container">1</div>'})
    assert check_site.check_notebooks(site, sources) == [f"{sources / 'tutorials/b.ipynb'}: no page tutorials/b.html was built for it"]
    write_site(site, {"tutorials/b.html": '<div class="cell_input">x = 1</div>'})
    assert check_site.check_notebooks(site, sources) == ["tutorials/b.html: no cell output (was b.ipynb executed?)"]
    assert check_site.main([str(site), "--sources", str(sources)]) == 1


# -- the whole site ---------------------------------------------------------------------------

@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors_and_loads_nothing_from_another_machine(tmp_path):
    """As ``scripts/docs.sh`` builds it (the notebooks executed afresh), into this test's own folder."""
    pytest.importorskip("myst_nb", reason="the docs extra is not installed (bash scripts/setup.sh docs)")
    site = tmp_path / "html"
    build = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                            "-d", str(tmp_path / "doctrees"), str(DOCS), str(site)], capture_output=True, text=True)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    assert check_site.main([str(site), "--sources", str(DOCS)]) == 0
    assert 'id="llm_mesa.Game"' in (site / "api.html").read_text()
    assert 'id="llm-mesa-tinyvote"' in (site / "cli.html").read_text()  # the game the suite installed has its section
    notebooks = sorted(DOCS.glob("tutorials/*.ipynb"))
    assert notebooks and all('"outputs": []' in nb.read_text() for nb in notebooks)  # committed without outputs

    from playwright.sync_api import sync_playwright

    pages = sorted(site.rglob("*.html"))
    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
        page = browser.new_page()
        page.on("request", lambda request: requests.append(request.url))
        for path in pages:
            page.goto(path.as_uri(), wait_until="load")
        browser.close()
    elsewhere = sorted({url for url in requests if not url.startswith(("file:", "data:", "blob:", "about:"))})
    assert len(pages) >= 15 and elsewhere == []
