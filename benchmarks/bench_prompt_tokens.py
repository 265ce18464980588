"""Prompt tokens per LLM call at the consensus study's settings (BA, N = 36, 50 rounds).

What an LLM agent is sent each round, measured on the prompts themselves (no server,
no model): a stand-in policy renders the study's prompt for every agent and round, and
answers with a message, so that no agent ever moves and every game plays all 50
rounds. Two loads of messages:

* ``worst``: every agent talks every round, each message at the delivery bound
  (``ConsensusPrompt.message_chars``, 280 characters): under global communication
  each agent hears 35 messages a round, the most the study's game can send it;
* ``half``: each agent talks with probability 0.5 a round, in 60-character messages.

Tokens are counted two ways: characters / 4 (the dry run's count) and the loopback
stand-in's word-piece count (what its ``usage`` reports). Printed per condition:
mean and largest prompt tokens per call, and the mean over rounds 11-50 (a full
history window).

    python benchmarks/bench_prompt_tokens.py            # both loads, local and global
"""

from __future__ import annotations

import argparse
import random
import statistics

from llm_mesa.loopback.behaviours import count_tokens
from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.models.consensus.observation import ConsensusDecision, ConsensusObservation
from llm_mesa.models.consensus.prompt import ConsensusPrompt
from llm_mesa.policy import Policy

WORDS = ("I hold blue and my neighbours mostly hold blue too, so let us all settle on blue now; "
         "red only pays if everyone moves, and one holdout means nobody earns anything. ")


class TalkingRecorder(Policy):
    """Renders the study's prompt for each observation, then sends a message (so it never moves)."""

    name = "talking-recorder"
    needs_history = True

    def __init__(self, talk: float, chars: int) -> None:
        self.talk, self.text = talk, (WORDS * 8)[:chars]
        self.prompt = ConsensusPrompt()
        self.sizes: list[tuple[int, int, int]] = []  # (round, chars/4 tokens, word-piece tokens)

    def decide(self, obs: ConsensusObservation, rng: random.Random) -> ConsensusDecision:
        text = "\n".join(m["content"] for m in self.prompt.messages(obs))
        self.sizes.append((obs.round, round(len(text) / 4), count_tokens(text)))
        talks = rng.random() < self.talk
        return ConsensusDecision(obs.colour, message=self.text if talks else None, diary="x" * 120)


def measure(communication: str, talk: float, chars: int, seed: int = 1) -> dict[str, float]:
    policy = TalkingRecorder(talk, chars)
    model = ConsensusModel(36, "ba", communication=communication, max_rounds=50, policy=policy,
                           baseline_permutations=0, rng=seed).run()
    assert model.round == 50, "the benchmark needs every game to play all 50 rounds"
    quarter = [s[1] for s in policy.sizes]
    pieces = [s[2] for s in policy.sizes]
    full = [s[2] for s in policy.sizes if s[0] > 10]
    return {"calls": len(pieces), "mean_chars4": statistics.mean(quarter), "max_chars4": max(quarter),
            "mean_pieces": statistics.mean(pieces), "max_pieces": max(pieces), "mean_full_window": statistics.mean(full)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print("load   comm    calls  tokens/call (chars/4): mean  max   (word pieces): mean  max  mean r11-50")
    for load, talk, chars in (("worst", 1.0, 280), ("half", 0.5, 60)):
        for communication in ("local", "global"):
            m = measure(communication, talk, chars, args.seed)
            print(f"{load:6} {communication:7} {m['calls']:5}  {m['mean_chars4']:22.0f} {m['max_chars4']:5.0f}"
                  f"  {m['mean_pieces']:20.0f} {m['max_pieces']:5.0f}  {m['mean_full_window']:8.0f}")


if __name__ == "__main__":
    main()
