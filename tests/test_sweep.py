"""Sweeps: resume by key, reproducible rows, processes and games in flight, LLM games over loopback."""

import inspect
import json

import pandas as pd
import pytest

from llm_mesa.cli import main
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.models.consensus.conditions import (
    EXTRA_CONDITIONS,
    RULE_CONFIGURATIONS,
    STUDY_CONDITIONS,
    ConditionError,
    resolve_conditions,
)
from llm_mesa.models.consensus.observation import ConsensusDecision
from llm_mesa.models.consensus.tables import consensus_table
from llm_mesa.policy import Policy, register_policy
from llm_mesa.registry import get_game
from llm_mesa.sweep import SweepError, policy_label, read_sweep, resolve_seeds, run_sweep


def resolve_policies(policies):
    return _resolve_policies(get_game("consensus"), policies)


from llm_mesa.sweep import resolve_policies as _resolve_policies  # noqa: E402

# Small games (12 agents, few rounds) keep the file fast; the runner is what is tested.
SMALL = {
    "ws-none": {"n": 12, "topology": "ws", "communication": "none"},
    "cc-local": {"n": 12, "topology": "caveman", "communication": "local"},
}
FAST = {"max_rounds": 15, "baseline_permutations": 20}
RULES = "mi-0.2;voter"


def rows(df: pd.DataFrame) -> pd.DataFrame:
    """Results without the one column that measures time (all else is a function of the seed)."""
    return df.drop(columns=["wall_s"]).sort_values(["condition", "policy", "seed"]).reset_index(drop=True)


class Interrupt(Exception):
    pass


def stop_after(k: int):
    def progress(done, total, row):
        if done >= k:
            raise Interrupt
    return progress


def test_resume_after_interruption_runs_only_the_missing_games(tmp_path):
    out = tmp_path / "sweep"
    with pytest.raises(Interrupt):
        run_sweep(SMALL, RULES, 3, out, model_options=FAST, tables=("rounds",), progress=stop_after(5), batch_size=1, game="consensus")
    assert len(read_sweep(out)) == 5  # one game at a time (batch_size=1): every game was written as it finished
    seen = []
    result = run_sweep(SMALL, RULES, 3, out, model_options=FAST, tables=("rounds",),
                       progress=lambda done, total, row: seen.append((row["condition"], row["policy"], row["seed"])), game="consensus")
    assert result.skipped == 5 and result.played == 12 - 5 == len(seen)
    assert len(set(seen)) == len(seen)
    final = result.results
    assert len(final) == 12 and not final.duplicated(["condition", "policy", "seed"]).any()
    fresh = run_sweep(SMALL, RULES, 3, tmp_path / "fresh", model_options=FAST, tables=("rounds",), game="consensus")
    pd.testing.assert_frame_equal(rows(final), rows(fresh.results))
    rounds = read_sweep(out, "rounds")  # one row per round, round 0 included, no duplicates
    assert len(rounds) == int((final["rounds"] + 1).sum())
    assert not rounds.duplicated(["condition", "policy", "seed", "round"]).any()
    # a third start finds nothing to do
    again = run_sweep(SMALL, RULES, 3, out, model_options=FAST, game="consensus")
    assert again.played == 0 and again.skipped == 12
    history = (out / "manifest-history.jsonl").read_text().splitlines()
    assert len(history) == 3 and json.loads(history[-1])["games_present_at_start"] == 12


def test_same_seeds_same_rows_and_other_seeds_other_rows(tmp_path):
    a = run_sweep(SMALL, RULES, [3, 4], tmp_path / "a", model_options=FAST, game="consensus").results
    b = run_sweep(SMALL, RULES, [3, 4], tmp_path / "b", model_options=FAST, game="consensus").results
    pd.testing.assert_frame_equal(rows(a), rows(b))
    # each row is the model's own summary of that seed's game
    s = ConsensusModel(policy=RULE_CONFIGURATIONS["voter"], rng=4, **SMALL["cc-local"], **FAST).run().summary()
    row = a[(a.condition == "cc-local") & (a.policy == "voter") & (a.seed == 4)].iloc[0]
    assert (row["rounds"], row["consensus"], row["stubborn_moves"], row["game_key"]) == \
        (s["rounds"], s["consensus"], s["stubborn_moves"], s["game_key"])
    c = run_sweep(SMALL, RULES, [5, 6], tmp_path / "c", model_options=FAST, game="consensus").results
    assert set(a["game_key"]).isdisjoint(c["game_key"])
    assert not rows(a).drop(columns=["seed", "game_key"]).equals(rows(c).drop(columns=["seed", "game_key"]))


def test_two_processes_give_the_same_rows_as_one(tmp_path):
    one = run_sweep(SMALL, "voter", 3, tmp_path / "one", model_options=FAST, game="consensus").results
    two = run_sweep(SMALL, "voter", 3, tmp_path / "two", processes=2, batch_size=2, model_options=FAST, game="consensus")
    assert two.played == 6
    pd.testing.assert_frame_equal(rows(one), rows(two.results))


def test_single_parquet_file_output_resumes_and_reads_with_pandas(tmp_path):
    out = tmp_path / "grid.parquet"
    with pytest.raises(Interrupt):
        run_sweep(SMALL, "voter", 3, out, model_options=FAST, progress=stop_after(2), batch_size=1, game="consensus")
    assert not out.exists() and len(read_sweep(out)) == 2  # parts gathered beside it until the end
    result = run_sweep(SMALL, "voter", 3, out, model_options=FAST, game="consensus")
    assert result.played == 4
    df = pd.read_parquet(out)
    assert len(df) == 6 and not df.duplicated(["condition", "policy", "seed"]).any()
    assert not (tmp_path / "grid.parquet.parts").exists() and (tmp_path / "grid.manifest.json").exists()


def test_a_condition_redefined_under_the_same_name_is_refused_on_resume(tmp_path):
    run_sweep({"ws": SMALL["ws-none"]}, "voter", 1, tmp_path / "s", model_options=FAST, game="consensus")
    with pytest.raises(SweepError, match="defined differently"):
        run_sweep({"ws": {**SMALL["ws-none"], "n": 16}}, "voter", 1, tmp_path / "s", model_options=FAST, game="consensus")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(SweepError, match="no sweep manifest"):
        run_sweep(SMALL, "voter", 1, tmp_path / "other", game="consensus")


@register_policy("test-fails-at-round", "consensus", "raises at a given round (tests only)")
class FailsAtRound(Policy):
    def __init__(self, round: int = 2):
        self.round = round

    def params(self):
        return {"round": self.round}

    def decide(self, obs, rng):
        if obs.round >= self.round:
            raise RuntimeError("a policy bug")
        return ConsensusDecision(obs.colour)


def test_a_failing_game_stops_the_sweep_but_keeps_every_game_that_finished(tmp_path):
    out = tmp_path / "s"
    with pytest.raises(RuntimeError, match="a policy bug"):
        run_sweep(SMALL, "voter;test-fails-at-round:round=3", 2, out, games_in_flight=3, model_options=FAST, game="consensus")
    kept = read_sweep(out)
    assert len(kept) >= 2 and set(kept["policy"]) == {"voter"}
    result = run_sweep(SMALL, "voter", 2, out, model_options=FAST, game="consensus")  # resumes with the good policy
    assert result.skipped == len(kept) and len(result.results) == 4


# --- LLM policies over the loopback endpoint ------------------------------------------

LLM_GRID = {"ws-local": {"n": 12, "topology": "ws", "communication": "local"}}
LLM_OPTIONS = {"max_rounds": 3, "baseline_permutations": 0}
GAMES = 6


def test_games_in_flight_match_sequential_play_and_overlap_their_calls(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-written-anywhere")
    with LoopbackServer(seed=2, latency=0.15) as server:
        spec = f"llm:base_url={server.base_url},model=rule:majority-inertia,concurrency=256,timeout=10"
        sequential = run_sweep(LLM_GRID, spec, GAMES, tmp_path / "seq", model_options=LLM_OPTIONS, game="consensus")
        one_at_a_time = server.stats()["max_in_flight"]
        server.reset()
        overlapped = run_sweep(LLM_GRID, spec, GAMES, tmp_path / "par", games_in_flight=GAMES,
                               model_options=LLM_OPTIONS, game="consensus")
        stats = server.stats()
    # one 12-agent game never has more than 12 calls in flight; more than 36 means at
    # least four games' rounds were waiting on the endpoint together
    assert one_at_a_time <= 12
    assert stats["max_in_flight"] > 36
    calls = int(overlapped.results["calls"].sum())
    assert calls == 12 * int(overlapped.results["rounds"].sum()) and stats["answered"] >= calls
    pd.testing.assert_frame_equal(rows(sequential.results), rows(overlapped.results))
    assert set(overlapped.results["policy"]) == {"llm:model=rule:majority-inertia"}
    manifest = (tmp_path / "par" / "manifest.json").read_text()
    assert "sk-never-written-anywhere" not in manifest and "OPENAI_API_KEY" in manifest
    assert json.loads(manifest)["store"]["mode"] == "record"


def test_a_crashed_llm_sweep_resumes_from_its_recorded_calls_without_paying_twice(tmp_path):
    out = tmp_path / "llm"
    with LoopbackServer(seed=4) as server:
        spec = f"llm:base_url={server.base_url},model=rule:majority-inertia?talk=0.3,timeout=10"
        first = run_sweep(LLM_GRID, spec, 3, out, games_in_flight=3, model_options=LLM_OPTIONS, game="consensus")
        paid = server.stats()["answered"]
        # the rows of games in flight at a crash are lost; their calls were recorded as they came
        for part in (out / "games").glob("*.parquet"):
            part.unlink()
        server.reset()
        resumed = run_sweep(LLM_GRID, spec, 3, out, games_in_flight=3, model_options=LLM_OPTIONS,
                            check_endpoints=False, game="consensus")
        assert server.stats()["requests"] == 0  # every answer came from the store
    assert paid >= int(first.results["calls"].sum()) > 0
    assert resumed.played == 3 and resumed.results["replayed_calls"].sum() == first.results["calls"].sum()
    pd.testing.assert_frame_equal(rows(first.results).drop(columns=["replayed_calls"]),
                                  rows(resumed.results).drop(columns=["replayed_calls"]))
    assert json.loads((out / "manifest.json").read_text())["store"]["mode"] == "replay-fill"


# --- the study's grid as data, and the command line ----------------------------------


def test_the_study_conditions_are_the_eleven_identified_ones():
    assert len(STUDY_CONDITIONS) == 11 and len(RULE_CONFIGURATIONS) == 6
    combos = {(c["topology"], c["communication"], c.get("preferences", "random"), c.get("label", "llm"))
              for c in STUDY_CONDITIONS.values()}
    assert combos == {("ba", "global", "random", "llm"), ("ba", "local", "random", "llm"),
                      ("ba", "none", "random", "llm"), ("ws", "local", "random", "llm"),
                      ("ws", "none", "random", "llm"), ("caveman", "local", "random", "llm"),
                      ("caveman", "none", "random", "llm"), ("er", "local", "random", "llm"),
                      ("er", "none", "random", "llm"), ("ba", "local", "minority", "llm"),
                      ("ba", "global", "random", "human")}
    assert all(c["n"] == 36 for c in STUDY_CONDITIONS.values())
    assert EXTRA_CONDITIONS["ba-local-dm"]["direct_messages"] is True
    assert sum(name.startswith("n20-") and c["n"] == 20 for name, c in EXTRA_CONDITIONS.items()) == 11
    signature = inspect.signature(ConsensusModel)
    for kwargs in [*STUDY_CONDITIONS.values(), *EXTRA_CONDITIONS.values()]:
        signature.bind(**kwargs)  # every key is a model argument
    dm = ConsensusModel(policy="voter", rng=1, **EXTRA_CONDITIONS["n20-ba-local-minority"])
    assert dm.n == 20 and dm.preferences.count("red") == 5
    assert list(resolve_conditions("study")) == list(STUDY_CONDITIONS)
    assert list(resolve_conditions("ws-none,ba-local,ws-none")) == ["ws-none", "ba-local"]
    with pytest.raises(ConditionError, match="unknown condition 'ba-loca'"):
        resolve_conditions("ba-loca")


def test_seed_and_policy_lists():
    assert resolve_seeds(3) == [0, 1, 2] and resolve_seeds("1-3") == [1, 2, 3] and resolve_seeds("5,2,5") == [5, 2]
    for bad in ("x", 0, "1-x"):
        with pytest.raises(SweepError):
            resolve_seeds(bad)
    assert resolve_policies("rules") == dict(RULE_CONFIGURATIONS)
    assert resolve_policies("voter;majority-inertia:inertia=0.3,threshold=0.6") == {
        "voter": "voter", "majority-inertia:inertia=0.3,threshold=0.6": "majority-inertia:inertia=0.3,threshold=0.6"}
    assert policy_label("llm:base_url=http://127.0.0.1:9/v1,model=qwen,temperature=0.7") == "llm:model=qwen,temperature=0.7"


def test_the_consensus_table_counts_successes_over_games():
    df = pd.DataFrame({
        "condition": ["a", "a", "a", "b", "b", "b"],
        "policy": ["p", "p", "q", "p", "q", "q"],
        "seed": [0, 1, 0, 0, 0, 1],
        "consensus": [True, False, True, False, True, True],
    })
    table = consensus_table(df, ["b", "a"], ["p", "q"])
    assert list(table.index) == ["b", "a", "all"]
    assert table.loc["a"].tolist() == ["1/2", "1/1", "2/3"]
    assert table.loc["b"].tolist() == ["0/1", "2/2", "2/3"]
    assert table.loc["all"].tolist() == ["1/3", "3/3", "4/6"]


def test_cli_prints_the_table_and_bad_input_is_one_line(tmp_path, capsys):
    out = tmp_path / "cli"
    assert main(["sweep", "--game", "consensus", "--conditions", "cc-local", "--policies", "voter;mi-0", "--seeds", "2",
                 "--set", "max_rounds=10", "--set", "baseline_permutations=0", "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    results = read_sweep(out)
    wins = int(results[results.policy == "voter"]["consensus"].sum())
    table_line = next(line for line in printed.splitlines() if line.startswith("cc-local"))
    assert table_line.split()[1] == f"{wins}/2" and "4 games played" in printed
    for argv, fragment in [
        (["--conditions", "ba-loca"], "unknown condition"),
        (["--policies", "majority-inertia:inertia=2"], "must lie in"),
        (["--seeds", "many"], "--seeds"),
        (["--policies", "voter"], "no output given"),
    ]:
        args = ["sweep", "--game", "consensus", *argv] + ([] if "no output" in fragment else ["--out", str(tmp_path / "bad")])
        assert main(args) == 2
        err = capsys.readouterr().err.strip()
        assert fragment in err and len(err.splitlines()) == 1
    assert not (tmp_path / "bad").exists()


def test_cli_runs_llm_agents_from_the_endpoint_options(tmp_path, capsys):
    out = tmp_path / "llm"
    with LoopbackServer(seed=1) as server:
        argv = ["sweep", "--game", "consensus", "--conditions", "ba-none", "--policies", "llm;voter", "--model", "rule:majority-inertia",
                "--base-url", server.base_url, "--seeds", "2", "--set", "max_rounds=2", "--set", "baseline_permutations=0",
                "--games-in-flight", "2", "--concurrency", "8", "--out", str(out), "--quiet"]
        assert main(argv) == 0
        answered = server.stats()["answered"]
    captured = capsys.readouterr()
    assert "note: --concurrency 8 caps the calls in flight" in captured.err
    results = read_sweep(out)
    llm_rows = results[results.policy == "llm:model=rule:majority-inertia"]
    assert len(llm_rows) == 2 and int(llm_rows["calls"].sum()) == 36 * int(llm_rows["rounds"].sum()) <= answered
    assert (results[results.policy == "voter"]["calls"] == 0).all()
    assert "llm:model=rule:majority-inertia" in captured.out and (out / "calls.sqlite").exists()


def test_a_failing_game_in_a_worker_keeps_the_finished_games_of_its_batch(tmp_path):
    # spawn workers do not know the test-only policy, so its games fail there;
    # the voter games played before them in the same batch must still be written
    out = tmp_path / "s"
    with pytest.raises(Exception, match="test-fails-at-round"):
        run_sweep({"ws-none": SMALL["ws-none"]}, "voter;test-fails-at-round:round=3", 2, out,
                  processes=2, batch_size=100, model_options=FAST, game="consensus")
    kept = read_sweep(out)
    assert sorted(kept["seed"]) == [0, 1] and set(kept["policy"]) == {"voter"}


def test_an_llm_sweep_takes_a_models_library_only_options_and_judges_its_games(tmp_path):
    """A condition may carry what only the model takes (``explicit_preferences``: a colour per node, library
    only); the core's verdict reads the game's own parameters and leaves those to the model."""
    colours = ["red" if v < 6 else "blue" for v in range(12)]
    condition = {"n": 12, "topology": "caveman", "preferences": "explicit", "explicit_preferences": colours}
    with LoopbackServer(seed=2) as server:
        spec = f"llm:base_url={server.base_url},model=rule:stubborn,timeout=10"
        result = run_sweep({"cliques": condition}, spec, 2, tmp_path / "s", model_options=LLM_OPTIONS,
                           game="consensus", tables=["agents"])
    games = result.results
    assert len(games) == 2 and not games["invalid"].any() and (games["calls"] == 12 * games["rounds"]).all()
    start = read_sweep(tmp_path / "s", "agents").query("round == 0").sort_values(["seed", "node"])
    assert all(list(part["preference"]) == colours for _, part in start.groupby("seed"))
