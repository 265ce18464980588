"""The subcommand any game gets: ``llm-mesa GAME [--PARAMETER V ...] --policy SPEC --seed S``.

A game that brings no command of its own (``Game.extensions.cli``) is played from
the command line with one option per parameter of its definition, its policies
(rule specs, or ``llm`` with the endpoint and recording options when the game has
an LLM policy), ``--json`` for one object and ``--out DIR`` for its tables, summary
and manifest (all or nothing, checked before the game is played).
"""

from __future__ import annotations

import argparse
from types import ModuleType, SimpleNamespace
from typing import Any

from llm_mesa import declared, play
from llm_mesa.errors import InvalidGame
from llm_mesa.game_hooks import load_target
from llm_mesa.games import Game
from llm_mesa.json_values import checked_row, json_text


def command_of(game: Game) -> ModuleType | SimpleNamespace:
    """The module of ``game``'s subcommand (``configure``, ``run``): its own (``Game.extensions.cli``),
    or the generic one."""
    if game.extensions.cli is not None:
        return load_target(game.extensions.cli)
    return for_game(game)


def for_game(game: Game) -> SimpleNamespace:
    """The ``configure``/``run`` pair of ``game``'s generic subcommand."""
    doc = (f"Play one game of {game.name}: {game.summary or 'a game on llm-mesa'}.\n\n"
           f"Every parameter of the game is an option; --policy takes a rule policy spec"
           + (" or llm (with the endpoint options)" if game.llm.policy else "") + ".")
    return SimpleNamespace(__doc__=doc, configure=lambda parser: configure(game, parser),
                           run=lambda args: run(game, args))


def configure(game: Game, parser: argparse.ArgumentParser) -> None:
    from llm_mesa.registry import available_policies

    group = parser.add_argument_group("game")
    game.parameters.add_arguments(group)
    group.add_argument("--seed", type=int, default=1, help="seed of everything random (default 1)")
    policies = available_policies(game)
    first = declared.first_policy(game) if policies else None
    group.add_argument("--policy", default=first, help="the agents' policy, NAME[:k=v,...]; one of: "
                       + (", ".join(policies) or "(none registered)") + f" (default {first})")
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    out.add_argument("--out", metavar="DIR", help="write the game's tables (Parquet), summary and manifest here")
    if game.llm.policy:
        from llm_mesa.llm.endpoint import add_endpoint_arguments
        from llm_mesa.llm.recording import add_recording_arguments

        add_endpoint_arguments(parser, **game.llm.endpoint_defaults)
        add_recording_arguments(parser)


def _policy(game: Game, args: argparse.Namespace) -> tuple[Any, Any]:
    """(the policy to build with, the store to close) from ``--policy`` and the endpoint options."""
    from llm_mesa.policy import PolicyError, parse_policy_spec

    if args.policy is None:
        raise PolicyError(f"the {game.name} game registers no policy; register one with llm_mesa.register_policy")
    name, options = parse_policy_spec(args.policy)
    if name != "llm":
        declared.make_policy(game, args.policy)  # a bad spec fails here, in one line
        return args.policy, None
    if not game.llm.policy:
        raise PolicyError(f"the {game.name} game has no LLM policy; choose one of its rule policies")
    from llm_mesa.llm.endpoint import endpoint_from_spec
    from llm_mesa.llm.preflight_check import schedule
    from llm_mesa.llm.recording import game_recording, store_from_args

    endpoint = endpoint_from_spec(options, args, f"--policy {args.policy!r}")
    _, mode = game_recording(args)
    store = store_from_args(args)  # the store is checked before any call, the pre-flight's included
    if mode != "replay":  # a strict replay calls nothing; a fill checks only when a call misses the recording
        schedule(endpoint, lazy=mode == "replay-fill")
    return declared.llm_policy(game, endpoint, store), store


def run(game: Game, args: argparse.Namespace) -> int:
    from llm_mesa.run_output import build_manifest, check_output_dir, write_run

    if args.out is not None:
        check_output_dir(args.out)
    parameters = game.parameters.validate(game.parameters.from_args(args), complete=True)
    policy, store = _policy(game, args)
    model = play.make_model(game, parameters, policy, args.seed)
    try:
        rounds = play.run_model(model, *play.step_limit(game, parameters))
    finally:
        if store is not None:
            store.close()
    llms = [] if isinstance(policy, str) else [policy]  # LLM agents: the core's verdict, whatever the summary holds
    summary = play.finish(game, model, parameters, llms, steps=rounds).row
    summary = checked_row({"game": game.name, **summary, "policy": args.policy, "seed": args.seed})
    if args.out is not None:
        tables = declared.run_tables(game, model)
        manifest = build_manifest(game.name, parameters, summary=summary, policy=args.policy, seed=args.seed,
                                  **(policy.manifest() if hasattr(policy, "manifest") else {}))
        write_run(args.out, tables, summary, manifest)
    if args.json:
        print(json_text(summary))
    else:
        print(format_summary(game, summary, args.out))
    if summary.get("invalid"):
        from llm_mesa.llm.diagnosis import diagnose

        why = diagnose(getattr(policy, "usage", None), [getattr(policy, "endpoint", None)])
        raise InvalidGame(f"the game is invalid: {invalid_words(summary, play.failure_share(game, parameters))}"
                          + (f"; {why}" if why else ""))
    return 0


def invalid_words(row: dict[str, Any], failure_share: float) -> str:
    """How many of a game's LLM decisions failed, against the share allowed."""
    failed = row.get("failed_decisions", row.get("failures", "?"))
    decisions = row.get("decisions")
    return (f"{failed} of {decisions} LLM decisions failed" if decisions else f"{failed} decisions failed") \
        + f" (above the {failure_share:.0%} allowed)"


def format_summary(game: Game, summary: dict[str, Any], out: str | None) -> str:
    lines = [f"{game.name}: {declared.outcome(game, summary)} (policy {summary['policy']}, seed {summary['seed']})"]
    width = max((len(k) for k in summary), default=0)
    for key, value in summary.items():
        if key in ("game", "policy", "seed"):
            continue
        shown = f"{value:.4g}" if isinstance(value, float) else str(value)
        lines.append(f"  {key:<{width}}  {shown}")
    if out:
        lines.append(f"  written to: {out}")
    return "\n".join(lines)

