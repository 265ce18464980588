"""Play the network consensus game.

Examples:
  llm-mesa consensus --topology ba --n 36 --policy majority-inertia --seed 1
  llm-mesa consensus --topology ba --preferences minority --assign hubs:5=stubborn --json
  llm-mesa consensus --topology caveman --policy voter --max-rounds 500 --out runs/cave1

Policies are registry specs, NAME[:key=value,...]: majority-inertia (inertia,
threshold), voter, stubborn, random, llm (see the endpoint options).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from llm_mesa.json_values import json_text
from llm_mesa.policy import available_policies
from llm_mesa.run_output import build_manifest, check_output_dir, write_run

from .llm_options import add_llm_arguments, is_llm_spec, llm_setup_from_args
from .parameters import PARAMETERS

if TYPE_CHECKING:
    from .model import ConsensusModel

# Mesa and the model are imported when a game is built, not when the command's options are: an LLM
# game's pre-flight check starts first and overlaps those imports (``build_model``).

#: exit status of a game that ran but is invalid (too many failed decisions); 2 stays for bad input
INVALID_GAME_STATUS = 3

JSON_KEYS = ("consensus", "rounds", "winner", "largest_component", "largest_component_colour",
             "stubborn_moves", "stubbornness", "pseudo_equilibrium", "seed", "update", "depth", "wall_s")


def configure(parser: argparse.ArgumentParser) -> None:
    game = parser.add_argument_group("game")
    # every parameter of the game's one definition; 'assign' is the repeatable --assign below
    PARAMETERS.add_arguments(game, names=[p.name for p in PARAMETERS.parameters if p.name != "assign"])
    game.add_argument("--graph", metavar="FILE", help="play on this GraphML or edge-list file instead of --topology")
    game.add_argument("--seed", type=int, default=1, help="seed of everything random (default 1)")
    agents = parser.add_argument_group("agents")
    agents.add_argument("--policy", default="majority-inertia",
                        help="policy of every agent, NAME[:k=v,...]; one of: "
                             + ", ".join(available_policies("consensus")) + " (default majority-inertia)")
    agents.add_argument("--assign", action="append", default=[], metavar="SELECTOR=POLICY",
                        help="give some agents another policy; SELECTOR is hubs:K, random:K, nodes:1,2,3, "
                             "red or blue; repeatable (e.g. --assign hubs:5=stubborn)")
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    out.add_argument("--out", metavar="DIR", help="write per-round and per-agent tables and a manifest here")
    add_llm_arguments(parser)


def parse_assignments(items: list[str]) -> dict[str, str]:
    """``--assign`` entries -> {selector: policy spec} (the game's ``assign`` parameter reads the same)."""
    from .mixing import parse_assignment

    return parse_assignment(items)


def build_model(args: argparse.Namespace) -> ConsensusModel:
    """The model the command line describes (also used by the explorer and sweeps).

    LLM endpoints first: their pre-flight checks start in the background, then Mesa and the
    model are imported and built while the checks wait on the network.
    """
    assign = parse_assignments(args.assign)
    specs = [s for s in (args.policy, *assign.values()) if is_llm_spec(s)]
    llm = llm_setup_from_args(args, specs) if specs else None

    policy = llm.policies[args.policy] if is_llm_spec(args.policy) else args.policy
    assign = {k: (llm.policies[v] if is_llm_spec(v) else v) for k, v in assign.items()}
    parameters = {k: v for k, v in PARAMETERS.from_args(args).items() if k != "assign"}
    limits = {"max_game_tokens": getattr(args, "max_tokens", None), "max_game_cost": getattr(args, "max_cost", None)}
    first = None
    if not assign and not args.graph:  # a plain LLM game: round 1 in flight while Mesa is imported (prefetch.py)
        from . import prefetch

        first = prefetch.start(parameters, policy, args.seed, **limits)
    try:  # Mesa imported and the model built while round 1's calls (if any) are in flight
        from llm_mesa.graphs import load_graph

        from .model import ConsensusModel

        graph = load_graph(args.graph) if args.graph else None
        model = ConsensusModel(**parameters, graph=graph, policy=policy, assign=assign or None, **limits,
                               rng=args.seed)
    except KeyboardInterrupt:  # a signal while the model is built: round 1's calls in flight get their grace
        if first is not None:
            from llm_mesa.llm.stopping import interrupted

            interrupted(first.decisions)
        raise
    except BaseException:
        if first is not None:
            first.decisions.cancel()
        raise
    if first is not None:
        model.adopt_first_round(first)
    model.llm_setup = llm
    return model


def run(args: argparse.Namespace) -> int:
    if args.out is not None:
        check_output_dir(args.out)
    model = build_model(args)
    started = time.perf_counter()
    model.run()
    summary = {**model.summary(), "wall_s": time.perf_counter() - started}  # beside depth: what the turns cost
    llm = getattr(model, "llm_setup", None)
    if llm is not None:
        llm.close()
        summary.update(llm.summary_fields())
    if args.out is not None:
        from .tables import run_tables

        tables = run_tables(model)
        if llm is not None:
            tables.update(llm.tables(model))
        manifest = build_manifest("consensus", model.parameters, summary=summary,
                                  **(llm.manifest(model.prompt_variant, model.update) if llm is not None else {}))
        write_run(args.out, tables, summary, manifest)
    if args.json:
        keys = JSON_KEYS + (("calls", "prompt_tokens", "completion_tokens", "parse_failures", "call_failures")
                            if llm is not None else ())
        extra = {k: summary[k] for k in summary if k not in keys}
        print(json_text({**{k: summary[k] for k in keys}, **extra}))  # NaN and infinities as null: JSON
    else:
        print(format_summary(summary, args.out))
    if summary["invalid"]:
        why = llm.diagnosis() if llm is not None else None
        print(f"llm-mesa consensus: the game is invalid: {summary['failures']} of {summary['decisions']} decisions "
              f"failed (above the {model.max_failure_share:.0%} allowed)" + (f"; {why}" if why else "")
              + f"; exit status {INVALID_GAME_STATUS}", file=sys.stderr)
        return INVALID_GAME_STATUS
    return 0


def format_summary(s: dict, out: str | None = None) -> str:
    outcome = f"consensus on {s['winner']} after {s['rounds']} rounds" if s["consensus"] else \
        f"no consensus after {s['rounds']} rounds ({s['stop_reason']})"
    # turns are worth a line only when agents take them (a synchronous round is one step of depth 1)
    turns = [] if s.get("update", "synchronous") == "synchronous" else [
        f"  turns:              {s['update']}, dependency depth {s.get('depth', s['rounds'])} "
        f"over {s['rounds']} rounds" + (f", {s['wall_s']:.2f} s" if "wall_s" in s else "")]
    lines = [
        f"{s['topology']} graph, {s['n']} agents, policy {s['policy']}, communication {s['communication']}, seed {s['seed']}",
        f"  outcome:            {outcome}; mean payoff {s['mean_payoff']:.3f}",
        *turns,
        f"  largest component:  {s['largest_component']} {s['largest_component_colour']}"
        + (f" (random-colouring baseline {s['largest_component_baseline_mean']:.1f}, p={s['largest_component_baseline_p']:.3f})"
           if s.get("largest_component_baseline_mean") is not None else ""),
        f"  stubbornness:       {s['stubborn_moves']} stubborn moves / {s['opportunities']} opportunities"
        + (f" = {s['stubbornness']:.3f}" if s["stubbornness"] is not None else " (no opportunity)"),
        f"  local agreement:    {s['local_agreement']:.2f}"
        + (f"; pseudo-equilibrium (echo chambers), flippers {s['flippers']}" if s["pseudo_equilibrium"] else ""),
    ]
    if s.get("calls"):
        lines.append(f"  LLM:                {s['calls']} calls, {s['prompt_tokens']} prompt + "
                     f"{s['completion_tokens']} completion tokens, {s['failures']} failed decisions"
                     + (" (INVALID: too many failures)" if s["invalid"] else ""))
    if out:
        lines.append(f"  written to:         {out}")
    return "\n".join(lines)


if __name__ == "__main__":
    from llm_mesa.cli import main

    sys.exit(main(["consensus", *sys.argv[1:]]))
