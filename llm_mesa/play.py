"""Playing a game: the one pipeline every caller goes through (the command line, sweeps, the lab and the pages).

A game declares (``llm_mesa.games.Game``); this module plays it:

1. ``make_model``: the game's ``build`` with validated parameters, its rule policies loaded, and the
   ledger its LLM decisions are keyed and counted in (``llm_mesa.decisions.bind_game``);
2. ``run_model``: step until the model stops, at most the game's step limit (a runaway game is
   stopped, exit status 3);
3. ``finish``: the summary row, the LLM policies' use (calls, tokens, cost, failures), the core's
   verdict (``judge``: invalid when too many LLM decisions failed) and the tables asked for.

``play`` does all three for one ``PlayRequest``; a game may play its own way
(``Extensions.play``, ``play_batch``), and the core still judges an LLM game's row. Nothing here
imports ``llm_mesa.games``: a game is whatever declares its members.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from llm_mesa import declared
from llm_mesa.errors import GameError, RunawayGame
from llm_mesa.game_hooks import call, called, loaded, override
from llm_mesa.game_types import GameResult, PlayRequest

if TYPE_CHECKING:
    from mesa import Model

    from llm_mesa.policy import Policy

#: the most steps a model of a game that declares no round limit may take (``step_limit``)
STEP_LIMIT = 100_000


# --- one game's identity and limits ----------------------------------------------------------------

def key(game: Any, parameters: Mapping[str, Any], seed: int) -> str:
    """The key of one game, which every sample key of its LLM calls carries, so no two games share an answer.

    Args:
        game: The game.
        parameters: Its parameters.
        seed: Its seed.

    Returns:
        16 hex digits of its name, parameters and seed (or the key an older game's own ``key`` gives).
    """
    found, value = called(game, "key", parameters, seed)
    if found:
        return value
    from llm_mesa.decisions import game_key

    return game_key(game.name, parameters, seed)


def failure_share(game: Any, parameters: Mapping[str, Any]) -> float:
    """The share of failed LLM decisions above which a game with these parameters is invalid.

    Args:
        game: The game.
        parameters: Its parameters (``LlmSupport.failure_share`` may name one of them).

    Returns:
        The share, from 0 to 1.
    """
    found, value = called(game, "failure_share", parameters)
    if found:
        return float(value)
    limit = game.llm.failure_share
    return float(parameters.get(limit, game.parameters[limit].default) if isinstance(limit, str) else limit)


def step_limit(game: Any, parameters: Mapping[str, Any]) -> tuple[int, str]:
    """The most steps one game's model may take, and why.

    Args:
        game: The game.
        parameters: Its parameters.

    Returns:
        ``(steps, why)``: the value of its parameter marked ``round_limit`` and one step more (a model may notice
        its end in the step after its last round), else ``STEP_LIMIT``; ``why`` says which, for the error a
        runaway game gives.
    """
    found, value = called(game, "step_limit", parameters)
    if found:
        return value
    for parameter in game.parameters:
        if parameter.round_limit:
            rounds = parameters.get(parameter.name, parameter.default)
            return int(rounds) + 1, f"its round limit {parameter.name}={rounds}, and one step more"
    return STEP_LIMIT, ("llm-mesa's limit for a game that declares no round limit (mark one parameter "
                        "round_limit=True to set it)")


# --- building ----------------------------------------------------------------------------------------

def make_model(game: Any, parameters: Mapping[str, Any], policy: Any, seed: int) -> Model:
    """The model of one game, built through ``build`` with the ledger its LLM decisions are keyed and counted in.

    Args:
        game: The game.
        parameters: Its parameters, validated here (defaults filled in).
        policy: A rule policy spec, or a policy (an LLM policy the caller built).
        seed: The game's seed.

    Returns:
        The Mesa model, not yet stepped.

    Raises:
        ParameterError: A parameter the game's definition refuses (one line that names it).
    """
    found, model = called(game, "make_model", parameters, policy, seed)
    if found:
        return model
    from llm_mesa.decisions import bind_game

    parameters = game.parameters.validate(parameters, complete=True)
    declared.load_policies(game, policy if isinstance(policy, str) else None)
    model = game.build(parameters, policy, seed)
    bind_game(model, key(game, parameters, seed), failure_share(game, parameters))
    return model


def build_scenario(game: Any, scenario: Any, policy: Any) -> Model:
    """The model of the game a Mesa ``Scenario`` names (``Experiment.scenarios()``).

    Args:
        game: The game.
        scenario: A Mesa 4 ``Scenario`` whose fields are the game's parameters and whose ``seed`` is the game's.
        policy: A rule policy spec, or a policy.

    Returns:
        The model (``make_model``'s), which keeps the scenario as ``model.scenario``.
    """
    from llm_mesa.mesa_versions import scenario_fields

    fields, seed = scenario_fields(scenario)
    model = make_model(game, game.parameters.validate(fields, complete=True), policy, seed)
    model.scenario = scenario
    return model


def place(game: Any, parameters: Mapping[str, Any], policy: Any, seed: int, placed: Mapping[Any, Policy]) -> Model:
    """The model of one game in which some agents play policies of their own: how ``llm-mesa lab`` seats people
    among rule and LLM agents.

    Default: ``make_model``, then those agents' ``policy`` replaced (right wherever the agents' policy is read when
    they decide); a game that fixes anything from its policies when it is built declares ``Extensions.place``.

    Args:
        game: The game.
        parameters: Its parameters.
        policy: Every other agent's policy (a spec or a policy).
        seed: The game's seed.
        placed: Each placed agent's name, as the game's tables name it, and its policy.

    Returns:
        The model, not yet stepped.

    Raises:
        GameError: A name that is none of the game's agents (the message lists them).
    """
    found, model = called(game, "place", parameters, policy, seed, placed)
    if found:
        return model
    if game.extensions.place is not None:
        return call(game, "place", game.extensions.place, game, parameters, policy, seed, placed)
    model = make_model(game, parameters, policy, seed)
    names = declared.agent_names(model)
    unknown = [name for name in placed if name not in names.values()]
    if unknown:
        known = sorted(names.values(), key=str)
        shown = ", ".join(map(str, known[:12])) + (f" and {len(known) - 12} more" if len(known) > 12 else "")
        raise GameError(f"the {game.name} game has no agent {unknown[0]!r}; its agents are {shown}")
    for agent, name in names.items():
        if name in placed:
            agent.policy = placed[name]
    return model


def check(game: Any, parameters: Mapping[str, Any], seed: int) -> None:
    """Build (not play) one game, so that bad input fails before a sweep starts.

    Args:
        game: The game.
        parameters: Its parameters.
        seed: The game's seed.

    Raises:
        LlmMesaError: Whatever building refuses (a bad parameter, a graph that cannot be drawn), in one line.
    """
    found, _ = called(game, "check", parameters, seed)
    if found:
        return
    if game.extensions.check is not None:
        call(game, "check", game.extensions.check, game, parameters, seed)
        return
    make_model(game, parameters, declared.first_policy(game), seed)


# --- playing -----------------------------------------------------------------------------------------

def run_model(model: Model, limit: int = STEP_LIMIT, why: str = "llm-mesa's STEP_LIMIT") -> int:
    """Step ``model`` until it stops.

    Args:
        model: A Mesa model that sets ``running`` to False when its game ends.
        limit: The most steps it may take (``step_limit``).
        why: Why that is the limit, for the error.

    Returns:
        The number of steps it took.

    Raises:
        RunawayGame: The model was still running after ``limit`` steps: it never stops (exit status 3), stopped
            before it grows without bound.
    """
    steps = 0
    while model.running:
        if steps >= limit:
            raise RunawayGame(f"the game's model was still running after {steps:,} steps ({why}): it never stops; "
                              "make its step() set running = False when the game ends")
        model.step()
        steps += 1
    return steps


def usage_fields(policy: Policy) -> dict[str, Any]:
    """An LLM policy's calls, tokens, cost and failures, as summary-row columns.

    Args:
        policy: Any policy; one with no ``usage`` (a rule) gives nothing.

    Returns:
        ``calls``, ``prompt_tokens``, ``completion_tokens``, ``cached_tokens``, ``cost``, ``failed_calls``,
        ``replayed_calls`` and ``failure_cause`` (the commonest kind of failure, or None).
    """
    usage = getattr(policy, "usage", None)
    if usage is None:
        return {}
    from llm_mesa.llm.diagnosis import commonest_failure

    return {"calls": usage.calls, "prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "cached_tokens": usage.cached_tokens, "cost": usage.cost, "failed_calls": usage.failed_calls,
            "replayed_calls": usage.replayed, "failure_cause": commonest_failure(usage)}


def usage_of(policies: Sequence[Policy]) -> dict[str, Any]:
    """The summed use of several LLM policies (a policy given twice counted once).

    Args:
        policies: The game's LLM policies.

    Returns:
        ``usage_fields``' columns: numbers added, a word (the commonest failure's cause) the first one said.
    """
    used: dict[str, Any] = {}
    for policy in {id(p): p for p in policies}.values():
        for name, value in usage_fields(policy).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                used[name] = used.get(name, 0) + value
            elif used.get(name) is None:
                used[name] = value
    return used


def judge(game: Any, row: dict[str, Any], model: Model, parameters: Mapping[str, Any],
          policies: Sequence[Any] = ()) -> dict[str, Any]:
    """The core's verdict on a finished game: the same for every game, whatever its own summary holds.

    Args:
        game: The game.
        row: Its summary row, changed in place.
        model: Its model, whose ledger counted the LLM decisions.
        parameters: Its parameters (the share of failed decisions allowed may be one).
        policies: Its LLM policies (for a game whose policy counted its decisions itself).

    Returns:
        ``row``, with ``decisions`` and ``failed_decisions`` where the game counted none itself, and ``invalid``
        True when more than the game's share of its decisions failed (``llm_mesa.decisions.judge``).
    """
    from llm_mesa.decisions import decision_fields
    from llm_mesa.decisions import judge as verdict

    for name, value in decision_fields(model, policies).items():
        row.setdefault(name, value)
    return verdict(row, failure_share(game, parameters))


def finish(game: Any, model: Model, parameters: Mapping[str, Any], llms: Sequence[Policy] = (),
           tables: Sequence[str] = (), steps: int | None = None) -> GameResult:
    """A played game's result: the pipeline's one end, for every caller.

    Args:
        game: The game.
        model: Its model, played to its end.
        parameters: Its parameters.
        llms: The LLM policies that played in it (none for a rule game).
        tables: The per-game tables to read (``Table`` names).
        steps: The steps it took (the row's ``rounds`` where the game gives none).

    Returns:
        Its summary row (with the LLM policies' use and the core's verdict when any played) and the tables.
    """
    row = declared.summary_row(game, model)
    if steps is not None:
        row.setdefault("rounds", steps)
    if llms:
        for name, value in usage_of(llms).items():
            row.setdefault(name, value)
        judge(game, row, model, parameters, llms)
    return GameResult(row, {name: declared.table(game, model, name) for name in tables})


def policies_for(game: Any, request: PlayRequest) -> tuple[Any, list[Policy]]:
    """The policy to build one game with, and its LLM policies.

    Args:
        game: The game.
        request: The game to play: a rule spec, or an endpoint (and store) for the game's LLM policy.

    Returns:
        ``(policy, llms)``: the request's rule spec and ``[]``, or the game's LLM policy for the endpoint and ``[it]``.
    """
    if request.endpoint is None:
        return request.policy, []
    llm = declared.llm_policy(game, request.endpoint, request.store)
    return llm, [llm]


def play(game: Any, request: PlayRequest) -> GameResult:
    """Play one game to its end: build, step, finish (or the game's own ``Extensions.play``).

    Args:
        game: The game.
        request: Its parameters, policy (or endpoint and store), seed and the tables to keep.

    Returns:
        Its summary row and the tables asked for; an LLM game's row names the model that played.
    """
    own = override(game, "play")  # a game's own way of playing runs as it is: what it raises is its bug, traceback kept
    if own is not None:
        return own(request)
    if game.extensions.play is not None:
        return loaded(game.extensions.play)(game, request)
    policy, llms = policies_for(game, request)
    parameters = game.parameters.validate(request.parameters, complete=True)
    model = make_model(game, parameters, policy, request.seed)
    steps = run_model(model, *step_limit(game, parameters))
    result = finish(game, model, parameters, llms, request.tables, steps)
    if llms:  # a sweep's row names the model that played
        result.row.setdefault("model", getattr(request.endpoint, "model", None))
    return result


def play_batch(game: Any, requests: Sequence[PlayRequest]) -> list[GameResult]:
    """Several games to their ends: the game's own way (``Extensions.play_batch``, many at once), else one by one.

    Args:
        game: The game.
        requests: The games to play.

    Returns:
        Their results, in the requests' order.
    """
    own = override(game, "play_batch")
    if own is not None:
        return list(own(requests))
    if game.extensions.play_batch is not None:
        return list(loaded(game.extensions.play_batch)(game, requests))
    return [play(game, request) for request in requests]


def batch_size(game: Any, request: PlayRequest) -> int:
    """How many games like ``request`` a sweep hands ``play_batch`` at once.

    Args:
        game: The game.
        request: One of the games.

    Returns:
        The batch's size: 1 (each game written when done) unless the game declares ``Extensions.batch_size``.
    """
    found, size = called(game, "batch_size", request)
    if found:
        return int(size)
    hook = game.extensions.batch_size
    return 1 if hook is None else int(call(game, "batch_size", hook, game, request))


__all__ = ["STEP_LIMIT", "batch_size", "build_scenario", "check", "failure_share", "finish", "judge", "key",
           "make_model", "place", "play", "play_batch", "policies_for", "run_model", "step_limit", "usage_fields",
           "usage_of"]
