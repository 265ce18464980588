"""A model name the stand-in cannot build is refused at once, in the server's own words, before any game.

The pre-flight stays one 1-token call: the stand-in builds a model name's behaviour before it reads
any prompt, so a bad name (an unknown behaviour, an unknown parameter, a parameter's bad value) meets
the pre-flight; a behaviour that only cannot read the 1-token prompt (``PromptNotUnderstood``) is
still accepted there, as a real server that dislikes a prompt is.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from llm_mesa.cli import main
from llm_mesa.llm import Endpoint
from llm_mesa.llm.endpoint import EndpointError
from llm_mesa.llm.preflight_check import SHOWN_MODELS, offered, preflight
from llm_mesa.loopback import Behaviour, register_behaviour
from llm_mesa.loopback.server import LoopbackServer


class Rate(Behaviour):
    kind = "rated"

    def __init__(self, params, model):
        self.rate = float(params.pop("p", "0.5"))  # "p=lots" raises ValueError: a bad value, not a bug
        if not 0 <= self.rate <= 1:
            raise ValueError(f"p={self.rate} is not a probability (0..1)")

    def answer(self, prompt, rng):
        return "ok"


@pytest.fixture(autouse=True, scope="module")
def rated_registered():
    """The test's own behaviour, for this module only (other tests see the registry as it was)."""
    from llm_mesa.loopback import behaviours

    register_behaviour("rated", Rate, "a behaviour with a checked parameter", params="p")
    yield
    behaviours._REGISTRY.pop("rated", None)


def post(server, model: str) -> tuple[int, dict]:
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}).encode()
    request = urllib.request.Request(server.base_url + "/chat/completions", body, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


@pytest.mark.parametrize(("model", "fragment"), [
    ("rated?p=lots", "could not convert string to float"),
    ("rated?p=3", "p=3.0 is not a probability"),
    ("rated?q=1", "unknown parameter(s) q"),
    ("fixed?latency=-1", "latency"),
    ("tinyvote:follow?bogus=1", "unknown parameter(s) bogus"),
])
def test_a_bad_model_name_is_a_400_on_model_carrying_the_behaviours_message(model, fragment):
    with LoopbackServer() as server:
        status, body = post(server, model)
    assert status == 400 and body["error"]["param"] == "model" and fragment in body["error"]["message"]


@pytest.mark.parametrize(("model", "fragment"), [
    ("rated?p=3", "p=3.0 is not a probability"),
    ("tinyvote:follow?bogus=1", "this behaviour takes: no parameters"),
])
def test_the_pre_flight_refuses_it_with_the_servers_message(model, fragment):
    with LoopbackServer() as server:
        with pytest.raises(EndpointError) as refused:
            preflight(Endpoint(server.base_url, model))
    assert fragment in str(refused.value) and "check --model" in str(refused.value)


def test_a_behaviour_that_cannot_read_the_ping_still_passes_the_pre_flight():
    with LoopbackServer() as server:
        preflight(Endpoint(server.base_url, "tinyvote:follow"))  # 400 on messages: the game's prompts will do


def test_a_game_with_a_bad_model_name_fails_before_its_first_prompt(capsys):
    with LoopbackServer() as server:
        status = main(["tinyvote", "--policy", "llm", "--base-url", server.base_url, "--model",
                       "tinyvote:follow?bogus=1", "--no-record"])
        sent = server.stats()
    err = capsys.readouterr().err
    assert status == 2 and len(err.strip().splitlines()) == 1 and "unknown parameter(s) bogus" in err
    assert sent["answered"] == 0 and sent["by_behaviour"] == {}  # no call of the game reached a behaviour


@pytest.mark.parametrize("listed", [3, SHOWN_MODELS, SHOWN_MODELS + 7])
def test_the_offered_list_says_how_many_it_leaves_out(listed):
    names = [f"m{i}" for i in range(listed)]
    text = offered(names)
    assert text.startswith(", ".join(names[:SHOWN_MODELS]))
    assert ("and 7 more" in text) == (listed > SHOWN_MODELS) and f"m{SHOWN_MODELS}," not in text
