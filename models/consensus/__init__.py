"""The network consensus game of the first study, on Mesa.

Imports are lazy: the core finds the game through ``game.py`` without loading
Mesa models, and ``from llm_mesa.models.consensus import ConsensusModel`` still works.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ConsensusAgent": ".agents",
    "ConsensusConfigError": ".model",
    "ConsensusModel": ".model",
    "ROUND_COLUMNS": ".model",
    "GAME": ".game",
    "PARAMETERS": ".parameters",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
