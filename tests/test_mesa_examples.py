"""Mesa's own example models as games: schelling, boltzmann_wealth_model, pd_grid.

Each is checked from outside, on whichever Mesa is installed (CI runs this file on 3.5.1
and on 4.0.0a0), against that Mesa's own example run directly: the two versions seed their
examples differently (Schelling's ``happy`` from seed 5: 243, 285, ... on 3.5; 228, 276, ...
on 4), so each version is held to its own example, never to the other's.
"""

from __future__ import annotations

import inspect
import json

import mesa
import pandas as pd
import pytest
from mesa.examples.advanced.pd_grid.model import PdGrid
from mesa.examples.basic.boltzmann_wealth_model.model import BoltzmannScenario, BoltzmannWealth
from mesa.examples.basic.schelling.model import Schelling, SchellingScenario

from llm_mesa import declared, play
from llm_mesa.cli import main
from llm_mesa.games import PlayRequest
from llm_mesa.llm import Endpoint, ResponseStore
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.registry import game_names, get_game
from llm_mesa.sweep import read_sweep

GAMES = ("schelling", "boltzmann_wealth_model", "pd_grid")
MESA_4 = int(mesa.__version__.split(".")[0]) >= 4
DOWN = "http://127.0.0.1:9/v1"  # nothing listens there: a replay that called would fail
#: the series each example's DataCollector keeps, and how many steps the issue asks to compare
SERIES = {"schelling": ("happy", 8), "boltzmann_wealth_model": ("Gini", 6), "pd_grid": ("Cooperating_Agents", 5)}


def run_pd_grid(seed: int, **parameters) -> PdGrid:
    """Mesa's PdGrid as its own version takes it: keyword arguments on 3.5, a scenario on 4."""
    if MESA_4:
        from mesa.examples.advanced.pd_grid.model import PrisonersDilemmaScenario

        return PdGrid(PrisonersDilemmaScenario(rng=seed, **parameters))
    return PdGrid(rng=seed, **parameters)


EXAMPLES = {
    "schelling": lambda seed, **p: Schelling(SchellingScenario(rng=seed, **p)),
    "boltzmann_wealth_model": lambda seed, **p: BoltzmannWealth(BoltzmannScenario(rng=seed, **p)),
    "pd_grid": run_pd_grid,
}


def example_series(name: str, seed: int, steps: int, **parameters) -> pd.DataFrame:
    """The installed example, run directly with ``rng=seed`` for ``steps`` steps: its DataCollector's series."""
    model = EXAMPLES[name](seed, **parameters)
    for _ in range(steps):
        model.step()
    return model.datacollector.get_model_vars_dataframe().reset_index(drop=True)


def cli(capsys, *argv) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def options(parameters: dict) -> list[str]:
    return [item for name, value in parameters.items() for item in (f"--{name.replace('_', '-')}", value)]


# -- listed, with the installed example's parameters -----------------------------------------------

def test_the_three_games_are_listed_by_every_command(capsys):
    assert set(GAMES) <= set(game_names())
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = capsys.readouterr().out
    for name in GAMES:
        assert f"\n    {name}" in listed, name
        status, out, err = cli(capsys, "sweep", "--game", name, "--list")
        assert status == 0 and out.startswith(f"{name} conditions") and "mesa" in out and "max_rounds" in out, err
    with pytest.raises(SystemExit):
        main(["viz", "--help"])
    viz = capsys.readouterr().out
    assert all(name in viz for name in GAMES)


def installed_parameters(name: str) -> dict:
    """What the installed example takes and its defaults, read here independently of the game."""
    if name == "pd_grid":
        signature = inspect.signature(PdGrid.__init__).parameters
        if MESA_4:
            scenario = signature["scenario"].default()
            return {k: v for k, v in vars(scenario).items() if k != "rng"}
        return {k: p.default for k, p in signature.items() if k not in ("self", "rng")}
    scenario = {"schelling": SchellingScenario, "boltzmann_wealth_model": BoltzmannScenario}[name]()
    return {k: v for k, v in vars(scenario).items() if k != "rng"}


@pytest.mark.parametrize("name", GAMES)
def test_each_game_takes_the_installed_examples_parameters_under_their_names(name):
    game = get_game(name)
    offered = game.parameters.defaults()
    assert offered.pop("max_rounds") >= 10
    example = installed_parameters(name)
    if name == "pd_grid":
        table = example.pop("payoff" if MESA_4 else "payoffs")
        assert table is None  # the example then plays its class's table, which the four entries default to
        assert {(k[-2].upper(), k[-1].upper()): offered.pop(k) for k in list(offered) if k.startswith("payoff_")} \
            == PdGrid.payoff
        assert ("torus" in example) is MESA_4  # Mesa 4's scenario adds it; the game offers it only there
    assert offered == example


# -- the mesa rule is the example, seed for seed ----------------------------------------------------

@pytest.mark.parametrize("name", GAMES)
def test_the_mesa_rule_from_a_seed_is_the_installed_example_run_directly(capsys, tmp_path, name):
    column, steps = SERIES[name]
    out = tmp_path / "run"
    status, _, err = cli(capsys, name, "--policy", "mesa", "--seed", 5, "--max-rounds", steps, "--out", out)
    assert status == 0, err
    rounds = pd.read_parquet(out / "rounds.parquet")
    expected = example_series(name, 5, steps)
    assert rounds["round"].tolist() == list(range(steps + 1))
    assert list(rounds.columns) == ["round", *expected.columns] and column in expected.columns
    pd.testing.assert_frame_equal(rounds.drop(columns="round"), expected, check_dtype=False)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rounds"] == steps and summary["mesa_agreement"] == 1.0


def test_schelling_from_seed_5_starts_as_the_installed_mesas_own_example():
    """The two Mesas' examples differ, and the game follows the installed one's (the issue's figures)."""
    happy = play.play(get_game("schelling"), PlayRequest({"max_rounds": 2}, "mesa", 5, ("rounds",))).tables["rounds"]["happy"]
    assert happy.tolist()[:2] == ([228, 276] if MESA_4 else [243, 285])


@pytest.mark.parametrize("order", ["Random", "Sequential", "Simultaneous"])
def test_the_mesa_rule_plays_every_activation_order_of_pd_grid_as_the_example(capsys, tmp_path, order):
    parameters = {"width": 12, "height": 9, "activation_order": order, "payoff_dc": 1.3}
    out = tmp_path / order
    assert cli(capsys, "pd_grid", "--policy", "mesa", "--seed", 3, "--max-rounds", 6, "--out", out,
               *options(parameters))[0] == 0
    rounds = pd.read_parquet(out / "rounds.parquet")
    payoffs = {**PdGrid.payoff, ("D", "C"): 1.3}
    expected = example_series("pd_grid", 3, 6, width=12, height=9, activation_order=order,
                              **({"payoff": payoffs} if MESA_4 else {"payoffs": payoffs}))
    assert rounds["Cooperating_Agents"].tolist() == expected["Cooperating_Agents"].tolist()


# -- LLM agents on the stand-in ---------------------------------------------------------------------

LLM_CASES = [
    ("schelling", {}),
    ("boltzmann_wealth_model", {}),
    ("pd_grid", {"activation_order": "Simultaneous", "width": 20, "height": 20}),
]


@pytest.mark.parametrize("name, parameters", LLM_CASES)
def test_llm_agents_answered_as_mesas_rule_play_the_mesa_rules_game(capsys, tmp_path, name, parameters):
    """Over HTTP, through the core's decision API: the same rounds and per-agent tables, seed for seed."""
    game = [name, "--seed", 5, "--max-rounds", 4, *options(parameters)]
    with LoopbackServer(seed=2) as server:
        status, out, err = cli(capsys, *game, "--policy", "llm", "--base-url", server.base_url, "--model",
                               f"{name}:mesa", "--record", tmp_path / "calls.sqlite", "--out", tmp_path / "llm", "--json")
        assert status == 0, err
        answered = server.stats()["answered"]
    row = json.loads(out)
    assert row["failed_decisions"] == 0 and row["decisions"] == row["calls"] > 0 and answered >= row["calls"]
    assert row["mesa_agreement"] == 1.0 and row["invalid"] is False
    assert cli(capsys, *game, "--policy", "mesa", "--out", tmp_path / "rule")[0] == 0
    for table in ("rounds", "agents"):
        llm, rule = (pd.read_parquet(tmp_path / d / f"{table}.parquet") for d in ("llm", "rule"))
        pd.testing.assert_frame_equal(llm, rule)


@pytest.mark.parametrize("order", ["Random", "Sequential"])
def test_llm_agents_taking_turns_in_pd_grid_keep_mesas_order_with_their_calls_overlapping(order):
    """Under turns a call waits only for its neighbours' earlier turns: the game is still the rule's, and a
    Random step's chain of turns is far shorter than its agents (Sequential's row-by-row order chains them all)."""
    game = get_game("pd_grid")
    parameters = {"activation_order": order, "width": 10, "height": 10, "max_rounds": 3}
    rule = play.play(game, PlayRequest(parameters, "mesa", 4, ("rounds", "agents")))
    with LoopbackServer(seed=3) as server:
        llm = play.play(game, PlayRequest(parameters, "llm", 4, ("rounds", "agents"),
                                          Endpoint(server.base_url, "pd_grid:mesa", timeout=10.0)))
    for table in ("rounds", "agents"):
        pd.testing.assert_frame_equal(llm.tables[table], rule.tables[table])
    assert llm.row["calls"] == 3 * 100 and llm.row["depth"] == rule.row["depth"]
    assert (rule.row["depth"] < 3 * 100 / 2) if order == "Random" else rule.row["depth"] == 3 * 100


def test_a_three_seed_llm_sweep_of_schelling_records_and_replays_with_the_server_down(capsys, tmp_path):
    grid = ["--set", "width=12", "--set", "height=12", "--set", "max_rounds=4", "--policies", "llm", "--model",
            "schelling:mesa", "--seeds", 3, "--quiet"]
    live_dir, again_dir = tmp_path / "live", tmp_path / "again"
    with LoopbackServer(seed=1) as server:
        status, _, err = cli(capsys, "sweep", "--game", "schelling", *grid, "--base-url", server.base_url,
                             "--out", live_dir)
        assert status == 0, err
    live = read_sweep(live_dir).sort_values("seed").reset_index(drop=True)
    assert len(live) == 3 and (live["calls"] > 0).all() and not live["invalid"].any()
    store = ResponseStore(live_dir / "calls.sqlite", "replay")
    keys = [row["request"]["sample_key"] for row in store.rows()]
    store.close()
    assert len(keys) == len(set(keys)) == live["calls"].sum() and len({k.split("|")[0] for k in keys}) == 3
    status, _, err = cli(capsys, "sweep", "--game", "schelling", *grid, "--base-url", DOWN, "--out", again_dir,
                         "--store", live_dir / "calls.sqlite", "--store-mode", "replay")
    assert status == 0, err
    again = read_sweep(again_dir).sort_values("seed").reset_index(drop=True)
    assert (again["replayed_calls"] == again["calls"]).all() and again["calls"].tolist() == live["calls"].tolist()
    measures = ["rounds", "happy", "pct_happy", "moves", "segregation"]
    pd.testing.assert_frame_equal(again[measures], live[measures])


def test_schelling_with_every_game_call_malformed_is_invalid_exit_3(capsys):
    """The pre-flight is answered soundly (any text); every game answer decodes to nothing."""
    with LoopbackServer(seed=1) as server:
        status, out, err = cli(capsys, "schelling", "--policy", "llm", "--base-url", server.base_url,
                               "--model", "fixed?text=nothing%20useful", "--width", 8, "--height", 8,
                               "--max-rounds", 2, "--no-record", "--json")
    assert status == 3, err
    row = json.loads(out)
    assert row["invalid"] is True and row["failed_decisions"] == row["decisions"] > 0 and row["moves"] == 0
    assert len(err.strip().splitlines()) == 1 and f"{row['decisions']} of {row['decisions']} LLM decisions failed" in err


@pytest.mark.parametrize("name", GAMES)
def test_each_stand_in_refuses_a_prompt_it_cannot_read_with_a_400(name):
    """The pre-flight's 1-token call is no game prompt: HTTP 400 saying what the behaviour reads, never an answer."""
    import openai

    from llm_mesa.loopback import listed_behaviours

    assert f"{name}:mesa" in listed_behaviours() and list(get_game(name).llm.behaviours) == [f"{name}:mesa"]
    with LoopbackServer(seed=1) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused", max_retries=0)
        with pytest.raises(openai.BadRequestError, match=f"{name}:mesa reads"):
            client.chat.completions.create(model=f"{name}:mesa", max_tokens=1,
                                           messages=[{"role": "user", "content": "Say OK."}])
        client.close()


# -- what theory says, through LLM agents that always answer one way ----------------------------------

def fixed(answer: dict) -> str:
    from urllib.parse import quote

    return "fixed?text=" + quote(json.dumps(answer), safe="")


def play_fixed(name: str, answer: dict, parameters: dict, seed: int = 6):
    with LoopbackServer(seed=1) as server:
        return play.play(get_game(name), PlayRequest(parameters, "llm", seed, ("rounds", "agents"),
                                                     Endpoint(server.base_url, fixed(answer), timeout=10.0)))


def test_schelling_agents_move_exactly_when_their_choice_says_so():
    """Mesa's rule moves an agent iff it was unhappy (a mover lands on another, empty cell); agents that always
    stay never leave their cell and keep the start's happiness."""
    rule = play.play(get_game("schelling"), PlayRequest({"width": 15, "height": 15, "max_rounds": 5}, "mesa", 6,
                                                        ("agents", "decisions")))
    agents = rule.tables["agents"].sort_values(["agent", "round"])
    before = agents.groupby("agent").shift(1)
    stepped = before["x"].notna()
    moved = (agents["x"] != before["x"]) | (agents["y"] != before["y"])
    assert (moved[stepped] == (agents["move"][stepped] == "move")).all() and moved.any()
    made = rule.tables["decisions"]  # what each saw: the share of its type, against the homophily (the example's rule)
    seen = made["view_similar"] + made["view_other"]
    unhappy = (made["view_similar"] / seen.where(seen > 0)).fillna(0) < made["view_homophily"]
    assert (made["answer"] == unhappy.map({True: "move", False: "stay"})).all()
    stay = play_fixed("schelling", {"choice": "stay"}, {"width": 15, "height": 15, "max_rounds": 3})
    kept = stay.tables["agents"]
    assert kept.groupby("agent")[["x", "y"]].nunique().eq(1).all().all()
    assert stay.row["moves"] == 0 and stay.tables["rounds"]["happy"].nunique() == 1


def test_boltzmann_money_is_conserved_and_never_negative_and_keeping_holds_the_gini_at_0():
    parameters = {"n": 60, "width": 6, "height": 6, "max_rounds": 8}
    rule = play.play(get_game("boltzmann_wealth_model"), PlayRequest(parameters, "mesa", 6, ("agents", "rounds")))
    wealth = rule.tables["agents"].groupby("round")["Wealth"]
    assert (wealth.sum() == 60).all() and (wealth.min() >= 0).all() and rule.row["gifts"] > 0
    keep = play_fixed("boltzmann_wealth_model", {"choice": "keep"}, parameters)
    assert (keep.tables["rounds"]["Gini"] == 0).all() and (keep.tables["agents"]["Wealth"] == 1).all()
    # an agent is asked only when it can give, so one that always gives is Mesa's rule: the very same game
    give = play_fixed("boltzmann_wealth_model", {"choice": "give"}, parameters)
    pd.testing.assert_frame_equal(give.tables["rounds"], rule.tables["rounds"])


def test_pd_grid_agents_that_all_cooperate_at_once_earn_eight_times_the_cc_payoff_a_step():
    """Under Simultaneous every agent plays C from the first step, against 8 cooperating neighbours on the torus."""
    parameters = {"activation_order": "Simultaneous", "width": 7, "height": 6, "max_rounds": 4, "payoff_cc": 1.5}
    together = play_fixed("pd_grid", {"move": "C"}, parameters)
    assert together.tables["rounds"]["Cooperating_Agents"].tolist()[1:] == [42] * 4
    assert together.row["mean_score"] == pytest.approx(4 * 8 * 1.5) and together.row["cooperation"] == 1.0


# -- dry runs ---------------------------------------------------------------------------------------

def test_the_dry_run_counts_calls_and_the_turns_one_after_another(capsys):
    """Schelling asks every agent at once each step; Boltzmann one agent at a time; pd_grid's Random order
    chains only neighbours' turns."""
    endpoint = Endpoint(DOWN, "any")
    schelling = declared.estimate(get_game("schelling"), {"width": 10, "height": 10, "density": 0.5, "max_rounds": 7},
                                  endpoint)
    assert (schelling.calls, schelling.rounds) == (100 * 7, 7) and schelling.may_stop_early  # at most every cell
    boltzmann = declared.estimate(get_game("boltzmann_wealth_model"), {"n": 30, "max_rounds": 5}, endpoint)
    assert boltzmann.calls == boltzmann.rounds == 150
    pd_grid = get_game("pd_grid")
    orders = {order: declared.estimate(pd_grid, {"activation_order": order, "width": 10, "height": 10, "max_rounds": 2},
                                       endpoint) for order in ("Simultaneous", "Random", "Sequential")}
    assert {o: e.calls for o, e in orders.items()} == dict.fromkeys(orders, 200)
    assert orders["Simultaneous"].rounds == 2 and 2 < orders["Random"].rounds < 100 and orders["Sequential"].rounds == 200
    status, out, err = cli(capsys, "sweep", "--game", "schelling", "--policies", "llm", "--model", "schelling:mesa",
                           "--base-url", DOWN, "--seeds", 3, "--set", "width=10", "--set", "height=10",
                           "--set", "max_rounds=7", "--dry-run", "--price", "0.1,0.3")
    assert status == 0, err
    assert "games: 3" in out and "calls: at most 2,100" in out and "cost: at most" in out


@pytest.mark.skipif(not MESA_4, reason="Mesa 4's data recorders: on Mesa 3 a game's rounds are its DataCollector's")
@pytest.mark.parametrize("name", GAMES)
def test_mesas_parquet_recorder_writes_each_example_games_rounds_beside_its_datacollector(tmp_path, name):
    from mesa.experimental.data_collection import ParquetDataRecorder

    from llm_mesa.games import run_model

    game = get_game(name)
    model = play.make_model(game, {"max_rounds": 4, **({"width": 8, "height": 8} if "width" in game.parameters else {})},
                                  "mesa", 3)
    recorder = ParquetDataRecorder(model, config={"rounds": {}}, output_dir=str(tmp_path))
    run_model(model)
    recorded = recorder.get_table_dataframe("rounds")
    kept = declared.table(game, model, "rounds")
    assert (tmp_path / "rounds.parquet").exists()
    assert recorded["time"].astype(int).tolist() == kept["round"].tolist()
    columns = [c for c in kept.columns if c != "round"]
    pd.testing.assert_frame_equal(recorded[columns].reset_index(drop=True), kept[columns], check_dtype=False)
