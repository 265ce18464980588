"""Swap LLM agents for rule baselines on the same games, and compare.

Every policy plays the same seeds, so each plays on the same graphs with the
same preferences: only the agents' decision rule changes. The "LLM" agents talk
to the loopback stand-in endpoint (started here, on this machine) whose model
``rule:majority-inertia`` answers as that rule would, so the example runs
offline; point ``Endpoint`` at a real server (vLLM, Ollama, OpenAI) to play
real LLM agents instead.

    python examples/swap_policies.py
"""

from llm_mesa.llm import Endpoint
from llm_mesa.loopback import LoopbackServer
from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy

SEEDS = range(3)
GAME = {"n": 20, "topology": "ws", "max_rounds": 10, "baseline_permutations": 0}

with LoopbackServer(seed=1) as server:
    llm = LLMConsensusPolicy(Endpoint(server.base_url, "rule:majority-inertia?inertia=0.2"))
    contenders = {
        "majority-inertia:inertia=0.2": {"policy": "majority-inertia:inertia=0.2"},
        "voter": {"policy": "voter"},
        "stubborn": {"policy": "stubborn"},
        "llm (loopback)": {"policy": llm},
        "llm + 3 stubborn hubs": {"policy": llm, "assign": {"hubs:3": "stubborn"}},
    }
    print(f"{len(SEEDS)} games each, {GAME['n']} agents, topology {GAME['topology']}, "
          f"at most {GAME['max_rounds']} rounds; same seeds for every policy")
    print(f"{'policy':<30}{'consensus':>10}{'mean rounds':>13}{'stubbornness':>14}{'LLM calls':>11}")
    for name, kwargs in contenders.items():
        games = [ConsensusModel(**GAME, **kwargs, rng=seed).run().summary() for seed in SEEDS]
        wins = sum(g["consensus"] for g in games)
        rounds = sum(g["rounds"] for g in games) / len(games)
        stubbornness = sum(g["stubbornness"] for g in games) / len(games)
        calls = sum(g["calls"] for g in games)
        print(f"{name:<30}{wins:>6}/{len(games):<3}{rounds:>13.1f}{stubbornness:>14.2f}{calls:>11}")
    print(f"the loopback endpoint answered {server.stats()['answered']} calls")
