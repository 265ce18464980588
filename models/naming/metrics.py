"""What a naming game measures, round by round and over a run.

* ``agreement`` (the headline, as the authors' code): the count of the most common valid
  name said in the round, divided by N. Under ``one`` pairing only two agents speak a
  round, so it is at most 2/N; ``agreement_latest`` (each agent's most recent decoded
  name, stale for those who did not speak) is the comparable figure there.
* the summary's ``agreement_final``/``_max``/``_mean_last_10`` are read on the model's
  ``convergence_basis``, the figure that fits the pairing (``said`` for ``all``,
  ``latest`` for ``one``), and ``agreement_basis`` says which; the per-round table keeps
  all three columns.
* ``held_share`` (the paper's wording): the share of agents holding the most common
  current name after the round's update.
* decoding outcome counts (they sum to the round's utterances), calls and tokens
  (completion, and prompt + completion), per round and cumulative.
* tokens-to-convergence at 50/60/70 %: cumulative tokens at the end of the first round
  whose agreement (on the model's ``convergence_basis``: ``said`` for ``all`` pairing,
  ``latest`` for ``one``) reaches the threshold; None if it never does, and None for a game
  that made no LLM call (rule speakers spend no tokens: there is nothing to count).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from llm_mesa.run_output import package_versions

from .observation import OUTCOMES, name_index

if TYPE_CHECKING:
    from .model import NamingAgent, NamingModel

THRESHOLDS: tuple[float, ...] = (0.5, 0.6, 0.7)
_EPS = 1e-12

ROUND_COLUMNS: tuple[str, ...] = (
    "round", "pairs", "utterances", "agreement", "agreement_latest", "held_share",
    "top_said", "top_held", "distinct_held",
    *(f"outcome_{o}" for o in OUTCOMES),
    "calls", "failures", "prompt_tokens", "completion_tokens", "total_tokens",
    "cum_completion_tokens", "cum_total_tokens",
)


@dataclass
class Totals:
    """Running sums over a game."""

    calls: int = 0
    failures: int = 0
    #: utterances an LLM was asked for, and those whose every call failed (no answer at all: the
    #: game's verdict counts these; an answer that names no name is a result, not a failure)
    decisions: int = 0
    failed_decisions: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    outcomes: Counter = field(default_factory=Counter)
    #: the same sums per speaker (its identity, e.g. ``llm:model=X`` or ``echo``): a mixed
    #: population's models are told apart
    by_speaker: dict[str, Counter] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def most_common(names: list[str | None]) -> tuple[str | None, int]:
    """The most common valid name (ties: lowest index) and its count; (None, 0) if none."""
    counts = Counter(n for n in names if n is not None)
    if not counts:
        return None, 0
    top = min(counts, key=lambda n: (-counts[n], name_index(n)))
    return top, counts[top]


def empty_round(model: "NamingModel") -> dict[str, Any]:
    return {key: None for key in ROUND_COLUMNS}


def round_stats(model: "NamingModel", speakers: list["NamingAgent"], pairs: int) -> dict[str, Any]:
    """The row of one finished round (also adds it to the model's running totals)."""
    n = model.n
    utterances = [a.utterance for a in speakers]
    top_said, said_count = most_common([u.name for u in utterances])
    _, latest_count = most_common([a.last_said for a in model.players])
    top_held, held_count = most_common([a.name for a in model.players])
    outcomes = Counter(u.outcome for u in utterances)
    totals: Totals = model.totals
    prompt = sum(u.prompt_tokens for u in utterances)
    completion = sum(u.completion_tokens for u in utterances)
    calls = sum(u.calls for u in utterances)
    failures = sum(u.failures for u in utterances)
    totals.calls += calls
    totals.failures += failures
    totals.decisions += sum(1 for u in utterances if u.calls)
    totals.failed_decisions += sum(1 for u in utterances if u.calls and u.failures == u.calls)
    totals.prompt_tokens += prompt
    totals.completion_tokens += completion
    totals.outcomes.update(outcomes)
    _count_by_speaker(model, totals, speakers)
    row: dict[str, Any] = {
        "round": model.round, "pairs": pairs, "utterances": len(utterances),
        "agreement": said_count / n, "agreement_latest": latest_count / n,
        "held_share": held_count / n, "top_said": top_said, "top_held": top_held,
        "distinct_held": len({a.name for a in model.players}),
        "calls": calls, "failures": failures, "prompt_tokens": prompt,
        "completion_tokens": completion, "total_tokens": prompt + completion,
        "cum_completion_tokens": totals.completion_tokens, "cum_total_tokens": totals.total_tokens,
    }
    for outcome in OUTCOMES:
        row[f"outcome_{outcome}"] = outcomes.get(outcome, 0)
    return row


def _count_by_speaker(model: "NamingModel", totals: Totals, speakers: list["NamingAgent"]) -> None:
    """Add a round to the per-speaker sums of a mixed population (a population of one speaker
    needs none: its sums are the game's, see ``speaker_counts``)."""
    if model.single_speaker:
        return
    by_policy: dict[int, tuple[Any, list]] = {}
    for agent in speakers:
        by_policy.setdefault(id(agent.speaker), (agent.speaker, []))[1].append(agent.utterance)
    for policy, said in by_policy.values():
        counts = totals.by_speaker.setdefault(policy.identity(), Counter())
        counts["utterances"] += len(said)
        counts["calls"] += sum(u.calls for u in said)
        counts["failures"] += sum(u.failures for u in said)
        counts["prompt_tokens"] += sum(u.prompt_tokens for u in said)
        counts["completion_tokens"] += sum(u.completion_tokens for u in said)
        for u in said:
            counts["outcome_" + u.outcome] += 1


def speaker_counts(model: "NamingModel") -> dict[str, Counter]:
    """Per speaker: utterances, calls, failures, tokens and decoding outcomes over the game."""
    if not model.single_speaker:
        return model.totals.by_speaker
    t = model.totals
    counts = Counter({"utterances": sum(t.outcomes.values()), "calls": t.calls, "failures": t.failures,
                      "prompt_tokens": t.prompt_tokens, "completion_tokens": t.completion_tokens})
    counts.update({f"outcome_{o}": k for o, k in t.outcomes.items()})
    return {model.players[0].speaker.identity(): counts}


def rounds_frame(model: "NamingModel") -> pd.DataFrame:
    """One row per round, columns ``ROUND_COLUMNS`` (from the model's DataCollector)."""
    frame = model.datacollector.get_model_vars_dataframe()
    if frame.empty:
        return pd.DataFrame(columns=list(ROUND_COLUMNS))
    frame = frame.reset_index(drop=True)
    for key in ("round", "pairs", "utterances", "distinct_held", "calls", "failures",
                "prompt_tokens", "completion_tokens", "total_tokens", "cum_completion_tokens",
                "cum_total_tokens", *(f"outcome_{o}" for o in OUTCOMES)):
        frame[key] = frame[key].astype("int64")
    return frame


#: the per-round column each convergence basis reads, and what it means (for summaries)
BASIS_COLUMNS: dict[str, str] = {"said": "agreement", "latest": "agreement_latest", "held": "held_share"}
BASIS_MEANINGS: dict[str, str] = {"said": "names said this round", "latest": "each agent's most recent name",
                                  "held": "names held after the update"}


def _basis_column(basis: str) -> str:
    return BASIS_COLUMNS[basis]


def first_reaching(frame: pd.DataFrame, column: str, threshold: float) -> int | None:
    """Row position of the first round whose ``column`` reaches ``threshold``; None if never."""
    hits = (frame[column] >= threshold - _EPS).to_numpy().nonzero()[0]
    return int(hits[0]) if len(hits) else None


def tokens_to(frame: pd.DataFrame, basis: str, threshold: float, tokens: str) -> int | None:
    """Cumulative ``tokens`` when agreement first reaches ``threshold`` (None if never)."""
    row = first_reaching(frame, _basis_column(basis), threshold)
    return None if row is None else int(frame[tokens].iloc[row])


def summary(model: "NamingModel") -> dict[str, Any]:
    """The run in one flat dict (what ``--json`` prints and sweeps store)."""
    frame = rounds_frame(model)
    out: dict[str, Any] = {"seed": model.seed, "n": model.n, "mode": model.mode,
                           "memory": model.memory_size, "alpha": model.alpha,
                           "pairing": model.pairing, "rounds": int(model.round)}
    empty = frame.empty
    agreement = _basis_column(model.convergence_basis)  # under one pairing, said names are capped at 2/N
    out["agreement_basis"] = model.convergence_basis
    out["agreement_final"] = None if empty else float(frame[agreement].iloc[-1])
    out["agreement_max"] = None if empty else float(frame[agreement].max())
    out["agreement_mean_last_10"] = None if empty else float(frame[agreement].tail(10).mean())
    out["held_share_final"] = None if empty else float(frame["held_share"].iloc[-1])
    out["consensus"] = bool(not empty and frame["held_share"].iloc[-1] == 1.0)
    out["convergence_basis"] = model.convergence_basis
    totals: Totals = model.totals
    counts_tokens = not empty and totals.calls > 0  # no LLM call: tokens-to-X is not 0, it is not defined
    for t in THRESHOLDS:
        pct = int(round(t * 100))
        row = None if empty else first_reaching(frame, _basis_column(model.convergence_basis), t)
        out[f"rounds_to_{pct}"] = None if row is None else int(frame["round"].iloc[row])
        out[f"tokens_to_{pct}"] = tokens_to(frame, model.convergence_basis, t,
                                            "cum_completion_tokens") if counts_tokens else None
        out[f"total_tokens_to_{pct}"] = tokens_to(frame, model.convergence_basis, t,
                                                  "cum_total_tokens") if counts_tokens else None
    out["outcomes"] = {o: int(totals.outcomes.get(o, 0)) for o in OUTCOMES}
    out["utterances"] = int(sum(totals.outcomes.values()))
    out["calls"] = totals.calls
    out["failures"] = totals.failures
    out["decisions"] = totals.decisions
    out["failed_decisions"] = totals.failed_decisions
    out["prompt_tokens"] = totals.prompt_tokens
    out["completion_tokens"] = totals.completion_tokens
    out["total_tokens"] = totals.total_tokens
    return out


def speakers_frame(model: "NamingModel") -> pd.DataFrame:
    """One row per speaker (a mixed population has several): its agents, utterances, calls,
    tokens, decoding outcome shares, and the share of its agents holding the top name."""
    top, _ = most_common([a.name for a in model.players])
    rows = []
    for speaker, counts in speaker_counts(model).items():
        agents = [a for a in model.players if a.speaker.identity() == speaker]
        spoken = max(counts["utterances"], 1)
        rows.append({"speaker": speaker, "agents": len(agents), "utterances": counts["utterances"],
                     "calls": counts["calls"], "failures": counts["failures"],
                     "prompt_tokens": counts["prompt_tokens"], "completion_tokens": counts["completion_tokens"],
                     **{f"share_{o}": counts[f"outcome_{o}"] / spoken for o in OUTCOMES},
                     "holding_top_name": sum(a.name == top for a in agents) / max(len(agents), 1)})
    return pd.DataFrame(rows)


def manifest(model: "NamingModel") -> dict[str, Any]:
    """Everything needed to rerun and judge the game: parameters, seed, versions, endpoint, the prompt
    (its hash; a template file's text too, so the game can be replayed from its manifest)."""
    from .prompts import TEMPLATES

    template = TEMPLATES.load(model.prompt)

    speakers = {}
    for agent in model.players:
        speaker = agent.speaker
        describe = getattr(speaker, "manifest", None)
        speakers.setdefault(speaker.spec(), describe() if callable(describe) else {"spec": speaker.spec()})
    return {
        "game": "naming",
        "parameters": model.parameters(),
        "seed": model.seed,
        "rules": {
            "memory_written_before_update": True,
            "none_never_matches": True,
            "alpha_coin_only_for_valid_partner_name": True,
            "k_zero_means_no_memory": True,
            "decoder": "schema: first non-empty line is '@say {name: Ck}' [| rationale]; "
                       "free text: exactly one distinct lexicon name, whole word, any case",
        },
        "prompt_variant": model.prompt,
        "prompt_template_hash": template.hash,
        **({"prompt_file": template.record()} if template.is_file else {}),
        "speakers": speakers,
        "summary": summary(model),
        "versions": package_versions(),
    }
