"""Mesa's wolf-sheep predation model with each animal's choice to eat taken by a policy, at its turn, after its move:
a sheep on grown grass, a wolf beside sheep, eats or waits (the example always eats). The example keeps the rest: the
moves, which sheep a wolf eats, births and deaths, the grass's regrowth, and its counts (``Wolves``, ``Sheep``,
``Grass``), which count the animals by their own classes."""

from mesa.examples.advanced.wolf_sheep.agents import GrassPatch, Sheep, Wolf
from mesa.examples.advanced.wolf_sheep.model import WolfSheep

from llm_mesa import Decision, MesaGame, categorical, count, when

RULES = (
    "You are a {animal} in a predator-prey world on a {width} x {height} grid whose edges wrap around, with wolves, "
    "sheep and grass. Each step every sheep, then every wolf, in a random order, moves to a neighbouring cell, loses "
    "1 unit of energy, and may eat: a sheep eats the grass of its cell if it is grown (+{sheep_gain!r} energy; "
    "the grass then regrows in {regrowth} steps), a wolf eats one sheep of its cell (+{wolf_gain!r} energy). An "
    "animal whose energy falls below 0 dies; one that lives may give birth, sharing its energy with its young. "
    'Answer with one JSON object: {{"choice": "eat"}} or {{"choice": "wait"}}.'
)
STATE = ("Step {round}, your turn: you have just moved. Your energy is {energy!r}. In your cell: {food}. Around you: "
         "{wolves_near} wolves and {sheep_near} sheep in the neighbouring cells.")


def view(animal) -> dict:
    model, here = animal.model, animal.cell.agents
    near = [a for cell in animal.cell.neighborhood for a in cell.agents]
    sheep_here = sum(isinstance(a, Sheep) for a in here)
    return {"animal": type(animal).__name__.lower(), "energy": float(animal.energy),
            "food": f"{sheep_here} sheep" if isinstance(animal, Wolf) else "grown grass",
            "wolves_near": sum(isinstance(a, Wolf) for a in near), "sheep_near": sum(isinstance(a, Sheep) for a in near),
            "width": model.width, "height": model.height, "regrowth": model.scenario.grass_regrowth_time,
            "sheep_gain": model.scenario.sheep_gain_from_food, "wolf_gain": model.scenario.wolf_gain_from_food}


def grass_grown(sheep: Sheep) -> bool:
    return any(isinstance(a, GrassPatch) and a.fully_grown for a in sheep.cell.agents)


SHEEP_EAT = Decision(Sheep, "feed", ("eat", "wait"), view=view, rule=lambda v: "eat", rules=RULES, state=STATE,
                     act=when("eat"), ask=grass_grown, name="sheep_feed", failed="eat")
WOLF_EAT = Decision(Wolf, "feed", ("eat", "wait"), view=view, rule=lambda v: "eat", rules=RULES, state=STATE,
                    act=when("eat"), ask=lambda wolf: any(isinstance(a, Sheep) for a in wolf.cell.agents),
                    name="wolf_feed", failed="eat")

GAME = MesaGame(
    WolfSheep, name="wolf_sheep", decisions=[SHEEP_EAT, WOLF_EAT], max_rounds=100, max_agents=5000,
    summary="Mesa's wolf-sheep predation: each animal on food chooses to eat or to wait",
    bounds={"width": (5, 100), "height": (5, 100), "initial_sheep": (0, 2000), "initial_wolves": (0, 2000),
            "sheep_reproduce": (0, 1), "wolf_reproduce": (0, 1), "grass_regrowth_time": (1, 200),
            "wolf_gain_from_food": (0, 100), "sheep_gain_from_food": (0, 100)},
    state=lambda agent: type(agent).__name__ if not isinstance(agent, GrassPatch) else
    ("grass" if agent.fully_grown else "soil"), headline_measure="Sheep",
    state_scale=categorical("Wolf", "Sheep", "grass", "soil", label="what is in the cell",
                            palette={"Wolf": "#7f7f7f", "Sheep": "#1f77b4", "grass": "#2ca02c", "soil": "#c9b99a"}),
    measures={"Wolves": count(label="wolves"), "Sheep": count(label="sheep"), "Grass": count(label="grown grass")},
)
