"""Replay a recorded LLM game exactly, with zero calls to any endpoint.

First a game is played against the loopback stand-in and every call recorded;
then the server is stopped and the same game (same parameters and seed) is
played again from the recording in strict replay mode, where a call that was
never recorded is an error rather than a silent new sample. Online serving is
not reproducible even with a seed; a recording is.

    python examples/replay_a_game.py
"""

import tempfile
from pathlib import Path

import pandas as pd

from llm_mesa.llm import Endpoint, ResponseStore, Usage
from llm_mesa.loopback import LoopbackServer
from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy

GAME = {"n": 16, "topology": "ws", "communication": "local", "max_rounds": 6, "baseline_permutations": 0, "rng": 11}
MODEL = "rule:voter?talk=0.4"  # a stand-in answering like the voter model, with messages


def play(base_url: str, store: ResponseStore) -> tuple[ConsensusModel, Usage]:
    usage = Usage("game")
    policy = LLMConsensusPolicy(Endpoint(base_url, MODEL, temperature=0.7), store=store, usage=usage)
    return ConsensusModel(policy=policy, **GAME).run(), usage


store_path = Path(tempfile.mkdtemp()) / "calls.sqlite"
with LoopbackServer(seed=5) as server:
    base_url = server.base_url
    recorded, recorded_usage = play(base_url, ResponseStore(store_path, "record"))
    print(f"recorded: {recorded_usage.calls} calls, endpoint answered {server.stats()['answered']}")
# the server is gone now: any call would fail
replayed, usage = play(base_url, ResponseStore(store_path, "replay"))
live_calls = usage.calls - usage.replayed
print(f"replayed: {usage.replayed} answers from {store_path.name}, {live_calls} calls to the endpoint")

same_rounds = recorded.rounds_table().equals(replayed.rounds_table())
same_agents = recorded.agents_table().equals(replayed.agents_table())
same_messages = recorded.messages_table().equals(replayed.messages_table())
columns = ["round", "agent", "colour", "message", "diary"]
same_answers = pd.DataFrame(recorded.transcript)[columns].equals(pd.DataFrame(replayed.transcript)[columns])
print(f"identical rounds table: {same_rounds}; agents table: {same_agents}; "
      f"messages: {same_messages}; decisions: {same_answers}")
print(f"both games: consensus={replayed.summary()['consensus']} after {replayed.round} rounds, "
      f"{len(replayed.message_log)} messages, final blue share {replayed.rounds_table()['blue_share'].iloc[-1]:.2f}")
