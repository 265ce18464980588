"""Mesa's Schelling model, imported unchanged, with each agent's move decided by an LLM (or by Mesa's own rule)."""

from mesa.examples.basic.schelling.agents import SchellingAgent
from mesa.examples.basic.schelling.model import Schelling

from llm_mesa import Decision, MesaGame, register_game
from llm_mesa.cli import main

RULES = ("You live on a {width} x {height} grid in Schelling's segregation model. You are happy when at least a share "
         "{homophily} of your neighbours are of your type. Every step, all agents choose at once: stay, or move to a "
         'random empty cell. Answer with one JSON object: {{"choice": "stay"}} or {{"choice": "move"}}.')
STATE = "Step {round}. You are of type {type}; around you: {similar} of your type, {other} of the other type."


def view(agent):  # what the agent sees: the prompt's fields
    around = list(agent.cell.get_neighborhood(radius=agent.radius).agents)
    similar = sum(n.type == agent.type for n in around)
    width, height = agent.model.grid.dimensions
    return {"type": agent.type, "similar": similar, "other": len(around) - similar, "homophily": agent.homophily,
            "width": width, "height": height}


def unhappy(v):  # Mesa's rule: move when the share of one's own type is below the homophily
    seen = v["similar"] + v["other"]
    return "move" if (v["similar"] / seen if seen else 0) < v["homophily"] else "stay"


def act(agent, choice, step):  # the example's step moves an unhappy agent: say which one is
    agent.happy = choice == "stay"
    step()


MOVE = Decision(SchellingAgent, "step", ("stay", "move"), view=view, rule=unhappy, rules=RULES, state=STATE, act=act,
                timing="step")
GAME = MesaGame(Schelling, name="my_schelling", decisions=[MOVE], bounds={"density": (0.05, 1)})

if __name__ == "__main__":  # python examples/schelling_llm.py my_schelling --seed 3 (any llm-mesa command)
    import sys
    register_game(GAME)
    sys.exit(main(sys.argv[1:] or ["my_schelling", "--seed", "3"]))
