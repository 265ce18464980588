"""Mesa's Epstein civil violence model with each citizen's choice, rebel or stay quiet, taken by a policy at its own
turn, on what it sees then (the example's rule: rebel when grievance - risk aversion x arrest probability exceeds the
threshold). The example keeps the rest: cops, arrests and jail terms, moves, and its DataCollector (``active``,
``quiet``, ``arrested``; the agents' ``jail_sentence`` and ``arrest_probability``)."""

from mesa.examples.advanced.epstein_civil_violence.agents import Citizen, CitizenState, Cop
from mesa.examples.advanced.epstein_civil_violence.model import EpsteinCivilViolence

from llm_mesa import Decision, MesaGame, categorical, count

RULES = (
    "You are a citizen in Epstein's model of civil violence, on a {width} x {height} grid whose edges wrap around, "
    "with cops. The regime's legitimacy is {legitimacy!r}; your grievance is your hardship times (1 - legitimacy). "
    "Each step, in a random order, every citizen out of jail chooses to rebel openly (active) or to stay quiet, and "
    "then may move; each cop arrests one active citizen in its vision at random, for up to {max_jail_term} steps. "
    "If you rebel, your chance of arrest is 1 - exp(-{arrest_prob_constant!r} x round(cops / actives)) over what you "
    "see, yourself counted among the actives. Citizens here rebel when grievance - risk aversion x that chance "
    "exceeds {active_threshold!r}. "
    'Answer with one JSON object: {{"choice": "rebel"}} or {{"choice": "quiet"}}.'
)
STATE = ("Step {round}. Your hardship is {hardship!r}, so your grievance is {grievance!r}; your risk aversion is "
         "{risk_aversion!r}. In your vision: {cops} cops and {actives} active citizens, you included; your chance of "
         "arrest if you rebel: {arrest_probability!r}. You are {now}.")


def view(citizen: Citizen) -> dict:
    citizen.update_neighbors()  # what the example's own step reads first (no draw)
    citizen.update_estimated_arrest_probability()
    scenario, width_height = citizen.scenario, citizen.model.grid.dimensions
    return {"hardship": citizen.hardship, "grievance": citizen.grievance, "risk_aversion": citizen.risk_aversion,
            "arrest_probability": citizen.arrest_probability, "now": citizen.state.name.lower(),
            "cops": sum(isinstance(n, Cop) for n in citizen.neighbors),
            "actives": 1 + sum(isinstance(n, Citizen) and n.state == CitizenState.ACTIVE for n in citizen.neighbors),
            "width": width_height[0], "height": width_height[1], **{name: getattr(scenario, name) for name in (
                "legitimacy", "max_jail_term", "arrest_prob_constant", "active_threshold")}}


def threshold(v: dict) -> str:
    """The example's rule."""
    return "rebel" if v["grievance"] - v["risk_aversion"] * v["arrest_probability"] > v["active_threshold"] else "quiet"


def act(citizen: Citizen, choice: str, step) -> None:
    """The example's step out of jail, with the choice made: its state, then its move."""
    citizen.update_neighbors()
    citizen.update_estimated_arrest_probability()
    citizen.state = CitizenState.ACTIVE if choice == "rebel" else CitizenState.QUIET
    citizen.move()


REBEL = Decision(Citizen, "step", ("rebel", "quiet"), view=view, rule=threshold, rules=RULES, state=STATE, act=act,
                 ask=lambda citizen: not citizen.jail_sentence, failed="quiet", name="rebel")

GAME = MesaGame(
    EpsteinCivilViolence, name="epstein_civil_violence", decisions=[REBEL], max_rounds=100,
    summary="Mesa's Epstein civil violence model: citizens rebel or stay quiet, cops arrest",
    most_agents=lambda p: p["width"] * p["height"],
    bounds={"width": (5, 200), "height": (5, 200), "citizen_vision": (1, 20), "cop_vision": (1, 20),
            "max_jail_term": (0, 10_000), "max_iters": (1, 100_000)},
    state=lambda agent: agent.state.name if isinstance(agent, Citizen) else "COP", headline_measure="active",
    state_scale=categorical("QUIET", "ACTIVE", "ARRESTED", "COP", label="citizen or cop",
                            palette={"QUIET": "#1f77b4", "ACTIVE": "#d62728", "ARRESTED": "#7f7f7f", "COP": "#000000"}),
    measures={"active": count(label="active citizens"), "quiet": count(label="quiet citizens"),
              "arrested": count(label="citizens in jail")},
)
