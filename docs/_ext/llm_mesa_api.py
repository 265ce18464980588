"""The API reference from the package's own list of public names: ``{llm-mesa-api}``.

``{llm-mesa-api} PACKAGE [MODULE ...]`` documents the names PACKAGE exports (its
``__all__``) that are defined in the MODULEs named (every one when none is), each by
autodoc from its docstring: a class with its members, a function, a constant with its
``#:`` comment from the module that defines it. The names come from ``__all__``, so the
reference cannot drift from the API: a name the package exports that no directive
documents fails the build (a warning, and the build treats warnings as errors).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.pycode import ModuleAnalyzer
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)


def imported_from(package: str) -> dict[str, str]:
    """Where each name of ``package`` (a package or a module) comes from, read from its source: its
    ``from X import NAME`` lines and a lazy-import table (a dict literal of name -> module, as
    ``llm_mesa._EXPORTS``)."""
    path = Path(importlib.import_module(package).__file__ or "")
    # relative imports start from the package itself, or from a module's package
    base = package.split(".") if path.name == "__init__.py" else package.split(".")[:-1]
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            module = node.module if not node.level else ".".join(base[: len(base) - node.level + 1] + [node.module])
            found.update({alias.asname or alias.name: module for alias in node.names})
        elif isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
                                                for k, v in zip(node.keys, node.values)):
            found.update({k.value: v.value for k, v in zip(node.keys, node.values) if isinstance(v.value, str)
                          and v.value.startswith(package.split(".")[0])})
    return found


def defining_module(package: str, name: str) -> str:
    """The module that defines ``package.name``."""
    obj = getattr(importlib.import_module(package), name)
    if (inspect.isclass(obj) or inspect.isfunction(obj)) and getattr(obj, "__module__", None):
        return obj.__module__
    return imported_from(package).get(name, package)


def attribute_doc(module: str, name: str, hops: int = 5) -> str:
    """A constant's ``#:`` comment (or docstring after it) in the module that defines it, followed through
    the modules that import it from there (``from .game_types import ROUNDS``)."""
    docs = ModuleAnalyzer.for_module(module).find_attr_docs()
    found = "\n".join(docs.get(("", name), [])).strip()
    source = imported_from(module).get(name)
    if found or not hops or not source or source == module:
        return found
    return attribute_doc(source, name, hops - 1)


def short_value(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def directives_for(package: str, name: str) -> list[str]:
    """The reStructuredText that documents ``package.name``."""
    obj = getattr(importlib.import_module(package), name)
    target = f"{package}.{name}"
    if inspect.isclass(obj):
        return [f".. autoclass:: {target}", ""]
    if callable(obj):
        return [f".. autofunction:: {target}", ""]
    doc = attribute_doc(defining_module(package, name), name)
    lines = [f".. py:data:: {target}", f"   :value: {short_value(obj)}", ""]
    return lines + ["   " + line if line else "" for line in doc.splitlines()] + [""]


class PublicApi(SphinxDirective):
    """``{llm-mesa-api} PACKAGE [MODULE ...]``: PACKAGE's public names defined in the MODULEs."""

    required_arguments = 1
    optional_arguments = 50

    def run(self) -> list[nodes.Node]:
        package, *modules = self.arguments
        exported = list(importlib.import_module(package).__all__)
        chosen = [name for name in exported if not modules or defining_module(package, name) in modules]
        if not chosen:
            logger.warning(f"{{llm-mesa-api}} {' '.join(self.arguments)}: no public name of {package} is defined there",
                           location=self.get_location())
            return []
        documented = self.env.__dict__.setdefault("llm_mesa_api", {}).setdefault(self.env.docname, {})
        documented.setdefault(package, set()).update(chosen)
        rst = "\n".join(line for name in chosen for line in directives_for(package, name))
        if str(self.env.doc2path(self.env.docname)).endswith(".md"):  # a MyST page: autodoc's text is reStructuredText
            rst = "````{eval-rst}\n" + rst + "\n````"
        return self.parse_text_to_nodes(rst)


def check_every_name_documented(app: Sphinx, env: BuildEnvironment) -> None:
    """Every name of a package the reference documents is documented somewhere."""
    done: dict[str, set[str]] = {}
    for page in env.__dict__.get("llm_mesa_api", {}).values():
        for package, names in page.items():
            done.setdefault(package, set()).update(names)
    for package, names in done.items():
        missing = sorted(set(importlib.import_module(package).__all__) - names)
        if missing:
            logger.warning(f"the API reference leaves out {package}'s public names: {', '.join(missing)} "
                           "(add their modules to an {llm-mesa-api} directive)")


def forget_page(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    """A page read again records its names again (an incremental build keeps the other pages')."""
    env.__dict__.get("llm_mesa_api", {}).pop(docname, None)


def setup(app: Sphinx) -> dict[str, object]:
    app.add_directive("llm-mesa-api", PublicApi)
    app.connect("env-purge-doc", forget_page)
    app.connect("env-check-consistency", check_every_name_documented)
    return {"version": "1", "parallel_read_safe": False, "parallel_write_safe": True}

