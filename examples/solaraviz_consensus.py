"""llm-mesa's network view, charts and agent panel inside Mesa's own SolaraViz.

    solara run --no-check-version examples/solaraviz_consensus.py

A Mesa user's page: Mesa's SolaraViz with its own controls (Reset, Play, Step, the
model's parameters), and llm-mesa's pieces as its components: the consensus game's
network with its echo chambers (colour, preference ring, disagreement, flippers, the
chamber map), its charts (share of blue, local agreement, ...) and the agent panel.
``Page`` builds a model per visitor, so two browser tabs never step each other's game. The
model's class is ``checked``: a Reset with values the game refuses (N = 2 on a
Barabási-Albert graph) plays the default instead, and the page says why beside the control
and above the picture, where it used to show a traceback.
Importing the components points Solara at llm-mesa's offline asset cache when it is
filled (``python -m llm_mesa.visualization.assets fill``) and no other is set, and turns
Solara's telemetry and check frames off; ``--no-check-version`` keeps ``solara run`` from
asking PyPI for Solara's newest version (it does so before it imports this file).
"""

from __future__ import annotations

import solara
from mesa.visualization import SolaraViz

from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.visualization.components import checked, components, model_params

FIXED = {"policy": "majority-inertia", "rng": 1, "baseline_permutations": 0}
PARAMS = model_params("consensus", **FIXED)
Model = checked(ConsensusModel, "consensus")  # a refused Reset says why beside its control; the page stays live


def new_model() -> ConsensusModel:
    """The game the page starts with: the parameters' defaults, majority-with-inertia agents, seed 1."""
    return Model(**FIXED)


@solara.component
def Page():
    model = solara.use_reactive(solara.use_memo(new_model, dependencies=[]))  # one model per visitor
    SolaraViz(model, components=components("consensus"), model_params=model_params("consensus", model=model.value, **FIXED),
              name="llm-mesa consensus in SolaraViz")


if __name__ == "__main__":
    model = new_model()
    model.step()
    print(f"round {model.round}: {len(components('consensus'))} components, {len(PARAMS)} model parameters")
