"""The colouring game's parameters: the one definition the model, the command line,
the explorer and sweeps read (``llm-mesa sweep --game colouring --set NAME=V``).

The bounds validate (a network of 100,000 agents is a game); the explorer's sliders
offer the ranges a page plays well (``control_range``: up to 300 agents, 60 chords,
500 rounds), and a value beyond them typed or given in a link widens its slider.

Inertia and what the agents are shown change nothing that is drawn (the graph, the
start, who sits a round out: one uniform per agent and round whatever the inertia), so
they stay out of an experiment's seeds (``in_seed=False``): every inertia level and every
view of a graph family plays the same graphs and starts, and their comparisons are paired.

In a module of its own, with no Mesa and no model, so that the game's entry point
and the model both import it and neither imports the other.
"""

from __future__ import annotations

from llm_mesa import UPDATE, LlmMesaError, Parameter, ParameterSet

#: the colours' names, in order: a game with k colours uses the first k
COLOURS = ("red", "blue", "green", "yellow", "purple", "orange", "pink", "brown", "grey", "cyan")
#: the network families: the study's (cycle with chords, leader cycle, preferential attachment
#: with a planted colouring) and the core's (``llm_mesa.build_topology``)
TOPOLOGIES = ("cycle", "leader-cycle", "pa", "er", "ba", "ws", "caveman")
INITIAL = ("random", "same")
MAX_AGENTS = 100_000
MAX_ROUNDS = 1_000_000


class ColouringError(LlmMesaError):
    """A colouring game that cannot be built as asked; the message names the fix."""


PARAMETERS = ParameterSet.of(
    Parameter("n", int, 38, "number of agents (the study: 38)", low=3, high=MAX_AGENTS, label="N (agents)",
              control_range=(3, 300)),
    Parameter("topology", str, "cycle",
              "the network: a cycle (with --chords), a leader cycle, preferential attachment with a planted "
              "k-colouring (pa), or the core's er, ba, ws, caveman", choices=TOPOLOGIES, label="Network"),
    Parameter("chords", int, 0, "random chords added to a cycle or leader cycle, each joining nodes an odd "
              "distance apart so that an even cycle stays 2-colourable (the study: 0, 5, 20)",
              low=0, high=MAX_AGENTS, label="Chords", control_range=(0, 60)),
    Parameter("leaders", int, 2, "hub nodes of a leader cycle, off the cycle, sharing its even nodes among them",
              low=1, high=MAX_AGENTS, label="Leaders", control_range=(1, 10)),
    Parameter("links", int, 2, "links each new node makes in pa and ba (the study: 2 and 3)",
              low=1, high=MAX_AGENTS, label="Links per new node", control_range=(1, 8)),
    Parameter("k", int, 2, "colours the agents choose among (the study: the graph's chromatic number)",
              low=2, high=len(COLOURS), label="Colours (k)"),
    Parameter("inertia", float, 0.0, "each round, the chance that an agent keeps its colour whatever it sees "
              "(it is not asked); the others decide by their policy", low=0, high=1, step=0.05, label="Inertia",
              in_seed=False),
    Parameter("initial", str, "random", "the start: each agent a colour at random, or everyone the first colour",
              choices=INITIAL, label="Initial colours"),
    Parameter("show_degrees", bool, False, "agents also see how many neighbours each neighbour has "
              "(the study's second view)", label="Show degrees", in_seed=False),
    Parameter("show_conflicts", bool, False, "agents also see how many conflicts the whole network has",
              label="Show conflicts", in_seed=False),
    Parameter("show_network", bool, False, "agents see the whole network: every node's colour and every link "
              "(the study's high-information view)", label="Show the whole network", in_seed=False),
    UPDATE,
    Parameter("max_rounds", int, 100, "round limit (the study's 300 s at 3 s a round: 100)", low=1, high=MAX_ROUNDS,
              label="Max rounds", control_range=(1, 500), round_limit=True),
    Parameter("payoff", float, 5.0, "each player's pay when no two neighbours share a colour by the end "
              "(the study: $5)", low=0, high=1e6, control=False),
)

__all__ = ["COLOURS", "ColouringError", "INITIAL", "MAX_AGENTS", "MAX_ROUNDS", "PARAMETERS", "TOPOLOGIES"]
