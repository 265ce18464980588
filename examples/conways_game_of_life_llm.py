"""Mesa's Game of Life, imported unchanged, each cell's next state decided by an LLM (or by Conway's own rule)."""

from mesa.examples.basic.conways_game_of_life.agents import Cell
from mesa.examples.basic.conways_game_of_life.model import ConwaysGameOfLife

from llm_mesa import Decision, MesaGame, register_game
from llm_mesa.cli import main

RULES = ("You are one cell of Conway's Game of Life on a {width} x {height} grid whose edges wrap around; each cell has 8 "
         "neighbours. Every step all cells choose their next state at once. "
         'Answer with one JSON object: {{"choice": "alive"}} or {{"choice": "dead"}}.')
STATE = "Step {round}. You are {now}; {alive} of your neighbours are alive."


def view(cell):
    width, height = cell.model.grid.dimensions
    return {"now": "alive" if cell.is_alive else "dead", "alive": sum(n.is_alive for n in cell.neighbors),
            "width": width, "height": height}


def conway(v):  # a live cell lives on with 2 or 3 live neighbours; a dead one comes alive with 3
    return "alive" if v["alive"] == 3 or (v["now"] == "alive" and v["alive"] == 2) else "dead"


NEXT = Decision(Cell, "determine_state", ("alive", "dead"), view=view, rule=conway, rules=RULES, state=STATE,
                act=lambda cell, choice, own: setattr(cell, "_next_state", Cell.ALIVE if choice == "alive" else Cell.DEAD),
                timing="step")
GAME = MesaGame(ConwaysGameOfLife, name="game_of_life", decisions=[NEXT], max_rounds=50, state=lambda cell: cell.state,
                columns={"alive": lambda model: sum(cell.is_alive for cell in model.agents)})

if __name__ == "__main__":  # python examples/conways_game_of_life_llm.py game_of_life --seed 3 (any llm-mesa command)
    import sys
    register_game(GAME)
    sys.exit(main(sys.argv[1:] or ["game_of_life", "--seed", "3"]))
