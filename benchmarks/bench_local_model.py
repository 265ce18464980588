"""One 36-agent round of the consensus game on the local model, before and after, in one run.

Why: a study's wall time is rounds x the time of a round, and a round is only worth
its time when the model's answers are valid. This runs the consensus game's own
path (``LLMConsensusPolicy`` through the LLM layer, concurrency limit, dialect
negotiation, reminders) for ``--rounds`` rounds of 36 agents with local messages on:

* ``before``  llama-cpp-python's server, the former prompt (a ``"..."``-placeholder
              answer format, rules folded into the user message, no length bounds,
              ``json_object`` schema dialect);
* ``after``   llama.cpp's ``llama-server`` as ``llm-mesa local`` serves it: the new prompt (fields
              described, an answer that is a move or a message, free text bounded to
              fit the token budget, a cut answer reminded once, rules as their own
              system message so the prompt cache keeps them), ``json_schema`` with
              ``--compact-json``, 4 slots a server;
* ``after-1`` one llama-server with every core, for comparison: on a CPU, servers scale
              better than threads (``llm-mesa local`` starts one server per
              core by default, at most 4); ``after-x2`` is two servers on any machine.

Two more take one change at a time: ``old-prompt`` (llama-server, the former prompt)
and ``old-server-new-prompt``. For each it prints calls/s, the share of valid answers
(decoded at once or after the reminder), of answers with a placeholder or empty field
and of messages, the share of prompt tokens served from cache, and the seconds of a
round; with ``--repeats`` the configurations run interleaved (this machine's speed
drifts by a quarter over minutes) and the medians and per-repeat ratios are printed.
"before" needs the ``local-legacy`` extra (it is skipped without it).

    python benchmarks/bench_local_model.py --repeats 3     # before, after, after-1
    python benchmarks/bench_local_model.py --only after --rounds 1
    python benchmarks/bench_local_model.py --only old-prompt --only after --rounds 1   # the prompt alone
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from contextlib import ExitStack
from typing import Any

from llm_mesa.llm.endpoint import Endpoint
from llm_mesa.local_cli import auto_servers
from llm_mesa.local_server import LocalModelServer, missing_modules
from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy, placeholder_share
from llm_mesa.models.consensus.model import ConsensusModel
from llm_mesa.models.consensus.prompt import RULES, ConsensusPrompt

#: the prompt before issue 13: placeholders a small model copies, rules in the user message
LEGACY_RULES = RULES.replace("{answer_format} Write nothing else.", "Answer with one JSON object and nothing else: {answer_format}")
LEGACY_FORMAT = {
    "none": '{"colour": "red" or "blue", "reason": "...", "diary": "..."}',
    "talk": '{"colour": "red" or "blue", "reason": "...", "diary": "...", "message": "..." or null}',
    "dm": '{"colour": "red" or "blue", "reason": "...", "diary": "...", "message": "..." or null, '
          '"message_to": a neighbour\'s node id or null}',
}


#: before, after, after on one server or two; and each change alone: the old server with the new prompt,
#: llama-server with the old prompt
CONFIGS = ("before", "after", "after-1", "after-x2", "old-server-new-prompt", "old-prompt")


class LegacyPolicy(LLMConsensusPolicy):
    """The former request: one answer form with every field, no length bounds, the message nullable,
    and a cut answer final."""

    retry_cut_answers = False

    def request(self, obs):
        request = super().request(obs)
        props: dict[str, Any] = {"colour": {"type": "string", "enum": ["red", "blue"]},
                                 "reason": {"type": "string"}, "diary": {"type": "string"}}
        if obs.communication != "none":
            props["message"] = {"type": ["string", "null"]}
            if obs.direct_messages:
                props["message_to"] = {"type": "integer"}
        request.schema = {"type": "object", "properties": props, "required": ["colour", "reason", "diary"]}
        return request


def play(base_url: str, *, legacy: bool, rounds: int, concurrency: int, max_tokens: int, seed: int,
         old_server: bool = False) -> dict[str, Any]:
    endpoint = Endpoint(base_url, "gemma3-270m", temperature=0.7, top_p=0.9, max_tokens=max_tokens, seed=seed,
                        concurrency=concurrency, timeout=600, dialect="json_object" if old_server else "auto",
                        compact_json=not (legacy or old_server))
    if legacy:
        policy = LegacyPolicy(endpoint, prompt=ConsensusPrompt(rules=LEGACY_RULES, answer_format=LEGACY_FORMAT,
                                                               system_role=False))
    else:  # the old server's gemma format drops system messages: the rules go in the user message there
        policy = LLMConsensusPolicy(endpoint, prompt=ConsensusPrompt(system_role=not old_server))
    model = ConsensusModel(36, "ws", policy=policy, communication="local", rng=seed, max_rounds=rounds)
    round_seconds = []
    for _ in range(rounds):
        if not model.running:
            break
        began = time.perf_counter()
        model.step()
        round_seconds.append(time.perf_counter() - began)
    rows = model.transcript
    valid = [r for r in rows if r["outcome"] in ("ok", "retry_ok")]
    usage = policy.usage
    return {
        "calls": usage.calls, "decisions": len(rows), "seconds": sum(round_seconds), "round_seconds": round_seconds,
        "calls_per_s": usage.calls / sum(round_seconds), "valid": len(valid) / len(rows),
        "first_try": sum(r["outcome"] == "ok" for r in rows) / len(rows),
        "placeholder": placeholder_share(valid), "messages": sum(r["message"] is not None for r in valid) / max(1, len(valid)),
        "cache_share": usage.cache_share, "outcomes": dict(usage.outcomes),
        "service_s": usage.latency_s / max(1, usage.calls), "queue_s": usage.queue_s / max(1, usage.calls),
    }


def run_config(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """One configuration on fresh servers: the former server (before), or llama-server."""
    old = name in ("before", "old-server-new-prompt")
    cores = os.cpu_count() or 1
    count = {"after": auto_servers(), "after-x2": 2}.get(name, 1)  # as llm-mesa local starts them
    with ExitStack() as stack:
        servers = [stack.enter_context(LocalModelServer(
            engine="llama-cpp-python" if old else "llama-server", n_threads=max(1, cores // count),
            # the former server serves one request at a time: more in flight only queue there
            parallel=1 if old else args.parallel)) for _ in range(count)]
        url = ",".join(s.base_url for s in servers)
        return play(url, legacy=name in ("before", "old-prompt"), rounds=args.rounds,
                    concurrency=args.old_concurrency if old else args.concurrency,
                    max_tokens=args.max_tokens, seed=args.seed, old_server=old)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds of 36 decisions per configuration")
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs of every configuration, interleaved (the machine's speed drifts; compare medians)")
    parser.add_argument("--max-tokens", type=int, default=48, help="max new tokens of a decision")
    parser.add_argument("--concurrency", type=int, default=8, help="calls in flight to each llama-server")
    parser.add_argument("--parallel", type=int, default=4, help="slots of each llama-server (llm-mesa local's default)")
    parser.add_argument("--old-concurrency", type=int, default=4, help="calls in flight to the former server")
    parser.add_argument("--only", choices=CONFIGS, action="append", default=None)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    wanted = args.only or ["before", "after", "after-1"]
    if missing_modules(("llama_cpp",)) and {"before", "old-server-new-prompt"} & set(wanted):
        print("before: skipped (llama-cpp-python is not installed: pip install 'llm-mesa[local-legacy]')")
        wanted = [w for w in wanted if w not in ("before", "old-server-new-prompt")]
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start; {args.rounds} rounds x 36 "
          f"agents, local messages, max_tokens {args.max_tokens}; llama-server: {args.parallel} slots, "
          f"{args.concurrency} in flight; former server: {args.old_concurrency} in flight; {args.repeats} repeats")
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in wanted}
    print(f"\n{'':<10}{'calls/s':>8}{'valid':>7}{'1st try':>8}{'placeh.':>8}{'messages':>9}{'cached':>7}"
          f"{'service s':>10}{'queue s':>8}  round seconds")
    for _ in range(args.repeats):
        for name in wanted:
            r = run_config(name, args)
            results[name].append(r)
            print(f"{name:<10}{r['calls_per_s']:>8.2f}{r['valid']:>7.0%}{r['first_try']:>8.0%}{r['placeholder']:>8.0%}"
                  f"{r['messages']:>9.0%}{r['cache_share']:>7.0%}{r['service_s']:>10.2f}{r['queue_s']:>8.2f}  "
                  + ", ".join(f"{s:.1f}" for s in r["round_seconds"])
                  + f"  {r['outcomes']}; load {os.getloadavg()[0]:.1f}", flush=True)
    median = {name: statistics.median(r["calls_per_s"] for r in runs) for name, runs in results.items()}
    print("\nmedians: " + ", ".join(f"{name} {rate:.2f} calls/s" for name, rate in median.items()))
    for name, runs in results.items():
        rounds = [s for r in runs for s in r["round_seconds"]]
        valid = sum(r["valid"] * r["decisions"] for r in runs) / sum(r["decisions"] for r in runs)
        print(f"  {name}: median round {statistics.median(rounds):.1f} s, valid answers {valid:.0%}")
    if "before" in results and "after" in results:
        ratios = [a["calls_per_s"] / b["calls_per_s"] for a, b in zip(results["after"], results["before"], strict=True)]
        print(f"after / before, per repeat: {', '.join(f'{x:.2f}x' for x in ratios)}; median {statistics.median(ratios):.2f}x "
              "(target >= 2.5x with >= 95% valid)")
    if "after-1" in results and "after" in results:
        print(f"{auto_servers()} servers (llm-mesa local's default here) / one: {median['after'] / median['after-1']:.2f}x calls/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
