"""What the consensus game records: per-round measures, accounting, tables and the summary.

The model plays; this mixin measures. Per round: share of blue, the largest
same-colour component, local agreement, stubborn opportunities and moves, the
pseudo-equilibrium and its flippers, messages, calls, tokens and failures. At
the end: one summary row, with the random-colouring baseline drawn from a random
stream of its own (it never moves the game's stream).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from mesa import DataCollector

from . import measures
from .array_state import AGENT_COLUMNS, ROUND_COLUMNS
from .messages import message_summary

BASELINE_STREAM = 0x5EED_BA5E  # spawn key of the baseline's own random stream


def round_stat(key: str):
    """A reporter reading one of the round's measures (what each model column means)."""
    return lambda model: model._round_stats[key]


def baseline_stream(entropy: int) -> np.random.Generator:
    """The random-colouring baseline's own stream (it never moves the game's)."""
    return np.random.default_rng(np.random.SeedSequence(entropy=entropy, spawn_key=(BASELINE_STREAM,)))


class _AgentRecords(Mapping):
    """Mesa's ``DataCollector._agent_records`` (step -> one tuple per agent), built when read."""

    def __init__(self, model):
        self._model = model

    def _steps(self) -> list[float]:
        return list(self._model.datacollector._collection_steps)

    def __getitem__(self, step):
        steps = self._steps()
        if step not in steps:
            raise KeyError(step)
        model = self._model
        table = model._rounds.agents_table(0)
        rows = table[table["round"] == steps.index(step)]
        ids = [a.unique_id for a in model.agents_by_node]
        return [(step, uid, *values) for uid, values in
                zip(ids, rows[list(AGENT_COLUMNS)].itertuples(index=False, name=None))]

    def __iter__(self):
        return iter(self._steps())

    def __len__(self) -> int:
        return len(self._steps())


class ArrayDataCollector(DataCollector):
    """Mesa's ``DataCollector``, fed from the model's arrays.

    ``collect`` only notes the step: the measures are already in the model's
    ``Rounds``; the model and agent tables (and ``model_vars`` and
    ``_agent_records``, which ``mesa.batch_run`` reads) are built from those
    arrays when read. Reporters are listed for what each column means.
    """

    def __init__(self, model, agents: bool = True):
        super().__init__()
        self._model = model
        self.model_reporters = {key: round_stat(key) for key in ROUND_COLUMNS}
        if agents:
            self.agent_reporters = {name: name for name in AGENT_COLUMNS}
        self._agent_records = _AgentRecords(model)
        self._validated = True

    def collect(self, model) -> None:
        self._collection_steps.append(model.time)

    @property
    def model_vars(self) -> dict[str, list]:
        if not hasattr(self, "_model"):  # DataCollector.__init__ reads it before the model is set
            return {}
        table = self._model._rounds.rounds_table(0)
        return {key: table[key].tolist() for key in ROUND_COLUMNS}

    @model_vars.setter
    def model_vars(self, value) -> None:  # DataCollector.__init__ sets it; the arrays hold the data
        pass

    def get_model_vars_dataframe(self) -> pd.DataFrame:
        return self._model._rounds.rounds_table(0)

    def get_agent_vars_dataframe(self) -> pd.DataFrame:
        table = self._model._rounds.agents_table(0)
        if table.empty:
            return table.drop(columns=["round"])
        steps = np.asarray(self._collection_steps)
        ids = np.array([a.unique_id for a in self._model.agents_by_node])
        index = pd.MultiIndex.from_arrays([steps[table["round"].to_numpy()], np.tile(ids, len(steps))],
                                          names=["Step", "AgentID"])
        return table.drop(columns=["round"]).set_index(index)


class ConsensusRecord:
    """Measures, tables and summary of a ``ConsensusModel`` (a mixin: it reads the model's state)."""

    def _account(self, decisions, nodes=None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Sum an agent-by-agent round's LLM accounting: per agent, per round and per game.

        ``nodes``: the agent of each decision, when they are turns (an agent may take two, or none);
        by default one decision per agent in node order.
        """
        totals = self.totals
        failed = np.array([d.failed is not None for d in decisions], dtype=bool)
        per_agent = {"failed": failed,
                     "calls": np.array([d.calls for d in decisions], dtype=np.int64),
                     "prompt_tokens": np.array([d.prompt_tokens for d in decisions], dtype=np.int64),
                     "completion_tokens": np.array([d.completion_tokens for d in decisions], dtype=np.int64)}
        if nodes is not None:
            at = np.asarray(nodes, dtype=np.int64)
            per_agent = {k: np.bincount(at, weights=v, minlength=self.n).astype(v.dtype if k != "failed" else bool)
                         for k, v in per_agent.items()}
        for d in decisions:
            if d.outcome:
                self.outcomes[d.outcome] = self.outcomes.get(d.outcome, 0) + 1
        per_round = {"calls": int(per_agent["calls"].sum()), "prompt_tokens": int(per_agent["prompt_tokens"].sum()),
                     "completion_tokens": int(per_agent["completion_tokens"].sum()),
                     "cached_tokens": int(sum(d.cached_tokens for d in decisions)),
                     "cost": float(sum(d.cost for d in decisions)), "failures": int(failed.sum()),
                     "messages": self._sent_this_round[0], "private_messages": self._sent_this_round[1]}
        for key in ("calls", "prompt_tokens", "completion_tokens", "cached_tokens", "cost", "failures"):
            totals[key] += per_round[key]
        totals["decisions"] += len(decisions)
        return per_agent, per_round

    @property
    def _round_stats(self) -> dict[str, Any]:
        """The last round's measures (one row of the rounds table)."""
        return self._rounds.latest(0)

    @property
    def colours(self) -> list[str]:
        return self._rounds.colours(0)

    @property
    def preferences(self) -> list[str]:
        return [a.preference for a in self.agents_by_node]

    @property
    def colour_history(self) -> list[list[str]]:
        """Every agent's colour after each round (index 0: the start)."""
        return [self._rounds.colours(0, r) for r in range(len(self._rounds.history))]

    @property
    def agreement_history(self) -> list[float]:
        return [float(a[0]) for a in self._rounds.stats["local_agreement"]]

    @property
    def pseudo_equilibrium(self) -> bool:
        return bool(self._rounds.stats["pseudo_equilibrium"][-1][0])

    @property
    def flippers(self) -> tuple[int, ...]:
        return tuple(self._rounds.flippers_of(0))

    def rounds_table(self):
        """One row per round (round 0 is the initial state)."""
        return self._rounds.rounds_table(0)

    def agents_table(self):
        """One row per agent per round (no rows when ``collect_agents`` is off)."""
        return self._rounds.agents_table(0)

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
        """One row per message sent: round, sender, recipient (None: its audience), what was said
        (``text``, as the sender wrote it) and what was delivered (``delivered``: cut and
        neutralised as the recipients' prompts quote it). Content measures need both."""
        from .prompt_variants import consensus_prompt

        delivered = consensus_prompt(getattr(self, "prompt_variant", "study")).delivered
        columns = ["round", "sender", "to", "text", "delivered"]
        turns = getattr(self, "update", "synchronous") != "synchronous"
        if turns:  # the turn that sent each (the table is in turn order within a round)
            columns.insert(2, "activation")
        return pd.DataFrame([{"round": m.round, "sender": m.sender, "activation": m.activation, "to": m.to,
                              "text": m.text, "delivered": delivered(m.text)} for m in self.message_log],
                            columns=columns)

    def summary(self) -> dict[str, Any]:
        """One row describing the game: outcome, payoffs and mechanism measures."""
        colours = self.colours
        baseline = None
        if self.baseline_permutations:
            stream = baseline_stream(int(self.game_key, 16) if self.seed is None else self.seed)
            baseline = measures.random_colouring_baseline(self.adjacency, colours, self.baseline_permutations, stream)
        totals = {**self.totals, "depth": self.depth, "stubborn_moves": int(self._rounds.total_moves[0]),
                  "opportunities": int(self._rounds.total_opportunities[0])}
        sent = np.bincount([m.sender for m in self.message_log], minlength=self.n)
        return summary_row(self.parameters, colours, self.preferences, self._round_stats, self.round,
                           self.stop_reason, totals, self.outcomes, baseline,
                           message_summary(self.messages_table(), self.graph, self.round), self.game_key, sent)


#: the message part of the summary of a game without messages (every rule game)
NO_MESSAGES = {"messages": 0, "private_messages": 0, "distinct_share": None, "template_similarity": None,
               "relayed_mentions": 0}
NO_LLM = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0, "cost": 0.0, "failures": 0}


def summary_row(parameters: Mapping[str, Any], colours: list[str], preferences: list[str], last: Mapping[str, Any],
                rounds: int, stop_reason: str | None, totals: Mapping[str, Any], outcomes: Mapping[str, int],
                baseline: np.ndarray | None, messages: Mapping[str, Any], game_key: str,
                sent: np.ndarray | None = None) -> dict[str, Any]:
    """A finished game's summary row (the model's ``summary`` and the batched engine's rows).

    ``last`` is the last round's row of the rounds table; ``totals`` the game's
    decisions, stubborn moves, opportunities and LLM accounting; ``sent`` the messages
    each agent sent (none: no messages). Each agent's payoff is the game's, less
    ``message_cost`` per message it sent, floored at 0: a player is never charged more
    than the game pays it (so without consensus messages cost nothing).
    """
    consensus = bool(last["consensus"])
    winner = colours[0] if consensus else None
    cost = parameters.get("message_cost", 0.0)
    charged = np.zeros(len(preferences)) if sent is None or not cost else cost * np.asarray(sent, dtype=float)
    earned = np.array([
        0.0 if not consensus else (parameters["payoff_preferred"] if p == winner else parameters["payoff_other"])
        for p in preferences
    ])
    payoffs = np.maximum(earned - charged, 0.0)
    size = last["largest_component"]
    decisions = max(totals["decisions"], 1)
    return {
        **{k: parameters[k] for k in ("seed", "n", "topology", "policy", "preferences", "minority",
                                      "communication", "direct_messages", "label", "max_rounds")},
        "history": parameters.get("history", 10),
        "message_cost": cost,
        "update": parameters.get("update", "synchronous"),
        # a ring degree other than the study's is a column of its own (tables written before it keep their schema)
        **({"ring_degree": parameters["ring_degree"]} if parameters.get("ring_degree", 4) != 4 else {}),
        "consensus": consensus,
        "rounds": rounds,
        # the longest chains of the rounds' turns, summed (one per synchronous round): what bounds an LLM
        # game's wall time, depth x latency, against one latency per call played one at a time
        "depth": totals.get("depth", rounds),
        "stop_reason": stop_reason,
        "complete": stop_reason in ("consensus", "max rounds"),
        "winner": winner,
        "winner_is_majority_preference": None if winner is None else preferences.count(winner) > len(preferences) / 2,
        "mean_payoff": float(np.mean(payoffs)),
        "total_payoff": float(np.sum(payoffs)),
        "message_charges": float(np.minimum(charged, earned).sum()),  # what the messages took from the payoffs
        "largest_component": size,
        "largest_component_colour": last["largest_component_colour"],
        "largest_component_baseline_mean": None if baseline is None else float(baseline.mean()),
        "largest_component_baseline_p": None if baseline is None else float((baseline >= size).mean()),
        "stubborn_moves": totals["stubborn_moves"],
        "opportunities": totals["opportunities"],
        # undefined (None) in a game where no agent ever faced an opposing majority
        "stubbornness": totals["stubborn_moves"] / totals["opportunities"] if totals["opportunities"] else None,
        "local_agreement": last["local_agreement"],
        "pseudo_equilibrium": last["pseudo_equilibrium"],
        "flippers": last["flippers"],
        **messages,
        "calls": totals["calls"],
        "prompt_tokens": totals["prompt_tokens"],
        "completion_tokens": totals["completion_tokens"],
        # prompt tokens the servers answered from their prompt caches, and their share
        "cached_prompt_tokens": totals.get("cached_tokens", 0),
        "prompt_cache_share": totals.get("cached_tokens", 0) / totals["prompt_tokens"] if totals["prompt_tokens"] else 0.0,
        "cost": totals["cost"],
        "failures": totals["failures"],
        "decisions": totals["decisions"],
        "parse_failures": outcomes.get("parse_failure", 0),
        "truncated": outcomes.get("truncated", 0),  # cut by the token limit, counted apart
        "call_failures": outcomes.get("call_failure", 0),
        "invalid": totals["failures"] / decisions > parameters["max_failure_share"],
        "game_key": game_key,
    }
