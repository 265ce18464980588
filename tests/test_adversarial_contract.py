"""The game contract held on every path: defaults within their bounds, a model that never stops,
summary values of JSON's types, and ``--json`` that is JSON.

Each table's games are registered by the test itself (``register_game``), built on the
``tinyvote`` game the suite installs from docs/write-a-game.md, so the core is tested on
games it never saw. Every row goes through the game's own command and a sweep.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from conftest import EXTRA_GAME

from llm_mesa import Parameter, ParameterSet, Policy, PolicyCatalog, declared, make_policy, register_policy
from llm_mesa.cli import main
from llm_mesa.games import STEP_LIMIT, GameError
from llm_mesa.registry import get_game, register_game, unregister_game


def tiny():
    """The class of the guide's game (installed for the session, so looked up when a test runs)."""
    return type(get_game(EXTRA_GAME))


def run(capsys, *argv) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def error_lines(err: str) -> list[str]:
    return [line for line in err.strip().splitlines() if line]


def registered(name: str, **members):
    """A game of the test's own, a tinyvote with ``members`` replaced, with a policy of its own."""
    @register_policy("follow", name, "the majority of three")
    class Follow(Policy):
        def decide(self, obs, rng):
            votes = [obs.state, *obs.neighbours]
            return max(("a", "b"), key=votes.count)

    def build(self, parameters, policy, seed):
        return tiny().build(self, parameters, make_policy(policy, self.name), seed)

    own = {"name": name, "build": build, "policies": PolicyCatalog()}  # its policies: the one registered here
    game = type(f"Game_{name}", (tiny(),), {**own, **members})()
    return register_game(game)


# -- defaults against their own bounds, at registration --------------------------------------------

BAD_DEFAULTS = [
    ("below its minimum", Parameter("n", int, 2, "agents", low=3, high=100), "below its minimum"),
    ("above its maximum", Parameter("n", int, 101, "agents", low=3, high=100), "above its maximum"),
    ("not among its choices", Parameter("mode", str, "c", "mode", choices=("a", "b")), "unknown mode"),
    ("None where none is allowed", Parameter("share", float, None, "share", low=0, high=1), "needs a value"),
    ("of another type", Parameter("n", int, "ten", "agents", low=3), "is not a whole number"),
    ("not finite", Parameter("share", float, math.inf, "share"), "is not a number"),
]


@pytest.mark.parametrize("parameter, says", [r[1:] for r in BAD_DEFAULTS], ids=[r[0] for r in BAD_DEFAULTS])
def test_a_default_outside_its_own_bounds_is_refused_at_registration(parameter, says):
    others = [p for p in tiny().parameters if p.name != parameter.name]
    with pytest.raises(GameError, match=f"parameter {parameter.name} has a default its own definition refuses.*{says}"):
        registered("baddefault", parameters=ParameterSet.of(parameter, *others))
    with pytest.raises(GameError, match="unknown game"):
        get_game("baddefault")  # never registered: no path can play it


def test_a_second_round_limit_parameter_is_refused():
    with pytest.raises(ValueError, match="at most one whole-number parameter may be the round limit"):
        ParameterSet.of(Parameter("a", int, 1, "a", round_limit=True), Parameter("b", int, 1, "b", round_limit=True))


# -- a model that never stops ---------------------------------------------------------------------

def never_stops(build_model):
    """``build`` whose model plays its rounds but never lets ``running`` fall."""
    def build(self, parameters, policy, seed):
        model = build_model(self, parameters, make_policy(policy, self.name), seed)
        played = model.step  # Mesa keeps the step it wraps on the instance

        def step():
            played()
            model.running = True

        model.step = step
        return model
    return build


#: (id, round limit parameter or None (the core's STEP_LIMIT), rounds asked, steps the error names)
RUNAWAY = [
    ("its round limit, from the command", "max_rounds", 7, "8 steps (its round limit max_rounds=7, and one step more)"),
    ("its round limit at its default", "max_rounds", None, "21 steps (its round limit max_rounds=20"),
    ("no round limit declared: the core's", None, None, "500 steps (llm-mesa's limit"),
]


@pytest.mark.parametrize("limit, rounds, says", [r[1:] for r in RUNAWAY], ids=[r[0] for r in RUNAWAY])
def test_a_model_that_never_stops_is_stopped_at_its_bound_with_exit_3(limit, rounds, says, capsys, tmp_path,
                                                                     monkeypatch):
    import llm_mesa.play

    assert STEP_LIMIT == 100_000  # the documented core limit; lowered here so the row plays in milliseconds
    monkeypatch.setattr(llm_mesa.play, "STEP_LIMIT", 500)
    parameters = ParameterSet.of(*(Parameter(p.name, p.kind, p.default, p.help, low=p.low, high=p.high,
                                             round_limit=p.name == limit) for p in tiny().parameters))
    name = f"endless{'-limited' if limit else ''}"
    registered(name, parameters=parameters, build=never_stops(tiny().build))
    try:
        given = ["--max-rounds", rounds] if rounds else []
        status, out, err = run(capsys, name, "--n", 6, *given)
        assert status == 3 and len(error_lines(err)) == 1 and says in err and "never stops" in err, (out, err)
        sweep = ["sweep", "--game", name, "--seeds", 1, "--quiet", "--out", tmp_path / "s"]
        status, out, err = run(capsys, *sweep, *(["--set", f"max_rounds={rounds}"] if rounds else []))
        assert status == 3 and "Traceback" not in err and says in err, err
    finally:
        unregister_game(name)


def test_a_model_that_stops_at_its_limit_is_not_taken_for_a_runaway(capsys):
    status, out, err = run(capsys, EXTRA_GAME, "--n", 40, "--start-share", 0.5, "--max-rounds", 1, "--json")
    assert status == 0 and json.loads(out)["rounds"] == 1, err


# -- summary values of JSON's types -------------------------------------------------------------

class Opaque:
    def __repr__(self):
        return "<Opaque>"


#: (id, a value the game puts in its summary row, None: refused / else what the row holds)
VALUES = [
    ("a set", {1, 2}, None),
    ("an object", Opaque(), None),
    ("bytes", b"\x00\x01", None),
    ("a complex number", 1 + 2j, None),
    ("a mapping with whole-number keys", {1: "a"}, None),
    ("a set inside a list", [1, {2}], None),
    ("nested 40 deep", json.loads("[" * 40 + "]" * 40), None),
    ("a numpy whole number", np.int64(7), 7),
    ("a numpy real number", np.float32(0.5), 0.5),
    ("a numpy true", np.bool_(True), True),
    ("a tuple", (1, "a"), '[1, "a"]'),
    ("a list of mappings", [{"k": 1}], '[{"k": 1}]'),
    ("pandas' missing value", pd.NA, None.__class__),
]


def with_value(value):
    """The guide's extensions, with a summary row that is the guide's and one ``extra`` value."""
    def summary(game, model):
        return {**declared.summary_row(get_game(EXTRA_GAME), model), "extra": value}
    return replace(tiny().extensions, summary=summary)


@pytest.mark.parametrize("value, holds", [r[1:] for r in VALUES], ids=[r[0] for r in VALUES])
def test_a_summary_value_outside_json_types_is_refused_in_one_line_naming_its_key(value, holds, capsys, tmp_path):
    registered("valued", extensions=with_value(value))
    try:
        status, out, err = run(capsys, "valued", "--n", 6, "--max-rounds", 2, "--json")
        sweep = ["sweep", "--game", "valued", "--seeds", 2, "--set", "max_rounds=2", "--quiet", "--out", tmp_path / "s"]
        if holds is None:
            assert status == 2 and len(error_lines(err)) == 1 and "value of 'extra'" in err, err
            status, out, err = run(capsys, *sweep)
            assert status == 2 and "value of 'extra'" in err and "Traceback" not in err and "Arrow" not in err, err
            assert not (tmp_path / "s").exists() or not list((tmp_path / "s").glob("*.parquet"))  # nothing written
            return
        assert status == 0, err
        shown = json.loads(out)["extra"]
        status, out, err = run(capsys, *sweep)
        assert status == 0, err
        from llm_mesa.sweep import read_sweep

        kept = read_sweep(tmp_path / "s")["extra"].tolist()
        if holds is None.__class__:
            assert shown is None and all(pd.isna(v) for v in kept)
        else:
            assert json.dumps(shown) == (holds if isinstance(holds, str) else json.dumps(holds))
            assert kept == [holds, holds]  # lists are kept as their JSON text, numbers as numbers
    finally:
        unregister_game("valued")


# -- --json is JSON --------------------------------------------------------------------------------

def strict_loads(text: str):
    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, np.float64("nan")], ids=["NaN", "inf", "-inf", "np.nan"])
def test_json_output_prints_non_finite_numbers_as_null(value, capsys):
    registered("nonfinite", extensions=with_value(value))
    try:
        status, out, err = run(capsys, "nonfinite", "--n", 6, "--max-rounds", 2, "--json")
        assert status == 0 and strict_loads(out)["extra"] is None, err
    finally:
        unregister_game("nonfinite")


@pytest.mark.parametrize("command", [
    ["consensus", "--n", 8, "--topology", "caveman", "--max-rounds", 1, "--baseline-permutations", 0, "--json"],
    ["naming", "--n", 4, "--rounds", 2, "--json"],
], ids=["consensus", "naming"])
def test_the_games_own_json_is_json(command, capsys):
    status, out, err = run(capsys, *command)
    row = strict_loads(out)  # consensus without baseline permutations has a NaN baseline: null here
    assert status == 0 and row, err


def test_analyze_json_is_json_when_a_measure_is_not_finite(capsys, tmp_path):
    registered("nonfinite-sweep", extensions=with_value(math.inf))  # its mean is infinite, its SD NaN
    try:
        status, _, err = run(capsys, "sweep", "--game", "nonfinite-sweep", "--seeds", 4, "--set", "max_rounds=2",
                             "--quiet", "--out", tmp_path / "s")
        assert status == 0, err
        status, out, err = run(capsys, "analyze", tmp_path / "s", "--json", "--no-cache")
        assert status == 0, err
        report = strict_loads(out)
        assert report["game"] == "nonfinite-sweep" and "null" in out
    finally:
        unregister_game("nonfinite-sweep")
