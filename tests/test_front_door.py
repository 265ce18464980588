"""The front door on any machine: no test reads a fixed temporary path, and CI runs the tests in an empty one.

A test that read ``/tmp/adv`` passed on the machine where an earlier run had left it and
failed on a fresh one. Tests see only what they make (``tmp_path``); CI points ``TMPDIR`` at a
fresh empty folder for them, so such a test fails in CI first.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXED_TMP = re.compile(r"^/tmp(/|$)")


def string_literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def test_no_test_names_a_fixed_temporary_path():
    found = [f"{path.name}:{line}: {text[:40]!r}" for path in sorted((ROOT / "tests").rglob("*.py"))
             for line, text in string_literals(path) if FIXED_TMP.match(text.strip())]
    assert found == []


def test_the_checker_sees_one(tmp_path):
    bad = tmp_path / "test_bad.py"
    bad.write_text('OUT = "' + "/tm" + 'p/adv"\n')  # written in two pieces, so this file holds no such literal
    assert [text for _, text in string_literals(bad) if FIXED_TMP.match(text)] == ["/tm" + "p/adv"]


def test_ci_runs_the_tests_with_a_fresh_empty_temporary_folder():
    script = (ROOT / ".ci" / "run").read_text()
    made = re.search(r'^(\w+)="\$\(mktemp -d [^)]*\)"', script, re.MULTILINE)
    assert made, "no fresh temporary folder is made"
    name = made.group(1)
    runs = [line for line in script.splitlines() if "pytest" in line or "scripts/test.sh" in line]
    assert runs and all(line.lstrip().startswith(f'TMPDIR="${name}"') for line in runs
                        if not line.lstrip().startswith(("#", "stamp"))), runs
