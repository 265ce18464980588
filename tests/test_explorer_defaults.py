"""The explorer's LLM defaults work offline: 'loopback' starts the stand-in in-process."""

from llm_mesa.visualization.app import ExplorerConsensusModel
from llm_mesa.visualization.builtin_endpoint import resolve_endpoint
from llm_mesa.visualization.naming_app import ExplorerNamingModel


def test_loopback_resolves_to_one_running_stand_in():
    url = resolve_endpoint("loopback")
    assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    assert resolve_endpoint("loopback") == url  # started once per process
    assert resolve_endpoint(" http://example.org/v1 ") == "http://example.org/v1"


def test_llm_agents_with_the_default_endpoint_play():
    model = ExplorerConsensusModel(n=12, topology="ws", policy_mix="llm", max_rounds=3)
    model.step()
    assert model.rounds_table()["calls"].iloc[-1] == 12
    assert model.summary()["failures"] == 0


def test_llm_speakers_with_the_default_endpoint_play():
    model = ExplorerNamingModel(n=6, speaker="llm", rounds=2)
    model.step()
    frame = model.rounds_frame()
    assert frame["calls"].iloc[-1] >= 6
