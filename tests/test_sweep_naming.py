"""SIGN sweeps through the same engine as the consensus game: grid axes, resume, one row per game."""

import json

import pandas as pd
import pytest

from llm_mesa.cli import main
from llm_mesa.models.naming.model import NamingModel
from llm_mesa.sweep import SweepError, read_sweep, run_sweep


def sweep(out, seeds=2, **kw):
    kw = {"axes": ["n=6,8", "alpha=0.5,0.9"], "model_options": {"max_rounds": 40}, **kw}
    return run_sweep("study", "echo", seeds, out, game="naming", **kw)


def test_a_naming_grid_plays_every_cell_and_equals_the_model_played_alone(tmp_path):
    result = sweep(tmp_path / "sign", tables=["rounds"])
    games = result.results
    assert result.played == 5 * 2 * 2 * 2 and len(games) == 40
    assert set(games["condition"]) == {f"{c}|n={n},alpha={a}" for c in ("nl", "nl-sw-5", "nl-sw-10", "schema-5", "schema-10")
                                      for n in (6, 8) for a in (0.5, 0.9)}
    row = games[(games.condition == "schema-10|n=8,alpha=0.9") & (games.seed == 1)].iloc[0]
    alone = NamingModel(n=8, mode="schema", memory=10, alpha=0.9, max_rounds=40, speaker="echo", rng=1).run().summary()
    assert row["agreement_final"] == alone["agreement_final"] and row["rounds_to_50"] == alone["rounds_to_50"]
    rounds = read_sweep(tmp_path / "sign", "rounds")
    assert len(rounds) == 40 * 40 and set(rounds.columns) >= {"condition", "policy", "seed", "agreement"}


def test_a_rerun_resumes_and_an_extended_grid_plays_only_the_new_games(tmp_path):
    first = sweep(tmp_path / "sign")
    again = sweep(tmp_path / "sign")
    assert again.played == 0 and again.skipped == first.played
    with pytest.raises(SweepError, match="new to it.*--extend"):
        sweep(tmp_path / "sign", seeds=3)
    more = sweep(tmp_path / "sign", seeds=3, extend=True)
    assert more.played == first.played // 2 and more.skipped == first.played
    merged = more.results.merge(first.results, on=["condition", "policy", "seed"], suffixes=("", "_first"))
    pd.testing.assert_series_equal(merged["agreement_final"], merged["agreement_final_first"], check_names=False)


def test_bad_axes_are_one_line_naming_the_fix(tmp_path, capsys):
    for axis, fragment in [("alpha=2", "above its maximum"), ("frob=1", "unknown parameter 'frob'"),
                           ("mode=xx", "unknown mode 'xx'"), ("n=", "NAME=V1,V2")]:
        assert main(["sweep", "--game", "naming", "--set", axis, "--out", str(tmp_path / "x")]) == 2
        err = capsys.readouterr().err.strip()
        assert fragment in err and len(err.splitlines()) == 1, err
    with pytest.raises(ValueError, match="nl has no memory"):
        run_sweep(None, "echo", 1, tmp_path / "y", game="naming", axes=["mode=nl", "memory=5"])


def test_the_cli_sweeps_the_naming_game_with_the_speaker_as_an_axis(tmp_path, capsys):
    assert main(["sweep", "--game", "naming", "--set", "n=6", "--set", "alpha=0.5,0.9", "--set", "speaker=echo,minimal",
                 "--seeds", "2", "--set", "max_rounds=20", "--out", str(tmp_path / "cli"), "--quiet"]) == 0
    printed = capsys.readouterr().out
    games = read_sweep(tmp_path / "cli")
    assert len(games) == 2 * 2 * 2 and set(games["policy"]) == {"echo", "minimal"}
    assert "8 games played" in printed and "final agreement" in printed


def test_a_mixed_population_splits_the_agents_between_two_models(tmp_path):
    from llm_mesa.loopback.server import LoopbackServer

    with LoopbackServer(seed=2) as server:
        echo, noisy = (f"llm:base_url={server.base_url},model=naming:{b}" for b in ("echo", "noisy?p=0.5"))
        result = run_sweep(["schema-5"], f"{echo} + {noisy}", 2, tmp_path / "mixed", game="naming",
                           model_options={"n": 12, "max_rounds": 10})
    games = result.results
    assert len(games) == 2 and games["model"].tolist() == ["naming:echo + naming:noisy?p=0.5"] * 2
    counts = [json.loads(c) for c in games["speaker_counts"]]
    assert all(sorted(c.values()) == [6, 6] and len(c) == 2 for c in counts)  # 6 + 6
    assert (games["calls"] > 0).all()


def test_a_population_is_refused_by_a_game_that_plays_one_policy_per_game(tmp_path):
    # the tiny outside game (installed by conftest) declares no populations
    with pytest.raises(SweepError, match="the tinyvote game plays one policy per game"):
        run_sweep([], "follow + follow", 1, tmp_path / "x", game="tinyvote")
