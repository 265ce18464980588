"""An LLM consensus game against an OpenAI-compatible endpoint, every call recorded.

The endpoint here is the loopback stand-in (started in this process), set to
answer like majority-with-inertia agents that sometimes talk, after 20 ms, and
to refuse 5% of calls with HTTP 429 so that the client's retries show. Swap in
any real endpoint by changing ``Endpoint(base_url, model)``.

    python examples/llm_game_loopback.py [--store calls.sqlite]
"""

import argparse
import tempfile
from pathlib import Path

from llm_mesa.llm import Endpoint, ResponseStore
from llm_mesa.loopback import LoopbackServer
from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--store", type=Path, help="SQLite file to record calls to (default: a temporary one)")
args = parser.parse_args()
store_path = args.store or Path(tempfile.mkdtemp()) / "calls.sqlite"

with LoopbackServer(seed=7) as server:
    endpoint = Endpoint(server.base_url, "rule:majority-inertia?talk=0.3&latency=0.02&p429=0.05&retry_after=0",
                        temperature=0.7, max_tokens=200)
    store = ResponseStore(store_path, "record")
    policy = LLMConsensusPolicy(endpoint, store=store)
    model = ConsensusModel(n=20, topology="ba", policy=policy, communication="local",
                           max_rounds=8, baseline_permutations=200, rng=3).run()
    summary = model.summary()
    requests = server.stats()["requests"]
    stored = len(store)
    store.close()

print(f"game: {summary['n']} LLM agents on {summary['topology']}, communication {summary['communication']}")
print(f"outcome: consensus={summary['consensus']} after {summary['rounds']} rounds ({summary['stop_reason']}); "
      f"winner {summary['winner']}")
print(f"largest same-colour component {summary['largest_component']} "
      f"(random-colouring baseline {summary['largest_component_baseline_mean']:.1f})")
print(f"stubbornness {summary['stubbornness']:.2f}; messages sent {summary['messages']}")
print(f"decisions {summary['calls']} calls, {summary['prompt_tokens']} prompt + "
      f"{summary['completion_tokens']} completion tokens, {summary['failures']} failed decisions")
print(f"HTTP requests the endpoint saw: {requests} (rate-limited ones were retried)")
print(f"recorded {stored} calls to {store_path}")
print(model.rounds_table()[["round", "blue_share", "local_agreement", "messages", "calls"]].to_string(index=False))
