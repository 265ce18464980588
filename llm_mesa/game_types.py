"""The values of the game contract (``llm_mesa.games.Game``): what a game declares and what it plays.

Plain frozen dataclasses, importable without Mesa or any game: a table a game
keeps, one game to play and its result, an estimate of LLM use, and the optional
capabilities a game declares (its policies, design cells, LLM support and
extensions). ``llm_mesa.games`` re-exports every one of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
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

    Attributes:
        name: The table's name (``--tables NAME``, the Parquet folder of a sweep).
        key: The columns that identify a row within one game (a sweep adds condition, policy and seed).
        doc: One line saying what a row is, for listings.
        types: Pandas types of columns that may be all missing in one game, so that every game's
            part reads back alike.
        needs: Tables kept with it (per-agent rows are read against the network's edges).
        read: How the table is read from a finished (or running) model, ``read(model) -> DataFrame`` or
            ``"module:function"`` (None: the core's default, from the model's DataCollector).
    """

    name: str
    key: tuple[str, ...] = ()
    doc: str = ""
    types: Mapping[str, str] = field(default=_EMPTY, hash=False)
    needs: tuple[str, ...] = ()
    read: Callable[[Any], pd.DataFrame] | str | None = field(default=None, compare=False)


#: the default table: the model's DataCollector, one row per round (round 0 is the start)
ROUNDS = Table("rounds", ("round",), "the model's DataCollector: one row per round, round 0 the start")


SCALE_KINDS = ("categorical", "ordinal", "continuous", "count", "share", "features")


@dataclass(frozen=True)
class Scale:
    """What a quantity of a game is, so that every generic page, chart and report draws it right.

    Build one with ``categorical``, ``ordinal``, ``continuous``, ``count`` or ``share``.

    Attributes:
        kind: ``categorical`` (``values``, unordered, drawn in ``palette``'s colours, else a state
            named like a colour in that colour, else distinct colours); ``ordinal`` (``values`` in
            their order, drawn on a sequential scale); ``continuous`` (numbers from ``low`` to
            ``high``, drawn on a continuous scale with a legend bar); ``count`` (whole numbers from
            0, on an axis of their own); ``share`` (a fraction, on a 0-1 axis).
        values: The categories or ranks, in order.
        palette: A colour for each categorical value.
        low: The lowest value, a number or the name of one of the game's parameters.
        high: The highest value, likewise (``count(high="limit")``: rounds never exceed the round
            limit ``limit`` of their own game), or a product of parameters (``count(high="width*height")``:
            agents on a grid of one agent a cell); ``bounds(parameters)`` reads a named one.
        unit: The unit of a continuous value, for axes and legends.
        label: What the quantity is called on pages and in reports.
        events: True for a per-round column that counts what happened in that round (moves, failed
            decisions): a game that has ended adds 0 to later rounds, where a level (a share, a
            state) holds its last value.
    """

    kind: str
    values: tuple[Any, ...] = ()
    palette: Mapping[Any, str] = field(default=_EMPTY, hash=False)
    low: float | str | None = None
    high: float | str | None = None
    unit: str = ""
    label: str = ""
    events: bool = False

    def __post_init__(self) -> None:
        if self.kind not in SCALE_KINDS:
            raise ValueError(f"unknown scale kind {self.kind!r}; choose one of: {', '.join(SCALE_KINDS)}")
        if self.kind == "share":
            object.__setattr__(self, "low", 0.0 if self.low is None else self.low)
            object.__setattr__(self, "high", 1.0 if self.high is None else self.high)
        if self.kind == "count" and self.low is None:
            object.__setattr__(self, "low", 0.0)

    @property
    def numeric(self) -> bool:
        """True for numbers on an axis (continuous, count, share); categories and ranks are not."""
        return self.kind in ("continuous", "count", "share")

    def bounds(self, parameters: Mapping[str, Any] | None = None) -> tuple[float | None, float | None]:
        """The scale's range as numbers.

        Args:
            parameters: One game's parameters, which a bound that names a parameter is read from.

        Returns:
            ``(low, high)``, each None where unbounded or where it names a parameter not given.
        """
        def number(bound: float | str | None) -> float | None:
            if isinstance(bound, str):  # a parameter's name, or a product of them ("width*height")
                product = 1.0
                for name in bound.split("*"):
                    value = (parameters or {}).get(name.strip())
                    if not isinstance(value, (int, float)) or isinstance(value, bool):
                        return None
                    product *= float(value)
                return product
            return None if bound is None else float(bound)

        return number(self.low), number(self.high)

    def clip(self, value: float, parameters: Mapping[str, Any] | None = None) -> float:
        """A value kept within the scale's range, so that an interval never leaves what the measure can be.

        Args:
            value: The number to keep in range.
            parameters: One game's parameters, for bounds that name one.

        Returns:
            ``value``, raised to the low bound or lowered to the high one where it is outside.
        """
        low, high = self.bounds(parameters)
        if low is not None:
            value = max(value, low)
        if high is not None:
            value = min(value, high)
        return value


def categorical(*values: Any, palette: Mapping[Any, str] | None = None, label: str = "") -> Scale:
    """Unordered values (a colour, a type, a move), each drawn in its own colour.

    Args:
        *values: The categories, in the order legends list them.
        palette: A colour (any CSS colour) for some or all of them.
        label: What the quantity is called on pages and in reports.

    Returns:
        A ``categorical`` scale.
    """
    return Scale("categorical", tuple(values), MappingProxyType(dict(palette or {})), label=label)


def ordinal(*values: Any, label: str = "") -> Scale:
    """Values in an order (low, middle, high), drawn light to dark.

    Args:
        *values: The values, lowest first.
        label: What the quantity is called on pages and in reports.

    Returns:
        An ``ordinal`` scale.
    """
    return Scale("ordinal", tuple(values), label=label)


def continuous(low: float | str | None = None, high: float | str | None = None, *, unit: str = "",
               label: str = "", events: bool = False) -> Scale:
    """Numbers in a range (wealth, a contribution), drawn on a continuous colour scale or axis.

    Args:
        low: The lowest value, or the name of the parameter that holds it.
        high: The highest value, or the name of the parameter that holds it (``continuous(0, "payoff")``).
        unit: The unit, for axes and legends.
        label: What the quantity is called on pages and in reports.
        events: True when a round's value is that round's own amount (a cost), not a level.

    Returns:
        A ``continuous`` scale.
    """
    return Scale("continuous", low=low, high=high, unit=unit, label=label, events=events)


def count(*, high: float | str | None = None, unit: str = "", label: str = "", events: bool = False) -> Scale:
    """Whole numbers from 0 (agents, conflicts, failed decisions), on an axis of their own.

    Args:
        high: The highest value, or the name of the parameter that holds it (``count(high="limit")``).
        unit: The unit, for axes and legends.
        label: What the quantity is called on pages and in reports.
        events: True when a round's value counts what happened in that round (moves, failures).

    Returns:
        A ``count`` scale.
    """
    return Scale("count", high=high, unit=unit, label=label, events=events)


def features(count: int, low: float = 0, high: float | str | None = None, *, label: str = "") -> Scale:
    """A state of ``count`` features, each a number from ``low`` to ``high`` (a culture of five traits, each one
    of ten values: ``features(5, 0, 9)``; ``high`` may name a parameter): drawn so that similar states look
    similar, identical ones alike, where unrelated colours would hide how far two states are apart."""
    return Scale("features", tuple(range(int(count))), low=low, high=high, label=label)


def share(*, label: str = "") -> Scale:
    """A fraction of something, 0 to 1, on a 0-1 axis (shares are drawn together).

    Args:
        label: What the quantity is called on pages and in reports.

    Returns:
        A ``share`` scale.
    """
    return Scale("share", label=label)


#: words that say a column is a fraction (``share_a``, ``blue_share``, ``agreement_rate``)
_SHARE_WORDS = ("share", "fraction", "rate", "proportion")


def infer_scale(name: str, values: Iterable[Any] = ()) -> Scale:
    """What an undeclared column most likely is, from its name and values: yes/no values and fractions
    in 0..1 are shares, whole numbers from 0 counts, other numbers continuous, anything else categories."""
    seen = []
    for value in values:
        value = value.item() if hasattr(value, "item") else value
        if value is None or (isinstance(value, float) and value != value):
            continue
        seen.append(value)
    label = name.replace("_", " ")
    if seen and all(isinstance(v, bool) for v in seen):
        return share(label=label)
    if seen and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in seen):
        within = all(0 <= v <= 1 for v in seen)
        if within and (any(word in name.lower() for word in _SHARE_WORDS) or not all(float(v).is_integer() for v in seen)):
            return share(label=label)
        if all(float(v).is_integer() and v >= 0 for v in seen):
            return count(label=label)
        return continuous(label=label)
    vectors = [v for v in seen if isinstance(v, (tuple, list)) and v and all(isinstance(x, (int, float)) for x in v)]
    if seen and len(vectors) == len(seen) and len({len(v) for v in vectors}) == 1:  # a state of several features
        flat = [x for v in vectors for x in v]
        return features(len(vectors[0]), min(flat), max(flat), label=label)
    return categorical(*sorted({str(v) for v in seen}), label=label)


@dataclass
class GameResult:
    """One finished game: its summary row and the per-game tables asked for.

    The row is held to JSON's types here, where it leaves the game (``llm_mesa.json_values``):
    a value a sweep could not write is refused in one line that names its key, before anything is written.

    Attributes:
        row: The game's summary row (column -> value of JSON's types).
        tables: The per-game tables asked for, by name.
    """

    row: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from llm_mesa.json_values import checked_row

        self.row = checked_row(self.row)


@dataclass(frozen=True)
class PlayRequest:
    """Everything needed to play one game of a sweep (picklable, for worker processes).

    Attributes:
        parameters: The game's parameters, checked.
        policy: A rule policy spec, or ``"llm"`` with ``endpoint`` set.
        seed: The game's seed.
        tables: The per-game tables to keep.
        endpoint: The LLM endpoint (a ``Population`` when the game's agents are split among several).
        store: The record/replay store the game's LLM calls go through.
    """

    parameters: Mapping[str, Any]
    policy: str
    seed: int
    tables: tuple[str, ...] = ()
    endpoint: Endpoint | Any | None = None  # an Endpoint, or a sweep's Population (llm_mesa.sweep.grid)
    store: ResponseStore | None = None


@dataclass(frozen=True)
class LlmEstimate:
    """One game's LLM use at most, from its parameters and prompt templates (no call made).

    Attributes:
        calls: LLM calls at most.
        rounds: Rounds at most.
        prompt_tokens_per_call: Prompt tokens of a call (about four characters a token).
        completion_tokens_per_call: Completion tokens of a call at most.
        may_stop_early: True when a game may end before its round limit (the figures are bounds).
    """

    calls: int
    rounds: int
    prompt_tokens_per_call: int
    completion_tokens_per_call: int
    may_stop_early: bool = True

    @property
    def calls_per_round(self) -> float:
        """The calls of a round, on average."""
        return self.calls / max(self.rounds, 1)


@dataclass(frozen=True)
class PolicyCatalog:
    """The game's policies.

    Attributes:
        module: The module that registers the rule policies when imported.
        lazy: Heavy policies (name -> (module, one-line summary)), imported only when asked for, so
            that a rule-only game never imports openai.
        groups: Named sets of configurations for sweeps (group -> label -> spec; default: a ``rules``
            group of every registered rule policy at its defaults).
        parameter: What the game's model calls the policy (``policy``, ``speaker``).
        populations: Whether one game may split its agents among several policies (``A + B``).
        observed: ``"module:function"`` reading the decisions a run recorded, for ``llm-mesa fit``:
            ``function(tables, parameters, seed)`` gives an iterable of ``(agent, round, observation,
            decision)`` from a game's tables (table name -> DataFrame), its parameters and seed.
    """

    module: str | None = None
    rules: Mapping[str, Callable[..., Any]] = _EMPTY
    lazy: Mapping[str, tuple[str, str]] = _EMPTY
    groups: Mapping[str, Mapping[str, str]] = _EMPTY
    parameter: str = "policy"
    populations: bool = False
    observed: str | None = None


@dataclass(frozen=True)
class StudyDesign:
    """A study's named design cells and named lists of them (``--conditions``).

    Attributes:
        conditions: Each cell's name -> its parameters.
        groups: Each group's name -> the names of its cells (``study``).
    """

    conditions: Mapping[str, Mapping[str, Any]] = _EMPTY
    groups: Mapping[str, Sequence[str]] = _EMPTY


@dataclass(frozen=True)
class LlmSupport:
    """What LLM agents need from a game.

    Attributes:
        policy: The LLM policy's factory, ``factory(endpoint, store) -> Policy``, a value or
            ``"module:factory"`` (None: the game has no LLM policy).
        endpoint_defaults: The sampling the game's study used (``Endpoint`` field -> value), applied
            where the user set none.
        behaviours: The stand-in server's behaviours for the game's prompts: a module that registers
            them when imported, or the behaviours as values (kind -> ``factory(params, model)``, as
            ``register_behaviour`` takes).
        failure_share: The share of failed LLM decisions above which a game is invalid, a number or
            the name of the game's parameter that holds it.
        estimate: One game's LLM use at most, ``estimate(game, parameters, endpoint) -> LlmEstimate``
            (for ``sweep --dry-run`` and budgets; None: the dry run says it cannot tell).
    """

    policy: Callable[..., Any] | str | None = None
    endpoint_defaults: Mapping[str, Any] = _EMPTY
    behaviours: Mapping[str, Callable[..., Any]] | str | None = None
    failure_share: float | str = 0.1
    estimate: Callable[..., LlmEstimate | None] | str | None = None


Hook = Callable[..., Any] | str | None


@dataclass(frozen=True)
class Extensions:
    """What improves on the core's defaults, each a value or ``"module:attribute"`` loaded only when used.

    Modules: ``cli``, the game's own subcommand (``configure(parser)``, ``run(args)``; default: the
    generic one); ``analysis``: ``configure``, ``analyze``, ``format_report`` (default: per-policy
    summaries of the summary row); ``figures``: ``report_panels`` (default: those summaries drawn);
    ``view``: ``"module:Class"`` of a ``llm_mesa.views.GameView`` subclass (default: the generic view
    of the model's space and rounds).

    Hooks, each called with the game first (``llm_mesa.play`` and ``llm_mesa.declared`` call them,
    and name the game and the hook in one line when one raises):

    * what a page draws: ``state(game, agent)``, the agent's state (default: its ``state`` attribute, else the
      game's ``GameView.state_attribute``);
    * words for people: ``outcome(game, row) -> str`` (progress lines; default: the rounds played),
      ``describe(game, parameters) -> str`` (listings; default ``k=v`` pairs),
      ``headline(game, games, conditions, policies) -> str | None`` (the table a sweep ends with;
      default: games and numeric means per condition and policy);
    * playing: ``summary(game, model) -> dict`` (a finished game's row; default: the model's
      ``summary()``, else its DataCollector's last row); ``run_tables(game, model) -> {name: DataFrame}``
      (what a run folder holds; default: every table); ``play(game, request) -> GameResult`` (one game
      the game's own way; the core still judges its row); ``play_batch(game, requests)`` and
      ``batch_size(game, request)`` (many games at once, e.g. as arrays); ``check(game, parameters,
      seed)`` (build, not play: bad input fails before a sweep); ``place(game, parameters, policy, seed,
      placed) -> model`` (the lab's seats built in, for a model that fixes anything from its policies
      when it is built).
    """

    cli: str | None = None
    analysis: str | None = None
    figures: str | None = None
    view: str | None = None
    state: Hook = None
    outcome: Hook = None
    describe: Hook = None
    headline: Hook = None
    summary: Hook = None
    run_tables: Hook = None
    play: Hook = None
    play_batch: Hook = None
    batch_size: Hook = None
    check: Hook = None
    place: Hook = None


__all__ = ["Extensions", "GameResult", "LlmEstimate", "LlmSupport", "PlayRequest", "PolicyCatalog", "ROUNDS", "SCALE_KINDS", "features",
           "Scale", "StudyDesign", "Table", "categorical", "continuous", "count", "infer_scale", "ordinal", "share"]
