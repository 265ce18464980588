"""Mesa's spatial prisoner's dilemma with each agent's next move chosen by a policy, where the example copies the best
scorer around: at the step's start under ``Simultaneous``, at the agent's turn under ``Random`` and ``Sequential`` (a
turn's call waits only for its neighbours' earlier turns). The payoff table is offered as its four entries."""

import hashlib
import re

from mesa.examples.advanced.pd_grid.agents import PDAgent
from mesa.examples.advanced.pd_grid.model import PdGrid

from llm_mesa import Decision, MesaGame, Parameter, StudyDesign, categorical, continuous, count, share

MOVES = ("C", "D")
PAYOFFS = {(mine, theirs): f"payoff_{mine}{theirs}".lower() for mine in MOVES for theirs in MOVES}
RULES = (
    "You are one player of the iterated prisoner's dilemma on a grid of {width} x {height} cells, one player a cell. "
    "Your neighbours are the players in the cells around yours, diagonals included: {edges}. Each step you play one move, "
    "C (cooperate) or D (defect), against every neighbour at once, and earn from each neighbour: {payoffs}. Your "
    "score is the sum of everything you have earned so far. {turns} "
    'Answer with one JSON object: {{"move": "C"}} or {{"move": "D"}}.'
)
TURNS = {
    "Simultaneous": "Each step every player chooses its next move at the same time, seeing the moves and scores as they "
                    "are at the start of the step; it is then paid against its neighbours' new moves.",
    "Random": "Each step the players take turns one at a time, in a random order that changes every step; on your turn "
              "you see your neighbours' moves and scores as they are, the changes of those who acted before you this "
              "step included, and you are paid at once against their moves.",
    "Sequential": "Each step the players take turns one at a time, in the same fixed order every step; on your turn you "
                  "see your neighbours' moves and scores as they are, the changes of those who acted before you this "
                  "step included, and you are paid at once against their moves.",
}
STATE = "Step {round}, your turn. You: {move}, score {score!r}. Your neighbours, in the grid's order: {neighbours}."


def view(agent: PDAgent) -> dict:
    model = agent.model
    return {"move": agent.move, "score": agent.score, "activation_order": model.activation_order,
            "neighbours": tuple((n.move, n.score) for n in agent.cell.neighborhood.agents),
            "payoffs": tuple(model.payoff.items()), "torus": bool(model.grid.torus),
            "width": model.grid.dimensions[0], "height": model.grid.dimensions[1]}


def render(v: dict) -> dict:
    pairs = "; ".join(f"{i}: {move}, score {score!r}" for i, (move, score) in enumerate(v["neighbours"], 1))
    return {**v, "neighbours": pairs or "none", "turns": TURNS[v["activation_order"]],
            "payoffs": "; ".join(f"you {m} and they {t}: {value:g}" for (m, t), value in v["payoffs"]),
            "edges": "the grid's edges wrap around, so everyone has 8" if v["torus"]
            else "8, or fewer at the grid's edges, which do not wrap around"}


def read(texts: dict) -> dict:
    """A prompt's move, score and neighbours read back (scores are written as Python writes floats)."""
    pairs = re.findall(r"\d+: ([CD]), score (\S+?)(?:;|$)", texts["neighbours"])
    return {"move": texts["move"], "score": float(texts["score"]), "neighbours": [(m, float(s)) for m, s in pairs]}


def best_scorer(v: dict) -> str:
    """The example's rule: the move of the highest scorer among the neighbours, then itself (the first one found)."""
    return max([*v["neighbours"], (v["move"], v["score"])], key=lambda pair: pair[1])[0]


NEXT_MOVE = Decision(
    PDAgent, "step", MOVES, view=view, rule=best_scorer, rules=RULES, state=STATE, render=render, read=read,
    act=lambda agent, move, step: setattr(agent, "next_move", move), answer_field="move", failed=lambda v: v["move"],
    timing=lambda model: "step" if model.activation_order == "Simultaneous" else "turn",
    depends_on=lambda agent: agent.cell.neighborhood.agents, numbered_turns=True, name="next_move",
    template_hash=hashlib.sha256((RULES + "".join(TURNS.values()) + STATE).encode()).hexdigest()[:12])

GAME = MesaGame(
    PdGrid, name="pd_grid", decisions=[NEXT_MOVE], max_rounds=20,
    summary="Mesa's spatial prisoner's dilemma: each agent's next move, C or D, on a grid",
    parameters=[Parameter(name, float, float(PdGrid.payoff[moves]), f"an agent's payoff from one neighbour when it plays "
                          f"{moves[0]} and the neighbour {moves[1]}", low=-1000, high=1000, step=0.1,
                          control_range=(0, 3), label=f"Payoff {moves[0]} vs {moves[1]}") for moves, name in PAYOFFS.items()]
    + [Parameter("activation_order", str, "Random", "how agents act each step: Sequential, Random or Simultaneous",
                 choices=tuple(PdGrid.activation_regimes), label="Activation order")],
    bounds={"width": (3, 200), "height": (3, 200)},
    arguments=lambda p: {**p, "payoffs": {m: p[n] for m, n in PAYOFFS.items()}, "payoff": {m: p[n] for m, n in PAYOFFS.items()}},
    columns={"cooperation": lambda m: sum(a.move == "C" for a in m.agents) / len(m.agents),
             "mean_score": lambda m: sum(float(a.score) for a in m.agents) / len(m.agents)},
    state=lambda agent: agent.move, headline_measure="cooperation",  # the design: Mesa's notebook's three orders
    design=StudyDesign({order.lower(): {"activation_order": order} for order in PdGrid.activation_regimes}),
    state_scale=categorical("C", "D", palette={"C": "#1f77b4", "D": "#d62728"}, label="move"),
    measures={"Cooperating_Agents": count(label="cooperating agents"), "cooperation": share(label="share cooperating"),
              "mean_score": continuous(label="mean score"), "mesa_agreement": share(label="decisions as Mesa's rule"),
              "depth": count(label="turns in a row (LLM wall time is depth x latency)")},
)
