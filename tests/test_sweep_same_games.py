"""Two condition names that are one game are refused before any call, in one line that names them.

A grid whose ``--set`` (or an experiment file's ``[parameters]``, or a caller's dictionary) makes two of
its conditions the same game would play that game twice under two names, and the second recording of a
call then stops the sweep after it has spent. The sweep refuses such a grid up front (exit 2), naming
the clashing conditions and a grid that keeps one name of each; conditions that differ in a parameter or
in their seeds are distinct games and play.
"""

from __future__ import annotations

import io
import json
import random
from contextlib import redirect_stderr, redirect_stdout

import pytest
from conftest import EXTRA_GAME

from llm_mesa import play
from llm_mesa.cli import main
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.registry import get_game
from llm_mesa.sweep import SweepError, read_sweep, run_sweep
from llm_mesa.sweep.grid import same_games


def cli(*argv) -> tuple[int, str, str]:
    err, out = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(out):
        status = main(["sweep", *map(str, argv)])
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(seed=3) as s:
        yield s


def test_the_issues_sweep_is_refused_before_any_call_naming_ba_none_with_er_none(server, tmp_path):
    server.reset()
    status, _, err = cli("--game", "consensus", "--seeds", "2", "--set", "topology=ba", "--policies", "llm",
                         "--model", "rule:majority-inertia", "--base-url", server.base_url, "--out", tmp_path / "s",
                         "--quiet")
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    named = lines[0].split("are one game")[0] + lines[0].split("(so are")[1].split(")")[0]
    assert "ba-none" in named and "er-none" in named and "ba-local" in named and "er-local" in named
    assert "--conditions ba-global,ba-local,ba-none," in lines[0]  # a grid that keeps one name of each
    assert server.stats()["requests"] == 0 and not (tmp_path / "s").exists()  # nothing paid, nothing written
    # the fix it names plays
    kept = lines[0].split("--conditions ")[1].split(",", 3)[:3]
    status, _, err = cli("--game", "consensus", "--seeds", "1", "--set", "topology=ba", "--set", "n=8",
                         "--set", "max_rounds=1", "--set", "baseline_permutations=0", "--conditions", ",".join(kept),
                         "--policies", "llm", "--model", "rule:majority-inertia", "--base-url", server.base_url,
                         "--out", tmp_path / "fixed", "--quiet")
    assert status == 0, err
    games = read_sweep(tmp_path / "fixed")
    assert len(games) == 3 and games["game_key"].is_unique


def test_a_dry_run_refuses_the_same_grid(tmp_path):
    status, out, err = cli("--game", "consensus", "--seeds", "2", "--set", "topology=er", "--dry-run")
    assert status == 2 and out == "" and "ba-none, " in err and " are one game" in err, err


def test_an_experiment_file_whose_parameters_make_two_conditions_one_game_is_refused(server, tmp_path):
    """The file's seeds derive from each condition's parameters: made equal, the seeds are equal too."""
    path = tmp_path / "clash.toml"
    path.write_text('game = "consensus"\nrepetitions = 2\nconditions = ["ba-none", "er-none", "ba-local"]\n'
                    '[parameters]\ntopology = "ba"\nn = 8\nmax_rounds = 1\n')
    server.reset()
    status, _, err = cli(path, "--base-url", server.base_url, "--policies", "llm:model=rule:majority-inertia",
                         "--out", tmp_path / "s", "--quiet")
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert "conditions ba-none and er-none are one game" in err and str(path) in err
    assert server.stats()["requests"] == 0 and not (tmp_path / "s").exists()
    path.write_text(path.read_text().replace('"er-none", ', ""))  # the fix: one name of each
    status, _, err = cli(path, "--base-url", server.base_url, "--policies", "llm:model=rule:majority-inertia",
                         "--set", "baseline_permutations=0", "--out", tmp_path / "s", "--quiet")
    assert status == 0, err
    assert read_sweep(tmp_path / "s")["game_key"].is_unique


def test_a_registered_game_with_a_default_spelled_out_is_the_same_game(server, tmp_path):
    """Any game: a condition that names a parameter's default and one that leaves it out are one game."""
    endpoint = f"llm:base_url={server.base_url},model={EXTRA_GAME}:follow"
    server.reset()
    with pytest.raises(SweepError, match=r"conditions ten and plain are one game") as refused:
        run_sweep({"ten": {"n": 10}, "plain": {}, "twelve": {"n": 12}}, endpoint, 2, tmp_path / "s",
                  game=EXTRA_GAME, check_endpoints=False)
    assert "--conditions ten,twelve" in str(refused.value)
    assert server.stats()["requests"] == 0 and not (tmp_path / "s").exists()


def test_the_same_parameters_with_other_seeds_are_other_games_and_play(server, tmp_path):
    endpoint = f"llm:base_url={server.base_url},model={EXTRA_GAME}:follow"
    result = run_sweep({"first": {"n": 6}, "again": {"n": 6}}, endpoint, {"first": [0, 1], "again": [2, 3]},
                       tmp_path / "s", game=EXTRA_GAME, model_options={"max_rounds": 2})
    assert len(result.results) == 4
    with pytest.raises(SweepError, match="conditions first and again are one game"):  # one seed in common: refused
        run_sweep({"first": {"n": 6}, "again": {"n": 6}}, endpoint, {"first": [0, 1], "again": [1, 5]},
                  tmp_path / "t", game=EXTRA_GAME, model_options={"max_rounds": 2})


def random_grid(rng: random.Random) -> tuple[dict, dict]:
    """Up to five conditions of the tiny game, each setting some parameters (defaults too), and their seeds."""
    conditions, seeds = {}, {}
    for name in rng.sample("abcde", rng.randint(0, 5)):
        conditions[name] = {k: rng.choice(v) for k, v in (("n", (10, 11, 12)), ("start_share", (0.5, 0.25)))
                            if rng.random() < 0.5}
        seeds[name] = rng.sample(range(5), rng.randint(1, 3))
    return conditions, seeds


def test_the_clashes_found_are_exactly_the_pairs_that_would_play_one_game():
    """Against the game's own key (what every call of a game carries), over 300 random grids: each name
    grouped under another shares a game key with it, and the names kept (one of each group) share none."""
    game = get_game(EXTRA_GAME)
    clashes = 0
    for case in range(300):
        conditions, seeds = random_grid(random.Random(case))
        keys = {name: {play.key(game, game.parameters.validate(p, complete=True), s) for s in seeds[name]}
                for name, p in conditions.items()}
        groups = same_games(game, conditions, seeds)
        grouped = [name for group in groups for name in group]
        assert len(grouped) == len(set(grouped)), case  # a name is in one group at most
        for group in groups:
            assert all(keys[group[0]] & keys[other] for other in group[1:]), case
        heads = [n for n in conditions if n not in {o for g in groups for o in g[1:]}]
        for i, a in enumerate(heads):
            for b in heads[i + 1:]:
                assert not keys[a] & keys[b], (case, a, b, groups)
        clashes += bool(groups)
    assert 30 < clashes < 270  # the grids exercise both answers


def test_the_refusal_keeps_the_manifest_of_an_earlier_sweep_untouched(server, tmp_path):
    """A resumed sweep whose new --set makes a clash is refused before its directory is touched."""
    out = tmp_path / "s"
    endpoint = f"llm:base_url={server.base_url},model={EXTRA_GAME}:follow"
    run_sweep({"six": {"n": 6}, "seven": {"n": 7}}, endpoint, 1, out, game=EXTRA_GAME, model_options={"max_rounds": 1})
    before = json.loads((out / "manifest.json").read_text())
    with pytest.raises(SweepError, match="are one game"):
        run_sweep({"six": {"n": 6}, "seven": {"n": 7}}, endpoint, 1, out, game=EXTRA_GAME,
                  model_options={"max_rounds": 1, "n": 6})
    assert json.loads((out / "manifest.json").read_text()) == before
