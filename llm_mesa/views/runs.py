"""Finished games read back for the replay pages: a run directory (``--out``) or one game of a sweep.

A ``Recording`` answers a page's questions round by round, as a live model does
(``snapshot(round, selected)``), from what was kept. The default, ``ReplayedRun``,
works for any game: its recorded per-round table draws the charts, and each round's
picture (network or grid, fills, tooltips and agent panel) comes from the run's
``agents`` table when it keeps one (LLM games included: the space is built again from
the parameters and seed, no round is played, no endpoint called;
``llm_mesa.views.recorded_agents``), else from playing a rule game again from its
parameters, policy and seed, which gives the same game bit for bit (the project's
reproducibility rule). Played again, the rounds are compared with the recorded ones,
and a game that does not match shows its charts only, saying why; so does an LLM game
that kept no agents table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from llm_mesa import declared
from llm_mesa.boundary import OutsideDataError, check_seal, content_digest, read_json_file
from llm_mesa.errors import LlmMesaError
from llm_mesa.views.charts import numeric_rounds
from llm_mesa.views.pictures import GridPicture, Picture

if TYPE_CHECKING:
    from llm_mesa.views import GameView, Snapshot

#: the environment variable through which ``llm-mesa viz --replay DIR`` names the run
REPLAY_DIR_ENV = "LLM_MESA_REPLAY_DIR"
#: a replay plays a game again at most this many rounds (a longer game shows its charts only)
REPLAY_ROUNDS = 5000


class ReplayError(LlmMesaError):
    """A run directory or sweep game the replay cannot open; the message names the fix."""


def read_manifest(path: Path) -> dict[str, Any]:
    """``manifest.json`` of a run or sweep as a dict ({} when absent); one line for anything else."""
    file = path / "manifest.json" if path.is_dir() else path
    if not file.is_file():
        return {}
    fix = "write the run again with --out"
    try:  # within the boundary's bounds, and proven when it carries a digest (llm_mesa.boundary.seal)
        return check_seal(read_json_file(file, "a run's manifest or summary (a JSON object)", fix=fix), file,
                          "a run's manifest", fix=fix)
    except OutsideDataError as exc:
        raise ReplayError(str(exc)) from None


def run_directory(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """A run directory and its manifest, refused in one line when it is not one (saying what it holds)."""
    path = Path(str(path).strip()).expanduser()
    if not str(path).strip() or not path.is_dir():
        raise ReplayError(f"{str(path)!r} is not a directory; give the folder passed to llm-mesa GAME --out")
    manifest = read_manifest(path)
    if (path / "games").is_dir():
        raise ReplayError(f"{path} holds a sweep (a games/ folder), not one game: open it with llm-mesa viz --sweep {path}")
    if not (path / "rounds.parquet").is_file():
        found = sorted(p.name for p in path.iterdir() if not p.name.startswith("."))
        shown = ", ".join(found[:8]) + (f" and {len(found) - 8} more" if len(found) > 8 else "") or "nothing"
        raise ReplayError(f"{path} has no rounds.parquet (found: {shown}); give the folder written by "
                          "llm-mesa GAME ... --out DIR")
    if not manifest.get("kind"):
        raise ReplayError(f"{path} has no manifest.json that names its game; write the run again with llm-mesa GAME --out")
    summary = path / "summary.json"
    if manifest.get("summary_digest") and summary.is_file() \
            and content_digest(read_manifest(summary)) != manifest["summary_digest"]:
        raise ReplayError(f"{summary} does not hold the summary written with its manifest (edited or damaged "
                          "since); write the run again with --out")
    return path, manifest


def read_table(path: Path, name: str) -> pd.DataFrame | None:
    file = path / f"{name}.parquet"
    if not file.is_file():
        return None
    try:
        return pd.read_parquet(file)
    except (OSError, ValueError) as exc:
        raise ReplayError(f"cannot read {file} ({exc}); write the run again with --out") from None


@dataclass
class Recording:
    """A finished game, round by round. ``rounds``: its per-round table (round 0 the start when kept)."""

    view: GameView
    key: str
    rounds: pd.DataFrame
    summary: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""  # why part of the game cannot be shown

    @property
    def first_round(self) -> int:
        return int(self.rounds["round"].min()) if len(self.rounds) else 0

    @property
    def last_round(self) -> int:
        return int(self.rounds["round"].max()) if len(self.rounds) else 0

    def check_round(self, round_number: int) -> int:
        round_number = int(round_number)
        if not self.first_round <= round_number <= self.last_round:
            raise ReplayError(f"round {round_number} is outside this game (rounds {self.first_round}..{self.last_round})")
        return round_number

    def outline(self) -> str:
        """The game in one line, from its summary."""
        shown = {k: v for k, v in self.summary.items() if not isinstance(v, (dict, list)) and k != "game"}
        words = ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in list(shown.items())[:8])
        return words or f"{self.last_round} rounds"

    def picture(self, round_number: int) -> Picture | None:
        return None

    def agent_rows(self, round_number: int, index: int) -> dict[str, str]:
        return {}

    def agent_count(self) -> int:
        return 0

    def banners(self, round_number: int) -> list:
        from llm_mesa.views.snapshot import Banner

        return [Banner("info", self.note, "llm-mesa-replay-note")] if self.note else []

    def messages(self, round_number: int) -> pd.DataFrame | None:
        return None

    def snapshot(self, round_number: int, selected: int = 0) -> Snapshot:
        from llm_mesa.views.snapshot import Snapshot

        round_number = self.check_round(round_number)
        count = self.agent_count()
        chosen = min(max(int(selected), 0), max(count - 1, 0))
        return Snapshot(round_number=round_number, label=f"Round {round_number} of {self.last_round}", running=False,
                        rounds=self.rounds, picture=self.picture(round_number), banners=tuple(self.banners(round_number)),
                        agents=count, selected=chosen, agent=self.agent_rows(round_number, chosen) if count else {},
                        messages=self.messages(round_number))


@dataclass
class ReplayedRun(Recording):
    """Any game, round by round: each round's picture from the run's ``agents`` table (any policy, LLM games
    included; ``llm_mesa.views.recorded_agents``), else from playing a rule game again from its seed."""

    pictures: dict[int, Picture] = field(default_factory=dict)
    fields: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # each agent's recorded row, per round
    policies: list[str] = field(default_factory=list)
    column: str = ""  # the agents table's column the state came from
    neighbours: dict[Any, list[Any]] = field(default_factory=dict)  # a grid's cells around each cell
    names: list[Any] = field(default_factory=list)  # each agent as the game's tables name it

    @classmethod
    def play_again(cls, view: GameView, key: str, recorded: pd.DataFrame | None, parameters: Mapping[str, Any],
                   policy: str, seed: int, summary: Mapping[str, Any],
                   agents: pd.DataFrame | None = None) -> ReplayedRun:
        from llm_mesa.views.controls import LLM

        rounds = numeric_rounds(recorded) if recorded is not None else None
        reason = "the run kept no agents table (one row per agent and round)"
        if agents is not None and len(agents):
            made = cls.from_agents(view, key, rounds, agents, parameters, policy, seed, summary)
            if isinstance(made, ReplayedRun):
                return made
            reason = made
        if policy.split(":")[0] == LLM:
            if rounds is None:
                raise ReplayError(f"{key} kept no per-round table and is an LLM game; nothing to replay")
            return cls(view, key, rounds, summary, f"an LLM game is not played again, and {reason}: its charts only "
                                                    "(a game that keeps an agents table replays its pictures)")
        try:
            model = view.build(parameters, policy, int(seed))
        except (LlmMesaError, ValueError, TypeError) as exc:
            raise ReplayError(f"{key} cannot be played again ({exc})") from None
        pictures = {0: view.picture(model)}
        steps = 0
        while model.running and steps < REPLAY_ROUNDS:
            model.step()
            steps += 1
            pictures[view.round_number(model)] = view.picture(model)
        played = view.rounds(model)
        if rounds is None:
            rounds, note = played, "played again from its seed (the run kept no per-round table)"
        elif not _same(played, rounds):
            return cls(view, key, rounds, summary, "played again from its seed, this game differs from its record "
                                                    "(another version of the game?): its charts only")
        else:
            rounds, note = played, ""  # the same game: its own table may say more than the record kept
        if pictures[0] is None:
            return cls(view, key, rounds, summary, note)
        base = pictures[0]
        policies = [str((d or {}).get("policy", "-")) for d in (base.details or [{}] * len(base.state))]
        if isinstance(base, GridPicture):
            policies = [policy] * len(view.agents(model))
        return cls(view, key, rounds, summary, note, pictures=_lighter(pictures), policies=policies,
                   neighbours=_cells_around(model), names=view.names(model))

    @classmethod
    def from_agents(cls, view: GameView, key: str, rounds: pd.DataFrame | None, agents: pd.DataFrame,
                    parameters: Mapping[str, Any], policy: str, seed: int,
                    summary: Mapping[str, Any]) -> ReplayedRun | str:
        """The run's pictures from its agents table, its space from building (not playing) the game again;
        or why they cannot be drawn (a phrase)."""
        from llm_mesa.views.recorded_agents import grid_at, network_at, read_agents

        try:
            model = view.build(parameters, declared.first_policy(view.game), int(seed))
        except (LlmMesaError, ValueError, TypeError) as exc:
            return f"its space could not be built again ({exc})"
        base = view.picture(model)
        if base is None:
            return "the game keeps no network or grid to draw"
        everyone = view.agents(model)
        grid = isinstance(base, GridPicture)
        nodes = None if grid else list(base.graph.nodes)
        read = read_agents(agents, everyone, view.state_of, nodes=nodes, grid=grid)
        if isinstance(read, str):
            return read
        policies = [policy] * len(everyone)
        pictures: dict[int, Picture] = {}
        for r, states in read.states.items():
            if grid:
                pictures[r] = grid_at(base, states, read.cells.get(r) or [], read.rows[r], r, key, policies)
            else:
                pictures[r] = network_at(base, states, read.rows[r], r, key, policies)
        if rounds is None:
            rounds = pd.DataFrame({"round": sorted(pictures)})
        missing = [r for r in range(int(rounds["round"].min()), int(rounds["round"].max()) + 1) if r not in pictures]
        note = f"the agents table keeps no row for round(s) {', '.join(map(str, missing[:8]))}" if missing else ""
        domain = _widest(pictures.values())
        pictures = {r: replace(p, domain=domain) for r, p in pictures.items()}
        return cls(view, key, rounds, summary, note, pictures=pictures, fields=read.rows, policies=policies,
                   column=read.column, neighbours=_cells_around(model), names=view.names(model))

    def picture(self, round_number: int) -> Picture | None:
        return self.pictures.get(round_number)

    def agent_count(self) -> int:
        return len(self.policies) if self.pictures else 0

    def agent_rows(self, round_number: int, index: int) -> dict[str, str]:
        from llm_mesa.views.agent_panel import recorded_rows, words

        picture = self.pictures.get(round_number)
        if picture is None or not 0 <= index < len(self.policies):
            return {}
        recorded = (self.fields.get(round_number) or [{}] * (index + 1))[index]
        if isinstance(picture, GridPicture):
            at = next((c for c, members in zip(picture.coordinates, picture.agents) if index in members), None)
            fill = dict(zip(picture.coordinates, picture.state))
            own = recorded.get(self.column) if self.column else (fill.get(at) if at is not None else None)
            rows = {"agent": str(self.name(index)), "state": words(own), "policy": self.policies[index],
                    "cell": f"({at[0]}, {at[1]})" if at is not None else "-"}
            if at is not None:
                around = [fill.get(c) for c in self.neighbours.get(at, [])]
                rows["neighbours hold"] = ", ".join(words(s, 40) for s in around if s is not None) or "-"
        else:
            nodes = list(picture.graph.nodes)
            place = {v: i for i, v in enumerate(nodes)}
            around = [picture.state[place[v]] for v in picture.graph.neighbors(nodes[index]) if v in place]
            rows = {"agent": str(self.name(index)), "state": words(picture.state[index]), "policy": self.policies[index],
                    "neighbours hold": ", ".join(words(s, 40) for s in around[:40]) or "-"}
        rows.update(recorded_rows(recorded, skip=(self.column,)))
        return rows

    def name(self, index: int) -> Any:
        """Agent ``index`` as the game's tables name it."""
        return self.names[index] if index < len(self.names) else index

    def snapshot(self, round_number: int, selected: int = 0) -> Snapshot:
        return replace(super().snapshot(round_number, selected), names=tuple(self.names[: self.agent_count()]))


def _lighter(pictures: dict[int, Picture], budget: int = 400_000) -> dict[int, Picture]:
    """The pictures of a game played again, their tooltips dropped beyond ``budget`` agent-rounds (a long, large
    game keeps its states, squares and marks for every round, and its details for the first)."""
    size = sum(len(p.state) for p in pictures.values() if p is not None)
    if size <= budget:
        return {r: p for r, p in pictures.items() if p is not None}
    first = min(pictures)
    return {r: (p if r == first else replace(p, details=None)) for r, p in pictures.items() if p is not None}


def _widest(pictures: Any) -> tuple[float, float] | None:
    """One continuous range for every round of a replay (a colour means one number throughout)."""
    domains = [p.fill().domain for p in pictures if p.fill().numeric]
    if not domains:
        return None
    return min(d[0] for d in domains), max(d[1] for d in domains)


def _cells_around(model: Any) -> dict[Any, list[Any]]:
    """A grid's neighbourhoods by coordinate (for the replay's agent panel); {} for any other space."""
    from llm_mesa.views.spaces import find_space, is_grid

    space = find_space(model)
    if not is_grid(space):
        return {}
    return {tuple(int(c) for c in cell.coordinate): [tuple(int(c) for c in n.coordinate) for n in cell.neighborhood]
            for cell in space.all_cells}


def _same(played: pd.DataFrame, recorded: pd.DataFrame) -> bool:
    """Do two per-round tables agree on their shared rounds and columns (to float precision)?"""
    columns = [c for c in recorded.columns if c in played.columns and c != "round"]
    merged = recorded.merge(played, on="round", suffixes=("", "_again"))
    if merged.empty or len(merged) < len(recorded):
        return False
    return all(((merged[c] - merged[f"{c}_again"]).abs().fillna(0) < 1e-9).all() for c in columns)


def open_run(view: GameView, path: str | Path) -> Recording:
    """A run directory of ``view``'s game (``llm-mesa GAME ... --out DIR``), replayed round by round."""
    path, manifest = run_directory(path)
    if manifest.get("kind") != view.game.name:
        raise ReplayError(f"{path} holds a {manifest.get('kind')} run, not a {view.game.name} one")
    rounds = read_table(path, "rounds")
    agents = read_table(path, "agents")
    summary = read_manifest(path / "summary.json") if (path / "summary.json").is_file() else {}
    parameters = {k: v for k, v in (manifest.get("parameters") or {}).items() if k in view.game.parameters}
    policy = str(_policy_of(view, manifest, summary))
    seed = int(manifest.get("seed", summary.get("seed", 1)) or 0)
    return ReplayedRun.play_again(view, str(path), rounds, parameters, policy, seed, summary, agents)


def _policy_of(view: GameView, manifest: Mapping[str, Any], summary: Mapping[str, Any]) -> Any:
    """The run's policy spec: as the generic command writes it, or under the game's name for it (one of them)."""
    named = view.game.policies.parameter  # what the game's model calls its policy
    for found in (manifest.get("policy"), summary.get("policy"), manifest.get(named), summary.get(named)):
        if isinstance(found, str) and found:
            return found
    for listed in (manifest.get(named + "s"), (manifest.get("parameters") or {}).get(named + "s")):
        if isinstance(listed, (list, dict)) and len(listed) == 1:  # one policy for every agent
            return next(iter(listed))
    return declared.first_policy(view.game)


def sweep_game(view: GameView, sweep: Any, condition: str, policy: str, seed: int) -> Recording:
    """One game of a sweep (``sweeps.SweepGames``): its kept rounds, its pictures from its kept agents table
    (else played again from its seed)."""
    rounds = sweep.of_game("rounds", condition, policy, seed)
    agents = sweep.of_game("agents", condition, policy, seed)
    return ReplayedRun.play_again(view, sweep.label(condition, policy, seed), rounds if len(rounds) else None,
                                  sweep.parameters_of(condition), sweep.policy_spec(policy), seed,
                                  sweep.row(condition, policy, seed), agents if len(agents) else None)


__all__ = ["REPLAY_DIR_ENV", "Recording", "ReplayError", "ReplayedRun", "open_run", "read_manifest", "read_table",
           "run_directory", "sweep_game"]
