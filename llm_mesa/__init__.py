"""llm-mesa: networks of LLM agents and rule agents inside Mesa models.

The seam every game is built on, importable from here. Imports are lazy, so that
``import llm_mesa`` (and a game whose agents all follow rule policies) never loads
openai or the explorer.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    # the policy seam and the round
    "Policy": "llm_mesa.policy",
    "PolicyError": "llm_mesa.policy",
    "register_policy": "llm_mesa.policy",
    "make_policy": "llm_mesa.registry",
    "available_policies": "llm_mesa.registry",
    "PolicyAgent": "llm_mesa.rounds",
    "play_round": "llm_mesa.rounds",
    "decide_all": "llm_mesa.rounds",
    # parameters and the game contract
    "Parameter": "llm_mesa.parameters",
    "ParameterSet": "llm_mesa.parameters",
    "ParameterError": "llm_mesa.parameters",
    "Game": "llm_mesa.games",
    "GameError": "llm_mesa.errors",
    "GameResult": "llm_mesa.game_types",
    "PlayRequest": "llm_mesa.game_types",
    "Table": "llm_mesa.game_types",
    "ROUNDS": "llm_mesa.game_types",
    "LlmEstimate": "llm_mesa.game_types",
    "PolicyCatalog": "llm_mesa.game_types",
    "StudyDesign": "llm_mesa.game_types",
    "LlmSupport": "llm_mesa.game_types",
    "Extensions": "llm_mesa.game_types",
    # your own Mesa model with LLM agents: the model imported unchanged, its decisions declared
    "MesaGame": "llm_mesa.adapter.game",
    "Decision": "llm_mesa.adapter.decision",
    "when": "llm_mesa.adapter.decision",
    "answers": "llm_mesa.adapter.hooks",
    # declared types: what a state or a measure is, for the generic pages and report
    "Scale": "llm_mesa.game_types",
    "categorical": "llm_mesa.game_types",
    "ordinal": "llm_mesa.game_types",
    "continuous": "llm_mesa.game_types",
    "count": "llm_mesa.game_types",
    "share": "llm_mesa.game_types",
    "features": "llm_mesa.game_types",
    "infer_scale": "llm_mesa.game_types",
    "get_game": "llm_mesa.registry",
    "game_names": "llm_mesa.registry",
    "register_game": "llm_mesa.registry",
    "run_model": "llm_mesa.play",
    # update schemes: synchronous rounds, or agents taking turns (exact, with LLM calls overlapping)
    "UPDATE": "llm_mesa.update",
    "UPDATE_SCHEMES": "llm_mesa.update",
    "TURN_RULES": "llm_mesa.update",
    "activation_stream": "llm_mesa.update",
    "turn_order": "llm_mesa.update",
    "dependencies": "llm_mesa.update",
    "depth": "llm_mesa.update",
    "play_activations": "llm_mesa.update",
    "turn_key": "llm_mesa.update",
    # LLM decisions: a game asks, the core keys, records, counts and judges
    "LLMPolicy": "llm_mesa.decisions",
    "Question": "llm_mesa.decisions",
    "Decided": "llm_mesa.decisions",
    "decide": "llm_mesa.decisions",
    "deciding": "llm_mesa.decisions",
    "ledger_of": "llm_mesa.decisions",
    # people in the game (llm-mesa lab): what a seat shows of one decision
    "Facts": "llm_mesa.lab.facts",
    "seed_streams": "llm_mesa.mesa_versions",
    "network_space": "llm_mesa.mesa_versions",
    "LlmMesaError": "llm_mesa.errors",
    "json_text": "llm_mesa.json_values",
    # what pages draw of a game
    "GameView": "llm_mesa.views",
    "view_of": "llm_mesa.views",
    "NetworkPicture": "llm_mesa.views",
    "Banner": "llm_mesa.views",
    "ControlError": "llm_mesa.views",
    "Snapshot": "llm_mesa.views",
    "line_spec": "llm_mesa.views.charts",
    # what games on graphs and LLM prompts share
    "build_topology": "llm_mesa.graphs",
    "seeded_layout": "llm_mesa.graphs",
    "neutralise": "llm_mesa.quoting",
    # LLM endpoints, recording and sweeps
    "Endpoint": "llm_mesa.llm.endpoint",
    "ResponseStore": "llm_mesa.llm.store",
    "run_sweep": "llm_mesa.sweep.engine",
    "read_sweep": "llm_mesa.sweep.engine",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'llm_mesa' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return __all__
