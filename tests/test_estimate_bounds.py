"""The dry run's estimate bounds what a game really uses: calls and prompt tokens, for every game, at hostile sizes.

Each game is played by LLM agents on the stand-in (which counts a prompt's tokens as it bills them) at sizes chosen to
make prompts long or calls many (a crowded cell, a dense network, a long game, the largest lists a prompt shows), and
what the game used is held to its ``LlmSupport.estimate``: never more calls, never more prompt tokens than the
estimate's calls times its tokens per call. A prompt that grew without bound would break it at some size.
"""

from __future__ import annotations

import pytest

from llm_mesa import declared, play
from llm_mesa.game_types import PlayRequest
from llm_mesa.llm import Endpoint
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.registry import get_game

#: game -> (stand-in model, hostile parameters)
HOSTILE = {
    "boltzmann_wealth_model": ("boltzmann_wealth_model:mesa", {"n": 400, "width": 3, "height": 3, "max_rounds": 2}),
    "schelling": ("schelling:mesa", {"width": 12, "height": 12, "density": 0.95, "radius": 3, "max_rounds": 2}),
    "pd_grid": ("pd_grid:mesa", {"width": 5, "height": 5, "payoff_dc": 999.123456789, "max_rounds": 3}),
    "virus_on_network": ("virus_on_network:mesa", {"num_nodes": 60, "avg_node_degree": 20, "initial_outbreak_size": 30,
                                                   "max_rounds": 3}),
    "epstein_civil_violence": ("epstein_civil_violence:mesa", {"width": 10, "height": 10, "citizen_vision": 9,
                                                               "cop_vision": 9, "max_rounds": 2}),
    "wolf_sheep": ("wolf_sheep:mesa", {"width": 5, "height": 5, "initial_sheep": 60, "initial_wolves": 30,
                                       "sheep_reproduce": 1.0, "max_rounds": 3}),
    "sugarscape_g1mt": ("sugarscape_g1mt:mesa", {"initial_population": 60, "vision_min": 5, "vision_max": 10,
                                                 "max_rounds": 2}),
    "consensus": ("rule:majority-inertia?talk=0.9", {"n": 40, "topology": "er", "communication": "global",
                                                     "max_rounds": 12}),
    "naming": ("naming:echo", {"n": 24, "max_rounds": 4}),
    "colouring": ("colouring:best-response", {"max_rounds": 6}),
    "tinyvote": ("tinyvote:follow", {"n": 30, "max_rounds": 4}),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_the_estimate_bounds_the_calls_and_prompt_tokens_a_game_uses(name, tmp_path):
    model, parameters = HOSTILE[name]
    game = get_game(name)
    with LoopbackServer(seed=1) as server:
        endpoint = Endpoint(server.base_url, model, max_tokens=200)
        estimate = declared.estimate(game, parameters, endpoint)
        assert estimate is not None, f"{name} gives no estimate"
        row = play.play(game, PlayRequest(parameters, "llm", 3, (), endpoint)).row
    assert 0 < row["calls"] <= estimate.calls, (row["calls"], estimate)
    assert row["prompt_tokens"] <= estimate.calls * estimate.prompt_tokens_per_call, (row["prompt_tokens"], estimate)
