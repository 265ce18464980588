"""The consensus game's parameters: the one definition the model, the command line,
the explorer and sweeps read (``llm-mesa sweep --set NAME=V``).

Kept in a module of its own, with no Mesa and no model, so that the game's entry
point and the model both import it and neither imports the other.
"""

from __future__ import annotations

from dataclasses import replace

from llm_mesa.graphs import TOPOLOGIES
from llm_mesa.parameters import Parameter, ParameterSet
from llm_mesa.update import UPDATE

from .prompt_variants import TEMPLATES

#: the wordings of the prompt LLM agents may get (``prompt_variants.PROMPT_VARIANTS`` holds one template each)
RULES_WORDINGS = TEMPLATES.choices
#: documented limits: a larger value is refused before anything is allocated
MAX_AGENTS = 10_000_000
MAX_ROUNDS = 1_000_000

PARAMETERS = ParameterSet.of(
    Parameter("n", int, 36, "number of agents (the study: 36; its replication 20)", low=2, high=MAX_AGENTS, label="N (agents)"),
    Parameter("topology", str, "ba", "the graph: Erdős–Rényi, Barabási–Albert, Watts–Strogatz or connected caveman",
              choices=TOPOLOGIES, label="Topology"),
    Parameter("ring_degree", int, 4, "Watts–Strogatz only: each node's links to its nearest ring neighbours before "
              "rewiring with p = 0.5, an even number below N (the study did not say; SPEC: k = 4)", low=2,
              high=MAX_AGENTS, step=2, label="WS ring degree"),
    Parameter("preferences", str, "random",
              "random: half prefer red; minority: the --minority hubs prefer --minority-colour; "
              "explicit: a colour per node (library only)",
              choices=("random", "minority", "explicit"), label="Preference design"),
    Parameter("minority", int, 5, "hubs preferring the minority colour in the minority design", low=0, high=MAX_AGENTS, label="Minority hubs"),
    Parameter("minority_colour", str, "red", "the hubs' colour in the minority design", choices=("red", "blue"), label="Minority colour"),
    Parameter("initial", str, "preference", "initial colours: each agent's preference, or a fair coin",
              choices=("preference", "random"), label="Initial colours"),
    Parameter("communication", str, "none", "who a message reaches: nobody, the neighbours or everyone",
              choices=("none", "local", "global"), cli="--comm", label="Communication"),
    Parameter("direct_messages", bool, False, "also allow a private message to one neighbour", cli="--dm", label="Private messages"),
    Parameter("message_replaces_move", bool, True, "a message is sent instead of changing colour (the study)",
              control=False),
    Parameter("label", str, "llm", "what the rules call the other players", choices=("llm", "human"), label="Opponent label"),
    # which wording of the prompt (a sweep axis tests whether wording changes the outcome); like history, it
    # changes nothing that is drawn: its levels play the same games
    TEMPLATES.parameter("prompt", "the wording of the prompt LLM agents get", label="Prompt wording", in_seed=False),
    # how turns are taken (issue 20); like history, it changes nothing that is drawn: one seed, one graph
    replace(UPDATE, in_seed=False),
    Parameter("max_rounds", int, 50, "round limit (the study: 50)", low=1, high=MAX_ROUNDS, label="Max rounds",
              round_limit=True),
    Parameter("history", int, 10, "rounds of history an LLM agent is shown, each with its colour, its neighbours' "
              "colours and the messages it received (the study: 10; 0 shows none)", low=0, high=MAX_ROUNDS,
              label="History (rounds)", in_seed=False),
    Parameter("message_cost", float, 0.0, "payoff cost of each message an agent sends, stated in the rules "
              "(an agent's payoff never goes below 0)", low=0, high=1e6, label="Message cost", in_seed=False),
    Parameter("assign", str, "", "agents given another policy, as --assign does: SELECTOR=POLICY entries joined "
              "by ';', applied in order (selectors hubs:K, random:K, nodes:1,2, red, blue, all; POLICY a spec, "
              "or part:K, the K-th part of a mixed policy A + B)", control=False, in_seed=False),
    Parameter("payoff_preferred", float, 0.20, "payoff when the network ends on one's preferred colour",
              low=0, high=1e6, control=False),
    Parameter("payoff_other", float, 0.15, "payoff when the network ends on the other colour",
              low=0, high=1e6, control=False),
    Parameter("baseline_permutations", int, 1000,
              "random recolourings for the largest-component baseline (0 skips it)", low=0, high=1_000_000,
              control=False),
    Parameter("satisfied_threshold", float, 0.5, "share of neighbours on one's colour that makes an agent satisfied",
              low=0, high=1, control=False),
    Parameter("pseudo_window", int, 3, "rounds of high local agreement that make a pseudo-equilibrium",
              low=1, high=MAX_ROUNDS, control=False),
    Parameter("pseudo_level", float, 0.9, "local agreement a pseudo-equilibrium needs", low=0, high=1, control=False),
    Parameter("max_failure_share", float, 0.1, "share of failed decisions above which a game is invalid",
              low=0, high=1, control=False, sweep=False),
)

#: Parameters added after games were recorded: part of a game's key (``setup.game_setup``) only
#: when set away from their default, so every game played before they existed keeps its key.
#: They, and ``assign``, stay out of an experiment's derived seeds (``in_seed=False``): they change
#: nothing that is drawn, so a follow-up's axis over them plays the same graphs at every level.
KEYED_WHEN_SET = ("history", "message_cost", "update", "ring_degree")

__all__ = ["KEYED_WHEN_SET", "MAX_AGENTS", "MAX_ROUNDS", "PARAMETERS", "RULES_WORDINGS"]
