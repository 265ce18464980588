"""Seconds per decision on the local model (llama.cpp + Gemma 3 270M), and what they cost a study.

Why: a real model on a CPU answers one request at a time, so a study's wall time is
decisions x seconds per decision. This measures four ways of asking, each over a
handful of calls after one warm-up call:

* ``chat``            chat completion, the project's consensus prompt (local messages,
                      10 rounds of history), free text;
* ``chat+schema``     the same with ``response_format={"type": "json_object", "schema": ...}``
                      (decoding constrained to the decision's JSON schema);
* ``completion``      raw ``/v1/completions`` with the SIGN prompt, 32 new tokens;
* ``completion+grammar`` the same with a GBNF grammar forcing ``@say {name: Ck}``.

Each call changes the per-agent part of the prompt (agent, neighbours, history), as a
real round does, so llama.cpp's reuse of the previous prompt's prefix helps only with
the shared rules, never with the whole prompt. It prints medians and the projected
wall time of the consensus study's grid (11 conditions x 30 repetitions x up to 50
rounds x 36 agents) and of one SIGN cell, served one request at a time.

    python benchmarks/bench_local_model.py               # starts its own server
    python benchmarks/bench_local_model.py --calls 9 --base-url http://127.0.0.1:8000/v1
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, field

import openai

from llm_mesa.models.consensus.prompt import ConsensusPrompt, answer_schema
from llm_mesa.local_server import MODEL_ALIAS, LocalModelServer
from llm_mesa.models.consensus.observation import COLOURS, ConsensusObservation, Message, RoundRecord

CONSENSUS_GRID_DECISIONS = 11 * 30 * 50 * 36   # conditions x reps x max rounds x agents
SIGN_CELL_DECISIONS = 300 * 12                  # 300 rounds x 12 speakers (pairing "all", N = 12)
SIGN_GRID_CELLS = 2 * 3 * 5 * 3                 # N x alpha x {NL, NL-SW K5/K10, Schema K5/K10} x seeds

NAME_GRAMMAR = 'root ::= "@say {name: C" ("10" | "11" | "12" | [1-9]) "}" ( " | " [a-zA-Z ,.]{0,60} )?'


def consensus_messages(rng: random.Random, agent: int, history_rounds: int = 10) -> list[dict[str, str]]:
    """The project's consensus prompt for one agent in local communication, 10 rounds into a game."""
    neighbours = tuple(sorted(rng.sample([v for v in range(36) if v != agent], 4)))
    colour = lambda: rng.choice(COLOURS)  # noqa: E731
    history = [RoundRecord(r, colour(), {v: colour() for v in neighbours}, []) for r in range(1, history_rounds + 1)]
    inbox = [Message(neighbours[0], history_rounds, rng.choice(["stay blue", "let us all go red", "hold on"]))]
    obs = ConsensusObservation(
        agent_id=agent, round=history_rounds + 1, preference=colour(), colour=colour(), neighbour_ids=neighbours,
        neighbour_colours=tuple(colour() for _ in neighbours), communication="local", history=history,
        inbox=inbox, diary="Neighbours 3 and 7 keep switching; wait for a clear majority.",
        max_rounds=50, game_key="bench")
    return ConsensusPrompt().messages(obs)


def naming_prompt(rng: random.Random, agent: int, round_id: int) -> str:
    """The SIGN authors' Schema prompt (raw completion, no chat template)."""
    name = f"C{rng.randint(1, 12)}"
    return (f"You are agent {agent} in round {round_id}.\nYour current proposed name is {name}.\n"
            f"Reply EXACTLY one line as: @say {{name: {name}}} | rationale.\n")


@dataclass
class Timing:
    mode: str
    seconds: list[float] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)
    completion_tokens: list[int] = field(default_factory=list)
    finish_reasons: dict[str, int] = field(default_factory=dict)
    valid_json: int = 0

    def add(self, seconds: float, usage: object, finish_reason: str | None) -> None:
        self.seconds.append(seconds)
        self.prompt_tokens.append(int(getattr(usage, "prompt_tokens", 0) or 0))
        self.completion_tokens.append(int(getattr(usage, "completion_tokens", 0) or 0))
        key = finish_reason or "none"
        self.finish_reasons[key] = self.finish_reasons.get(key, 0) + 1

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def measure(client: openai.OpenAI, model: str, mode: str, calls: int, max_tokens: int, seed: int) -> Timing:
    rng = random.Random(seed)
    timing = Timing(mode)
    for call in range(calls + 1):  # call 0 warms up (loads the prompt prefix), not counted
        agent, sample_seed = rng.randrange(36), rng.randrange(2**31)
        started = time.perf_counter()
        if mode.startswith("chat"):
            extra = {}
            if mode == "chat+schema":
                extra["response_format"] = {"type": "json_object", "schema": answer_schema("local", False)}
            response = client.chat.completions.create(
                model=model, messages=consensus_messages(rng, agent),
                max_tokens=max_tokens, temperature=0.7, top_p=0.9, seed=sample_seed, **extra)
            text = response.choices[0].message.content or ""
        else:
            extra_body = {"repeat_penalty": 1.1}
            if mode == "completion+grammar":
                extra_body["grammar"] = NAME_GRAMMAR
            response = client.completions.create(
                model=model, prompt=naming_prompt(rng, agent, call), max_tokens=32, temperature=0.7,
                top_p=0.9, seed=sample_seed, extra_body=extra_body)
            text = response.choices[0].text or ""
        elapsed = time.perf_counter() - started
        if call == 0:
            continue
        timing.add(elapsed, response.usage, response.choices[0].finish_reason)
        if mode == "chat+schema":
            try:
                json.loads(text)
                timing.valid_json += 1
            except json.JSONDecodeError:
                pass
    return timing


def human(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=7, help="timed calls per mode (after one warm-up)")
    parser.add_argument("--max-tokens", type=int, default=128, help="max new tokens of a consensus decision")
    parser.add_argument("--base-url", default=None, help="use a running server instead of starting one")
    parser.add_argument("--model", default=MODEL_ALIAS)
    parser.add_argument("--threads", type=int, default=None, help="server CPU threads (default: all cores)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    with ExitStack() as stack:
        base_url = args.base_url
        if base_url is None:
            server = stack.enter_context(LocalModelServer(n_threads=args.threads))
            base_url = server.base_url
            print(f"server: {' '.join(server.command()[1:])}")
            print(f"server started and answering in {server.startup_seconds:.1f} s")
        client = openai.OpenAI(base_url=base_url, api_key="local", max_retries=0, timeout=300)
        timings = [measure(client, args.model, mode, args.calls, args.max_tokens, args.seed)
                   for mode in ("chat", "chat+schema", "completion", "completion+grammar")]

    print(f"\n{'mode':<20}{'median s':>9}{'min s':>8}{'max s':>8}{'prompt tok':>11}{'new tok':>9}"
          f"{'s/new tok':>10}  finish reasons")
    for t in timings:
        med_new = statistics.median(t.completion_tokens)
        per_token = t.median / med_new if med_new else float("nan")
        print(f"{t.mode:<20}{t.median:>9.2f}{min(t.seconds):>8.2f}{max(t.seconds):>8.2f}"
              f"{statistics.median(t.prompt_tokens):>11.0f}{med_new:>9.0f}{per_token:>10.3f}  {t.finish_reasons}")
    schema = timings[1]
    print(f"\nchat+schema answers that parse as JSON: {schema.valid_json}/{len(schema.seconds)} "
          f"(a cut answer, finish_reason 'length', is invalid JSON)")
    chat, chat_schema, completion = timings[0].median, schema.median, timings[2].median
    print(f"ratios: chat+schema / chat = {chat_schema / chat:.2f}; chat / completion = {chat / completion:.2f}")

    print(f"\nprojection, one request at a time (this server serves no two at once):")
    print(f"  consensus grid, at most {CONSENSUS_GRID_DECISIONS:,} decisions "
          f"(11 conditions x 30 reps x 50 rounds x 36 agents), before retries:")
    for t in timings[:2]:
        print(f"    {t.mode:<12} {human(CONSENSUS_GRID_DECISIONS * t.median)}"
              f"  (one 50-round game: {human(50 * 36 * t.median)})")
    for t in timings[2:]:
        print(f"  SIGN, one cell (N=12, 300 rounds, {SIGN_CELL_DECISIONS:,} utterances), {t.mode}: "
              f"{human(SIGN_CELL_DECISIONS * t.median)}; the grid's {SIGN_GRID_CELLS} cells: "
              f"{human(SIGN_GRID_CELLS * SIGN_CELL_DECISIONS * 1.5 * t.median)} (N=24 cells count double)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
