"""Mesa's Sugarscape G1MT with each trader's choice to trade taken by a policy, at its turn of the trading round: trade
with the traders in its vision, as the example's traders always do, or pass. The example keeps the rest: moves,
harvests, deaths, the prices and amounts of each trade, and its DataCollector (``#Traders``, ``Trade Volume``,
``Price``; the agents' trade network). Mesa 3.5's map is 50 x 50 cells whatever its arguments: the size is fixed."""

import inspect

from mesa.examples.advanced.sugarscape_g1mt.agents import Trader
from mesa.examples.advanced.sugarscape_g1mt.model import SugarscapeG1mt

from llm_mesa import Decision, MesaGame, continuous, count, when

RULES = (
    "You are a trader in Sugarscape, on a 50 x 50 landscape of sugar and spice. Each step every trader moves to the "
    "best cell it sees, harvests it, and uses up its metabolism of each good; one that runs out of either dies. Then, "
    "one at a time in a random order, each trader may trade with the traders within its vision: each trade swaps "
    "sugar for spice at a price between the two traders' marginal rates of substitution, and goes through only when "
    "it leaves both better off. "
    'Answer with one JSON object: {{"choice": "trade"}} or {{"choice": "pass"}}.'
)
STATE = ("Step {round}, your turn to trade. You hold {sugar} sugar and {spice} spice, and use {metabolism_sugar} sugar "
         "and {metabolism_spice} spice a step; your vision is {vision}. Traders within your vision: {partners}. Your "
         "marginal rate of substitution (spice per sugar): {mrs:.3f}.")


def view(trader: Trader) -> dict:
    partners = [a for a in trader.cell.get_neighborhood(radius=trader.vision).agents if isinstance(a, Trader)]
    return {"sugar": trader.sugar, "spice": trader.spice, "metabolism_sugar": trader.metabolism_sugar,
            "metabolism_spice": trader.metabolism_spice, "vision": trader.vision, "partners": len(partners),
            "mrs": trader.calculate_MRS(trader.sugar, trader.spice)}


TRADE = Decision(Trader, "trade_with_neighbors", ("trade", "pass"), view=view, rule=lambda v: "trade", rules=RULES,
                 state=STATE, act=when("trade"), failed="pass", name="trade")

GAME = MesaGame(
    SugarscapeG1mt, name="sugarscape_g1mt", decisions=[TRADE], max_rounds=100,
    summary="Mesa's Sugarscape with traders: each trader chooses to trade with those it sees, or to pass",
    fixed={"width": 50, "height": 50} if "width" in inspect.signature(SugarscapeG1mt).parameters else {},
    bounds={"initial_population": (1, 2000), "endowment_min": (1, 100), "endowment_max": (1, 200),
            "metabolism_min": (1, 10), "metabolism_max": (1, 10), "vision_min": (1, 10), "vision_max": (1, 10)},
    state=lambda trader: int(trader.sugar), headline_measure="#Traders",
    state_scale=continuous(0, None, unit="sugar", label="sugar held"),
    measures={"#Traders": count(label="traders"), "Trade Volume": count(label="trades in the step"),
              "Price": continuous(label="geometric mean price")},
)
