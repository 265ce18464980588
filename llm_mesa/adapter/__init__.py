"""Your own Mesa model with LLM agents: the model imported, unchanged, and its agents' decisions declared.

``MesaGame(Model, name=..., decisions=[Decision(...)])`` is a game like any of the project's own
(``llm_mesa.adapter.game``); ``Decision`` says what an LLM decides, where and when
(``llm_mesa.adapter.decision``); the decisions are hooked per instance, never by swapping or
subclassing the model's classes (``llm_mesa.adapter.hooks``).
"""

from llm_mesa.adapter.decision import Decision, View, when
from llm_mesa.adapter.game import MesaGame
from llm_mesa.adapter.hooks import answers, hooks_of

__all__ = ["Decision", "MesaGame", "View", "answers", "hooks_of", "when"]
