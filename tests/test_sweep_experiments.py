"""llm-mesa sweep FILE: the shipped studies, cut short, against the loopback stand-in; dry runs; budgets."""

import json
from pathlib import Path

import pytest

from llm_mesa.cli import main
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.sweep import read_sweep
from llm_mesa.sweep.experiment import load_experiment

EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments"


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(seed=5) as s:
        yield s


def sweep(capsys, *argv):
    status = main(["sweep", *map(str, argv), "--quiet"])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_the_sign_study_cut_short_runs_against_the_stand_in_with_the_files_seeds(server, capsys, tmp_path):
    out = tmp_path / "sign"
    status, printed, err = sweep(capsys, EXPERIMENTS / "sign-study.toml", "--out", out, "--repetitions", "1",
                                 "--set", "max_rounds=5", "--base-url", server.base_url,
                                 "--policies", "llm:model=naming:noisy?p=0.2")
    assert status == 0, err
    games = read_sweep(out)
    experiment = load_experiment(EXPERIMENTS / "sign-study.toml")
    assert len(games) == len(experiment.conditions) == 30
    expected = {(name, experiment.seeds()[name][0]) for name in experiment.conditions}  # seeds as the file derives them
    assert set(zip(games["condition"], games["seed"])) == expected
    assert (games["calls"] > 0).all() and "final agreement" in printed
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["experiment"]["name"] == "sign-study" and len(manifest["experiment"]["sha256"]) == 64
    assert manifest["endpoints"]["llm:model=naming:noisy?p=0.2"]["prompt_mode"] == "completion"  # the file's [llm]


def test_the_consensus_study_and_its_rule_baseline_play_the_same_graphs(server, capsys, tmp_path):
    common = ["--repetitions", "1", "--set", "max_rounds=3", "--set", "baseline_permutations=20"]
    status, _, err = sweep(capsys, EXPERIMENTS / "consensus-study.toml", "--out", tmp_path / "llm", *common,
                           "--base-url", server.base_url, "--policies", "llm:model=rule:majority-inertia",
                           "--games-in-flight", "4")
    assert status == 0, err
    status, _, err = sweep(capsys, EXPERIMENTS / "consensus-study-rules.toml", "--out", tmp_path / "rules", *common,
                           "--policies", "mi-0.2")
    assert status == 0, err
    llm, rules = read_sweep(tmp_path / "llm"), read_sweep(tmp_path / "rules")
    assert len(llm) == len(rules) == 11
    assert sorted(zip(llm["condition"], llm["seed"])) == sorted(zip(rules["condition"], rules["seed"]))
    for table in ("llm", "rules"):
        edges = read_sweep(tmp_path / table, "edges")
        assert len(edges) > 0
    e_llm, e_rules = (read_sweep(tmp_path / t, "edges").sort_values(["condition", "source", "target"]) for t in ("llm", "rules"))
    assert e_llm[["condition", "seed", "source", "target"]].values.tolist() == \
        e_rules[["condition", "seed", "source", "target"]].values.tolist()  # paired: identical graphs


def test_a_dry_run_contacts_nothing_and_counts_the_games(capsys, tmp_path):
    status, printed, err = sweep(capsys, EXPERIMENTS / "consensus-study.toml", "--dry-run", "--price", "0.1,0.3",
                                 "--base-url", "http://127.0.0.1:9/v1")
    assert status == 0, err
    lines = printed.splitlines()
    assert lines[0] == "games: 1,980"
    assert "calls: at most 3,564,000" in printed and "cost: at most" in printed and "time: about" in printed
    assert not list(tmp_path.iterdir())


def test_a_budget_stops_the_sweep_resumably(server, capsys, tmp_path):
    out = tmp_path / "budget"
    argv = [EXPERIMENTS / "sign-study.toml", "--out", out, "--repetitions", "1", "--set", "max_rounds=3",
            "--base-url", server.base_url, "--policies", "llm:model=naming:echo", "--games-in-flight", "1"]
    status, _, err = sweep(capsys, *argv, "--max-tokens", "2000")
    assert status == 4 and "budget reached" in err and "rerun" in err
    kept = read_sweep(out)
    assert 0 < len(kept) < 30
    status, _, err = sweep(capsys, *argv)
    assert status == 0, err
    done = read_sweep(out)
    assert len(done) == 30 and set(kept["condition"]) <= set(done["condition"])


@pytest.mark.parametrize("argv, fragment", [
    (["--conditions", "study"], "--conditions and an experiment file exclude each other"),
    (["--game", "consensus"], "contradicts the file's game"),
    (["--repetitions", "0"], "--repetitions must be a whole number from 1 to"),
    (["--max-cost", "-1"], "--max-cost must be a positive finite number"),
    (["--max-tokens", "nan"], "--max-tokens must be a positive finite number"),
])
def test_bad_options_with_a_file_are_one_line(capsys, tmp_path, argv, fragment):
    status, _, err = sweep(capsys, EXPERIMENTS / "sign-rules.toml", "--out", tmp_path / "x", *argv)
    assert status == 2 and fragment in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x").exists()


def test_the_mixed_sign_population_runs_from_its_file(server, capsys, tmp_path):
    out = tmp_path / "mixed"
    status, printed, err = sweep(capsys, EXPERIMENTS / "sign-mixed.toml", "--out", out, "--repetitions", "1",
                                 "--set", "max_rounds=4", "--base-url", server.base_url,
                                 "--policies", "llm:model=naming:echo + llm:model=naming:noisy?p=0.2")
    assert status == 0, err
    games = read_sweep(out)
    assert len(games) == 15 and set(games["model"]) == {"naming:echo + naming:noisy?p=0.2"}
    assert all(sorted(json.loads(c).values()) == [6, 6] for c in games["speaker_counts"])
    speakers = read_sweep(out, "speakers")  # per model inside the population: agents, utterances, tokens, outcomes
    assert set(speakers["speaker"]) == {"llm:model=naming:echo", "llm:model=naming:noisy?p=0.2"}
    assert (speakers["agents"] == 6).all() and (speakers["calls"] > 0).all()
    echo = speakers[speakers["speaker"] == "llm:model=naming:echo"]
    noisy = speakers[speakers["speaker"] != "llm:model=naming:echo"]
    fixups = ["share_retry", "share_salvage", "share_none"]  # answers that were not read at the first try
    assert echo[fixups].to_numpy().sum() == 0 < noisy[fixups].to_numpy().sum()  # only the noisy model mis-formats
    assert main(["analyze", str(out), "--json"]) == 0
    breakdown = json.loads(capsys.readouterr().out)["mixed_populations"]
    assert {row["speaker"] for row in breakdown} == set(speakers["speaker"])  # per model, inside the population
    status, printed, _ = sweep(capsys, EXPERIMENTS / "sign-mixed.toml", "--dry-run")
    assert status == 0 and printed.splitlines()[0] == "games: 45"
