"""The network colouring game (Kearns, Suri and Montfort, Science 2006) as the core sees it.

Written on llm-mesa's public API alone (``llm_mesa`` and the ``__all__`` of its
documented subpackages), as a game from outside the tree would be. This module stays
light (no Mesa, no openai): the core imports it to find the game, the model only
when a game is played. The parameters are defined once, in ``parameters.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llm_mesa import Extensions, Game, LlmEstimate, LlmSupport, PolicyCatalog, StudyDesign, Table, categorical, continuous, count, share

from .design import CONDITIONS, GROUPS, RULES, describe
from .parameters import COLOURS, PARAMETERS

PACKAGE = "llm_mesa.models.colouring"
TABLES = (
    Table("rounds", ("round",), "one row per round (0 the start): conflicting edges, agents in conflict, "
          "solved, colour changes, failed LLM decisions"),
    Table("agents", ("round", "agent"), "one row per agent and round: colour, in conflict, changed", needs=("edges",),
          read=lambda model: model.agents_frame()),
    Table("edges", ("source", "target"), "the network, each edge once", read=lambda model: model.edges_frame()),
)
#: what the rounds table's and the summary row's columns are (pages and reports draw them so): counts of
#: rounds never exceed the game's round limit, of agents its N; the network's size is a count, not an outcome
MEASURES = {
    "solved": share(label="solved"),
    "rounds_to_solution": count(high="max_rounds", label="rounds to a solution"),
    "rounds": count(high="max_rounds", label="rounds played"),
    "conflicts": count(label="conflicting edges"),
    "in_conflict": count(high="n", label="agents in conflict"),
    "changed": count(high="n", label="colour changes", events=True),
    "failed": count(high="n", label="failed LLM decisions", events=True),
    "conflicts_start": count(label="conflicts at the start"),
    "conflicts_final": count(label="conflicts at the end"),
    "conflicts_min": count(label="fewest conflicts"),
    "conflicts_mean": continuous(0, label="mean conflicts over the round limit"),
    **{f"conflicts_at_{p}": count(label=f"conflicts at {p}% of the round limit") for p in (25, 50, 75)},
    "changes": count(label="colour changes"),
    "failed_decisions": count(label="failed LLM decisions"),
    "payoff_earned": continuous(0, "payoff", unit="$", label="payoff earned"),
    "depth": count(label="turn depth"),
    "n": count(label="agents"), "edges": count(label="edges"), "k": count(label="colours"),
}


def estimate(game: Any, parameters: Mapping[str, Any], endpoint: Any) -> LlmEstimate:
    """One call per agent and round at most (sitting out, ``inertia``, saves calls; a solution ends
    the game); the prompt of an agent of the network's mean degree."""
    from .graphs import build_graph
    from .model import seed_streams
    from .parameters import COLOURS
    from .policies import View
    from .prompt import ColouringPrompt

    p = PARAMETERS.validate(parameters, complete=True)
    graph = build_graph(p["topology"], p["n"], seed_streams(0)[0], k=p["k"], chords=p["chords"],
                        leaders=p["leaders"], links=p["links"])
    degree = max(1, -(-2 * graph.number_of_edges() // graph.number_of_nodes()))
    view = View(agent=p["n"] - 1, round=p["max_rounds"], colour="purple", neighbours=tuple(range(degree)),
                neighbour_colours=("purple",) * degree, colours=COLOURS[: p["k"]], n_players=p["n"],
                max_rounds=p["max_rounds"], payoff=p["payoff"],
                neighbour_degrees=(10,) * degree if p["show_degrees"] else None,
                conflicts=10 * degree if p["show_conflicts"] else None, inertia=p["inertia"],
                network_colours=("purple",) * p["n"] if p["show_network"] else None,
                links=tuple((u, v) for u, v in graph.edges) if p["show_network"] else None)
    prompt = "\n".join(m["content"] for m in ColouringPrompt().messages(view))
    completion = endpoint.max_tokens or endpoint.max_completion_tokens or 40
    return LlmEstimate(calls=p["n"] * p["max_rounds"], rounds=p["max_rounds"],
                       prompt_tokens_per_call=max(1, round(len(prompt) / 4)),
                       completion_tokens_per_call=completion, may_stop_early=True)

def outcome(game: Any, row: Mapping[str, Any]) -> str:
    if row.get("solved"):
        return f"solved in {row['rounds_to_solution']} rounds"
    return f"unsolved: {row.get('conflicts_final', '?')} conflicts left after {row.get('rounds', '?')} rounds"

def _describe(game: Any, parameters: Mapping[str, Any]) -> str:
    return describe(parameters)

def headline(game: Any, games: Any, conditions: Sequence[str], policies: Sequence[str]) -> str:
    """Per condition and policy: games, share solved, median rounds to a solution, mean conflicts."""
    if games.empty:
        return "(no games)"
    grouped = games.groupby(["condition", "policy"], sort=False)
    table = grouped.agg(games=("solved", "size"), solved=("solved", "mean"),
                        median_rounds_to_solution=("rounds_to_solution", "median"),
                        conflicts_mean=("conflicts_mean", "mean")).round(3)
    return "colouring (share solved, median rounds to a solution among solved games):\n" + table.to_string()


class ColouringGame(Game):
    """The network colouring game: k colours, paid when no two neighbours share one."""

    name = "colouring"
    summary = "the network colouring game of Kearns, Suri and Montfort (2006)"
    parameters = PARAMETERS
    tables = TABLES
    row_types = {"rounds_to_solution": "Int64"}
    policies = PolicyCatalog(
        module=f"{PACKAGE}.policies",
        lazy={"llm": (f"{PACKAGE}.llm_policy", "an LLM agent behind any OpenAI-compatible endpoint")},
        groups={"rules": RULES}, observed=f"{PACKAGE}.observed:observed")  # what llm-mesa fit weighs
    design = StudyDesign(CONDITIONS, GROUPS)
    llm = LlmSupport(policy=f"{PACKAGE}.llm_policy:game_policy", behaviours=f"{PACKAGE}.behaviours", estimate=estimate)
    state_scale = categorical(*COLOURS, label="colour")  # named colours: each drawn in its colour
    measures = MEASURES
    headline_measure = "solved"
    extensions = Extensions(analysis=f"{PACKAGE}.analysis", figures=f"{PACKAGE}.figures",
                            view=f"{PACKAGE}.view:ColouringView", outcome=outcome, describe=_describe, headline=headline)

    def build(self, parameters: Mapping[str, Any], policy: Any, seed: int) -> Any:
        from .model import ColouringModel

        return ColouringModel(policy, seed, **parameters)


GAME = ColouringGame()
