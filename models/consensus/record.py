"""What the consensus game records: per-round measures, accounting, tables and the summary.

The model plays; this mixin measures. Per round: share of blue, the largest
same-colour component, local agreement, stubborn opportunities and moves, the
pseudo-equilibrium and its flippers, messages, calls, tokens and failures. At
the end: one summary row, with the random-colouring baseline drawn from a random
stream of its own (it never moves the game's stream).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from . import measures
from .messages import message_summary
from .observation import colour_code

BASELINE_STREAM = 0x5EED_BA5E  # spawn key of the baseline's own random stream

ROUND_COLUMNS = (
    "round", "blue_share", "consensus", "largest_component", "largest_component_colour",
    "local_agreement", "pseudo_equilibrium", "flippers", "stubborn_moves", "opportunities",
    "messages", "private_messages", "calls", "prompt_tokens", "completion_tokens", "cached_tokens", "cost", "failures",
)


def round_stat(key: str):
    """A DataCollector reporter reading one of the round's measures."""
    return lambda model: model._round_stats[key]


class ConsensusRecord:
    """Measures, tables and summary of a ``ConsensusModel`` (a mixin: it reads the model's state)."""

    def _account(self, decisions) -> None:
        totals = self.totals
        round_calls = round_prompt = round_completion = round_failures = round_cached = 0
        round_cost = 0.0
        for agent, d in zip(self.agents_by_node, decisions):
            agent.decision_failed = d.failed is not None
            agent.round_calls, agent.round_prompt_tokens, agent.round_completion_tokens = (
                d.calls, d.prompt_tokens, d.completion_tokens)
            round_calls += d.calls
            round_prompt += d.prompt_tokens
            round_completion += d.completion_tokens
            round_cached += d.cached_tokens
            round_cost += d.cost
            round_failures += d.failed is not None
            if d.outcome:
                self.outcomes[d.outcome] = self.outcomes.get(d.outcome, 0) + 1
        totals["calls"] += round_calls
        totals["prompt_tokens"] += round_prompt
        totals["completion_tokens"] += round_completion
        totals["cached_tokens"] += round_cached
        totals["cost"] += round_cost
        totals["failures"] += round_failures
        totals["decisions"] += len(decisions)
        self._round_accounting = {
            "calls": round_calls, "prompt_tokens": round_prompt,
            "completion_tokens": round_completion, "cached_tokens": round_cached, "cost": round_cost,
            "failures": round_failures,
            "messages": self._sent_this_round[0],
            "private_messages": self._sent_this_round[1],
        }

    def _measure_round(self, before: list[str] | None) -> None:
        colours = np.fromiter((a.colour == "blue" for a in self.agents_by_node), dtype=np.int8, count=self.n)
        adj = self.adjacency
        size, colour = measures.largest_same_colour_component(adj, colours)
        agreement = measures.local_agreement(adj, colours, self.satisfied_threshold)
        self.agreement_history.append(agreement)
        opportunities = stubborn = 0
        if before is not None:
            prev = np.fromiter((c == "blue" for c in before), dtype=np.int8, count=self.n)
            opp, moves = measures.stubborn_opportunities(adj, prev, colours)
            for agent, o, m in zip(self.agents_by_node, opp.tolist(), moves.tolist()):
                agent.had_opportunity, agent.made_stubborn_move = o, m
            opportunities, stubborn = int(opp.sum()), int(moves.sum())
            self.totals["opportunities"] += opportunities
            self.totals["stubborn_moves"] += stubborn
        code_history = self.colour_history[-(self.pseudo_window + 1):]
        self.pseudo_equilibrium, self.flippers = measures.pseudo_equilibrium(
            [[colour_code(c) for c in row] for row in code_history], self.agreement_history,
            window=self.pseudo_window, level=self.pseudo_level)
        accounting = getattr(self, "_round_accounting", None) or dict.fromkeys(
            ("calls", "prompt_tokens", "completion_tokens", "cached_tokens", "cost", "failures", "messages",
             "private_messages"), 0)
        self._round_stats = {
            "round": self.round,
            "blue_share": float(colours.mean()),
            "consensus": bool((colours == colours[0]).all()),
            "largest_component": size,
            "largest_component_colour": colour,
            "local_agreement": agreement,
            "pseudo_equilibrium": self.pseudo_equilibrium,
            "flippers": list(self.flippers),
            "stubborn_moves": stubborn,
            "opportunities": opportunities,
            **accounting,
        }
        self._round_accounting = None

    @property
    def colours(self) -> list[str]:
        return [a.colour for a in self.agents_by_node]

    @property
    def preferences(self) -> list[str]:
        return [a.preference for a in self.agents_by_node]

    def rounds_table(self):
        """One row per round (round 0 is the initial state)."""
        return self.datacollector.get_model_vars_dataframe().reset_index(drop=True)

    def agents_table(self):
        """One row per agent per round (empty when ``collect_agents`` is off)."""
        df = self.datacollector.get_agent_vars_dataframe()
        if df.empty:
            return df
        df = df.reset_index().rename(columns={"Step": "round", "time": "round"})
        df["round"] = df["round"].astype(int)
        return df.drop(columns=[c for c in ("AgentID",) if c in df.columns])

    def graph_table(self):
        """The network as one row per node (preference, layout position) and its edges.

        With the per-round tables this is all a viewer needs to replay a game.
        """
        nodes = pd.DataFrame({"node": range(self.n), "preference": self.preferences,
                              "x": [self.layout[v][0] for v in range(self.n)],
                              "y": [self.layout[v][1] for v in range(self.n)],
                              "policy": [a.policy.spec() for a in self.agents_by_node]})
        edges = pd.DataFrame(sorted(tuple(sorted(e)) for e in self.graph.edges), columns=["source", "target"])
        return nodes, edges

    def messages_table(self):
        """One row per message sent: round, sender, recipient (None: its audience), text."""
        return pd.DataFrame([{"round": m.round, "sender": m.sender, "to": m.to, "text": m.text}
                             for m in self.message_log], columns=["round", "sender", "to", "text"])

    def summary(self) -> dict[str, Any]:
        """One row describing the game: outcome, payoffs and mechanism measures."""
        colours = self.colours
        consensus = measures.is_consensus(colours)
        winner = colours[0] if consensus else None
        payoffs = [
            0.0 if not consensus else (self.payoff_preferred if p == winner else self.payoff_other)
            for p in self.preferences
        ]
        size, colour = self._round_stats["largest_component"], self._round_stats["largest_component_colour"]
        baseline = None
        if self.baseline_permutations:
            stream = np.random.default_rng(np.random.SeedSequence(
                entropy=int(self.game_key, 16) if self.seed is None else self.seed,
                spawn_key=(BASELINE_STREAM,)))
            baseline = measures.random_colouring_baseline(self.adjacency, colours, self.baseline_permutations, stream)
        totals = self.totals
        decisions = max(totals["decisions"], 1)
        return {
            **{k: self.parameters[k] for k in ("seed", "n", "topology", "policy", "preferences", "minority",
                                                "communication", "direct_messages", "label", "max_rounds")},
            "consensus": consensus,
            "rounds": self.round,
            "stop_reason": self.stop_reason,
            "complete": self.stop_reason in ("consensus", "max rounds"),
            "winner": winner,
            "winner_is_majority_preference": None if winner is None else
                self.preferences.count(winner) > self.n / 2,
            "mean_payoff": float(np.mean(payoffs)),
            "total_payoff": float(np.sum(payoffs)),
            "largest_component": size,
            "largest_component_colour": colour,
            "largest_component_baseline_mean": None if baseline is None else float(baseline.mean()),
            "largest_component_baseline_p": None if baseline is None else float((baseline >= size).mean()),
            "stubborn_moves": totals["stubborn_moves"],
            "opportunities": totals["opportunities"],
            # undefined (None) in a game where no agent ever faced an opposing majority
            "stubbornness": totals["stubborn_moves"] / totals["opportunities"] if totals["opportunities"] else None,
            "local_agreement": self.agreement_history[-1],
            "pseudo_equilibrium": self.pseudo_equilibrium,
            "flippers": list(self.flippers),
            **message_summary(self.messages_table(), self.graph, self.round),
            "calls": totals["calls"],
            "prompt_tokens": totals["prompt_tokens"],
            "completion_tokens": totals["completion_tokens"],
            # prompt tokens the servers answered from their prompt caches, and their share
            "cached_prompt_tokens": totals["cached_tokens"],
            "prompt_cache_share": totals["cached_tokens"] / totals["prompt_tokens"] if totals["prompt_tokens"] else 0.0,
            "cost": totals["cost"],
            "failures": totals["failures"],
            "decisions": totals["decisions"],
            "parse_failures": self.outcomes.get("parse_failure", 0),
            "truncated": self.outcomes.get("truncated", 0),  # cut by the token limit, counted apart
            "call_failures": self.outcomes.get("call_failure", 0),
            "invalid": totals["failures"] / decisions > self.max_failure_share,
            "game_key": self.game_key,
        }
