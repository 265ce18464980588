"""What differs between the Mesa versions llm-mesa runs on (3.5 and 4), kept in one place.

Mesa 4 removed ``batch_run``, ``mesa.space``, ``Model.steps`` and the ``seed=`` keyword,
refuses ``Network(layout=None)``, and seeds ``model.random`` from its numpy generator
instead of from the seed itself: for seed 1, ``model.random.random()`` is 0.908 on
Mesa 4 and 0.134 on Mesa 3 (which is ``random.Random(1).random()``). A game on a graph
draws its graph, preferences and selectors from ``model.random``, so left to Mesa the
same seed would play another game on Mesa 4, and a recording made on one version would
miss on the other. Hence:

* ``seed_streams`` seeds ``model.random`` from the game's seed itself, as Mesa 3 does,
  on either version: games on Mesa 3 stay bit for bit what they were, and Mesa 4 plays
  the same ones.
* ``network_space`` builds Mesa's ``Network`` space the way each version accepts.
* The games count their rounds on their own clock (``model.round``), never
  ``model.steps``; ``seed=`` is never passed (``rng=`` is, on both).

And what Mesa 4 adds that serves a game's user is used there, not written again:

* ``Scenario`` (``mesa.experimental.scenarios``): an experiment file's cells become
  Mesa scenarios (``Experiment.scenarios()``), one per cell and repetition, that build
  the very game the sweep plays (``llm_mesa.play.build_scenario``; a model may take ``scenario=``).
* Mesa 4's data recorders (Parquet, SQL, JSON, memory): ``track_rounds`` registers a
  game's round measures (its DataCollector's model reporters) as the ``rounds`` data set
  of ``model.data_registry``, and ``game_ended`` tells the recorders the game is over,
  so ``ParquetDataRecorder(model, config={"rounds": {}})`` writes every round, the last
  one included, beside the DataCollector.
"""

from __future__ import annotations

import functools
import numbers
import random
import re
import types
from collections.abc import Mapping
from typing import Any

import mesa
import networkx as nx
from mesa.discrete_space import Network

from llm_mesa.errors import LlmMesaError

#: the installed Mesa as (major, minor)
MESA_VERSION: tuple[int, int] = tuple(int(part) for part in re.match(r"(\d+)\.(\d+)", mesa.__version__).groups())
MESA_4 = MESA_VERSION >= (4, 0)
#: Mesa's ``batch_run`` exists (Mesa 3 only; Mesa 4 removed it, the project's own sweep needs neither)
HAS_BATCH_RUN = hasattr(mesa, "batch_run")


def seed_streams(model: mesa.Model, rng: Any) -> int:
    """Seed ``model.random`` from the game's seed itself and return that seed.

    Call right after ``super().__init__(rng=rng)``. An integer ``rng`` is the seed. An
    unseeded game keeps the seed Mesa 3 drew for it (``model._seed``), or on Mesa 4 draws
    one from OS entropy, so every game is named, and replayed, by the seed it played with.
    The generator is reseeded in place: Mesa's agent sets hold this very object.

    Args:
        model: The model being built (``super().__init__`` done).
        rng: The ``rng`` the model was given: an integer seed, or None.

    Returns:
        The game's seed.
    """
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        seed = int(rng)
    else:
        drawn = getattr(model, "_seed", None)
        seed = int(drawn) if isinstance(drawn, numbers.Integral) else random.SystemRandom().randrange(2**31)
    model.random.seed(seed)  # the stream of random.Random(seed), as Mesa 3 seeds it
    return seed


def network_space(graph: nx.Graph, rng: random.Random) -> Network:
    """Mesa's ``Network`` space over ``graph``, its agents' cells.

    Mesa 3: a topological network (no positions; a drawing layout costs more than a rule
    game and is computed only when drawn, ``model.layout``). Mesa 4 wants a position for
    every node: its own default, the circular layout, which costs O(N).

    Args:
        graph: The network the agents sit on.
        rng: The model's random stream (``model.random``), which the space draws from.

    Returns:
        The space; each node is a cell.
    """
    if MESA_4:
        return Network(graph, random=rng)
    return Network(graph, random=rng, layout=None)


# -- Mesa 4's scenarios ------------------------------------------------------------------------

#: a scenario's fields that are not game parameters: the game's seed and its cell's name
SCENARIO_KEYS = ("seed", "condition")


def scenario_class() -> type:
    """Mesa 4's ``Scenario``; on Mesa 3 a ``MesaVersionError`` that names the fix."""
    if not MESA_4:
        raise MesaVersionError(f"scenarios need Mesa 4 (installed: Mesa {mesa.__version__}); "
                               "pip install --pre 'mesa>=4.0.0a0', or play the experiment with llm-mesa sweep")
    from mesa.experimental.scenarios import Scenario

    return Scenario


def scenario_fields(scenario: Any) -> tuple[dict[str, Any], int | None]:
    """A Mesa scenario's game parameters, and the game seed it names.

    The seed is its ``seed`` field (``Experiment.scenarios()`` sets it), else an integer
    ``rng`` it was made with (Mesa 3.5), else one read from its generator's initial state
    (a Mesa 4 scenario seeded by a ``SeedSequence``: ``spawn_replications``,
    ``from_dataframe``), so each of Mesa's replications names a game of its own.
    """
    fields = {k: v for k, v in vars(scenario).items() if k != "rng" and k not in SCENARIO_KEYS}
    seed = vars(scenario).get("seed")
    if seed is None:
        rng = vars(scenario).get("rng", getattr(scenario, "rng", None))
        state = getattr(scenario, "initial_rng_state", None)
        if isinstance(rng, numbers.Integral):
            seed = int(rng)
        elif state is not None:
            seed = int(state["state"]["state"]) % 2**63
    return fields, None if seed is None else int(seed)


def example_game_arguments(parameters: Any, given: Mapping[str, Any], seed: int | None, rng: int | None,
                           scenario: Any) -> tuple[int | None, dict[str, Any]]:
    """A game model's seed and validated parameters (``parameters``: its ``ParameterSet``) from how it was called.

    ``rng`` is ``seed`` under Mesa's name; a ``scenario`` (the example's own, or any Mesa ``Scenario``: Mesa's
    SolaraViz resets a model with one) lends the game's parameters among its fields and, when no seed is
    given, its seed. Keyword arguments given win over the scenario's."""
    seed = rng if seed is None else seed
    if scenario is not None:
        fields, lent = scenario_fields(scenario)
        given = {**{k: v for k, v in fields.items() if k in parameters}, **given}
        seed = lent if seed is None else seed
    return seed, parameters.validate(given, complete=True)


def model_arguments(rng: Any, scenario: Any) -> dict[str, Any]:
    """What a game model passes to ``mesa.Model.__init__``: its seed, or its scenario.

    Mesa 4 refuses both at once; given both (Mesa's SolaraViz resets a model with its
    seed and an empty scenario), the seed is the game's and the scenario only lends it
    parameters.
    """
    if scenario is None or rng is not None:
        return {"rng": rng}
    return {"scenario": scenario}


# -- Mesa 4's data recorders ---------------------------------------------------------------------

def report(reporter: Any, model: mesa.Model) -> Any:
    """One DataCollector model reporter's value, read as Mesa's DataCollector reads it: a function of the model,
    the name of a model attribute (Mesa's own examples report ``"happy"``, ``"gini"``), ``[function, args]``,
    or a method of the model."""
    if isinstance(reporter, types.FunctionType | functools.partial):
        return reporter(model)
    if isinstance(reporter, str):
        return getattr(model, reporter, None)
    if isinstance(reporter, list):
        return reporter[0](*reporter[1])
    return reporter()


class RoundsDataSet:
    """Mesa 4's ``DataSet`` protocol over a model's DataCollector model reporters: the current round.

    Mesa's ``ModelDataSet`` reads model attributes; a game's round measures are its
    DataCollector's reporters, so the recorders read those, and write what the
    DataCollector keeps.
    """

    def __init__(self, model: mesa.Model, name: str = "rounds") -> None:
        self.name = name
        self._model = model
        self._reporters = dict(model.datacollector.model_reporters)

    @property
    def data(self) -> dict[str, Any]:
        if self._model is None:
            raise RuntimeError(f"DataSet {self.name!r} has been closed")
        return {key: report(reporter, self._model) for key, reporter in self._reporters.items()}

    def close(self) -> None:
        self._model = None

    def record(self, recorder: Any, configuration: Any = None) -> RoundsDataSet:
        recorder.add_dataset(self, configuration=configuration)
        return self


def track_rounds(model: mesa.Model) -> None:
    """On Mesa 4, offer the model's round measures to Mesa's data recorders as ``rounds``."""
    if MESA_4 and "rounds" not in model.data_registry:
        model.data_registry.add_dataset(RoundsDataSet(model))


def game_ended(model: mesa.Model) -> None:
    """On Mesa 4, tell the data recorders the game is over (they then keep its last round)."""
    if MESA_4:
        from mesa.experimental.mesa_signals import ModelSignals

        model.notify("model", ModelSignals.RUN_ENDED)


class MesaVersionError(LlmMesaError):
    """A feature the installed Mesa lacks; the message names the version it needs."""


__all__ = ["HAS_BATCH_RUN", "MESA_4", "MESA_VERSION", "MesaVersionError", "RoundsDataSet", "SCENARIO_KEYS",
           "example_game_arguments", "game_ended", "model_arguments", "network_space", "scenario_class", "scenario_fields", "seed_streams",
           "track_rounds"]
