"""The core's modules import one another one way only: no circle, lazy imports counted.

Every ``import`` and ``from ... import`` inside ``llm_mesa/`` is read, at module level or inside a
function, and so is every ``importlib.import_module`` of a literal name; only imports under
``if TYPE_CHECKING:`` are left out (they never run). An import of a package counts as an import of its
``__init__``, and ``from package import name`` of a submodule as an import of that submodule too.
A circle of modules that import each other, however lazily, means neither can be understood,
tested or moved alone; the test names every circle it finds.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "llm_mesa"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class ImportReader(ast.NodeVisitor):
    """Every module name one module's code imports (relative names resolved), outside TYPE_CHECKING blocks."""

    def __init__(self, name: str, is_package: bool) -> None:
        self.package = name if is_package else name.rpartition(".")[0]
        self.names: set[str] = set()

    def visit_If(self, node: ast.If) -> None:
        if _type_checking(node.test):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.names.update(alias.name for alias in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            anchor = self.package.split(".")
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        self.names.add(base)
        self.names.update(f"{base}.{alias.name}" for alias in node.names)  # a submodule, where it is one

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called == "import_module" and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            self.names.add(node.args[0].value)
        self.generic_visit(node)


def import_graph() -> dict[str, set[str]]:
    found = modules()
    graph: dict[str, set[str]] = {}
    for name, path in found.items():
        reader = ImportReader(name, path.name == "__init__.py")
        reader.visit(ast.parse(path.read_text(), filename=str(path)))
        graph[name] = {other for other in reader.names if other in found and other != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_reader_sees_lazy_imports_and_skips_type_checking_blocks():
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import llm_mesa.b\n"
              "def f():\n    from . import c\n    import importlib\n    importlib.import_module('llm_mesa.d')\n")
    reader = ImportReader("llm_mesa.a", False)
    reader.visit(ast.parse(source))
    assert {"llm_mesa.c", "llm_mesa.d"} <= reader.names and "llm_mesa.b" not in reader.names


def test_circles_finds_a_circle_around_three_modules_and_none_in_a_line():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


@pytest.mark.parametrize("graph", [import_graph()], ids=["llm_mesa"])
def test_no_two_modules_of_the_core_import_each_other_directly_or_around_a_circle(graph):
    found = circles(graph)
    assert not found, "import circles in llm_mesa/:\n" + "\n".join(" <-> ".join(c) for c in found)
