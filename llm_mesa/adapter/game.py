"""``MesaGame``: a Mesa model that was not written for llm-mesa, as a game whose agents' decisions an LLM may take.

The researcher names the model class and its decisions (``Decision``); the game reads the rest
from what the model already says: its parameters from its constructor or Mesa 4 ``Scenario``,
its measures from its ``DataCollector``'s reporters (the ``rounds`` table's columns under their
own names, the summary row's last values), what a page draws from its agents' cells and a declared
state. It gets everything the project's own games have: every command and page, record and
replay, dry-run estimates and budgets, the ``mesa`` policy (the model's own run, seed for seed),
a ``random`` baseline, LLM agents, and the stand-in server's ``GAME:mesa`` answering as the rule.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from llm_mesa.adapter.decision import Decision
from llm_mesa.adapter.hooks import HOOKS, Hooks, OwnRule, hooks_of
from llm_mesa.adapter.parameters import model_parameters
from llm_mesa.adapter.playing import RandomChoice, decision_llm, estimate, observed, stand_in
from llm_mesa.adapter.tables import agents_table, decisions_table, rounds_table, snapshot
from llm_mesa.adapter.tables import summary as summary_row
from llm_mesa.errors import GameError
from llm_mesa.game_types import ROUNDS, Extensions, LlmSupport, PolicyCatalog, Scale, StudyDesign, Table
from llm_mesa.games import Game
from llm_mesa.parameters import Parameter, ParameterSet

#: builds that seed Python's global ``random`` (``prepare``) take turns: one game's draws never become another's
_GLOBAL_RANDOM = threading.Lock()


class MesaGame(Game):
    """A Mesa model class and the decisions its agents' policies take in it, as a game.

    Args:
        model: the model class, imported, never copied or edited.
        name: the game's name (``llm-mesa NAME``).
        decisions: what an LLM decides (``Decision``), one or more.
        summary: one line for help texts.
        scenario: the model's Mesa ``Scenario`` class, where it cannot be read from the model.
        fixed: arguments the model takes but cannot vary, passed as given and not offered.
        bounds: ``{name: (low, high)}`` for numbers the model gives no bounds for.
        parameters: parameters declared whole (labels, help, slider ranges), replacing those read.
        arguments: ``arguments(parameters) -> {name: value}``, the model's own arguments from the game's
            parameters, where they differ (a payoff table offered as four numbers).
        max_rounds: the step limit's default (every game has one: ``--max-rounds``).
        columns: more summary-row columns, ``{name: function(model)}`` (``answers(model)`` counts the answers).
        state: what a page colours an agent by, ``state(agent)`` (default: its class's name).
        state_scale, measures, headline_measure: what the state and the measures are (``llm_mesa.categorical`` ...).
        prepare: ``prepare(seed)``, called before the model is built (a model that draws from Python's global
            ``random`` has it seeded there).
        failure_share: the share of failed LLM decisions above which a game is invalid.
        design: named conditions (``StudyDesign``), for ``sweep --conditions``.
        max_agents: for a model whose agents multiply, the default of a ``max_agents`` parameter: the game ends once
            more agents than that could decide, so that every game's LLM use has a bound (the dry run's).
        most_agents: ``most_agents(parameters)``, the most agents that may decide in one step, for a model whose number
            of agents depends on its seed (a grid filled at random: its cells); default: those of the game built.
    """

    def __init__(self, model: type, *, name: str, decisions: Sequence[Decision], summary: str = "",
                 scenario: type | None = None, fixed: Mapping[str, Any] | None = None,
                 bounds: Mapping[str, tuple[float, float]] | None = None, parameters: Sequence[Parameter] = (),
                 arguments: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None, max_rounds: int = 100,
                 columns: Mapping[str, Callable[[Any], Any]] | None = None, state: Callable[[Any], Any] | None = None,
                 state_scale: Scale | None = None, measures: Mapping[str, Scale] | None = None,
                 headline_measure: str | None = None, prepare: Callable[[int], None] | None = None,
                 failure_share: float = 0.1, design: StudyDesign | None = None, max_agents: int | None = None,
                 most_agents: Callable[[Mapping[str, Any]], int] | None = None) -> None:
        if not decisions:
            raise GameError(f"the {name} game names no decision: give MesaGame(..., decisions=[Decision(...)])")
        self.model_class, self.decisions = model, tuple(decisions)
        self.name, self.summary = name, summary or f"{model.__name__} (Mesa) with its agents' decisions taken by policies"
        offered, self.arguments = model_parameters(model, scenario=scenario, fixed=fixed, bounds=bounds,
                                                   declared=parameters, arguments=arguments)
        variants = sorted({v for d in self.decisions for v in d.variants()})
        own = [Parameter("max_rounds", int, max_rounds, "step limit", low=1, high=100_000, round_limit=True,
                         control_range=(1, max(300, max_rounds)), label="Max steps")]
        if max_agents is not None:
            own.append(Parameter("max_agents", int, max_agents, "the game ends when more agents than this could decide "
                                 "(agents multiply in this model; this bounds its LLM use)", low=1, high=1_000_000,
                                 label="Most agents"))
        if len(variants) > 1:
            own.append(Parameter("prompt", str, "study", "the wording of the prompt (a variant that keeps every fact)",
                                 choices=tuple(variants), label="Prompt", in_seed=False))
        self.parameters = ParameterSet.of(*offered, *own)
        self.columns, self.state_of, self.prepare = dict(columns or {}), state or _class_name, prepare
        self.most_agents = most_agents
        self.state_scale = state_scale
        self.measures = dict(measures or {})
        self.headline_measure = headline_measure
        self.tables = (Table("rounds", ROUNDS.key, "the model's DataCollector: one row per step (0 the start)",
                             read=rounds_table),
                       Table("agents", ("round", "agent"), "one row per agent and step: its state, its cell, what it "
                             "decided, and the DataCollector's agent reporters", read=agents_table, needs=("decisions",)),
                       Table("decisions", ("round", "agent", "decision"), "every decision: what the agent saw "
                             "(view_*), its answer", types={"answer": "string"}, read=decisions_table))
        self.policies = PolicyCatalog(rules={"mesa": functools.partial(OwnRule, self.decisions), "random": RandomChoice},
                                      observed=observed(self))
        self.llm = LlmSupport(policy=decision_llm(self), behaviours={f"{name}:mesa": stand_in(self)},
                              failure_share=failure_share, estimate=estimate)
        self.extensions = Extensions(summary=summary_row, place=place, state=_state)
        self.design = design or StudyDesign()
        self.model = game_model(self)

    def build(self, parameters: Mapping[str, Any], policy: Any, seed: int) -> Any:
        """One game: an instance of the game's model class (``model``), built as Mesa's own examples are.

        Args:
            parameters: The game's parameters, validated (the model's own, ``max_rounds`` and the game's others).
            policy: A rule policy spec (``mesa``, ``random``) or a policy (an LLM policy the core built).
            seed: The game's seed: the model's ``rng``.

        Returns:
            The model, its decisions hooked, not yet stepped.
        """
        return self.model(policy, seed, **parameters)

    def start(self, model: Any, parameters: Mapping[str, Any], policy: Any, seed: int) -> None:
        """Build the model class's own state on ``model`` (``rng=seed`` or a scenario of it), then hook its decisions.

        Args:
            model: A fresh instance of the game's model class.
            parameters: The game's parameters, validated.
            policy: A rule policy spec or a policy.
            seed: The game's seed.
        """
        from llm_mesa.mesa_versions import track_rounds
        from llm_mesa.policy import make_policy

        own = {k: v for k, v in parameters.items() if k not in ("max_rounds", "prompt", "max_agents")}
        if self.prepare is not None:
            with _GLOBAL_RANDOM:
                self.prepare(seed)
                self.arguments.initialise(model, own, seed)
        else:
            self.arguments.initialise(model, own, seed)
        chosen = make_policy(policy, self) if isinstance(policy, str) else policy
        hooks = Hooks(model, self.decisions, chosen, seed, parameters.get("prompt", "study"), parameters["max_rounds"],
                      after_step=self._stepped)
        hooks.max_agents = parameters.get("max_agents")
        hooks.game = self  # Mesa's SolaraViz components find the game of a model through its hooks
        hooks.install()
        HOOKS[model] = hooks
        snapshot(self, model, hooks)
        if getattr(model, "datacollector", None) is not None:
            track_rounds(model)  # Mesa 4's data recorders may record the rounds beside the DataCollector

    def _stepped(self, hooks: Hooks) -> None:
        from llm_mesa.mesa_versions import game_ended

        snapshot(self, hooks.model, hooks)
        deciding = sum(any(isinstance(a, d.agents) for d in self.decisions) for a in hooks.model.agents)
        if hooks.max_agents is not None and deciding > hooks.max_agents:
            hooks.model.running = False
        if not hooks.model.running:
            game_ended(hooks.model)


def game_model(game: MesaGame) -> type:
    """The game's model class, so that Mesa's SolaraViz (its Reset builds ``type(model)(**values)``) and
    ``batch_run`` build whole games.

    Args:
        game: The game.

    Returns:
        A subclass of the model's own class whose constructor takes the game's arguments (``policy``, ``seed`` or
        Mesa's ``rng``/``scenario``, the parameters), and nothing else of its own. Its agents are the model's own.
    """
    from llm_mesa.mesa_versions import example_game_arguments

    def __init__(self: Any, policy: Any = "mesa", seed: int | None = None, *, rng: int | None = None,
                 scenario: Any = None, **parameters: Any) -> None:
        seed, given = example_game_arguments(game.parameters, parameters, seed, rng, scenario)
        game.start(self, given, policy, seed)

    base = game.model_class
    return type(f"{base.__name__}Game", (base,), {"__init__": __init__, "__module__": base.__module__,
                                                 "__doc__": f"{base.__name__} as the {game.name} game: {game.summary}"})


def place(game: MesaGame, parameters: Mapping[str, Any], policy: Any, seed: int, placed: Mapping[Any, Any]) -> Any:
    """The game with some agents on policies of their own: the lab's seats (``Extensions.place``).

    Args:
        game: The game.
        parameters: Its parameters.
        policy: Every other agent's policy.
        seed: The game's seed.
        placed: Each placed agent's name, as the game's tables name it, and its policy.

    Returns:
        The model, not yet stepped.

    Raises:
        GameError: A name that is none of the game's agents.
    """
    from llm_mesa.declared import agent_names
    from llm_mesa.play import make_model

    model = make_model(game, parameters, policy, seed)
    names = agent_names(model)
    unknown = [name for name in placed if name not in names.values()]
    if unknown:
        raise GameError(f"the {game.name} game has no agent {unknown[0]!r}")
    hooks = hooks_of(model)
    for agent, name in names.items():
        if name in placed:
            hooks.placed[agent] = placed[name]
    return model


def _state(game: MesaGame, agent: Any) -> Any:
    return game.state_of(agent)


def _class_name(agent: Any) -> str:
    return type(agent).__name__


__all__ = ["MesaGame", "place"]
