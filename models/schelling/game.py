"""Mesa's Schelling model with its agents' move decided by a policy: each step, on the grid as the step starts, every
agent chooses to stay or to move to a random empty cell (where the example moves the unhappy ones). The example keeps
everything else: its grid, its agents, where a mover lands, happiness, and its DataCollector's series."""

from mesa.examples.basic.schelling.agents import SchellingAgent
from mesa.examples.basic.schelling.model import Schelling, SchellingScenario

from llm_mesa import Decision, MesaGame, Parameter, answers, categorical, continuous, count, share

RULES = (
    "You are one agent in Schelling's segregation model, on a grid of {width} x {height} cells whose edges do not "
    "wrap around. Each cell holds at most one agent; {agents} agents live on the grid, each of type 0 or type 1. "
    "Your neighbourhood is every cell within {radius} step(s) of yours in any direction, diagonals included. "
    "You are happy when at least a share {homophily!r} of your neighbours are of your type (with no neighbours at "
    "all you are unhappy). Each step every agent chooses at the same time, on the grid as it is at the start of the "
    "step: stay where it is, or move to an empty cell chosen at random. Once everyone has moved, happiness is judged "
    "again; the game ends when every agent is happy. "
    'Answer with one JSON object: {{"choice": "stay"}} or {{"choice": "move"}}.'
)
STATE = ("Step {round}. You are of type {type}. In your neighbourhood: {similar} neighbours of your type, "
         "{other} of the other type, {empty} empty cells.")


def view(agent: SchellingAgent) -> dict:
    around = agent.cell.get_neighborhood(radius=agent.radius)
    neighbours = list(around.agents)
    similar = sum(n.type == agent.type for n in neighbours)
    width, height = agent.model.grid.dimensions
    return {"type": agent.type, "similar": similar, "other": len(neighbours) - similar,
            "empty": len(around) - len(neighbours), "homophily": agent.homophily, "radius": agent.radius,
            "width": width, "height": height, "agents": len(agent.model.agents)}


def unhappy(view: dict) -> str:
    """The example's rule: an agent whose share of neighbours of its type is below the homophily moves."""
    seen = view["similar"] + view["other"]
    return "move" if (view["similar"] / seen if seen else 0.0) < view["homophily"] else "stay"


def has_room(model: Schelling) -> bool:
    return len(model.agents) < len(model.grid.all_cells)


def act(agent: SchellingAgent, choice: str, step) -> None:
    agent.happy = choice == "stay" or not has_room(agent.model)  # what the example's step reads: move when unhappy
    step()


def segregation(model: Schelling) -> float:
    """The mean share of an agent's neighbours that are of its type (agents with neighbours)."""
    shares = [sum(n.type == a.type for n in around) / len(around) for a in model.agents
              if (around := list(a.cell.get_neighborhood(radius=a.radius).agents))]
    return sum(shares) / len(shares) if shares else 0.0


MOVE = Decision(SchellingAgent, "step", ("stay", "move"), view=view, rule=unhappy, rules=RULES, state=STATE, act=act,
                timing="step", failed="stay", name="move")

GAME = MesaGame(
    Schelling, name="schelling", decisions=[MOVE],
    summary="Mesa's Schelling segregation model: agents of two types stay or move on a grid",
    parameters=[Parameter("density", float, SchellingScenario.density, "the chance that a cell holds an agent at the "
                          "start", low=0.05, high=1, step=0.05, label="Agent density"),
                Parameter("width", int, SchellingScenario.width, "columns of the grid", low=3, high=200, control_range=(5, 60), label="Grid width"),
                Parameter("height", int, SchellingScenario.height, "rows of the grid", low=3, high=200, control_range=(5, 60), label="Grid height")],
    bounds={"radius": (1, 5)}, most_agents=lambda p: p["width"] * p["height"],
    columns={"settled": lambda m: bool(m.happy == len(m.agents)), "segregation": segregation,
             "moves": lambda m: answers(m).get("move", 0) if has_room(m) else 0},
    state=lambda agent: agent.type, headline_measure="pct_happy",
    state_scale=categorical(0, 1, palette={0: "#1f77b4", 1: "#ff7f0e"}, label="agent type (1: the minority)"),
    measures={"happy": count(label="happy agents"), "pct_happy": continuous(0, 100, unit="%", label="happy agents"),
              "population": count(label="agents"), "minority_pct": continuous(0, 100, unit="%", label="type-1 agents"),
              "moves": count(label="moves"), "segregation": share(label="share of neighbours of one's own type"),
              "mesa_agreement": share(label="decisions as Mesa's rule")},
)
