"""One set of recording options (--record, --no-record, --replay, --replay-fill) for every command."""

from __future__ import annotations

import argparse
import json

import pytest

from llm_mesa.cli import main
from llm_mesa.llm.recording import DEFAULT_RECORD, add_recording_arguments, recording_from_args, store_from_args
from llm_mesa.llm.store import StoreError
from llm_mesa.loopback.server import LoopbackServer


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_recording_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize("argv, expected", [
    ((), (DEFAULT_RECORD, "record")),
    (("--record", "a.sqlite"), ("a.sqlite", "record")),
    (("--no-record",), (None, "off")),
    (("--replay", "a.sqlite"), ("a.sqlite", "replay")),
    (("--replay", "a.sqlite", "--replay-fill"), ("a.sqlite", "replay-fill")),
])
def test_the_options_name_a_file_and_a_mode_recording_by_default(argv, expected):
    assert recording_from_args(_args(*argv)) == expected


@pytest.mark.parametrize("argv, fragment", [
    (("--replay-fill",), "--replay-fill needs --replay FILE"),
    (("--record", "a", "--replay", "b"), "exclude each other"),
    (("--no-record", "--record", "a"), "--no-record excludes --record"),
    (("--no-record", "--replay", "a"), "--no-record excludes --replay"),
])
def test_contradictory_options_are_refused_in_one_line(argv, fragment):
    with pytest.raises(StoreError, match=fragment):
        recording_from_args(_args(*argv))


def test_store_from_args_records_to_the_default_file_or_nowhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert store_from_args(_args("--no-record")) is None and not (tmp_path / DEFAULT_RECORD).exists()
    store = store_from_args(_args())
    assert store.mode == "record" and store.path.name == DEFAULT_RECORD
    store.close()
    with pytest.raises(StoreError, match="does not exist"):
        store_from_args(_args("--replay", "missing.sqlite"))


# --- llm-mesa sweep: the same options, as aliases of --store and --store-mode ------------------


def _sweep(server, out, *extra):
    return main(["sweep", "--game", "naming", "--conditions", "schema-5", "--policies", "llm", "--model", "naming:echo",
                 "--base-url", server.base_url, "--seeds", "1", "--set", "max_rounds=2", "--out", str(out), "--quiet", *extra])


def test_sweep_record_and_replay_are_aliases_of_store_and_store_mode(tmp_path, capsys):
    calls = tmp_path / "calls-elsewhere.sqlite"
    with LoopbackServer(seed=1) as server:
        assert _sweep(server, tmp_path / "recorded", "--record", str(calls)) == 0
        paid = server.stats()["requests"]
        assert paid == 24 + 1 and calls.is_file()  # the games, and the pre-flight's 1-token test call
        assert not (tmp_path / "recorded" / "calls.sqlite").exists()
        assert _sweep(server, tmp_path / "replayed", "--replay", str(calls)) == 0
        assert server.stats()["requests"] == paid                  # zero calls
        assert _sweep(server, tmp_path / "unrecorded", "--no-record") == 0
        assert not (tmp_path / "unrecorded" / "calls.sqlite").exists()
    manifests = {name: json.loads((tmp_path / name / "manifest.json").read_text())["store"]
                 for name in ("recorded", "replayed", "unrecorded")}
    assert manifests["recorded"]["mode"] == "record" and manifests["replayed"]["mode"] == "replay"
    assert manifests["unrecorded"]["mode"] == "off"
    capsys.readouterr()


@pytest.mark.parametrize("extra, fragment", [
    (["--replay", "x.sqlite", "--store-mode", "record"], "--store-mode record contradicts --replay"),
    (["--record", "a.sqlite", "--store", "b.sqlite"], "different files"),
    (["--no-record", "--store", "b.sqlite"], "--no-record excludes --store"),
    (["--replay-fill"], "--replay-fill needs --replay FILE"),
])
def test_sweep_recording_aliases_that_contradict_the_store_options_are_one_line_exit_2(tmp_path, capsys, extra,
                                                                                         fragment):
    argv = ["sweep", "--game", "naming", "--conditions", "schema-5", "--policies", "echo", "--seeds", "1",
            "--out", str(tmp_path / "out"), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()
