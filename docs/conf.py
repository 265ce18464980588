"""Sphinx configuration of llm-mesa's documentation, built as Mesa's is (``bash scripts/docs.sh``).

MyST pages, notebooks executed afresh by myst-nb, the API reference from docstrings
(autodoc, autosummary, napoleon for Google-style ``Args:``/``Returns:``), the command-line
reference from the parsers themselves (``_ext/llm_mesa_cli.py``), the pydata theme.

Built offline, and the pages load nothing from another machine: no intersphinx, no
MathJax (no page needs mathematics; ``scripts/check_site.py`` fails the build on any
script, style sheet or font from elsewhere), no ipywidgets' require.js from a CDN.
"""

from __future__ import annotations

import sys
from importlib.metadata import version as installed_version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "llm-mesa"
author = "llm-mesa developers"
copyright = "llm-mesa developers"
release = installed_version("llm-mesa")
version = release

extensions = [
    "myst_nb",                   # MyST Markdown pages and executed notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",       # Google-style docstrings (Args:, Returns:), as Mesa's
    "llm_mesa_cli",              # the command-line reference, from the parsers (docs/_ext)
    "llm_mesa_api",              # the public API, from llm_mesa.__all__ (docs/_ext)
]
# sphinx.ext.mathjax is loaded by Sphinx for HTML by default: it would add MathJax from a CDN
# to any page with mathematics. None has any; a page that gains some fails scripts/check_site.py.
exclude_patterns = ["_build", "**.ipynb_checkpoints", "jupyter_execute"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}

# MyST: headings get anchors (links to a section: [text](page.md#section)); no $-maths (it would
# need MathJax).
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# Notebooks are committed without outputs and executed afresh on every build, in their own
# folder; a cell that raises fails the build.
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_timeout = 600
nb_execution_show_tb = True
nb_ipywidgets_js = {}           # never require.js or the widget manager from a CDN
nb_merge_streams = True

# The API reference: the docstrings' own words, types from the signatures.
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented"
autodoc_class_signature = "separated"
autosummary_generate = False
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_use_ivar = True       # a dataclass's Attributes: as a field list (its fields may carry #: docs of their own)

html_theme = "pydata_sphinx_theme"
html_title = f"llm-mesa {release}"
html_static_path: list[str] = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "header_links_before_dropdown": 6,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_show_sourcelink = False
