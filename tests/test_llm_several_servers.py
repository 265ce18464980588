"""One model on several servers (``--base-url URL1,URL2``), over real sockets.

Two loopback servers stand behind one model: a consensus game spreads its calls
over both, records which one answered each call, and a replay pointed at a third
URL, where nothing listens, replays every call with none made: the store's key
never holds a URL.
"""

import json
import socket

import pandas as pd
import pytest

from llm_mesa.cli import main
from llm_mesa.llm.endpoint import Endpoint, EndpointError
from llm_mesa.llm.store import ResponseStore
from llm_mesa.loopback.server import LoopbackServer


@pytest.fixture(scope="module")
def servers():
    with LoopbackServer(seed=1, latency=0.02) as first, LoopbackServer(seed=1, latency=0.02) as second:
        yield first, second


def game(base_url, *extra):
    return ["consensus", "--policy", "llm", "--base-url", base_url, "--model", "rule:majority-inertia",
            "--n", "12", "--topology", "ws", "--max-rounds", "3", "--comm", "local", "--seed", "3",
            "--concurrency", "2", "--json", *extra]


def _dead_url():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"


def test_an_endpoint_takes_several_servers_of_one_model():
    endpoint = Endpoint("http://127.0.0.1:8000/v1/, http://127.0.0.1:8001/v1", "m")
    assert endpoint.base_urls == ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1")
    assert endpoint.is_loopback
    one = endpoint.for_server("http://127.0.0.1:8001/v1")
    assert one.base_url == "http://127.0.0.1:8001/v1" and one.model == "m"
    assert endpoint.for_server("http://127.0.0.1:8001/v1") is one
    with pytest.raises(EndpointError, match="empty entry"):
        Endpoint("http://127.0.0.1:8000/v1,", "m")
    with pytest.raises(EndpointError, match="twice"):
        Endpoint("http://127.0.0.1:8000/v1,http://127.0.0.1:8000/v1/", "m")
    with pytest.raises(EndpointError, match="not an http"):
        Endpoint("http://127.0.0.1:8000/v1,ftp://x", "m")


def test_two_servers_share_the_calls_and_replay_ignores_which_answered(servers, tmp_path):
    first, second = servers
    first.reset()
    second.reset()
    record = tmp_path / "calls.sqlite"
    both = f"{first.base_url},{second.base_url}"
    assert main(game(both, "--record", str(record), "--out", str(tmp_path / "live"))) == 0
    summary = json.loads((tmp_path / "live" / "summary.json").read_text())
    answered = first.stats()["answered"], second.stats()["answered"]
    assert all(n > 0 for n in answered), answered  # both servers got calls
    assert sum(answered) == summary["calls"]
    # which server answered is recorded per call, and the counts agree with the servers'
    transcript = pd.read_parquet(tmp_path / "live" / "transcript.parquet")
    assert transcript["server"].value_counts().to_dict() == {
        url: n for url, n in zip((first.base_url, second.base_url), answered)}
    # two limits of 2, not one: the game's calls overlapped on both servers
    assert (transcript["queue_s"] >= 0).all() and (transcript["latency_s"] > 0).all()

    # replay through a third URL where nothing listens: every call replayed, none made
    third = _dead_url()
    assert main(game(third, "--replay", str(record), "--out", str(tmp_path / "replayed"))) == 0
    assert (first.stats()["answered"], second.stats()["answered"]) == answered
    replayed = json.loads((tmp_path / "replayed" / "summary.json").read_text())
    assert replayed["replayed_calls"] == summary["calls"]
    ignore = {"replayed_calls", "wall_s"}  # the clock's, not the game's
    assert {k: v for k, v in replayed.items() if k not in ignore and "http" not in str(v)} == \
        {k: v for k, v in summary.items() if k not in ignore and "http" not in str(v)}
    again = pd.read_parquet(tmp_path / "replayed" / "transcript.parquet")
    pd.testing.assert_frame_equal(again, transcript)
    store = ResponseStore(record, "replay")
    try:
        assert {row["response"]["server"] for row in store.rows()} == {first.base_url, second.base_url}
    finally:
        store.close()
