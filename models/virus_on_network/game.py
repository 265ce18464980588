"""Mesa's virus on a network with two of its coin flips decided by a policy: whether an infected node checks for the
virus this step (the example: with chance ``virus_check_frequency``), and whether a node that has just recovered gains
resistance (with chance ``gain_resistance_chance``). The example keeps drawing the rest from its own stream: who
catches the virus, whether a check cures it. It builds its graph from Python's global ``random``, which the game
seeds with the game's seed first, so Mesa's own run of seed S is ``random.seed(S); VirusOnNetwork(rng=S)``."""

import random

from mesa.examples.basic.virus_on_network.agents import State, VirusAgent
from mesa.examples.basic.virus_on_network.model import VirusOnNetwork

from llm_mesa import Decision, MesaGame, categorical, count

RULES = (
    "You are one node of a network of {nodes} computers through which a virus spreads. Each step, in a random order, "
    "every infected node passes the virus to each susceptible neighbour with chance {virus_spread_chance!r}. An "
    "infected node may also run a check for the virus (the network's policy is to check with chance "
    "{virus_check_frequency!r} each step); a check removes the virus with chance {recovery_chance!r}, and a node "
    "cleaned that way may then become resistant for good (the policy: with chance {gain_resistance_chance!r}). "
)
CHECK = 'You are infected. Decide whether to run a check now. Answer with one JSON object: {{"choice": "check"}} or {{"choice": "wait"}}.'
RESIST = ('The virus has just been removed from you. Decide whether to become resistant. Answer with one JSON object: '
          '{{"choice": "resist"}} or {{"choice": "remain"}}.')
STATE = ("Step {round}. You have {neighbours} neighbours: {infected} infected, {susceptible} susceptible, "
         "{resistant} resistant.")


def view(agent: VirusAgent) -> dict:
    around = [n.state for n in agent.cell.neighborhood.agents]
    return {"nodes": len(agent.model.agents), "neighbours": len(around), "infected": around.count(State.INFECTED),
            "susceptible": around.count(State.SUSCEPTIBLE), "resistant": around.count(State.RESISTANT),
            **{name: getattr(agent, name) for name in ("virus_spread_chance", "virus_check_frequency", "recovery_chance",
                                                      "gain_resistance_chance")}}


CHECKING = Decision(VirusAgent, "check_situation", ("check", "wait"), view=view, rules=RULES + CHECK, state=STATE,
                    rule=lambda v: {"check": v["virus_check_frequency"], "wait": 1 - v["virus_check_frequency"]},
                    act=lambda agent, choice, own: agent.try_remove_infection() if choice == "check" else None,
                    ask=lambda agent: agent.state is State.INFECTED, failed="wait", name="check")
RESISTING = Decision(VirusAgent, "try_gain_resistance", ("resist", "remain"), view=view, rules=RULES + RESIST,
                     state=STATE, failed="remain", name="resist",  # the answer is the draw: resistance is set, not drawn again
                     rule=lambda v: {"resist": v["gain_resistance_chance"], "remain": 1 - v["gain_resistance_chance"]},
                     act=lambda agent, choice, own: setattr(agent, "state", State.RESISTANT) if choice == "resist" else None)

GAME = MesaGame(
    VirusOnNetwork, name="virus_on_network", decisions=[CHECKING, RESISTING], max_rounds=50,
    summary="Mesa's virus on a network: infected nodes check for the virus, recovered ones may gain resistance",
    prepare=random.seed, bounds={"num_nodes": (2, 1000), "avg_node_degree": (1, 20), "initial_outbreak_size": (1, 100)},
    state=lambda agent: agent.state.name, headline_measure="Infected",
    state_scale=categorical("SUSCEPTIBLE", "INFECTED", "RESISTANT", label="state",
                            palette={"SUSCEPTIBLE": "#1f77b4", "INFECTED": "#d62728", "RESISTANT": "#7f7f7f"}),
    measures={"Infected": count(label="infected nodes"), "Susceptible": count(label="susceptible nodes"),
              "Resistant": count(label="resistant nodes")},
)
