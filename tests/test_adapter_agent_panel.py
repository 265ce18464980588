"""The agent panel of a Mesa model played through the adapter: what the agent saw at its decision, in words.

The ``decisions`` table keeps a view's tuples as JSON text (so Parquet takes every game alike); the panel reads them
back, so that a lookup table of pairs reads "alive/2: lives" and a list of pairs "(dead, 3)" rather than the JSON
``[["alive", 2], "lives"]``, and the decision is headed with the round it was made in, as the page's round says.
"""

from __future__ import annotations

from mesa.examples.basic.conways_game_of_life.agents import Cell
from mesa.examples.basic.conways_game_of_life.model import ConwaysGameOfLife

from llm_mesa import Decision, MesaGame
from llm_mesa.views import view_of

#: Conway's rule as a lookup table (now, live neighbours) -> next state, for the states that change nothing else
TABLE = {("alive", 2): "alive", ("alive", 3): "alive", ("dead", 3): "alive"}


def view(cell: Cell) -> dict:
    return {"now": "alive" if cell.is_alive else "dead", "alive": sum(n.is_alive for n in cell.neighbors),
            "neighbours": tuple(("alive" if n.is_alive else "dead", n.unique_id) for n in cell.neighbors)[:2],
            "table": tuple(TABLE.items()), "share": 1 / 3}


NEXT = Decision(Cell, "determine_state", ("alive", "dead"), view=view,
                rule=lambda v: TABLE.get((v["now"], v["alive"]), "dead"),
                act=lambda cell, choice, own: setattr(cell, "_next_state", Cell.ALIVE if choice == "alive" else Cell.DEAD),
                timing="step", rules="Answer alive or dead.", state="You are {now}.")
GAME = MesaGame(ConwaysGameOfLife, name="panel_life", decisions=[NEXT], max_rounds=5, state=lambda cell: cell.state)


def test_the_panel_shows_what_the_agent_saw_at_its_last_decision_pairs_kept_and_headed_with_its_round():
    page = view_of(GAME)
    model = page.build_from({k: s.get("value") for k, s in page.controls().items()})
    before = page.agent_rows(model, 0)
    assert not any(k.startswith("decision in round") for k in before)  # nothing decided yet
    model.step()
    model.step()
    rows = page.agent_rows(model, 0)
    cell = page.agents(model)[0]
    heading = "decision in round 2"
    assert rows[f"{heading} · saw · table"] == "alive/2: alive, alive/3: alive, dead/3: alive"
    first, second = list(cell.neighbors)[:2]  # the view's order; their states as they were at round 2's start
    assert rows[f"{heading} · saw · neighbours"].count("(") == 2
    assert f", {first.unique_id})" in rows[f"{heading} · saw · neighbours"]
    assert f", {second.unique_id})" in rows[f"{heading} · saw · neighbours"]
    assert rows[f"{heading} · saw · share"] == "0.3333"
    assert rows[f"{heading} · answered"] in ("alive", "dead")
    assert rows["policy"] == "mesa" and rows["cell"].startswith("(")  # its place, as any grid game's panel shows it
    assert rows["neighbours hold"].count(",") == 7  # a torus: eight neighbours
