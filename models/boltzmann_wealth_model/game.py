"""Mesa's Boltzmann wealth model with its agents' gifts decided by a policy: at its own turn, after its move, an agent
with money and company chooses to give one unit to a random cellmate (the example always gives) or to keep it. The
example keeps the rest: its grid, the random order, the moves, who receives a gift, and its Gini."""

from mesa.examples.basic.boltzmann_wealth_model.agents import MoneyAgent
from mesa.examples.basic.boltzmann_wealth_model.model import BoltzmannScenario, BoltzmannWealth

from llm_mesa import Decision, MesaGame, Parameter, answers, continuous, count, share, when

RULES = (
    "You are one of {agents} agents in the Boltzmann wealth model, on a grid of {width} x {height} cells whose edges "
    "do not wrap around; a cell may hold several agents. Every agent started with 1 unit of money. Each step the "
    "agents act one at a time, in a random order that changes every step. On its turn an agent moves to a random "
    "neighbouring cell; then, if it holds money and shares its cell with other agents, it chooses: give 1 unit of "
    "its money to one of them, picked at random, or keep it. "
    'Answer with one JSON object: {{"choice": "give"}} or {{"choice": "keep"}}.'
)
STATE = ("Step {round}, your turn: you have just moved. You hold {wealth} unit(s) of money. Your cell holds "
         "{count} other agent(s), who hold: {cellmates}.")
#: the most cellmates a prompt lists one by one; the others are counted ("and 40 more"), so a crowded cell's prompt
#: stays bounded (a 3 x 3 grid of 100,000 agents put 11,000 in a cell)
CELLMATES_LISTED = 50


def cellmates(agent: MoneyAgent) -> list[MoneyAgent]:
    return [other for other in agent.cell.agents if other is not agent]


def view(agent: MoneyAgent) -> dict:
    width, height = agent.model.grid.dimensions
    return {"wealth": agent.wealth, "cellmates": tuple(a.wealth for a in cellmates(agent)),
            "agents": agent.model.num_agents, "width": width, "height": height}


def render(view: dict) -> dict:
    held = view["cellmates"]
    listed = ", ".join(map(str, held[:CELLMATES_LISTED])) or "-"
    more = f" and {len(held) - CELLMATES_LISTED} more" if len(held) > CELLMATES_LISTED else ""
    return {**view, "count": len(held), "cellmates": listed + more}


GIVE = Decision(MoneyAgent, "give_money", ("give", "keep"), view=view, rule=lambda v: "give", rules=RULES,
                state=STATE, act=when("give"), render=render, ask=lambda agent: bool(cellmates(agent)), failed="keep",
                name="give")

GAME = MesaGame(
    BoltzmannWealth, name="boltzmann_wealth_model", decisions=[GIVE],
    summary="Mesa's Boltzmann wealth model: agents on a grid give one unit of money to a cellmate, or keep it",
    parameters=[
        Parameter("n", int, BoltzmannScenario.n, "number of agents, each starting with 1 unit of money", low=2,
                  high=100_000, control_range=(2, 500), label="Agents"),
        Parameter("width", int, BoltzmannScenario.width, "columns of the grid", low=3, high=200, control_range=(3, 50),
                  label="Grid width"),
        Parameter("height", int, BoltzmannScenario.height, "rows of the grid", low=3, high=200, control_range=(3, 50),
                  label="Grid height")],
    columns={"gifts": lambda m: answers(m).get("give", 0), "richest": lambda m: max(a.wealth for a in m.agents),
             "broke": lambda m: sum(a.wealth == 0 for a in m.agents) / len(m.agents)},
    state=lambda agent: agent.wealth, state_scale=count(unit="units", label="wealth"), headline_measure="Gini",
    measures={"Gini": continuous(0, 1, label="Gini coefficient of wealth"), "gifts": count(label="gifts"),
              "richest": count(unit="units", label="the richest agent's wealth"),
              "broke": share(label="agents with no money"),
              "depth": count(label="decisions in a row (each waits for the one before it)"),
              "mesa_agreement": share(label="decisions as Mesa's rule")},
)
