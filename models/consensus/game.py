"""The consensus game as the core sees it: one parameter definition and how to play.

``PARAMETERS`` is the single definition of the game's parameters: the model
validates with it, the ``consensus`` subcommand builds its options from it, the
explorer its controls, and ``llm-mesa sweep --set NAME=...`` its axes.
This module stays light (no Mesa, no openai): the core imports it to find the
game, and the model only when a game is played.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llm_mesa.games import Game, GameResult, PlayRequest
from llm_mesa.graphs import TOPOLOGIES
from llm_mesa.parameters import Parameter, ParameterSet

from .conditions import ALL_CONDITIONS, CONDITION_GROUPS, RULE_CONFIGURATIONS, describe_condition
from .prompt import PROMPT_VARIANTS

#: documented limits: a larger value is refused before anything is allocated
MAX_AGENTS = 10_000_000
MAX_ROUNDS = 1_000_000

PARAMETERS = ParameterSet.of(
    Parameter("n", int, 36, "number of agents (the study: 36; its replication 20)", low=2, high=MAX_AGENTS, label="N (agents)"),
    Parameter("topology", str, "ba", "the graph: Erdős–Rényi, Barabási–Albert, Watts–Strogatz or connected caveman",
              choices=TOPOLOGIES, label="Topology"),
    Parameter("preferences", str, "random",
              "random: half prefer red; minority: the --minority hubs prefer --minority-colour; "
              "explicit: a colour per node (library only)",
              choices=("random", "minority", "explicit"), label="Preference design"),
    Parameter("minority", int, 5, "hubs preferring the minority colour in the minority design", low=0, high=MAX_AGENTS, label="Minority hubs"),
    Parameter("minority_colour", str, "red", "the hubs' colour in the minority design", choices=("red", "blue"), label="Minority colour"),
    Parameter("initial", str, "preference", "initial colours: each agent's preference, or a fair coin",
              choices=("preference", "random"), label="Initial colours"),
    Parameter("communication", str, "none", "who a message reaches: nobody, the neighbours or everyone",
              choices=("none", "local", "global"), cli="--comm", label="Communication"),
    Parameter("direct_messages", bool, False, "also allow a private message to one neighbour", cli="--dm", label="Private messages"),
    Parameter("message_replaces_move", bool, True, "a message is sent instead of changing colour (the study)",
              control=False),
    Parameter("label", str, "llm", "what the rules call the other players", choices=("llm", "human"), label="Opponent label"),
    Parameter("prompt", str, "study", "the wording of the rules LLM agents get: the study's, or a paraphrase "
              "(a sweep axis tests whether wording changes the outcome)", choices=tuple(PROMPT_VARIANTS),
              label="Rules wording"),
    Parameter("max_rounds", int, 50, "round limit (the study: 50)", low=1, high=MAX_ROUNDS, label="Max rounds"),
    Parameter("payoff_preferred", float, 0.20, "payoff when the network ends on one's preferred colour",
              low=0, high=1e6, control=False),
    Parameter("payoff_other", float, 0.15, "payoff when the network ends on the other colour",
              low=0, high=1e6, control=False),
    Parameter("baseline_permutations", int, 1000,
              "random recolourings for the largest-component baseline (0 skips it)", low=0, high=1_000_000,
              control=False),
    Parameter("satisfied_threshold", float, 0.5, "share of neighbours on one's colour that makes an agent satisfied",
              low=0, high=1, control=False),
    Parameter("pseudo_window", int, 3, "rounds of high local agreement that make a pseudo-equilibrium",
              low=1, high=MAX_ROUNDS, control=False),
    Parameter("pseudo_level", float, 0.9, "local agreement a pseudo-equilibrium needs", low=0, high=1, control=False),
    Parameter("max_failure_share", float, 0.1, "share of failed decisions above which a game is invalid",
              low=0, high=1, control=False, sweep=False),
)


class ConsensusGame(Game):
    """The network consensus game (SPEC part A)."""

    name = "consensus"
    summary = "the network consensus game"
    parameters = PARAMETERS
    policy_module = "llm_mesa.models.consensus.policies"
    lazy_policies = {"llm": ("llm_mesa.models.consensus.llm_policy",
                             "an LLM agent behind any OpenAI-compatible endpoint")}
    cli_module = "llm_mesa.models.consensus.cli"
    analysis_module = "llm_mesa.models.consensus.analysis_report"
    figures_module = "llm_mesa.models.consensus.figures"
    behaviours_module = "llm_mesa.models.consensus.behaviours"
    tables = ("rounds", "agents", "messages", "transcript", "edges")
    policy_groups = {"rules": RULE_CONFIGURATIONS}
    conditions = ALL_CONDITIONS
    condition_groups = CONDITION_GROUPS

    def outcome(self, row: Mapping[str, Any]) -> str:
        won = f"consensus on {row['winner']}" if row["consensus"] else "no consensus"
        return f"{won} after {row['rounds']} rounds"

    def describe(self, parameters: Mapping[str, Any]) -> str:
        return describe_condition(parameters)

    def llm_policy(self, endpoint: Any, store: Any = None) -> Any:
        from .llm_policy import LLMConsensusPolicy

        return LLMConsensusPolicy(endpoint, store=store)

    def estimate(self, parameters: Mapping[str, Any], endpoint: Any) -> dict[str, Any]:
        """One LLM call per agent and round; the prompt of a mid-degree agent with a full history."""
        from llm_mesa.sweep.dry_run import approx_tokens

        from .observation import ConsensusObservation, Message, RoundRecord
        from .prompt import ConsensusPrompt

        full = {**PARAMETERS.defaults(), **parameters}
        n, rounds, degree = full["n"], full["max_rounds"], 4
        neighbours = tuple(range(1, degree + 1))
        talk = full["communication"] != "none"
        history = [RoundRecord(r, "red", dict.fromkeys(neighbours, "blue"),
                               [Message(1, r, "x" * 80)] if talk else []) for r in range(min(10, rounds))]
        obs = ConsensusObservation(
            agent_id=n - 1, round=min(10, rounds), preference="red", colour="red", neighbour_ids=neighbours,
            neighbour_colours=("blue",) * degree, communication=full["communication"],
            direct_messages=full["direct_messages"], message_replaces_move=full["message_replaces_move"],
            label=full["label"], history=history,
            inbox=[Message(v, 1, "x" * 80) for v in neighbours] if talk else [], diary="x" * 200,
            max_rounds=rounds, n_players=n, payoff_preferred=full["payoff_preferred"],
            payoff_other=full["payoff_other"])
        prompt = "\n".join(m["content"] for m in ConsensusPrompt().messages(obs))
        completion = endpoint.max_tokens or endpoint.max_completion_tokens or 120
        return {"calls": n * rounds, "rounds": rounds, "prompt_tokens_per_call": approx_tokens(prompt),
                "completion_tokens_per_call": completion, "may_stop_early": True}

    def check(self, parameters: Mapping[str, Any], seed: int) -> None:
        from .model import ConsensusModel

        ConsensusModel(policy="stubborn", rng=seed, **{**parameters, "baseline_permutations": 0})

    def play(self, request: PlayRequest) -> GameResult:
        from .model import ConsensusModel
        from .tables import game_tables

        policy: Any = request.policy
        llm = None
        if request.endpoint is not None:
            llm = policy = self.llm_policy(request.endpoint, request.store)
        model = ConsensusModel(policy=policy, rng=request.seed, **request.parameters)
        model.run()
        row = {("policy_spec" if k == "policy" else k): v for k, v in model.summary().items() if k != "seed"}
        if llm is not None:
            row["model"] = request.endpoint.model
            row["replayed_calls"] = llm.usage.replayed
            row["prompt_template_hash"] = llm.prompt_for(model.prompt_variant).template_hash  # the report's manifest summary names it
        return GameResult(row, game_tables(model, request.tables))

    def play_batch(self, requests: Sequence[PlayRequest]) -> list[GameResult]:
        """Rule games (no endpoint) together through the batched engine, bit for bit the model's;
        the others one by one through the model."""
        from .batched import batchable, play_requests

        fast = [i for i, r in enumerate(requests) if batchable(r)]
        results: list[GameResult | None] = [None] * len(requests)
        for i, result in zip(fast, play_requests([requests[i] for i in fast]) if fast else []):
            results[i] = result
        return [r if r is not None else self.play(q) for r, q in zip(results, requests)]

    def batch_size(self, request: PlayRequest) -> int:
        """Rule games in batches of up to about a million agents (2,000 games at most); LLM games alone."""
        if request.endpoint is not None:
            return 1
        return max(1, min(2000, (1 << 20) // max(int(request.parameters.get("n", 36)), 1)))

    def headline(self, games, conditions: Sequence[str], policies: Sequence[str]) -> str:
        from .tables import consensus_table, format_consensus_table

        text = "consensus (successes / games):\n" + format_consensus_table(consensus_table(games, conditions, policies))
        if not games.empty and "invalid" in games and games["invalid"].any():
            text += f"\nnote: {int(games['invalid'].sum())} game(s) marked invalid (too many failed LLM decisions)"
        return text


GAME = ConsensusGame()
