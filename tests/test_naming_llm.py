"""The LLM speaker over real HTTP (loopback stand-in), record/replay, and the CLI."""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest
from scripted_server import ScriptedServer

from llm_mesa.cli import main
from llm_mesa.llm.store import ResponseStore
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.models.naming.llm_speaker import LLMSpeaker, sign_endpoint
from llm_mesa.models.naming.model import NamingModel
from llm_mesa.models.naming.observation import OUTCOMES, NamingObservation, lexicon
from llm_mesa.models.naming.prompts import RETRY_REMINDER, build_prompt


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(seed=7) as running:
        yield running


def _game(server, model_name, store=None, mode="schema", memory=5, rounds=12):
    speaker = LLMSpeaker(sign_endpoint(server.base_url, model_name), store=store)
    return NamingModel(n=12, mode=mode, memory=memory, speaker=speaker, rng=3, max_rounds=rounds).run()


def test_noisy_llm_game_counts_every_outcome_and_replays_with_zero_calls(server, tmp_path):
    store_path = tmp_path / "calls.sqlite"
    before = server.stats()["requests"]
    live = _game(server, "naming:noisy?p=0.5", ResponseStore(store_path, "record"), rounds=15)
    calls = server.stats()["requests"] - before
    frame = live.rounds_frame()
    outcome_sum = frame[[f"outcome_{o}" for o in OUTCOMES]].sum(axis=1)
    assert (outcome_sum == frame["utterances"]).all() and (frame["utterances"] == 12).all()
    summary = live.summary()
    assert all(summary["outcomes"][o] > 0 for o in ("schema", "retry", "salvage", "none"))
    # one call per utterance, plus one per failed first reply (the reminder)
    assert summary["calls"] == calls == 12 * 15 + summary["outcomes"]["retry"] + \
        summary["outcomes"]["salvage"] + summary["outcomes"]["none"]
    assert summary["completion_tokens"] > 0 and summary["prompt_tokens"] > summary["completion_tokens"]
    assert (frame["cum_completion_tokens"].diff().dropna() >= 0).all()

    before = server.stats()["requests"]
    replayed = _game(server, "naming:noisy?p=0.5", ResponseStore(store_path, "replay"), rounds=15)
    assert server.stats()["requests"] == before            # zero calls
    pd.testing.assert_frame_equal(replayed.rounds_frame(), frame)


def test_schema_retry_prompt_ends_on_a_fresh_line_so_the_reply_is_not_the_reminder_continued():
    observation = NamingObservation(3, 1, "C2", "schema", lexicon(), game_key="t")
    with ScriptedServer(models=("scripted",)) as scripted:
        scripted.then({"text": "hmm"}, {"text": "@say {name: C2} | ok"})
        utterance = LLMSpeaker(sign_endpoint(scripted.base_url, "scripted")).decide(observation, random.Random(0))
    assert utterance.outcome == "retry" and utterance.name == "C2"
    first, retry = (body["prompt"] for body in scripted.requests)   # exactly what was sent
    assert first == build_prompt(observation)
    assert retry == first + RETRY_REMINDER + "\n"
    assert retry.endswith("\nFollow EXACTLY one line: @say {name: Ck}\n")


def test_echo_llm_speakers_converge_and_tokens_to_convergence_are_counted(server):
    model = _game(server, "naming:echo", rounds=40)
    summary = model.summary()
    assert summary["outcomes"]["schema"] == 12 * 40 and summary["calls"] == 12 * 40
    assert summary["consensus"] and summary["agreement_final"] == 1.0
    frame = model.rounds_frame()
    first = summary["rounds_to_50"]
    assert summary["tokens_to_50"] == frame.loc[frame["round"] == first, "cum_completion_tokens"].item()
    assert summary["total_tokens_to_50"] > summary["tokens_to_50"] > 0


def test_babble_in_nl_mode_decodes_nothing_and_nobody_changes_name(server):
    model = NamingModel(n=6, mode="nl", memory=0, alpha=0.9, rng=1, max_rounds=5,
                        speaker=LLMSpeaker(sign_endpoint(server.base_url, "naming:babble")))
    start = [a.name for a in model.players]
    model.run()
    outcomes = model.summary()["outcomes"]
    assert outcomes["text"] + outcomes["none"] == 30 and outcomes["retry"] == 0
    if outcomes["text"] == 0:
        assert [a.name for a in model.players] == start     # None is never adopted


def test_cli_llm_record_then_replay_without_a_server(tmp_path, capsys):
    store = tmp_path / "calls.sqlite"
    with LoopbackServer(seed=2) as running:
        args = ["naming", "--speaker", "llm", "--base-url", running.base_url, "--model", "naming:noisy",
                "--rounds", "6", "--json", "--record", str(store)]
        assert main(args) == 0
    recorded = json.loads(capsys.readouterr().out)
    # the server is gone: a strict replay must not call anything
    assert main(["naming", "--speaker", "llm", "--model", "naming:noisy", "--rounds", "6",
                 "--json", "--replay", str(store)]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed == recorded and recorded["calls"] >= 12 * 6


def test_cli_llm_speaker_records_by_default_and_that_file_replays_with_zero_calls(server, tmp_path, monkeypatch,
                                                                                  capsys):
    monkeypatch.chdir(tmp_path)
    common = ["naming", "--speaker", "llm", "--base-url", server.base_url, "--model", "naming:noisy",
              "--rounds", "4", "--json"]
    before = server.stats()["requests"]
    assert main(common) == 0
    recorded = json.loads(capsys.readouterr().out)
    assert server.stats()["requests"] - before >= recorded["calls"] >= 12 * 4
    assert (tmp_path / "llm-mesa-calls.sqlite").is_file()       # the one default of every command
    before = server.stats()["requests"]
    assert main([*common, "--replay", "llm-mesa-calls.sqlite"]) == 0
    assert server.stats()["requests"] == before                  # zero calls
    assert json.loads(capsys.readouterr().out) == recorded


def test_cli_no_record_writes_no_file_and_replay_fill_pays_only_for_what_is_missing(server, tmp_path, monkeypatch,
                                                                                   capsys):
    monkeypatch.chdir(tmp_path)
    common = ["naming", "--speaker", "llm", "--base-url", server.base_url, "--model", "naming:echo", "--json"]
    assert main([*common, "--rounds", "2", "--no-record"]) == 0
    assert list(tmp_path.iterdir()) == []
    assert main([*common, "--rounds", "2", "--record", "calls.sqlite"]) == 0
    capsys.readouterr()
    before = server.stats()["requests"]
    assert main([*common, "--rounds", "3", "--replay", "calls.sqlite", "--replay-fill"]) == 0
    assert json.loads(capsys.readouterr().out)["calls"] == 36
    assert server.stats()["requests"] - before == 12 + 1             # round 3 only, and the pre-flight's test call
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".sqlite") == ["calls.sqlite"]


def test_cli_json_and_out(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["naming", "--n", "12", "--speaker", "noisy:p=0.2", "--rounds", "30", "--seed", "4",
                 "--json", "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["rounds"] == 30 and printed["seed"] == 4 and sum(printed["outcomes"].values()) == 360
    table = pd.read_parquet(out / "rounds.parquet")
    assert len(table) == 30 and table["agreement"].iloc[-1] == printed["agreement_final"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["parameters"]["alpha"] == 0.5 and manifest["prompt_template_hash"]


def test_cli_pairing_one_prints_the_agreement_of_its_basis_and_names_it(capsys):
    assert main(["naming", "--pairing", "one", "--alpha", "0.9", "--rounds", "300", "--seed", "2", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["agreement_basis"] == "latest" and printed["agreement_final"] > 2 / 12
    assert main(["naming", "--pairing", "one", "--alpha", "0.9", "--rounds", "300", "--seed", "2"]) == 0
    text = capsys.readouterr().out
    assert f"final {printed['agreement_final']:.3f}" in text and "basis latest" in text


def test_cli_speaker_spec_parameters_win_over_the_endpoint_options(server, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["naming", "--speaker", "llm:model=naming:echo,temperature=0.3,top_p=0.5", "--model", "naming:babble",
                 "--temperature", "0.9", "--base-url", server.base_url, "--rounds", "2", "--json",
                 "--record", str(tmp_path / "calls.sqlite"), "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["outcomes"]["schema"] == 24          # the spec's echo model spoke, not the option's babble
    (speaker,) = json.loads((out / "manifest.json").read_text())["speakers"].values()
    endpoint = speaker["endpoint"]
    assert (endpoint["model"], endpoint["temperature"], endpoint["top_p"]) == ("naming:echo", 0.3, 0.5)
    assert endpoint["max_tokens"] == 32 and endpoint["prompt_mode"] == "completion"   # the rest: the options


def test_cli_rule_speakers_print_null_tokens_to_convergence(capsys):
    assert main(["naming", "--speaker", "echo", "--rounds", "60", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["rounds_to_50"] is not None and printed["tokens_to_50"] is None
    assert printed["total_tokens_to_50"] is None


def test_cli_game_options_are_the_parameter_definitions():
    from llm_mesa.cli import build_parser
    from llm_mesa.models.naming.parameters import PARAMETERS

    parser = build_parser("naming")
    naming = parser._subparsers._group_actions[0].choices["naming"]
    options = {a.dest: a for a in naming._actions}
    assert set(PARAMETERS.names) <= set(options)  # every parameter, from the one definition
    for name in PARAMETERS.names:
        parameter, action = PARAMETERS[name], options[name]
        assert action.option_strings == [parameter.option]
        assert action.default in (parameter.default, False) and action.help.startswith(parameter.help)
    assert options["max_rounds"].option_strings == ["--rounds"]


@pytest.mark.parametrize("argv, fragment", [
    (["--n", "1"], "minimum 2"), (["--alpha", "1.5"], "alpha"), (["--mode", "xml"], "unknown mode 'xml'"),
    (["--speaker", "parrot"], "unknown naming policy"), (["--memory", "-2"], "memory=-2 is below its minimum 0"),
    (["--n", "2.5"], "n='2.5' is not a whole number"), (["--lexicon-size", "20000"], "lexicon_size=20000 is above"),
    (["--rounds", "0"], "max_rounds=0 is below its minimum 1"), (["--pairing", "ring"], "unknown pairing 'ring'"),
    (["--mode", "nl", "--memory", "5"], "use mode nl-sw"),
    (["--n", "1", "--speaker", "llm", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"], "minimum 2"),
    (["--speaker", "llm"], "--base-url"),
    (["--speaker", "llm", "--model", "m", "--replay-fill"], "--replay-fill needs --replay"),
    (["--speaker", "llm", "--model", "m", "--replay", "x.sqlite", "--no-record"], "--no-record excludes"),
    (["--speaker", "echo", "--replay", "x.sqlite"], "--speaker llm only"),
    (["--speaker", "llm:colour=red", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"], "unknown llm option(s) colour"),
    (["--speaker", "llm:temperature=5", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"], "temperature 5"),
    (["--speaker", "llm:temperature=hot", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"], "temperature"),
    (["--speaker", "llm:max_tokens=0", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"], "max_tokens"),
    (["--speaker", "llm:seed=x", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"], "seed"),
    (["--speaker", "llm:price=12", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"], "--price"),
])
def test_cli_bad_input_is_one_line_exit_2(argv, fragment, capsys):
    assert main(["naming", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and len(err.splitlines()) == 1
