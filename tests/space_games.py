"""Four small games the page and report tests register themselves, one for each kind of space and state.

Written on llm-mesa's public API alone, as a user's games would be:

* ``pgoods``: a network public-goods game, integer contributions 0..10 (a continuous state);
* ``segregate``: a Schelling-like game on an ``OrthogonalMooreGrid`` (categories A and B, empty cells);
* ``hexop``: opinions in 0..1 averaged over a ``HexGrid``'s six neighbours;
* ``wallet``: agents giving coins to one another, with no space at all.

Every game keeps an ``agents`` table (one row per agent and round) and declares what its
state and measures are. ``GAMES`` maps each name to its game; ``install(site)`` lays them
out as an installed distribution in ``site`` (for servers started as subprocesses).
"""

from __future__ import annotations

import contextlib
import random
import statistics
from dataclasses import dataclass
from pathlib import Path

import mesa
import networkx as nx
import pandas as pd
from mesa.datacollection import DataCollector
from mesa.discrete_space import CellAgent, FixedAgent, HexGrid, OrthogonalMooreGrid

from llm_mesa import (
    Game,
    Parameter,
    ParameterSet,
    Policy,
    PolicyAgent,
    Table,
    categorical,
    continuous,
    count,
    network_space,
    play_round,
    register_policy,
    seeded_layout,
    share,
)

ROUNDS = Table("rounds", ("round",), "one row per round")
AGENTS = Table("agents", ("round", "agent"), "one row per agent and round", read=lambda model: model.agents_frame())


class _Recorded(mesa.Model):
    """A model that keeps one row per agent and round (``agent_rows``) beside its DataCollector."""

    def record(self) -> None:
        self.datacollector.collect(self)
        self.agent_rows += [self.agent_row(a) for a in self.ordered]

    def agents_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.agent_rows)


class _Game(Game):
    tables = (ROUNDS, AGENTS)


# --- pgoods: a public-goods game on a network -------------------------------------------------

@dataclass(frozen=True)
class Offer:
    """What a contributor sees: its own last contribution and pay, its neighbours' contributions and pay."""

    agent: int
    round: int
    contribution: int
    pay: float
    neighbour_contributions: tuple[int, ...]
    neighbour_pay: tuple[float, ...]


@register_policy("imitate", "pgoods", "copy the contribution of the best-paid agent in one's neighbourhood")
class Imitate(Policy):
    def decide(self, obs: Offer, rng: random.Random) -> int:
        best = max(zip((obs.pay, *obs.neighbour_pay), (obs.contribution, *obs.neighbour_contributions)))
        return int(best[1])


@register_policy("free-ride", "pgoods", "never contribute")
class FreeRide(Policy):
    def decide(self, obs: Offer, rng: random.Random) -> int:
        return 0


@register_policy("dice", "pgoods", "a contribution from 0 to 10 at random")
class Dice(Policy):
    def decide(self, obs: Offer, rng: random.Random) -> int:
        return rng.randint(0, 10)


class Contributor(FixedAgent, PolicyAgent):
    def __init__(self, model, cell, node: int, contribution: int, policy: Policy) -> None:
        super().__init__(model)
        self.cell, self.node, self.state, self.policy, self.pay = cell, node, contribution, policy, 0.0

    def observe(self) -> Offer:
        around = [self.model.by_node[v] for v in sorted(self.model.graph[self.node])]
        return Offer(self.node, self.model.round + 1, self.state, self.pay, tuple(a.state for a in around),
                     tuple(a.pay for a in around))

    def advance(self) -> None:
        self.state = int(self.pending)


class PublicGoods(_Recorded):
    def __init__(self, policy="imitate", seed: int = 0, **parameters) -> None:
        super().__init__(rng=seed)
        p = PGOODS.parameters.validate(parameters, complete=True)
        self.n, self.r, self.max_rounds, self.round = p["n"], p["r"], p["max_rounds"], 0
        draw = random.Random(seed)
        self.graph = nx.connected_watts_strogatz_graph(self.n, 4, 0.2, seed=seed)
        self.layout = seeded_layout(self.graph, seed)
        self.network = network_space(self.graph, draw)
        chosen = policy if isinstance(policy, Policy) else PGOODS.make(policy)
        self.by_node = [Contributor(self, self.network[v], v, draw.randint(0, 10), chosen) for v in range(self.n)]
        self.ordered, self.agent_rows, self.draw = self.by_node, [], draw
        self.datacollector = DataCollector(model_reporters={
            "mean_contribution": lambda m: statistics.fmean(a.state for a in m.by_node),
            "full_share": lambda m: sum(a.state == 10 for a in m.by_node) / m.n,
            "free_riders": lambda m: sum(a.state == 0 for a in m.by_node),
            "failed": lambda m: 0})
        self.pay_out()
        self.record()

    def agent_row(self, agent) -> dict:
        return {"round": self.round, "agent": agent.node, "contribution": agent.state, "pay": agent.pay}

    def pay_out(self) -> None:
        for a in self.by_node:
            group = [a, *(self.by_node[v] for v in self.graph[a.node])]
            a.pay = 10 - a.state + self.r * sum(g.state for g in group) / len(group)

    def step(self) -> None:
        play_round(self.by_node, self.draw)
        self.round += 1
        self.pay_out()
        self.record()
        self.running = self.round < self.max_rounds


class PGoodsGame(_Game):
    name = "pgoods"
    summary = "a public-goods game on a network (contributions 0..10)"
    parameters = ParameterSet.of(
        Parameter("n", int, 24, "contributors", low=5, high=10_000),
        Parameter("r", float, 1.6, "the multiplier of the common pot", low=0, high=100, step=0.1),
        Parameter("max_rounds", int, 12, "rounds played", low=1, high=100_000))
    state_scale = continuous(0, 10, unit="coins", label="contribution")
    measures = {"mean_contribution": continuous(0, 10, unit="coins", label="mean contribution"),
                "full_share": share(label="share contributing all"), "free_riders": count(high="n", label="free riders"),
                "failed": count(label="failed decisions", events=True)}
    headline_measure = "mean_contribution"

    def make(self, spec):
        from llm_mesa import make_policy

        return make_policy(spec, self.name)

    def build(self, parameters, policy, seed):
        return PublicGoods(policy, seed, **parameters)


# --- segregate: a Schelling-like game on a Moore grid -----------------------------------------

@dataclass(frozen=True)
class Street:
    """What a resident sees: its kind, how many neighbours share it, how many differ, empty cells around."""

    kind: str
    alike: int
    unlike: int
    empty_around: int


@register_policy("unhappy-moves", "segregate", "move to a random empty cell when fewer than half the neighbours are alike")
class UnhappyMoves(Policy):
    def decide(self, obs: Street, rng: random.Random) -> str:
        return "move" if obs.alike < obs.unlike else "stay"


@register_policy("stay", "segregate", "never move")
class Stay(Policy):
    def decide(self, obs: Street, rng: random.Random) -> str:
        return "stay"


class Resident(CellAgent, PolicyAgent):
    def __init__(self, model, cell, kind: str, policy: Policy) -> None:
        super().__init__(model)
        self.cell, self.state, self.policy = cell, kind, policy

    def observe(self) -> Street:
        around = [a for c in self.cell.neighborhood for a in c.agents]
        alike = sum(a.state == self.state for a in around)
        return Street(self.state, alike, len(around) - alike, sum(not c.agents for c in self.cell.neighborhood))

    def advance(self) -> None:
        if self.pending == "move":
            self.cell = self.model.grid.select_random_empty_cell()
            self.model.moved += 1


class Segregation(_Recorded):
    def __init__(self, policy="unhappy-moves", seed: int = 0, **parameters) -> None:
        super().__init__(rng=seed)
        p = SEGREGATE.parameters.validate(parameters, complete=True)
        self.max_rounds, self.round, self.moved = p["max_rounds"], 0, 0
        self.draw = random.Random(seed)
        self.grid = OrthogonalMooreGrid((p["width"], p["height"]), torus=False, capacity=1, random=self.draw)
        chosen = policy if isinstance(policy, Policy) else SEGREGATE.make(policy)
        self.ordered = []
        for cell in sorted(self.grid.all_cells, key=lambda c: c.coordinate):
            if self.draw.random() < p["density"]:
                self.ordered.append(Resident(self, cell, "A" if self.draw.random() < 0.5 else "B", chosen))
        self.agent_rows = []
        self.datacollector = DataCollector(model_reporters={
            "happy_share": lambda m: sum(a.observe().alike >= a.observe().unlike for a in m.ordered) / len(m.ordered),
            "moved": "moved"})
        self.record()

    def agent_row(self, agent) -> dict:
        x, y = agent.cell.coordinate
        return {"round": self.round, "agent": self.ordered.index(agent), "kind": agent.state, "x": x, "y": y}

    def step(self) -> None:
        self.moved = 0
        play_round(self.ordered, self.draw)
        self.round += 1
        self.record()
        self.running = self.round < self.max_rounds and self.moved > 0


class SegregateGame(_Game):
    name = "segregate"
    summary = "residents of two kinds on a Moore grid, moving away from unlike neighbours"
    parameters = ParameterSet.of(
        Parameter("width", int, 12, "cells across", low=3, high=500),
        Parameter("height", int, 9, "cells down", low=3, high=500),
        Parameter("density", float, 0.7, "share of cells occupied at the start", low=0.05, high=0.95, step=0.05),
        Parameter("max_rounds", int, 15, "round limit", low=1, high=10_000, round_limit=True))
    state_scale = categorical("A", "B", palette={"A": "#1b9e77", "B": "#d95f02"}, label="kind")
    measures = {"happy_share": share(label="share happy"), "moved": count(label="moved")}

    def make(self, spec):
        from llm_mesa import make_policy

        return make_policy(spec, self.name)

    def build(self, parameters, policy, seed):
        return Segregation(policy, seed, **parameters)


# --- hexop: opinions on a hexagonal grid ----------------------------------------------------------

@register_policy("average", "hexop", "take the mean of one's own opinion and the six neighbours'")
class Average(Policy):
    def decide(self, obs: dict, rng: random.Random) -> float:
        return statistics.fmean([obs["own"], *obs["around"]])


@register_policy("stubborn", "hexop", "keep one's opinion")
class Stubborn(Policy):
    def decide(self, obs: dict, rng: random.Random) -> float:
        return obs["own"]


class Opinion(FixedAgent, PolicyAgent):
    def __init__(self, model, cell, opinion: float, policy: Policy) -> None:
        super().__init__(model)
        self.cell, self.state, self.policy = cell, opinion, policy

    def observe(self) -> dict:
        return {"own": self.state, "around": [a.state for c in self.cell.neighborhood for a in c.agents]}

    def advance(self) -> None:
        self.state = float(self.pending)


class HexOpinions(_Recorded):
    def __init__(self, policy="average", seed: int = 0, **parameters) -> None:
        super().__init__(rng=seed)
        p = HEXOP.parameters.validate(parameters, complete=True)
        self.max_rounds, self.round = p["max_rounds"], 0
        self.draw = random.Random(seed)
        self.grid = HexGrid((p["width"], p["height"]), torus=False, random=self.draw)
        chosen = policy if isinstance(policy, Policy) else HEXOP.make(policy)
        self.ordered = [Opinion(self, cell, round(self.draw.random(), 3), chosen)
                        for cell in sorted(self.grid.all_cells, key=lambda c: c.coordinate)]
        self.agent_rows = []
        self.datacollector = DataCollector(model_reporters={
            "mean_opinion": lambda m: statistics.fmean(a.state for a in m.ordered),
            "spread": lambda m: max(a.state for a in m.ordered) - min(a.state for a in m.ordered)})
        self.record()

    def agent_row(self, agent) -> dict:
        return {"round": self.round, "agent": self.ordered.index(agent), "opinion": agent.state}

    def step(self) -> None:
        play_round(self.ordered, self.draw)
        self.round += 1
        self.record()
        self.running = self.round < self.max_rounds


class HexopGame(_Game):
    name = "hexop"
    summary = "opinions averaged over a hexagonal grid"
    parameters = ParameterSet.of(
        Parameter("width", int, 9, "cells across", low=2, high=200),
        Parameter("height", int, 7, "cells down", low=2, high=200),
        Parameter("max_rounds", int, 10, "rounds played", low=1, high=10_000))
    state_scale = continuous(0, 1, label="opinion")
    measures = {"mean_opinion": continuous(0, 1, label="mean opinion"), "spread": continuous(0, 1, label="spread")}

    def make(self, spec):
        from llm_mesa import make_policy

        return make_policy(spec, self.name)

    def build(self, parameters, policy, seed):
        return HexOpinions(policy, seed, **parameters)


# --- wallet: coins changing hands, no space ------------------------------------------------------------

@register_policy("give", "wallet", "give one coin to a random other agent when holding any")
class Give(Policy):
    def decide(self, obs: dict, rng: random.Random) -> int | None:
        return rng.randrange(obs["agents"]) if obs["wealth"] > 0 else None


@register_policy("keep", "wallet", "keep every coin")
class Keep(Policy):
    def decide(self, obs: dict, rng: random.Random) -> int | None:
        return None


class Holder(PolicyAgent):
    def __init__(self, model, index: int, policy: Policy) -> None:
        super().__init__(model)
        self.index, self.state, self.policy = index, 1, policy

    def observe(self) -> dict:
        return {"wealth": self.state, "agents": self.model.n}

    def advance(self) -> None:
        if self.pending is not None and self.state > 0:
            self.state -= 1
            self.model.ordered[self.pending].state += 1


class Wallets(_Recorded):
    def __init__(self, policy="give", seed: int = 0, **parameters) -> None:
        super().__init__(rng=seed)
        p = WALLET.parameters.validate(parameters, complete=True)
        self.n, self.max_rounds, self.round = p["n"], p["max_rounds"], 0
        self.draw = random.Random(seed)
        chosen = policy if isinstance(policy, Policy) else WALLET.make(policy)
        self.ordered = [Holder(self, i, chosen) for i in range(self.n)]
        self.agent_rows = []
        self.datacollector = DataCollector(model_reporters={
            "richest": lambda m: max(a.state for a in m.ordered),
            "broke_share": lambda m: sum(a.state == 0 for a in m.ordered) / m.n})
        self.record()

    def agent_row(self, agent) -> dict:
        return {"round": self.round, "agent": agent.index, "wealth": agent.state}

    def step(self) -> None:
        play_round(self.ordered, self.draw)
        self.round += 1
        self.record()
        self.running = self.round < self.max_rounds


class WalletGame(_Game):
    name = "wallet"
    summary = "coins changing hands among agents, with no space"
    parameters = ParameterSet.of(
        Parameter("n", int, 20, "agents", low=2, high=10_000),
        Parameter("max_rounds", int, 10, "rounds played", low=1, high=10_000))
    state_scale = count(label="wealth")
    measures = {"richest": count(label="richest agent's coins"), "broke_share": share(label="share with no coin")}

    def make(self, spec):
        from llm_mesa import make_policy

        return make_policy(spec, self.name)

    def build(self, parameters, policy, seed):
        return Wallets(policy, seed, **parameters)


PGOODS, SEGREGATE, HEXOP, WALLET = PGoodsGame(), SegregateGame(), HexopGame(), WalletGame()
GAMES = {game.name: game for game in (PGOODS, SEGREGATE, HEXOP, WALLET)}


def install(site: Path) -> Path:
    """Lay these games out in ``site`` as an installed distribution (module, dist-info, one entry point each)."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "space_games.py").write_text(Path(__file__).read_text())
    info = site / "space_games-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: space_games\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[llm_mesa.games]\n" + "".join(
        f"{name} = space_games:{constant}\n" for name, constant in
        (("pgoods", "PGOODS"), ("segregate", "SEGREGATE"), ("hexop", "HEXOP"), ("wallet", "WALLET"))))
    return site


@contextlib.contextmanager
def registered():
    """These games registered in this process (``llm_mesa.register_game``) while the block runs."""
    from llm_mesa.registry import game_names, register_game, unregister_game

    added = [register_game(game).name for game in GAMES.values() if game.name not in game_names()]
    try:
        yield GAMES
    finally:
        for name in added:
            unregister_game(name)
