"""The consensus command's policy specs: an llm spec's own options win and are checked; assignments are checked."""

import json

import pytest

from llm_mesa.cli import main
from llm_mesa.loopback.server import LoopbackServer


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(seed=2) as s:
        yield s


def run(capsys, *argv):
    status = main(["consensus", "--n", "8", "--topology", "ws", "--max-rounds", "1", "--baseline-permutations", "0",
                   *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err.strip()


def test_an_llm_specs_own_model_and_sampling_win_over_the_options(server, capsys, tmp_path):
    status, _, err = run(capsys, "--policy", "llm:model=rule:voter,temperature=0.3", "--base-url", server.base_url,
                         "--model", "rule:stubborn", "--temperature", "0.9", "--no-record", "--out", str(tmp_path / "g"))
    assert status == 0, err
    manifest = json.loads((tmp_path / "g" / "manifest.json").read_text())
    assert manifest["endpoint"]["model"] == "rule:voter" and manifest["endpoint"]["temperature"] == 0.3


def test_two_llm_specs_in_one_game_get_their_own_endpoints(server, capsys, tmp_path):
    status, _, err = run(capsys, "--policy", "llm:model=rule:voter", "--assign", "hubs:2=llm:model=rule:stubborn",
                         "--base-url", server.base_url, "--no-record", "--out", str(tmp_path / "g"))
    assert status == 0, err
    manifest = json.loads((tmp_path / "g" / "manifest.json").read_text())
    assert {e["model"] for e in manifest["endpoints"].values()} == {"rule:voter", "rule:stubborn"}


@pytest.mark.parametrize("argv, fragment", [
    (["--policy", "llm:model="], "llm option model in 'llm:model=' is empty"),
    (["--policy", "llm:temperature=5"], "temperature 5 is outside [0, 2]"),
    (["--policy", "llm:top_p=0"], "top-p 0 is outside (0, 1]"),
    (["--policy", "llm:frob=1"], "unknown llm option(s) frob"),
    (["--policy", "llm:temperature=warm"], "must be a number"),
    (["--assign", "hubs:2=stubborn", "--assign", "hubs:2=voter"], "selector 'hubs:2' twice"),
    (["--assign", "nodes:=stubborn"], "needs the form SELECTOR=POLICY"),
    (["--assign", "=stubborn"], "needs the form SELECTOR=POLICY"),
])
def test_bad_specs_and_assignments_are_one_line(server, capsys, tmp_path, argv, fragment):
    status, _, err = run(capsys, *argv, "--base-url", server.base_url, "--model", "rule:voter",
                         "--record", str(tmp_path / "calls.sqlite"))
    assert status == 2 and fragment in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "calls.sqlite").exists()
