"""Speed of the naming games: rounds/s of SIGN with rule speakers at N = 24, interactions/s
of the minimal naming game, and rounds/s of SIGN with LLM speakers against the loopback
stand-in (zero latency: the transport's own cost). Medians of a few repeats, one run.

    python benchmarks/bench_naming.py [--repeats 5] [--no-llm]
"""

from __future__ import annotations

import argparse
import statistics
import time

from llm_mesa.models.naming.minimal import MinimalNamingGame
from llm_mesa.models.naming.model import NamingModel


def median_rate(make, work: int, repeats: int) -> float:
    rates = []
    for seed in range(repeats):
        started = time.perf_counter()
        done = make(seed)
        rates.append((done if done is not None else work) / (time.perf_counter() - started))
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--no-llm", action="store_true")
    args = parser.parse_args()

    print(f"SIGN, N=24, {args.rounds} rounds, pairing all (median of {args.repeats})")
    base = None
    for speaker in ("echo", "noisy:p=0.3", "minimal"):
        for mode, memory in (("schema", 5), ("nl", 0)):
            rate = median_rate(lambda s, mode=mode, memory=memory, speaker=speaker: NamingModel(
                                   n=24, mode=mode, memory=memory, speaker=speaker, rng=s, max_rounds=args.rounds).run() and None,
                               args.rounds, args.repeats)
            base = base or rate
            print(f"  {speaker:12s} {mode:7s} {rate:10,.0f} rounds/s  ({rate * 24:,.0f} utterances/s, "
                  f"{rate / base:.2f}x echo/schema)")

    print(f"minimal naming game, complete graph, to convergence (median of {args.repeats})")
    for n in (64, 128, 512):
        games: list[MinimalNamingGame] = []

        def play(seed: int, n=n, games=games) -> int:
            game = MinimalNamingGame(n=n, rng=seed)
            game.run()
            games.append(game)
            return game.interactions

        rate = median_rate(play, 0, args.repeats)
        mean_t = statistics.mean(g.converged_at for g in games)
        print(f"  N={n:4d} {rate:12,.0f} interactions/s; mean t_conv {mean_t:,.0f} = {mean_t / n ** 1.5:.2f} N^1.5")

    if args.no_llm:
        return
    from llm_mesa.loopback.server import LoopbackServer
    from llm_mesa.models.naming.llm_speaker import LLMSpeaker, sign_endpoint

    rounds = 20
    print(f"SIGN with LLM speakers over loopback HTTP, N=24, {rounds} rounds (median of {args.repeats})")
    for latency in (0.0, 0.05):
        with LoopbackServer(seed=1, latency=latency) as server:
            for model in ("naming:echo", "naming:noisy"):
                speaker = LLMSpeaker(sign_endpoint(server.base_url, model))
                rate = median_rate(lambda s, speaker=speaker: NamingModel(n=24, speaker=speaker, rng=s,
                                                                          max_rounds=rounds).run() and None,
                                   rounds, args.repeats)
                calls = speaker.usage.calls / args.repeats / rounds
                print(f"  latency {latency * 1000:3.0f} ms {model:13s} {rate:7.1f} rounds/s "
                      f"({calls:.1f} calls/round, {rate * calls:,.0f} calls/s)")


if __name__ == "__main__":
    main()
