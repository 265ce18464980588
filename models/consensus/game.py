"""The consensus game as the core sees it: the game contract (``llm_mesa.games.Game``).

This module stays light (no Mesa, no openai): the core imports it to find the
game, and the model only when a game is played. The parameters are defined once,
in ``parameters.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llm_mesa import play as core
from llm_mesa.games import (
    Extensions,
    Game,
    GameResult,
    LlmEstimate,
    LlmSupport,
    PlayRequest,
    PolicyCatalog,
    StudyDesign,
    Table,
)

from .conditions import (
    ALL_CONDITIONS,
    CONDITION_GROUPS,
    RULE_CONFIGURATIONS,
    TALKING_CONFIGURATIONS,
    describe_condition,
)
from .parameters import PARAMETERS


def mean_degree(topology: str, n: int, ring_degree: int = 4) -> float:
    """The expected mean degree of the study's topologies at ``n`` nodes (``llm_mesa.graphs.build_topology``)."""
    if topology == "er":
        return 0.2 * (n - 1)
    if topology == "ba":
        return 2 * 2 * (n - 2) / n  # m = 2 edges for each of the n - m nodes added
    if topology == "caveman":
        return 3.0  # cliques of 4, one edge of each rewired to the next clique
    return float(ring_degree)  # ws: rewiring keeps the ring's number of links

#: what a decision's free text may leave missing in one game (string columns of the LLM tables)
_TEXT = {c: "string" for c in ("message", "reason", "diary", "answer", "outcome", "failed", "text", "server")}
TABLES = (
    Table("rounds", ("round",), "one row per round: shares, consensus, components, agreement, stubbornness, LLM use"),
    Table("agents", ("round", "agent"), "one row per agent and round: colour, opportunity, stubborn move, flip",
          needs=("edges",)),
    Table("messages", ("round", "sender"), "every message sent: sender, recipients, text",
          types={"text": "string", "to": "Int64"}),
    Table("transcript", ("round", "agent"), "every LLM decision: answer, reason, message, diary, tokens, latency",
          types={**_TEXT, "message_to": "Int64"}),
    Table("edges", ("source", "target"), "the network, each edge once"),
)

def _place(game: Any, parameters: Mapping[str, Any], policy: Any, seed: int, placed: Mapping[Any, Any]) -> Any:
    """The game with the agents at the nodes ``placed`` names on their own policies, built in (the model
    fixes its fast paths and its key from its agents' policies): each is one more ``assign`` entry
    (``nodes:V``), after the game's own ``assign`` parameter's."""
    from llm_mesa.decisions import bind_game

    from .mixing import assignment_of
    from .model import ConsensusModel

    parameters = game.parameters.validate(parameters, complete=True)
    assign = {**(assignment_of(parameters["assign"]) or {}), **{f"nodes:{node}": p for node, p in placed.items()}}
    model = ConsensusModel(policy=policy, assign=assign or None, rng=seed,
                           **{k: v for k, v in parameters.items() if k != "assign"})
    bind_game(model, core.key(game, parameters, seed), core.failure_share(game, parameters))
    return model

def run_tables(game: Any, model: Any) -> dict[str, Any]:
    """What ``llm-mesa consensus --out`` writes and the replay viewer reads (``tables.run_tables``)."""
    from .tables import run_tables

    return run_tables(model)

def outcome(game: Any, row: Mapping[str, Any]) -> str:
    won = f"consensus on {row['winner']}" if row["consensus"] else "no consensus"
    return f"{won} after {row['rounds']} rounds"

def _describe(game: Any, parameters: Mapping[str, Any]) -> str:
    return describe_condition(parameters)

def estimate(game: Any, parameters: Mapping[str, Any], endpoint: Any) -> LlmEstimate:
    """One LLM call per agent and round; prompts as long as the game lets them grow.

    The prompt of an agent of the topology's mean degree, in every round of the game (its
    history window filling up), hearing every message it can hear each round (its neighbours
    under local communication, all other players under global) at the longest a message
    may be (the answer schema's bound for this token budget, at most ``message_chars``); the
    history block is bounded (``ConsensusPrompt.history_chars``), so this stays an upper
    bound without growing past it. The mean over the rounds is the tokens per call.
    """
    from llm_mesa.sweep.dry_run import approx_tokens

    from .observation import ConsensusObservation, Message, RoundRecord
    from .prompt import text_chars
    from .prompt_variants import consensus_prompt

    full = {**PARAMETERS.defaults(), **parameters}
    n, rounds, window = full["n"], full["max_rounds"], full["history"]
    degree = max(1, min(n - 1, round(mean_degree(full["topology"], n, full["ring_degree"]))))
    neighbours = tuple(range(1, degree + 1))
    prompt = consensus_prompt(full["prompt"])
    talk = full["communication"] != "none"
    bound = min(prompt.message_chars, text_chars(endpoint.max_tokens, full["communication"],
                                                 full["direct_messages"], full["message_replaces_move"]))
    senders = (range(1, n) if full["communication"] == "global" else neighbours) if talk else ()
    heard = [Message(v, 0, "x" * bound) for v in senders]
    tokens = []  # per round while the window fills; every later round costs what the last one did
    for now in range(1, min(rounds, window + 2) + 1):
        history = [RoundRecord(r, "red", dict.fromkeys(neighbours, "blue"), heard)
                   for r in range(max(1, now - window), now)]
        obs = ConsensusObservation(
            agent_id=n - 1, round=now, preference="red", colour="red", neighbour_ids=neighbours,
            neighbour_colours=("blue",) * degree, communication=full["communication"],
            direct_messages=full["direct_messages"], message_replaces_move=full["message_replaces_move"],
            label=full["label"], history=history, history_rounds=window, inbox=heard, diary="x" * bound,
            max_rounds=rounds, n_players=n, payoff_preferred=full["payoff_preferred"],
            payoff_other=full["payoff_other"], message_cost=full["message_cost"])
        tokens.append(approx_tokens("\n".join(m["content"] for m in prompt.messages(obs))))
    total = sum(tokens) + (rounds - len(tokens)) * tokens[-1]
    completion = endpoint.max_tokens or endpoint.max_completion_tokens or 120
    return LlmEstimate(calls=n * rounds, rounds=rounds, prompt_tokens_per_call=round(total / rounds),
                       completion_tokens_per_call=completion, may_stop_early=True)

def _check(game: Any, parameters: Mapping[str, Any], seed: int) -> None:
    from llm_mesa.policy import parse_policy_spec

    from .mixing import SEPARATOR, is_part, parse_assignment
    from .model import ConsensusModel

    # an assignment's LLMs and parts are checked against the policy when played; here its selectors and rules
    assign = {k: "stubborn" if is_part(v) or parse_policy_spec(v)[0] == "llm" else v
              for k, v in parse_assignment(str(parameters.get("assign") or ""), "assign").items()}
    ConsensusModel(policy="stubborn", rng=seed, **{**parameters, "baseline_permutations": 0,
                                                   "assign": SEPARATOR.join(f"{k}={v}" for k, v in assign.items())})

def _play(game: Any, request: PlayRequest) -> GameResult:
    """One game; a mixed population (``A + B``) and the ``assign`` parameter place the policies (``mixing``)."""
    from .mixing import request_policies
    from .model import ConsensusModel
    from .tables import game_tables

    policy, assign, llms = request_policies(game, request)
    parameters = {k: v for k, v in request.parameters.items() if k != "assign"}
    model = ConsensusModel(policy=policy, assign=assign, rng=request.seed, **parameters)
    model.run()
    row = {("policy_spec" if k == "policy" else k): v for k, v in model.summary().items() if k != "seed"}
    if llms:
        from llm_mesa.llm.diagnosis import commonest_failure

        row["model"] = " + ".join(dict.fromkeys(p.endpoint.model for p in llms))
        row["replayed_calls"] = sum(p.usage.replayed for p in llms)
        row["failure_cause"] = commonest_failure({id(p.usage): p.usage for p in llms}.values())  # the breaker's
        # the report's manifest summary names it
        row["prompt_template_hash"] = llms[0].prompt_for(model.prompt_variant).template_hash_for(model.update)
        core.judge(game, row, model, parameters, llms)  # the core's count beside the game's: failed_decisions
    return GameResult(row, game_tables(model, request.tables))

def play_batch(game: Any, requests: Sequence[PlayRequest]) -> list[GameResult]:
    """Rule games (no endpoint) together through the batched engine, bit for bit the model's;
    the others one by one through the model."""
    from .batched import batchable, play_requests

    fast = [i for i, r in enumerate(requests) if batchable(r)]
    results: list[GameResult | None] = [None] * len(requests)
    for i, result in zip(fast, play_requests([requests[i] for i in fast]) if fast else []):
        results[i] = result
    return [r if r is not None else _play(game, q) for r, q in zip(results, requests)]

def batch_size(game: Any, request: PlayRequest) -> int:
    """Rule games in batches of up to about a million agents (2,000 games at most); LLM games alone."""
    if request.endpoint is not None:
        return 1
    n = request.parameters.get("n", PARAMETERS["n"].default)
    return max(1, min(2000, (1 << 20) // max(int(n), 1)))

def headline(game: Any, games, conditions: Sequence[str], policies: Sequence[str]) -> str:
    from .tables import consensus_table, format_consensus_table

    # the invalid games are counted by the sweep's own last line (llm_mesa.sweep.breaker.closing_line)
    return "consensus (successes / games):\n" + format_consensus_table(consensus_table(games, conditions, policies))


class ConsensusGame(Game):
    """The network consensus game (SPEC part A)."""

    name = "consensus"
    summary = "the network consensus game"
    parameters = PARAMETERS
    tables = TABLES
    row_types = {"winner": "string", "stop_reason": "string", "largest_component_colour": "string",
                 "winner_is_majority_preference": "boolean", "largest_component_baseline_mean": "float64",
                 "largest_component_baseline_p": "float64", "distinct_share": "float64",
                 "template_similarity": "float64", "stubbornness": "float64"}
    policies = PolicyCatalog(
        module="llm_mesa.models.consensus.policies",
        lazy={"llm": ("llm_mesa.models.consensus.llm_policy", "an LLM agent behind any OpenAI-compatible endpoint")},
        groups={"rules": RULE_CONFIGURATIONS, "talking": TALKING_CONFIGURATIONS},
        populations=True,  # A + B: mixed models; the 'assign' parameter places them (mixing.py)
        observed="llm_mesa.models.consensus.observed:observed")  # what llm-mesa fit weighs
    #: the study's outcome: did the network reach consensus (llm-mesa fit's check compares it first)
    headline_measure = "consensus"
    design = StudyDesign(ALL_CONDITIONS, CONDITION_GROUPS)
    llm = LlmSupport(policy="llm_mesa.models.consensus.llm_policy:game_policy",
                     behaviours="llm_mesa.models.consensus.behaviours", failure_share="max_failure_share",
                     estimate=estimate)
    extensions = Extensions(cli="llm_mesa.models.consensus.cli", analysis="llm_mesa.models.consensus.analysis_report",
                            figures="llm_mesa.models.consensus.figures", view="llm_mesa.models.consensus.view:ConsensusView",
                            place=_place, run_tables=run_tables, outcome=outcome, describe=_describe, check=_check,
                            play=_play, play_batch=play_batch, batch_size=batch_size, headline=headline)

    def build(self, parameters: Mapping[str, Any], policy: Any, seed: int) -> Any:
        from .model import ConsensusModel

        return ConsensusModel(policy=policy, rng=seed, **parameters)


GAME = ConsensusGame()
