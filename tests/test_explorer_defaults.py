"""The pages' LLM defaults work offline: 'loopback' starts the stand-in in-process, for any game with an LLM policy."""

import pytest

from llm_mesa.registry import get_game
from llm_mesa.views import view_of
from llm_mesa.views.controls import initial_values, resolve_endpoint


def test_loopback_resolves_to_one_running_stand_in():
    url = resolve_endpoint("loopback")
    assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    assert resolve_endpoint("loopback") == url  # started once per process
    assert resolve_endpoint(" http://127.0.0.2:9/v1 ") == "http://127.0.0.2:9/v1"


@pytest.mark.parametrize(("game", "changes"), [
    ("consensus", {"policy_mix": "llm", "n": 12, "topology": "ws", "max_rounds": 5}),
    ("naming", {"speaker": "llm", "n": 6, "max_rounds": 10}),
    ("tinyvote", {"policy": "llm", "n": 6}),
])
def test_llm_agents_with_the_default_endpoint_play(game, changes):
    view = view_of(get_game(game))
    model = view.build_from({**initial_values(view.controls()), **changes})
    model.step()
    snapshot = view.snapshot(model)
    assert snapshot.round_number == 1
    assert not [b for b in snapshot.banners if b.kind == "error"]  # no call failed
    policies = {a.policy for a in view.agents(model)} if view.agents(model)[0] is not None else set()
    assert any(getattr(p, "usage", None) is not None and p.usage.calls >= 6 for p in policies)
