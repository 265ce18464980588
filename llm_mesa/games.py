"""The game contract: what a game declares, and nothing the core does with it.

A game is a ``Game`` in the game's own package, declared under the entry-point group
``llm_mesa.games`` (``mygame = "mypackage.game:GAME"``) and found by name through
``llm_mesa.registry``; a Mesa model written without llm-mesa becomes one through
``llm_mesa.MesaGame`` (``llm_mesa.adapter``), with no class of its own.

**Required** (a game that gives only these works in every command and page, with generic output):

* ``name`` and ``parameters``: the one definition of the game's parameters (validation,
  command-line options, explorer controls, sweep axes);
* ``build(parameters, policy, seed)``: the Mesa model that plays one game. It steps with
  ``step()`` until ``running`` is False and records its rounds with a Mesa ``DataCollector``.
  Its streams come from ``seed`` itself (``llm_mesa.seed_streams``), never from how Mesa seeds
  ``model.random``, so a seed plays one game on Mesa 3 and Mesa 4 alike.

**Declared, each optional, each a value** (``llm_mesa.game_types``): ``summary`` (one line for
help texts), ``tables`` (``Table``, with how each is read), ``measures``, ``state_scale`` and
``headline_measure`` (what the numbers are, for pages and reports), ``row_types``,
``policies`` (``PolicyCatalog``: rule policies as values, groups for sweeps), ``llm``
(``LlmSupport``: the LLM policy, sampling defaults, stand-in behaviours, the share of failed
decisions allowed, the dry run's estimate), ``design`` (``StudyDesign``: named conditions) and
``extensions`` (``Extensions``: the game's own subcommand, statistics, figures, page, words and
ways of playing).

What the core does with a game lives in the core: ``llm_mesa.play`` builds and plays it (one
pipeline for every caller) and ``llm_mesa.declared`` reads what it declares, with the core's
default for what it leaves out. Calling one of those services on a game (``GAME.play(request)``)
still works, with a ``DeprecationWarning`` that names its new place; a game written before this
contract, overriding the older methods, keeps working too (``llm_mesa.game_legacy``).

Why an ABC: forgetting ``build`` fails when the class is instantiated, not in the middle of a sweep.
"""

from __future__ import annotations

import warnings
from abc import ABCMeta, abstractmethod
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from llm_mesa.declared import agent_names, network_nodes
from llm_mesa.errors import GameError, RunawayGame
from llm_mesa.game_hooks import MOVED, load_target
from llm_mesa.game_legacy import PROPERTIES, SERVICES, LegacyGame
from llm_mesa.game_types import (
    ROUNDS,
    Extensions,
    GameResult,
    LlmEstimate,
    LlmSupport,
    PlayRequest,
    PolicyCatalog,
    Scale,
    StudyDesign,
    Table,
)
from llm_mesa.parameters import ParameterSet
from llm_mesa.play import STEP_LIMIT, run_model, usage_fields
from llm_mesa.policy import register_catalogue

if TYPE_CHECKING:
    from mesa import Model

    from llm_mesa.policy import Policy


class _Contract(ABCMeta):
    """``Game``'s metaclass: the older methods reached on the class itself (``Game.table(self, model, name)``, as older
    games call the base's default) are the core's defaults, with a warning that names their place."""

    def __getattr__(cls, name: str) -> Any:
        if name in SERVICES and not name.startswith("_"):
            warnings.warn(f"Game.{name} has moved: use {MOVED[name]}", DeprecationWarning, stacklevel=2)
            return vars(LegacyGame)[name]
        raise AttributeError(f"type object {cls.__name__!r} has no attribute {name!r}")


class Game(metaclass=_Contract):
    """What a game declares: the one contract through which the core builds, plays and reads every game.

    ``build`` is the one member a game must give; every other has a default (see the module docstring). A Mesa
    model written without llm-mesa is a ``Game`` through ``llm_mesa.MesaGame``, with no class of its own.

    Attributes:
        name: The game's name: its subcommand (``llm-mesa NAME``), its ``--game`` value and its entry point's name.
        summary: One line for help texts.
        parameters: The one definition of its parameters (validation, options, controls, sweep axes).
        tables: The per-game tables it offers (``Table``: name, key, what it holds, how it is read).
        measures: What each measure is (a ``Scale``), by column of the ``rounds`` table and the summary row.
        state_scale: What its agents' ``state`` is (pages colour agents by it).
        headline_measure: The measure reports and sweep tables put first.
        row_types: Pandas types of summary-row columns that may be missing in some games.
        policies: Its rule policies as values, and named groups of them for sweeps (``PolicyCatalog``).
        llm: What LLM agents need of it (``LlmSupport``: the LLM policy, sampling defaults, stand-in behaviours,
            the share of failed decisions allowed, the dry run's estimate).
        design: Its study's named conditions (``StudyDesign``).
        extensions: What improves on the core's defaults (``Extensions``: its own command, statistics, figures,
            page, words and ways of playing).
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    parameters: ClassVar[ParameterSet] = ParameterSet(())
    tables: ClassVar[tuple[Table, ...]] = (ROUNDS,)
    #: what each measure is, by column (of the ``rounds`` table and the summary row); the rest is read from the
    #: values (``llm_mesa.game_types.infer_scale``)
    measures: ClassVar[Mapping[str, Scale]] = MappingProxyType({})
    #: what the agents' ``state`` is (the generic pages colour agents by it); None: read from its values
    state_scale: ClassVar[Scale | None] = None
    #: the measure reports and sweep tables put first (None: the first declared measure, if any)
    headline_measure: ClassVar[str | None] = None
    #: pandas types of summary-row columns that may be missing in some games
    row_types: ClassVar[Mapping[str, str]] = MappingProxyType({})
    policies: ClassVar[PolicyCatalog] = PolicyCatalog()
    llm: ClassVar[LlmSupport] = LlmSupport()
    design: ClassVar[StudyDesign] = StudyDesign()
    extensions: ClassVar[Extensions] = Extensions()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Tell the policy layer which policies the game imports only when asked for (pushed down to it, so that it
        never looks a game up); give a game that overrides an older method the older defaults as a base."""
        super().__init_subclass__(**kwargs)
        if cls.name:
            register_catalogue(cls.name, cls.policies.module, cls.policies.lazy)
        if any(name in vars(cls) for name in MOVED) and LegacyGame not in cls.__mro__:
            cls.__bases__ = (*cls.__bases__, LegacyGame)

    @abstractmethod
    def build(self, parameters: Mapping[str, Any], policy: str | Policy | Sequence[str | Policy], seed: int) -> Model:
        """The Mesa model of one game.

        Args:
            parameters: The game's parameters, validated, every one given.
            policy: The agents' policy: a spec (``"coin"``, read with ``llm_mesa.make_policy(policy, self)``), a
                policy (an LLM policy the core built), or several, where the game mixes them.
            seed: The game's seed: everything random in the game comes from it, in streams of its own.

        Returns:
            A Mesa model that steps with ``step()`` until its ``running`` is False and records its rounds with a
            ``DataCollector``.
        """

    def __getattr__(self, name: str) -> Any:
        """The core's services under their older names (``GAME.play(request)``), with a warning that names their place."""
        service = SERVICES.get(name)
        if service is None or name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        warnings.warn(f"Game.{name} has moved: use {MOVED[name]}", DeprecationWarning, stacklevel=2)
        if name in PROPERTIES:
            return service(self)
        return lambda *args, **kwargs: service(self, *args, **kwargs)


__all__ = ["Extensions", "Game", "GameError", "GameResult", "LlmEstimate", "LlmSupport", "PlayRequest", "PolicyCatalog",
           "ROUNDS", "RunawayGame", "STEP_LIMIT", "StudyDesign", "Table", "agent_names", "load_target", "network_nodes",
           "run_model", "usage_fields"]
