"""The consensus game under the update schemes (issue 20): theory that can fail, paired seeds, turns that see
the moves and messages before them, and synchronous games exactly as they were."""

from __future__ import annotations

import random

import networkx as nx
import numpy as np
import pytest
from scipy.stats import binomtest

from llm_mesa import TURN_RULES, PlayRequest, Policy, get_game, play
from llm_mesa.analysis import game_analysis
from llm_mesa.models.consensus.model import ConsensusModel
from llm_mesa.models.consensus.observation import ConsensusDecision
from llm_mesa.models.consensus.prompt_variants import PROMPT_VARIANTS

GAME = get_game("consensus")
SCHEMES = ("synchronous", "random-sequential", "random-asynchronous")
TURNS = SCHEMES[1:]


def disagreeing_edges(graph: nx.Graph, codes) -> int:
    return sum(codes[u] != codes[v] for u, v in graph.edges)


def majority_games(count: int):
    """Random graphs with a random start (the theory needs disagreement to play out), each with its seed."""
    for seed in range(count):
        graph = nx.gnp_random_graph(24, 0.12 + 0.002 * (seed % 50), seed=seed)
        yield seed, graph


def play_majority(graph: nx.Graph, seed: int, update: str) -> ConsensusModel:
    return ConsensusModel(graph=graph, policy="majority-inertia:inertia=0", rng=seed, initial="random",
                          update=update, max_rounds=graph.number_of_edges() + 3, baseline_permutations=0).run()


def check_majority_theory(count: int) -> None:
    """Deterministic majority (inertia 0, ties keep): a change under random-sequential updating is a flip against a
    strict majority, so it lowers the disagreeing edges by at least one; they cannot fall below 0, so the game
    stops changing within |E| rounds: a fixed point, never a 2-cycle. Synchronous rounds, on the same graphs and
    starts, end in 2-cycles (Goles: period 1 or 2)."""
    two_cycles = 0
    for seed, graph in majority_games(count):
        turns = play_majority(graph, seed, "random-sequential")
        history = [np.array(turns._rounds.history[r]) for r in range(turns.round + 1)]
        assert (history[-1] == history[-2]).all() or turns._round_stats["consensus"], seed  # a fixed point
        edges = [disagreeing_edges(graph, h) for h in history]
        for r in range(1, len(history)):
            if not (history[r] == history[r - 1]).all():
                assert edges[r] < edges[r - 1], (seed, r)  # every round that changes something lowers them
        together = play_majority(graph, seed, "synchronous")
        last = [np.array(together._rounds.history[r]) for r in range(together.round - 2, together.round + 1)]
        two_cycles += bool((last[0] == last[2]).all() and not (last[1] == last[2]).all())
    assert two_cycles >= count // 20  # the synchronous artefact is there on the same graphs


@pytest.mark.filterwarnings("ignore:the graph has")
def test_deterministic_majority_ends_in_a_fixed_point_under_random_sequential_updating():
    check_majority_theory(100)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:the graph has")
def test_deterministic_majority_fixed_points_on_many_graphs():
    check_majority_theory(400)


def check_voter_martingale(games: int) -> None:
    """The voter model under random-asynchronous updating on a regular graph: the blue count is a martingale
    (each activation copies a uniform neighbour; on a regular graph a blue-red edge is as likely to turn blue
    as red), so the game fixes on blue with the initial blue share, 0.25."""
    n, blue = 16, 4
    fixed_blue = unfinished = 0
    for seed in range(games):
        graph = nx.random_regular_graph(4, n, seed=seed)
        rng = random.Random(seed)
        preferences = ["red"] * n
        for v in rng.sample(range(n), blue):
            preferences[v] = "blue"
        model = ConsensusModel(graph=graph, policy="voter", rng=seed, preferences="explicit",
                               explicit_preferences=preferences, update="random-asynchronous", max_rounds=1000,
                               baseline_permutations=0, collect_agents=False).run()
        unfinished += not model._round_stats["consensus"]
        fixed_blue += model.colours[0] == "blue" and model._round_stats["consensus"]
    assert unfinished == 0
    interval = binomtest(fixed_blue, games, 0.25).proportion_ci(0.999)
    assert interval.low <= 0.25 <= interval.high, (fixed_blue, games)
    assert binomtest(fixed_blue, games, 0.25).pvalue > 0.001


def test_the_voter_model_fixes_on_blue_with_its_initial_share():
    check_voter_martingale(200)


@pytest.mark.slow
def test_the_voter_model_fixes_on_blue_with_its_initial_share_on_many_seeds():
    check_voter_martingale(2000)


def test_the_same_seed_plays_the_same_graph_and_preferences_under_every_scheme():
    parameters = GAME.parameters.validate({"topology": "ws", "n": 20, "initial": "random"}, complete=True)
    built = [GAME.build({**parameters, "update": scheme}, "majority-inertia", 11) for scheme in SCHEMES]
    assert len({tuple(sorted(m.graph.edges)) for m in built}) == 1
    assert len({tuple(m.preferences) for m in built}) == 1
    assert len({tuple(m.colours) for m in built}) == 1
    assert len({m.game_key for m in built}) == 3  # the scheme names the game in call records


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("policy", ["majority-inertia", "voter", "relay:inertia=0.2"])
def test_the_same_seed_plays_the_same_game(scheme, policy):
    parameters = {"n": 24, "topology": "ba", "communication": "local", "update": scheme, "max_rounds": 30}
    first, second = (play.play(GAME, PlayRequest(parameters, policy, 5, ("rounds", "agents", "messages"))) for _ in "ab")
    assert first.row == second.row
    for name in ("rounds", "agents", "messages"):
        assert first.tables[name].equals(second.tables[name])


def test_schemes_play_different_games_from_one_seed():
    rows = [play.play(GAME, PlayRequest({"n": 36, "topology": "er", "update": s}, "voter", 2, ("rounds",))).tables["rounds"]
            for s in SCHEMES]
    assert not rows[0].equals(rows[1]) and not rows[1].equals(rows[2])


def test_synchronous_games_keep_their_key_and_prompt():
    """A synchronous game is the game it was before the schemes: the same key, template hash and prompt."""
    model = ConsensusModel(36, "ba", rng=1, baseline_permutations=0)
    assert model.game_key == GOLDEN_KEY  # as test_consensus_history pins it: recordings keep replaying
    assert ConsensusModel(36, "ba", rng=1, baseline_permutations=0, update="synchronous").game_key == GOLDEN_KEY
    for prompt in PROMPT_VARIANTS.values():
        assert prompt.template_hash_for("synchronous") == prompt.template_hash
        assert len({prompt.template_hash_for(s) for s in SCHEMES}) == 3
    assert PROMPT_VARIANTS["study"].template_hash == GOLDEN_TEMPLATE_HASH
    obs = model.agents_by_node[0].observe()
    assert obs.update == "synchronous" and obs.activation is None
    rules = PROMPT_VARIANTS["study"].messages(obs)[0]["content"]
    assert "In each round all players choose at the same time; the choices are then revealed together." in rules


#: a game's key and the study wording's template hash before update existed: a synchronous game keeps them
GOLDEN_KEY = "e69587e4d3a71bd9"
GOLDEN_TEMPLATE_HASH = "1bd7042ff7225591"


@pytest.mark.parametrize("variant", sorted(PROMPT_VARIANTS))
@pytest.mark.parametrize("scheme", TURNS)
def test_the_rules_say_how_turns_are_taken(variant, scheme):
    model = ConsensusModel(12, "ws", policy="stubborn", rng=1, update=scheme, prompt=variant)
    obs = model.agents_by_node[0].observe()
    system = PROMPT_VARIANTS[variant].messages(obs)[0]["content"]
    assert TURN_RULES[scheme] in system
    assert PROMPT_VARIANTS[variant].turns_text not in system  # the synchronous sentence is gone


class Witness(Policy):
    """Talks at every turn and notes what it saw: its neighbours' colours and its inbox at its turn."""

    reads_messages = True
    seen: list = []

    def decide(self, obs, rng):
        colour = "blue" if rng.random() < 0.5 else "red"
        Witness.seen.append((obs.round, obs.activation, obs.agent_id, colour,
                             dict(zip(obs.neighbour_ids, obs.neighbour_colours)),
                             [(m.sender, m.round, m.activation) for m in obs.inbox]))
        return ConsensusDecision(colour, message=f"turn {obs.activation}", diary="")


@pytest.mark.parametrize("scheme", TURNS)
def test_each_turn_sees_the_moves_and_messages_before_it(scheme):
    """Replay the turns in order: each saw its neighbours' colours as the turns before it left them, and read
    exactly the messages its neighbours sent since its own last turn (this round's and the last's)."""
    Witness.seen = []
    model = ConsensusModel(16, "ws", policy=Witness(), rng=3, communication="local", message_replaces_move=False,
                           update=scheme, max_rounds=4, baseline_permutations=0)
    colours = list(model.colours)
    model.run()
    assert model.round == 4
    sent: list[tuple[int, int, int]] = []  # (sender, round, activation), in turn order
    read_up_to: dict[int, int] = {}
    acted: dict[tuple[int, int], int] = {}
    for round_, activation, agent, colour, neighbours, inbox in sorted(Witness.seen, key=lambda s: s[:2]):
        assert neighbours == {v: colours[v] for v in neighbours}, (round_, activation)
        assert inbox == [s for s in sent[read_up_to.get(agent, 0):] if s[0] in neighbours], (round_, activation)
        read_up_to[agent] = len(sent)
        sent.append((agent, round_, activation))
        colours[agent] = colour
        acted[(agent, round_)] = acted.get((agent, round_), 0) + 1
    assert [(m.sender, m.round, m.activation) for m in model.message_log] == sent  # the log is in turn order
    assert model.colours == colours
    table = model.messages_table()
    assert list(table["activation"]) == [s[2] for s in sent]
    if scheme == "random-sequential":
        assert set(acted.values()) == {1} and len(acted) == 16 * 4
    else:
        assert max(acted.values()) > 1  # an agent may act twice in a round (and another not at all)
        assert len(Witness.seen) == 16 * 4


def test_the_batched_engine_plays_turns_as_the_model_does():
    """Sweeps of rule games go through ``play_batch``, the batched engine under every scheme; the row and tables
    are the model's."""
    requests = [PlayRequest({"n": 32, "topology": t, "update": s, "max_rounds": 40}, p, seed, ("rounds", "agents"))
                for s in SCHEMES for t in ("ba", "caveman") for p in ("majority-inertia", "voter") for seed in (1, 2)]
    for batched, request in zip(play.play_batch(GAME, requests), requests):
        alone = play.play(GAME, request)
        assert batched.row == alone.row
        for name in ("rounds", "agents"):
            assert batched.tables[name].equals(alone.tables[name])
        assert batched.row["update"] == request.parameters["update"]
        if request.parameters["update"] == "synchronous":
            assert batched.row["depth"] == batched.row["rounds"]
        else:
            assert batched.row["depth"] > batched.row["rounds"]


def chain(order, related):
    """Every turn waits for the one before: strictly one call at a time."""
    return [(k - 1,) if k else () for k in range(len(order))]


@pytest.mark.parametrize(("scheme", "communication"), [("random-sequential", "local"),
                                                       ("random-asynchronous", "global")])
def test_a_concurrent_llm_run_replays_one_call_at_a_time_into_the_same_tables(scheme, communication, tmp_path,
                                                                              monkeypatch):
    """The stand-in answers as a talking majority rule; the recording of a run whose calls overlapped, replayed one
    call at a time with no server, gives the same row and tables: the overlap changed nothing."""
    from llm_mesa.llm import Endpoint, ResponseStore
    from llm_mesa.loopback import LoopbackServer
    from llm_mesa.models.consensus import turns

    parameters = {"n": 16, "topology": "ba", "communication": communication, "max_rounds": 4, "update": scheme,
                  "baseline_permutations": 0}
    tables = ("rounds", "agents", "messages", "transcript")
    store = ResponseStore(tmp_path / "calls.sqlite", "record")
    with LoopbackServer(seed=4, latency=0.02, jitter=0.02) as server:
        endpoint = Endpoint(server.base_url, "rule:majority-inertia?inertia=0.3&talk=0.4")
        live = play.play(GAME, PlayRequest(parameters, "llm", 5, tables, endpoint, store))
        calls = server.stats()["answered"]
    store.close()
    assert live.row["calls"] == calls > 0 and live.row["messages"] > 0
    assert live.row["depth"] < live.row["calls"] if communication == "local" else live.row["depth"] == calls
    transcript = live.tables["transcript"]
    assert list(transcript["activation"]) == sorted(transcript["activation"]) or transcript["round"].nunique() > 1
    for _, turns_of_round in transcript.groupby("round"):
        assert list(turns_of_round["activation"]) == sorted(turns_of_round["activation"])
    monkeypatch.setattr(turns, "dependencies", chain)
    replay_store = ResponseStore(tmp_path / "calls.sqlite", "replay")
    dead = Endpoint("http://127.0.0.1:9/v1", "rule:majority-inertia?inertia=0.3&talk=0.4")
    replayed = play.play(GAME, PlayRequest(parameters, "llm", 5, tables, dead, replay_store))
    requests = [row["request"] for row in replay_store.rows()]
    replay_store.close()
    assert replayed.row["replayed_calls"] == replayed.row["calls"] == calls
    assert replayed.row["depth"] == calls  # one at a time
    for name in tables:
        assert replayed.tables[name].equals(live.tables[name]), name
    same = {k: v for k, v in live.row.items() if k not in ("replayed_calls", "depth", "policy_spec")}
    assert {k: replayed.row[k] for k in same} == same
    assert len(requests) == calls
    assert all("|act=" in str(request) for request in requests)  # a call's key names its turn
    assert all(TURN_RULES[scheme] in str(request) for request in requests)


def test_analyze_sets_the_schemes_side_by_side(tmp_path):
    """Two sweeps of the same design, synchronous and random-sequential (as the paired experiment files): the
    report keeps each condition's schemes apart, and its comparison's numbers are the games table's."""
    import json
    import subprocess
    import sys

    from llm_mesa.analysis.sweep_data import open_sweep
    from llm_mesa.models.consensus.analysis_schemes import base_condition
    from llm_mesa.sweep import run_sweep

    design = {"conditions": ["ba-none", "ws-local"], "policies": "majority-inertia:inertia=0.2;voter", "seeds": 8,
              "game": "consensus"}
    both = []
    for scheme in ("synchronous", "random-sequential"):
        run_sweep(out=tmp_path / scheme, axes={"update": [scheme], "max_rounds": [30]}, **design)
        both.append(open_sweep(tmp_path / scheme).games)
    games = __import__("pandas").concat(both)
    done = subprocess.run([sys.executable, "-m", "llm_mesa.cli", "analyze", tmp_path / "synchronous",
                           tmp_path / "random-sequential", "--json"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    part = report["update_schemes"]
    assert part["schemes"] == ["synchronous", "random-sequential"]
    assert len(part["rows"]) == 4  # 2 conditions x 2 policies, each scheme a column
    for row in part["rows"]:
        for scheme in part["schemes"]:
            cell = games[(games["update"] == scheme) & (games["model"] == row["model"])
                         & (games["condition"].map(base_condition) == row["condition"])]
            assert row[f"{scheme}:games"] == len(cell) == 8
            assert row[f"{scheme}:consensus"] == cell["consensus"].mean()
            assert row[f"{scheme}:pseudo_equilibrium"] == cell["pseudo_equilibrium"].mean()
        assert row["pairs"] == 8  # paired seeds
    assert all("update=" in c for c in report["conditions"])  # no part of the report pools the schemes
    text = subprocess.run([sys.executable, "-m", "llm_mesa.cli", "analyze", tmp_path / "synchronous",
                           tmp_path / "random-sequential"], capture_output=True, text=True, timeout=600).stdout
    assert "update schemes side by side" in text


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_summary_names_the_turns_only_when_agents_take_them(scheme, capsys):
    from llm_mesa.cli import main

    assert main(["consensus", "--n", "12", "--max-rounds", "4", "--update", scheme, "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    row = play.play(GAME, PlayRequest({"n": 12, "max_rounds": 4, "update": scheme}, "majority-inertia", 3, ())).row
    if scheme == "synchronous":
        assert "turns:" not in printed  # one round is one step: nothing to say
    else:
        assert f"turns:              {scheme}, dependency depth {row['depth']} over {row['rounds']} rounds" in printed


def test_every_figure_of_a_report_over_two_schemes_draws_every_condition(tmp_path, monkeypatch):
    """The figures read the games under the report's own condition names (scheme included): each
    condition's boxes are drawn from its games, none is left empty."""
    from llm_mesa.analysis.sweep_data import open_sweeps
    from llm_mesa.models.consensus import figures
    from llm_mesa.sweep import run_sweep

    # a sweep that never named its scheme (as every sweep before them) beside one that did
    run_sweep(out=tmp_path / "synchronous", axes={"max_rounds": [20]}, conditions=["ba-none"],
              policies="voter", seeds=6, game="consensus")
    run_sweep(out=tmp_path / "random-sequential", axes={"update": ["random-sequential"], "max_rounds": [20]},
              conditions=["ba-none"], policies="voter", seeds=6, game="consensus")
    sweep = open_sweeps([tmp_path / "synchronous", tmp_path / "random-sequential"])
    report = game_analysis.analyze(GAME, sweep, {"fit_processes": 1})
    seen = {}

    def capture(report, games):
        seen.update({c: int((games["condition"] == c).sum()) for c in report["conditions"]})
        return figures_components(report, games)

    figures_components = figures.components_panel
    monkeypatch.setattr(figures, "components_panel", capture)
    figures.report_panels(sweep, report)
    assert len(seen) == 2 and all("update=" in c for c in seen)  # the schemes kept apart
    assert set(seen.values()) == {6}  # and each drawn from its own 6 games (untagged games gave 0)
