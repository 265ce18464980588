"""The values of the game contract (``llm_mesa.games.Game``): what a game declares and what it plays.

Plain frozen dataclasses, importable without Mesa or any game: a table a game
keeps, one game to play and its result, an estimate of LLM use, and the optional
capabilities a game declares (its policies, design cells, LLM support and
extensions). ``llm_mesa.games`` re-exports every one of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from llm_mesa.llm.endpoint import Endpoint
    from llm_mesa.llm.store import ResponseStore

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class Table:
    """A per-game table a game can keep beside its summary row.

    ``key``: the columns that identify a row within one game (a sweep adds
    condition, policy and seed); ``types``: pandas types of columns that may be
    all missing in one game (so every game's part reads back alike); ``needs``:
    tables kept with it (per-agent rows are read against the network's edges).
    """

    name: str
    key: tuple[str, ...] = ()
    doc: str = ""
    types: Mapping[str, str] = field(default=_EMPTY, hash=False)
    needs: tuple[str, ...] = ()


#: the default table: the model's DataCollector, one row per round (round 0 is the start)
ROUNDS = Table("rounds", ("round",), "the model's DataCollector: one row per round, round 0 the start")


@dataclass
class GameResult:
    """One finished game: its summary row and the per-game tables asked for.

    The row is held to JSON's types here, where it leaves the game (``llm_mesa.json_values``):
    a value a sweep could not write is refused in one line that names its key, before anything is written.
    """

    row: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from llm_mesa.json_values import checked_row

        self.row = checked_row(self.row)


@dataclass(frozen=True)
class PlayRequest:
    """Everything needed to play one game of a sweep (picklable, for worker processes).

    ``policy`` is a rule policy spec, or ``"llm"`` with ``endpoint`` set (a
    ``Population`` when the game's agents are split among several); ``store`` the
    record/replay store the game's LLM calls go through.
    """

    parameters: Mapping[str, Any]
    policy: str
    seed: int
    tables: tuple[str, ...] = ()
    endpoint: Endpoint | Any | None = None  # an Endpoint, or a sweep's Population (llm_mesa.sweep.grid)
    store: ResponseStore | None = None


@dataclass(frozen=True)
class LlmEstimate:
    """One game's LLM use at most, from its parameters and prompt templates (no call made)."""

    calls: int
    rounds: int
    prompt_tokens_per_call: int
    completion_tokens_per_call: int
    may_stop_early: bool = True

    @property
    def calls_per_round(self) -> float:
        return self.calls / max(self.rounds, 1)


@dataclass(frozen=True)
class PolicyCatalog:
    """The game's policies.

    ``module`` registers the rule policies when imported; ``lazy`` names heavy ones
    (name -> (module, one-line summary)), imported only when asked for, so a
    rule-only game never imports openai; ``groups`` are named sets of
    configurations for sweeps (``label -> spec``; default: a ``rules`` group of
    every registered rule policy at its defaults); ``parameter`` is what the
    game's model calls the policy (``policy``, ``speaker``); ``populations`` says
    whether one game may split its agents among several policies (``A + B``).
    """

    module: str | None = None
    lazy: Mapping[str, tuple[str, str]] = _EMPTY
    groups: Mapping[str, Mapping[str, str]] = _EMPTY
    parameter: str = "policy"
    populations: bool = False


@dataclass(frozen=True)
class StudyDesign:
    """Named design cells (``conditions``: name -> parameters) and named lists of them (``groups``)."""

    conditions: Mapping[str, Mapping[str, Any]] = _EMPTY
    groups: Mapping[str, Sequence[str]] = _EMPTY


@dataclass(frozen=True)
class LlmSupport:
    """What LLM agents need from a game.

    ``policy``: ``"module:factory"``, ``factory(endpoint, store) -> Policy`` (None: the
    game has no LLM policy); ``endpoint_defaults``: sampling the game's study used
    (Endpoint field -> value), applied where the user set none; ``behaviours``: the
    module that registers the stand-in server's behaviours for the game's prompts.
    """

    policy: str | None = None
    endpoint_defaults: Mapping[str, Any] = _EMPTY
    behaviours: str | None = None


@dataclass(frozen=True)
class Extensions:
    """Modules that improve on the core's generic output, each imported only when used.

    ``cli``: the game's own subcommand (``configure(parser)``, ``run(args)``; default: the
    generic one); ``analysis``: ``configure``, ``analyze``, ``format_report`` (default: per-policy
    summaries of the summary row); ``figures``: ``report_panels`` (default: those
    summaries drawn); ``view``: ``"module:Class"`` of a ``llm_mesa.views.GameView``
    subclass (default: the generic view of the model's network and rounds).
    """

    cli: str | None = None
    analysis: str | None = None
    figures: str | None = None
    view: str | None = None


__all__ = ["Extensions", "GameResult", "LlmEstimate", "LlmSupport", "PlayRequest", "PolicyCatalog", "ROUNDS",
           "StudyDesign", "Table"]
