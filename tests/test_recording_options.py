"""One set of recording options (--record, --no-record, --replay, --replay-fill) for every command."""

from __future__ import annotations

import argparse

import pytest

from llm_mesa.llm.recording import DEFAULT_RECORD, add_recording_arguments, recording_from_args, store_from_args
from llm_mesa.llm.store import StoreError


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
