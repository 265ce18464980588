"""One 36-agent round of the consensus game on the local model, before and after, in one run.

Why: a study's wall time is rounds x the time of a round, and a round is only worth
its time when the model's answers are valid. This runs the consensus game's own
path (``LLMConsensusPolicy`` through the LLM layer, concurrency limit, dialect
negotiation, reminders) for ``--rounds`` rounds of 36 agents with local messages on:

* ``before``  llama-cpp-python's server, the former prompt (a ``"..."``-placeholder
              answer format, rules folded into the user message, no length bounds,
              ``json_object`` schema dialect);
* ``after``   llama.cpp's ``llama-server`` (``llm-mesa local``): the new prompt (fields
              described, message optional, free text bounded to 80 characters, rules
              as their own system message so the prompt cache keeps them), ``json_schema``;
* ``after x2`` two llama-server processes behind one model (``--base-url URL1,URL2``),
              half the threads each.

Two more take one change at a time: ``old-prompt`` (llama-server, the former prompt)
and ``old-server-new-prompt``. For each it prints calls/s, the share of valid answers (decoded at once or after the
reminder), of placeholder or empty reason/diary fields and of messages, the share of
prompt tokens served from cache, and the seconds of a round. "before" needs the
``local-legacy`` extra (it is skipped without it).

    python benchmarks/bench_local_model.py                 # before, after, after x2
    python benchmarks/bench_local_model.py --only after --rounds 1
    python benchmarks/bench_local_model.py --only old-prompt --only after --rounds 1   # the prompt alone
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import ExitStack
from typing import Any

from llm_mesa.llm.endpoint import Endpoint
from llm_mesa.local_server import LocalModelServer, missing_modules
from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy, is_placeholder
from llm_mesa.models.consensus.model import ConsensusModel
from llm_mesa.models.consensus.prompt import RULES, ConsensusPrompt, answer_schema

#: the prompt before issue 13: placeholders a small model copies, rules in the user message
LEGACY_RULES = RULES.replace("{answer_format} Write nothing else.", "Answer with one JSON object and nothing else: {answer_format}")
LEGACY_FORMAT = {
    "none": '{"colour": "red" or "blue", "reason": "...", "diary": "..."}',
    "talk": '{"colour": "red" or "blue", "reason": "...", "diary": "...", "message": "..." or null}',
    "dm": '{"colour": "red" or "blue", "reason": "...", "diary": "...", "message": "..." or null, '
          '"message_to": a neighbour\'s node id or null}',
}


#: before, after, after with two servers; and each change alone: the old server with the new prompt,
#: llama-server with the old prompt
CONFIGS = ("before", "after", "after-x2", "old-server-new-prompt", "old-prompt")


class LegacyPolicy(LLMConsensusPolicy):
    """The former request: no length bounds, the message nullable and unbounded."""

    def request(self, obs):
        request = super().request(obs)
        schema = answer_schema(obs.communication, obs.direct_messages)
        for field in schema["properties"].values():
            field.pop("maxLength", None)
        if "message" in schema["properties"]:
            schema["properties"]["message"] = {"type": ["string", "null"]}
        schema.pop("additionalProperties", None)
        request.schema = schema
        return request


def play(base_url: str, *, legacy: bool, rounds: int, concurrency: int, max_tokens: int, seed: int,
         old_server: bool = False) -> dict[str, Any]:
    endpoint = Endpoint(base_url, "gemma3-270m", temperature=0.7, top_p=0.9, max_tokens=max_tokens, seed=seed,
                        concurrency=concurrency, timeout=600, dialect="json_object" if old_server else "auto")
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
    placeholder = sum(is_placeholder(r["reason"]) or is_placeholder(r["diary"]) for r in valid)
    usage = policy.usage
    return {
        "calls": usage.calls, "decisions": len(rows), "seconds": sum(round_seconds), "round_seconds": round_seconds,
        "calls_per_s": usage.calls / sum(round_seconds), "valid": len(valid) / len(rows),
        "first_try": sum(r["outcome"] == "ok" for r in rows) / len(rows),
        "placeholder": placeholder / max(1, len(valid)), "messages": sum(r["message"] is not None for r in valid) / max(1, len(valid)),
        "cache_share": usage.cache_share, "outcomes": dict(usage.outcomes),
        "service_s": usage.latency_s / max(1, usage.calls), "queue_s": usage.queue_s / max(1, usage.calls),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds of 36 decisions per configuration")
    parser.add_argument("--max-tokens", type=int, default=48, help="max new tokens of a decision")
    parser.add_argument("--concurrency", type=int, default=4, help="calls in flight per server")
    parser.add_argument("--parallel", type=int, default=1, help="llama-server slots per server")
    parser.add_argument("--only", choices=CONFIGS, action="append", default=None)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    wanted = args.only or ["before", "after", "after-x2"]
    old = ("before", "old-server-new-prompt")
    cores = os.cpu_count() or 1
    print(f"machine: {cores} cores, load average {os.getloadavg()[0]:.1f} at start; {args.rounds} rounds x 36 agents, "
          f"local messages, max_tokens {args.max_tokens}, concurrency {args.concurrency} per server")
    results: dict[str, dict[str, Any]] = {}
    for name in wanted:
        if name in old and missing_modules(("llama_cpp",)):
            print("before: skipped (llama-cpp-python is not installed: pip install 'llm-mesa[local-legacy]')")
            continue
        count = 2 if name == "after-x2" else 1
        with ExitStack() as stack:
            servers = [stack.enter_context(LocalModelServer(
                engine="llama-cpp-python" if name in old else "llama-server",
                n_threads=max(1, cores // count), parallel=args.parallel)) for _ in range(count)]
            url = ",".join(s.base_url for s in servers)
            results[name] = play(url, legacy=name in ("before", "old-prompt"), rounds=args.rounds, concurrency=args.concurrency,
                                 max_tokens=args.max_tokens, seed=args.seed, old_server=name in old)
        print(f"{name}: done; load average {os.getloadavg()[0]:.1f}", flush=True)

    print(f"\n{'':<10}{'calls/s':>8}{'valid':>7}{'1st try':>8}{'placeh.':>8}{'messages':>9}{'cached':>7}"
          f"{'service s':>10}{'queue s':>8}  round seconds")
    for name, r in results.items():
        print(f"{name:<10}{r['calls_per_s']:>8.2f}{r['valid']:>7.0%}{r['first_try']:>8.0%}{r['placeholder']:>8.0%}"
              f"{r['messages']:>9.0%}{r['cache_share']:>7.0%}{r['service_s']:>10.2f}{r['queue_s']:>8.2f}  "
              + ", ".join(f"{s:.1f}" for s in r["round_seconds"]) + f"  {r['outcomes']}")
    if "before" in results and "after" in results:
        speedup = results["after"]["calls_per_s"] / results["before"]["calls_per_s"]
        print(f"\nafter / before: {speedup:.2f}x calls/s (target >= 2.5x), valid answers {results['after']['valid']:.0%} "
              f"(target >= 95%)")
    if "after-x2" in results and "after" in results:
        print(f"two servers / one: {results['after-x2']['calls_per_s'] / results['after']['calls_per_s']:.2f}x calls/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
