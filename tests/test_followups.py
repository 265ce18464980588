"""The paper's follow-ups, one experiment file each: they load, dry-run, and their rule baselines play (small),
with the theory the rule baselines must meet in each."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_mesa.cli import main
from llm_mesa.sweep import read_sweep
from llm_mesa.sweep.experiment import load_experiment

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"
FOLLOW_UPS = ("minority-tipping", "memory-length", "message-cost", "mixed-models", "large-networks")


def path(name: str) -> Path:
    return EXPERIMENTS / f"consensus-{name}.toml"


def play(capsys, tmp_path, name: str, policies: str, *extra: str):
    out = tmp_path / name
    status = main(["sweep", str(path(name)), "--out", str(out), "--policies", policies, "--repetitions", "1",
                   "--set", "max_rounds=4", "--set", "baseline_permutations=10", *extra])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return read_sweep(out)


@pytest.mark.parametrize("name", FOLLOW_UPS)
def test_each_follow_up_loads_says_its_question_and_dry_runs(capsys, name):
    text = path(name).read_text()
    assert text.startswith("# Follow-up of the consensus study:") and "?" in text.splitlines()[0]
    experiment = load_experiment(path(name))
    assert experiment.game.name == "consensus" and experiment.repetitions == 30
    assert any(spec.startswith("llm") or " + llm" in spec for spec in experiment.policies.values())
    assert main(["sweep", str(path(name)), "--dry-run", "--price", "0.5,1.5"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"games: {experiment.games:,}") and "cost: at most" in printed
    assert "prompt tokens: at most" in printed


def test_minority_tipping_relay_agents_take_the_majority_at_every_minority_size(capsys, tmp_path):
    games = play(capsys, tmp_path, "minority-tipping", "relay")
    assert len(games) == 24 and sorted(games["minority"].unique()) == list(range(1, 13))
    relayed = games[games["communication"] == "global"]
    assert relayed["consensus"].all() and (relayed["winner"] == "blue").all() and (relayed["rounds"] <= 2).all()


def test_memory_length_a_relay_without_memory_cannot_relay(capsys, tmp_path):
    games = play(capsys, tmp_path, "memory-length", "relay", "--set", "max_rounds=2")
    global_ = games[games["condition"].str.startswith("ba-global")].set_index("history")
    assert sorted(global_.index) == [0, 1, 3, 10, 20]
    assert global_.loc[[1, 3, 10, 20], "consensus"].all()  # knowledge of every colour after round 1
    assert not global_.loc[0, "consensus"]  # with no memory, what it heard is gone: a majority rule
    assert games["seed"].nunique() == 3  # the window is out of the seeds: every level, the same graphs


def test_message_cost_each_relay_message_is_charged(capsys, tmp_path):
    games = play(capsys, tmp_path, "message-cost", "relay")
    won = games[games["condition"].str.startswith("ba-global") & games["consensus"]]
    assert len(won) == 3
    for _, game in won.iterrows():  # every agent talked once (round 1), then all agreed (round 2)
        assert game["messages"] == 36 and game["message_charges"] == pytest.approx(36 * game["message_cost"])
    free, dear = (won.loc[won["message_cost"] == c, "mean_payoff"].iloc[0] for c in (0.0, 0.05))
    assert dear == pytest.approx(free - 0.05)


def test_mixed_models_places_the_parts_as_assigned(capsys, tmp_path):
    games = play(capsys, tmp_path, "mixed-models", "majority-inertia:inertia=0.2 + relay:inertia=0.2", "--tables", "agents")
    assert len(games) == 6 and games["seed"].nunique() == 2  # paired: one graph per condition for every placement
    from llm_mesa.game_types import PlayRequest
    from llm_mesa.models.consensus import ConsensusModel
    from llm_mesa.models.consensus.mixing import request_policies
    from llm_mesa.registry import get_game

    game = get_game("consensus")
    for assign, relays in (("random:18=part:2", 18), ("hubs:5=part:2", 5), ("all=part:2; hubs:5=part:1", 31)):
        request = PlayRequest({"n": 36, "topology": "ba", "assign": assign}, "majority-inertia:inertia=0.2 + relay:inertia=0.2", 7)
        policy, placed, _ = request_policies(game, request)
        model = ConsensusModel(36, "ba", policy=policy, assign=placed, rng=7, baseline_permutations=0)
        relay_nodes = {a.node for a in model.agents_by_node if a.policy.name == "relay"}
        assert len(relay_nodes) == relays
        hubs = set(sorted(model.graph.nodes, key=lambda v: (-model.graph.degree(v), v))[:5])
        expected = {"hubs:5=part:2": hubs, "all=part:2; hubs:5=part:1": set(range(36)) - hubs}.get(assign)
        assert expected is None or relay_nodes == expected


def test_large_networks_relay_theory_holds_at_500_agents(capsys, tmp_path):
    games = play(capsys, tmp_path, "large-networks", "relay", "--set", "max_rounds=3")
    assert sorted(games["n"].unique()) == [100, 500] and sorted(games["topology"].unique()) == ["ba", "caveman"]
    relayed = games[games["communication"] == "global"]
    assert len(relayed) == 4 and relayed["consensus"].all() and (relayed["rounds"] <= 2).all()
    assert not games[games["communication"] == "none"]["consensus"].any()


def test_mixed_models_with_llms_sends_each_agent_to_its_own_model(capsys, tmp_path):
    """The LLM version of the file's design against the stand-in: the hubs' calls go to part 2, the rest to part 1."""
    import re

    from llm_mesa.llm.store import ResponseStore
    from llm_mesa.loopback.server import LoopbackServer
    from llm_mesa.models.consensus import ConsensusModel

    pair = "llm:model=rule:majority-inertia + llm:model=rule:stubborn"
    with LoopbackServer(seed=1) as server:
        games = play(capsys, tmp_path, "mixed-models", pair, "--base-url", server.base_url, "--set", "max_rounds=2")
    assert len(games) == 6 and set(games["model"]) == {"rule:majority-inertia + rule:stubborn"}
    store = ResponseStore(tmp_path / "mixed-models" / "calls.sqlite", "replay")
    models: dict[tuple[str, int], set[str]] = {}
    for row in store.rows():
        key = re.search(r"g=(\w+)\|agent=(\d+)", row["request"]["sample_key"])
        models.setdefault((key.group(1), int(key.group(2))), set()).add(row["request"]["model"])
    store.close()
    for _, game in games.iterrows():
        graph = ConsensusModel(36, "ba", rng=int(game["seed"]), baseline_permutations=0).graph
        hubs = set(sorted(graph.nodes, key=lambda v: (-graph.degree(v), v))[:5])
        stubborn = {v for v in range(36) if models[(game["game_key"], v)] == {"rule:stubborn"}}
        assert all(len(models[(game["game_key"], v)]) == 1 for v in range(36))
        placement = game["condition"].split("assign=")[1]
        expected = {"hubs:5=part:2": hubs, "all=part:2; hubs:5=part:1": set(range(36)) - hubs}.get(placement)
        assert stubborn == expected if expected is not None else len(stubborn) == 18
