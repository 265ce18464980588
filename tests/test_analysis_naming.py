"""`llm-mesa analyze` on a naming sweep: its numbers are naming_summary's over the games table."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from llm_mesa.analysis import game_analysis
from llm_mesa.analysis.sweep_data import SweepData, open_sweep
from llm_mesa.registry import get_game
from llm_mesa.sweep import read_sweep, run_sweep

MEASURES = [f"{prefix}{t}" for prefix in ("rounds_to_", "tokens_to_", "total_tokens_to_") for t in (50, 60, 70)]


def analyze(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "llm_mesa.cli", "analyze", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def naming_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("naming") / "sweep"
    # two speakers, one of which (minimal) does not always reach 70 % in 30 rounds
    run_sweep(None, "echo;minimal", 3, out, game="naming", axes=["n=6,8"], model_options={"max_rounds": 30})
    return out


def test_json_is_naming_summary_per_condition_and_policy(naming_dir, tmp_path):
    from llm_mesa.models.naming.analysis import naming_summary

    target = tmp_path / "naming.json"
    done = analyze(naming_dir, "--json", "--out", target)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert json.loads(target.read_text()) == report
    assert report["game"] == "naming" and report["games"] == 12
    assert report["conditions"] == ["n=6", "n=8"] and report["policies"] == ["echo", "minimal"]
    assert report["thresholds"] == [50, 60, 70] and report["tokens_spent"] == 0

    games = read_sweep(naming_dir)
    direct = naming_summary(games, ["condition", "policy"], tokens_cols=MEASURES).set_index(["condition", "policy"])
    rows = {(r["condition"], r["policy"]): r for r in report["summary"]}
    assert list(rows) == [("n=6", "echo"), ("n=6", "minimal"), ("n=8", "echo"), ("n=8", "minimal")]
    for key, row in rows.items():
        expected = direct.loc[key]
        assert row["n_seeds"] == expected["n_seeds"] == 3
        for column, value in expected.items():
            if column == "n_seeds":
                continue
            assert (row[column] is None) if pd.isna(value) else row[column] == pytest.approx(value), column
        # mean +- SD over seeds, by hand, for the final agreement and the rounds to 50 %
        sub = games[(games["condition"] == key[0]) & (games["policy"] == key[1])]
        assert row["agreement_final_mean"] == pytest.approx(sub["agreement_final"].mean())
        assert row["agreement_final_sd"] == pytest.approx(sub["agreement_final"].std(ddof=1))
        assert row["rounds_to_50_reached"] == sub["rounds_to_50"].notna().sum()
    # the minimal speaker does not always get to 70 %: counted, and left out of the mean
    assert any(r["rounds_to_70_reached"] < 3 for r in report["summary"])


def test_text_report_shows_mean_sd_and_reached_counts(naming_dir):
    done = analyze(naming_dir)
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert text.startswith(f"sweep {naming_dir}: 12 games of the naming game")
    report = json.loads(analyze(naming_dir, "--json").stdout)
    first = report["summary"][0]
    agreement = f"{first['agreement_final_mean']:.3f} ± {first['agreement_final_sd']:.3f}"
    block = text.split("final agreement (mean ± SD over seeds):\n")[1].split("\n\n")[0]
    assert agreement in block.splitlines()[2]
    rounds = text.split("rounds to 50/60/70 % agreement")[1].split("\n\n")[0]
    assert f"{first['rounds_to_50_mean']:.1f} ± {first['rounds_to_50_sd']:.1f} (3/3)" in rounds.splitlines()[3]
    assert "tokens to 50/60/70 % agreement: none spent (no LLM speaker)" in text


def test_tokens_are_reported_when_speakers_spend_them(naming_dir):
    game = get_game("naming")
    sweep = open_sweep(naming_dir)
    games = sweep.games.copy()
    rng = np.random.default_rng(0)
    for column in MEASURES[3:]:  # tokens where the threshold was reached (rule speakers spend none)
        reached = games["rounds_to_" + column.rsplit("_", 1)[1]].notna()
        games[column] = np.where(reached, rng.integers(100, 1000, len(games)).astype(float), np.nan)
    games["total_tokens"] = 5000
    report = game_analysis.analyze(game, SweepData(sweep.path, sweep.manifest, games), {})
    text = game_analysis.format_report(game, report)
    assert "none spent" not in text
    assert "completion tokens to 50/60/70 % agreement" in text
    assert "prompt + completion tokens to 50/60/70 % agreement" in text
    row = report["summary"][0]
    assert row["tokens_to_50_mean"] == pytest.approx(
        games[(games["condition"] == "n=6") & (games["policy"] == "echo")]["tokens_to_50"].mean())


def test_an_option_of_another_games_analysis_is_bad_input(naming_dir):
    done = analyze(naming_dir, "--formula", "consensus ~ C(n)")
    assert done.returncode == 2 and done.stdout == ""
    assert "--formula is an option of the analysis of consensus sweeps" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
