"""The edge where outside data becomes trusted: every bound, one row each, both ways (refused and kept)."""

from __future__ import annotations

import json

import pytest

from llm_mesa.boundary import MAX_DEPTH, Malformed, loads_json

REFUSED = [
    ("lone surrogate", '{"a": "\\ud800"}', "lone surrogate"),
    ("lone low surrogate in a key", '{"\\udc00": 1}', "lone surrogate"),
    ("overflowing exponent", '{"a": 1e999}', "not finite"),
    ("400 digits", '{"a": 1' + "0" * 400 + '.5}', "not finite"),
    ("NaN", '{"a": NaN}', "not finite"),
    ("-Infinity", "[-Infinity]", "not finite"),
    ("nested 200,000 deep", "[" * 200_000 + "]" * 200_000, "nested deeper"),
    ("nested one level too deep", "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested deeper"),
    ("bytes not UTF-8", b'{"a": "\xff"}', "not valid UTF-8"),
    ("not JSON", "<html>", "not JSON"),
]

KEPT = [
    ("a pair of surrogates is one character", '{"a": "\\ud83d\\ude00"}', {"a": "\U0001F600"}),
    ("as deep as allowed", "[" * MAX_DEPTH + "]" * MAX_DEPTH, json.loads("[" * MAX_DEPTH + "]" * MAX_DEPTH)),
    ("brackets inside text are text", json.dumps({"m": "[" * 500}), {"m": "[" * 500}),
    ("large but finite", '{"a": 1e300, "n": 123456789012345678901234567890}',
     {"a": 1e300, "n": 123456789012345678901234567890}),
]


@pytest.mark.parametrize("name, data, reason", REFUSED, ids=[row[0] for row in REFUSED])
def test_outside_json_breaking_a_bound_is_refused_with_its_reason(name, data, reason):
    with pytest.raises(Malformed, match=reason):
        loads_json(data)


@pytest.mark.parametrize("name, data, value", KEPT, ids=[row[0] for row in KEPT])
def test_outside_json_within_the_bounds_is_kept_as_it_is(name, data, value):
    assert loads_json(data) == value


def test_our_own_files_may_hold_nan_but_no_deeper_tree():
    assert loads_json('{"p": NaN}', finite=False)["p"] != 0  # NaN: a summary's missing figure
    with pytest.raises(Malformed, match="nested deeper"):
        loads_json("[" * 100 + "]" * 100, finite=False)


def test_a_body_over_its_size_is_refused_before_it_is_parsed():
    with pytest.raises(Malformed, match="above the limit"):
        loads_json(b"[" + b"0," * 1000 + b"0]", max_bytes=100)
