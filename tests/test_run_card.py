"""`llm-mesa card`: a run's models, servers, sampling, seeds, tokens and versions, from its files alone."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from aiohttp import web
from hostile_server import HostileServer, completion, is_probe

from llm_mesa.cli import main
from llm_mesa.llm import server_props, wire
from llm_mesa.llm.endpoint import Endpoint
from llm_mesa.llm.preflight_check import forget_scheduled, preflight
from llm_mesa.loopback.protocol import SYSTEM_FINGERPRINT
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.run_card import gather
from llm_mesa.run_card_markdown import card_html, card_markdown
from llm_mesa.sweep import read_sweep, run_sweep

EXTRA_GAME = "tinyvote"
#: what llama.cpp's llama-server answers on GET /props (its server README's example, shortened)
LLAMA_PROPS = {"default_generation_settings": {"id": 0, "n_ctx": 1024, "params": {"temperature": 0.8}},
               "total_slots": 1, "model_path": "../models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf",
               "chat_template": "{{ messages }}", "modalities": {"vision": False},
               "build_info": "b4567-1a2b3c4d", "is_sleeping": False}
RULE = "rule:majority-inertia?inertia=0.5"


def card_text(capsys, *args) -> str:
    assert main(["card", *map(str, args)]) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def llm_sweep(tmp_path_factory):
    """A consensus sweep of LLM agents on the stand-in (and a rule baseline); the server is gone afterwards."""
    out = tmp_path_factory.mktemp("card") / "llm"
    forget_scheduled()
    with LoopbackServer(seed=2) as server:
        run_sweep({"ba": {"n": 8, "topology": "ba"}, "ws": {"n": 8, "topology": "ws"}},
                  f"llm:base_url={server.base_url},model={RULE},temperature=0,timeout=10;mi-0.5", 2, out,
                  game="consensus", model_options={"max_rounds": 4, "baseline_permutations": 20})
        url = server.base_url
    return out, url


def test_the_card_of_an_llm_sweep_names_the_model_and_the_stand_in_s_fingerprint(llm_sweep, capsys):
    out, url = llm_sweep
    text = card_text(capsys, out)  # the server is gone: the card reads files alone
    games = read_sweep(out)
    llm_rows = games[games["policy"].str.startswith("llm")]
    line = next(row for row in text.splitlines() if row.startswith("| `llm:"))
    cells = [c.strip() for c in line.strip("|").split(" | ")]
    assert cells[2] == f"`{RULE}`" and cells[3] == f"`{RULE}`"  # asked for, and as the answers named it
    assert cells[4] == f"`{SYSTEM_FINGERPRINT}`" and SYSTEM_FINGERPRINT.startswith("llm-mesa-loopback-")
    assert f"- `{url}`: llm-mesa's stand-in server" in text and f"build `{SYSTEM_FINGERPRINT}`" in text
    calls = next(row for row in text.split("## Calls")[1].splitlines() if row.startswith("| `llm:"))
    calls_cells = [c.strip() for c in calls.strip("|").split(" | ")]
    assert calls_cells[1] == str(len(llm_rows)) and calls_cells[2] == f"{int(llm_rows['calls'].sum()):,}"
    assert calls_cells[3] == f"{int(llm_rows['prompt_tokens'].sum()):,}"
    assert "Rule policies: `mi-0.5` = `majority-inertia:inertia=0.5`." in text
    assert "| `0` |" in text.split("## Sampling")[1]  # the temperature sent
    hashes = set(llm_rows["prompt_template_hash"].dropna())
    assert hashes and all(f"`{h}`" in text for h in hashes)
    manifest = json.loads((out / "manifest.json").read_text())
    assert f"Mesa {manifest['versions']['mesa']}" in text and f"Python {manifest['versions']['python']}" in text
    assert f"Started {manifest['created']}." in text and "seeds: 0-1" not in text and "Seeds: 0, 1" in text


def test_the_report_shows_the_same_card(llm_sweep, tmp_path):
    out, _ = llm_sweep
    assert main(["report", str(out), "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    section = page.split("<h2>Run cards</h2>")[1].split("<h2>")[0]
    assert card_html(gather(out)) in section and f"<code>{SYSTEM_FINGERPRINT}</code>" in section


def test_the_card_of_a_game_s_run_folder_quotes_its_manifest(tmp_path, capsys):
    forget_scheduled()
    with LoopbackServer(seed=3) as server:
        assert main([EXTRA_GAME, "--policy", "llm", "--base-url", server.base_url, "--model", f"{EXTRA_GAME}:follow",
                     "--n", "7", "--seed", "4", "--no-record", "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    card = gather(tmp_path / "run")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert card["kind"] == "run" and card["game"] == EXTRA_GAME and card["seeds"] == "4"
    [row] = card["llm"]
    assert row["model"] == f"{EXTRA_GAME}:follow" and row["base_urls"] == [server.base_url]
    assert row["served"] == [{"model": f"{EXTRA_GAME}:follow", "system_fingerprint": SYSTEM_FINGERPRINT,
                              "calls": summary["calls"]}]
    assert card["servers"][server.base_url] == {"build": SYSTEM_FINGERPRINT, "stand_in": True}
    assert card["template_hashes"] == ["tiny1"]  # the game's own template hash
    assert card["usage"][0]["calls"] == summary["calls"] > 0
    assert f"- `{server.base_url}`: llm-mesa's stand-in server" in card_text(capsys, tmp_path / "run")


def test_what_llama_server_says_of_itself_is_kept_and_quoted(tmp_path):
    """llama.cpp's /props, as its README shows it, served at the root beside /v1: captured by the pre-flight."""
    async def llama(request, body):
        if request.path == "/props":
            return web.json_response(LLAMA_PROPS)
        if request.path.endswith("/models"):
            return web.json_response({"data": [{"id": "m"}]})
        return web.json_response(completion("x")) if is_probe(body) else web.Response(status=500)

    with HostileServer(llama, props=True) as server:
        preflight(Endpoint(server.base_url, "m", timeout=5))
        assert ("GET", "/props", b"") in server.hits
    said = server_props.described[server.base_url]
    assert said["build"] == "b4567-1a2b3c4d" and said["context"] == 1024 and said["slots"] == 1
    assert said["model_path"] == LLAMA_PROPS["model_path"] and server_props.quantisation(said["model_path"]) == "Q4_K_M"
    assert len(said["chat_template_sha256"]) == 64 and "chat_template" not in said
    card = {"path": "x", "kind": "run", "game": "g", "games": 1, "games_planned": 1, "conditions": 1, "seeds": "1",
            "llm": [{"policy": "llm", "base_urls": [server.base_url, "http://127.0.0.1:9/v1"], "model": "m",
                     "sampling": {}, "dialect": "auto", "negotiated_dialect": None, "prompt_mode": "chat",
                     "timeout": 5, "max_attempts": 1, "price": None, "served": []}],
            "rules": {}, "servers": {server.base_url: said}, "usage": [], "prompt_variants": [], "template_hashes": [],
            "versions": {}, "dates": {}}
    text = card_markdown(card)
    assert ("build `b4567-1a2b3c4d`; model file `Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf` (quantisation `Q4_K_M`, "
            "from the file's name); context 1,024 tokens; 1 slot") in text
    assert "- `http://127.0.0.1:9/v1`: the server said nothing of itself" in text


@pytest.mark.parametrize("answer, said", [
    (b"<html>not found</html>", None),
    (json.dumps([1, 2]).encode(), None),
    (json.dumps({"modalities": {}}).encode(), None),  # an object that says nothing the card quotes
    (json.dumps({"build_info": "b1 sk-abcdefghijklmnop", "model_path": "x" * 5000, "total_slots": -3,
                 "default_generation_settings": {"n_ctx": True}}).encode(),
     {"build": "b1 [redacted]", "model_path": "x" * wire.MAX_NAME_CHARS}),
])
def test_a_server_s_description_is_read_within_bounds(answer, said):
    if said is None:
        with pytest.raises(wire.Malformed):
            wire.parse_server_props(answer)
    else:
        assert wire.parse_server_props(answer) == said


def test_a_server_s_words_cannot_write_html_into_the_report():
    hostile = "<script>alert(1)</script>`` <img src=x onerror=alert(2)>"
    card = {"path": "x", "kind": "run", "game": "g", "games": 1, "games_planned": 1, "conditions": 1, "seeds": "1",
            "llm": [{"policy": "llm", "base_urls": ["http://127.0.0.1:9/v1"], "model": hostile, "sampling": {},
                     "dialect": "auto", "negotiated_dialect": None, "prompt_mode": "chat", "timeout": 5,
                     "max_attempts": 1, "price": None,
                     "served": [{"model": hostile, "system_fingerprint": hostile, "calls": 1}]}],
            "rules": {}, "servers": {"http://127.0.0.1:9/v1": {"build": hostile}}, "usage": [],
            "prompt_variants": [], "template_hashes": [hostile], "versions": {}, "dates": {}}
    page = card_html(card)
    assert "<script" not in page and "<img" not in page and "&lt;script&gt;" in page


def test_what_is_not_a_run_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "manifest.json").write_text("[1, 2")
    for target, words in ((tmp_path / "nothing", "no run at"), (tmp_path / "empty", "holds no manifest.json"),
                          (tmp_path / "bad", "is not a run's manifest")):
        assert main(["card", str(target)]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and words in err, err


def test_a_rule_sweep_has_a_card_too(tmp_path, capsys):
    out = tmp_path / "rules"
    run_sweep({"ws": {"n": 8, "topology": "ws"}}, "mi-0.2;voter", 3, out, game="consensus",
              model_options={"max_rounds": 4, "baseline_permutations": 20})
    text = card_text(capsys, out)
    assert "No LLM took part." in text and "seeds: 0-2, the same for every condition and policy" in text
    games = read_sweep(out)
    for policy in ("mi-0.2", "voter"):
        line = next(r for r in text.split("## Calls")[1].splitlines() if r.startswith(f"| `{policy}`"))
        assert re.split(r" \| ", line.strip("| "))[1] == str(int((games["policy"] == policy).sum()))
    assert isinstance(pd.DataFrame(gather(out)["usage"]), pd.DataFrame)


def test_a_lab_session_s_folder_has_a_card_naming_its_seats(tmp_path):
    """A lab session's manifest as ``llm-mesa lab --out`` writes it: the game's, with its seats and endpoints."""
    from llm_mesa.llm.dialects import endpoint_manifest
    from llm_mesa.run_output import build_manifest

    endpoint = endpoint_manifest(Endpoint("http://127.0.0.1:9/v1", f"{EXTRA_GAME}:follow", temperature=0.2))
    summary = {"game": EXTRA_GAME, "calls": 12, "prompt_tokens": 300, "completion_tokens": 40, "cached_tokens": 30,
               "decisions": 12, "failed_decisions": 1, "seats": 2, "answers": 9, "timeouts": 1,
               "policy": "human + llm", "seed": 5}
    manifest = build_manifest(EXTRA_GAME, {"n": 7}, summary=summary, policy="human + llm", seed=5,
                              lab={"seats": [{"seat": 1, "agent": 0}, {"seat": 2, "agent": 3}], "deadline_s": 30,
                                   "store": None, "replay": ""}, endpoints=[endpoint])
    (tmp_path / "lab").mkdir()
    (tmp_path / "lab" / "manifest.json").write_text(json.dumps(manifest))
    (tmp_path / "lab" / "summary.json").write_text(json.dumps(summary))
    card = gather(tmp_path / "lab")
    assert card["kind"] == "lab session" and card["seats"] == 2 and card["seeds"] == "5"
    [row] = card["llm"]
    assert row["policy"] == "human + llm" and row["sampling"] == {"temperature": 0.2} and row["served"] == []
    [use] = card["usage"]
    assert (use["calls"], use["cached_tokens"], use["failed_decisions"]) == (12, 30, 1)
    text = card_markdown(card)
    assert "People took 2 seats." in text and "10.0% (30)" in text and "1 of 12" in text
    assert "the server said nothing of itself" in text  # none was asked: the endpoint names no server's words
