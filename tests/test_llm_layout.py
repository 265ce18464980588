"""The LLM layer's shape: modules small enough to read, the public names where callers import them,
and no game inside it."""

from __future__ import annotations

import ast
from pathlib import Path

import llm_mesa.llm

LLM_DIR = Path(llm_mesa.llm.__file__).parent
#: the consensus game's policy and prompt still sit here; they are moving to the game's package
MOVING_OUT = {"consensus_policy.py", "consensus_prompt.py"}
MAX_LINES = 450


def layer_modules() -> list[Path]:
    return sorted(p for p in LLM_DIR.glob("*.py") if p.name not in MOVING_OUT)


def test_no_module_of_the_llm_layer_is_over_450_lines():
    lengths = {p.name: len(p.read_text().splitlines()) for p in layer_modules()}
    assert {name: n for name, n in lengths.items() if n > MAX_LINES} == {}


def test_the_client_still_exports_what_callers_import():
    from llm_mesa.llm.client import (
        LLMRequest,
        LLMResult,
        apreflight,
        complete,
        preflight,
    )

    assert callable(complete) and callable(apreflight) and callable(preflight)
    assert LLMResult(text="x").ok and LLMRequest(prompt="p").prompt == "p"


def test_the_llm_layer_imports_no_game():
    for path in layer_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [alias.name for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                assert "consensus" not in name and "naming" not in name, f"{path.name} imports {name}"
