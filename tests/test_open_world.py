"""Every command works for a game from outside the tree: ``tinyvote``, installed for the test run.

The game (written by ``docs/write-a-game.md``) uses only the public API and brings no
command, statistics, figures or view of its own: what it gets is the core's generic
subcommand, sweep, dry run, analysis and report. Theory checks the numbers: on a
ring, the majority of three keeps every run of two equal states, so ``follow``
never changes a state after round 1.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from conftest import EXTRA_GAME, install_extra_game

from llm_mesa import declared
from llm_mesa.cli import main
from llm_mesa.games import GameError
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.registry import game_names, get_game, register_game, unregister_game
from llm_mesa.sweep import read_sweep


def cli(capsys, *argv) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_the_outside_game_is_installed_and_found_by_its_entry_point():
    assert EXTRA_GAME in game_names() and get_game(EXTRA_GAME).name == EXTRA_GAME


def test_its_generic_subcommand_plays_one_game(capsys, tmp_path):
    status, out, err = cli(capsys, EXTRA_GAME, "--n", 9, "--max-rounds", 6, "--seed", 4, "--policy", "follow", "--json")
    assert status == 0, err
    row = json.loads(out)
    model = get_game(EXTRA_GAME).build({"n": 9, "max_rounds": 6}, "follow", 4)
    start = [v.state for v in model.voters]
    rounds = declared.table(get_game(EXTRA_GAME), model, "rounds")
    assert rounds["round"].tolist() == [0] and rounds["share_a"].iloc[0] == start.count("a") / 9
    while model.running:
        model.step()
    assert row["share_a"] == pytest.approx(sum(v.state == "a" for v in model.voters) / 9)
    assert row["agreed"] == (len({v.state for v in model.voters}) == 1) and row["seed"] == 4
    status, out, _ = cli(capsys, EXTRA_GAME, "--n", 9, "--seed", 4, "--out", tmp_path / "run")
    assert status == 0 and "agreed" in out
    saved = pd.read_parquet(tmp_path / "run" / "rounds.parquet")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert saved["round"].iloc[0] == 0 and manifest["kind"] == EXTRA_GAME and manifest["parameters"]["n"] == 9


def test_follow_never_moves_an_agent_in_a_run_of_two():
    """Theory: an agent with a neighbour on its state keeps it (the two of them are a majority of three);
    an isolated agent takes its neighbours' state."""
    moved = kept = 0
    for seed in range(60):
        model = get_game(EXTRA_GAME).build({"n": 11, "max_rounds": 30}, "follow", seed)
        while model.running:
            before = [v.state for v in model.voters]
            model.step()
            for i, v in enumerate(model.voters):
                left, right = before[i - 1], before[(i + 1) % 11]
                if before[i] in (left, right):
                    assert v.state == before[i], (seed, i)
                    kept += 1
                else:
                    assert v.state == left, (seed, i)
                    moved += 1
    assert moved > 0 and kept > 0  # both cases were met


@pytest.mark.parametrize("argv, fragment", [
    (["--n", "2"], "n=2 is below its minimum 3"),
    (["--policy", "oracle"], "unknown tinyvote policy 'oracle'; choose one of"),
    (["--policy", "llm"], "no endpoint given"),
    (["--out", "{tmp}/taken"], "already exists"),
])
def test_bad_input_to_its_subcommand_is_one_line(capsys, tmp_path, argv, fragment):
    (tmp_path / "taken").write_text("a file")
    try:
        status = main([EXTRA_GAME, *(a.replace("{tmp}", str(tmp_path)) for a in argv)])
    except SystemExit as exc:  # argparse's own checks (the parameter's type and bounds)
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2 and len(err.strip().splitlines()) == 1 and fragment in err, err


def test_its_llm_policy_records_and_replays_exactly(capsys, tmp_path):
    store = tmp_path / "calls.sqlite"
    with LoopbackServer(seed=3) as server:
        status, out, err = cli(capsys, EXTRA_GAME, "--policy", "llm", "--base-url", server.base_url, "--model",
                               f"{EXTRA_GAME}:follow", "--n", 7, "--seed", 2, "--record", store, "--json")
        assert status == 0, err
        calls = server.stats()["answered"]
    live = json.loads(out)
    rule = json.loads(cli(capsys, EXTRA_GAME, "--n", 7, "--seed", 2, "--json")[1])
    assert live["share_a"] == rule["share_a"] and live["calls"] == calls == 7 * live["rounds"] > 0
    status, out, err = cli(capsys, EXTRA_GAME, "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model",
                           f"{EXTRA_GAME}:follow", "--n", 7, "--seed", 2, "--replay", store, "--json")
    assert status == 0, err
    replayed = json.loads(out)
    assert replayed["replayed_calls"] == replayed["calls"] == live["calls"]
    assert {k: v for k, v in replayed.items() if k != "replayed_calls"} == \
        {k: v for k, v in live.items() if k != "replayed_calls"}


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    out = tmp_path_factory.mktemp("open") / "sweep"
    assert main(["sweep", "--game", EXTRA_GAME, "--set", "n=8,12", "--set", "max_rounds=10", "--policies",
                 "follow;coin", "--seeds", "6", "--tables", "rounds", "--out", str(out), "--quiet"]) == 0
    return out


def test_it_sweeps_with_axes_and_fixed_parameters(swept):
    games = read_sweep(swept)
    assert len(games) == 2 * 2 * 6 and set(games["condition"]) == {"n=8", "n=12"}
    assert (games["rounds"] <= 10).all()
    rounds = read_sweep(swept, "rounds")
    assert set(rounds.groupby(["condition", "policy", "seed"]).size().index) == \
        set(zip(games["condition"], games["policy"], games["seed"]))


def test_it_is_analysed_and_reported_with_the_generic_fallbacks(swept, capsys, tmp_path):
    status, out, err = cli(capsys, "analyze", swept, "--json")
    assert status == 0, err
    report = json.loads(out)
    games = read_sweep(swept)
    assert report["game"] == EXTRA_GAME and "agreed" in report["summaries"]["boolean"]
    cell = next(r for r in report["summaries"]["rows"]
                if r["measure"] == "share_a" and r["condition"] == "n=8" and r["model"] == "coin")
    mine = games[(games.condition == "n=8") & (games.policy == "coin")]["share_a"]
    assert cell["mean"] == pytest.approx(mine.mean()) and cell["n"] == 6
    status, out, err = cli(capsys, "report", swept, "--out", tmp_path / "r.html")
    assert status == 0, err
    page = (tmp_path / "r.html").read_text()
    import base64
    import re

    figures = {alt: base64.b64decode(data).decode() for alt, data in
               re.findall(r'<img alt="([^"]+)" src="data:image/svg\+xml;base64,([^"]+)"', page)}
    drawn = " ".join(figures)  # each figure is named by the measure's declared label
    assert all(word in drawn for word in ("share holding a", "everyone agrees", "rounds"))
    assert all("<svg" in svg for svg in figures.values())
    assert "src=\"http" not in page and "href=\"http" not in page  # the page loads nothing


def test_a_dry_run_with_an_llm_policy_estimates_from_the_game(capsys):
    status, out, err = cli(capsys, "sweep", "--game", EXTRA_GAME, "--set", "n=5,9", "--set", "max_rounds=4",
                           "--policies", "llm;follow", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                           "--seeds", "3", "--dry-run")
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0] == "games: 12" and "LLM games: 6" in out
    assert f"calls: at most {3 * (5 + 9) * 4:,} (a game may stop early)" in out


def test_without_game_several_installed_is_one_line_listing_them(capsys, tmp_path):
    status, _, err = cli(capsys, "sweep", "--seeds", "1", "--out", tmp_path / "x")
    assert status == 2 and len(err.strip().splitlines()) == 1 and EXTRA_GAME in err and "--game" in err


def test_help_lists_the_outside_game(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert EXTRA_GAME in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    assert EXTRA_GAME in capsys.readouterr().out


def test_two_games_registered_with_one_name_disable_that_name_alone(tmp_path):
    site = install_extra_game(tmp_path / "site")
    clash = site / "clash-0.1.dist-info"
    clash.mkdir()
    (clash / "METADATA").write_text("Metadata-Version: 2.1\nName: clash\nVersion: 0.1\n")
    (clash / "entry_points.txt").write_text(f"[llm_mesa.games]\n{EXTRA_GAME} = os:path\n")
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-m", "llm_mesa.cli", "sweep", "--help"], capture_output=True,
                            text=True, env=env)
    assert result.returncode == 0 and len(result.stderr.strip().splitlines()) == 1  # one warning; the rest works
    assert f"the game name '{EXTRA_GAME}' is claimed by 2 entry points" in result.stderr
    assert "consensus" in result.stdout
    asked = subprocess.run([sys.executable, "-m", "llm_mesa.cli", EXTRA_GAME, "--help"], capture_output=True,
                           text=True, env=env)
    assert asked.returncode == 2 and len(asked.stderr.strip().splitlines()) == 1 and "clash 0.1" in asked.stderr
    with pytest.raises(GameError, match="registered already"):
        register_game(get_game(EXTRA_GAME))


def test_a_game_registered_in_a_script_is_played_like_an_installed_one(tmp_path):
    from llm_mesa import Policy, make_policy, register_policy
    from llm_mesa.sweep import run_sweep

    @register_policy("stay", "scripted_vote", "keeps its state")
    class Stay(Policy):
        def decide(self, obs, rng):
            return obs.state

    class ScriptedVote(type(get_game(EXTRA_GAME))):
        name = "scripted_vote"

        def build(self, parameters, policy, seed):
            return super().build(parameters, make_policy(policy, self.name), seed)

    register_game(ScriptedVote())
    try:
        result = run_sweep(None, "stay", 3, tmp_path / "s", game="scripted_vote", model_options={"max_rounds": 4})
        assert result.played == 3 and set(result.results["policy"]) == {"stay"}
        games = result.results
        assert (games["rounds"] == games["agreed"].map({True: 0, False: 4})).all()  # nobody ever moves
    finally:
        unregister_game("scripted_vote")
