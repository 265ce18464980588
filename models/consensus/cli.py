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
import json
import sys

from llm_mesa.models.consensus.llm_policy import add_llm_arguments, llm_setup_from_args

from llm_mesa.graphs import TOPOLOGIES, load_graph
from llm_mesa.policy import available_policies
from llm_mesa.run_output import build_manifest, check_output_dir, write_run

from .model import COMMUNICATION_MODES, ConsensusConfigError, ConsensusModel

JSON_KEYS = ("consensus", "rounds", "winner", "largest_component", "largest_component_colour",
             "stubborn_moves", "stubbornness", "pseudo_equilibrium", "seed")


def configure(parser: argparse.ArgumentParser) -> None:
    game = parser.add_argument_group("game")
    game.add_argument("--topology", default="ba", help=f"one of {', '.join(TOPOLOGIES)} (default ba)")
    game.add_argument("--graph", metavar="FILE", help="play on this GraphML or edge-list file instead")
    game.add_argument("--n", type=int, default=36, help="number of agents (default 36)")
    game.add_argument("--preferences", default="random", choices=("random", "minority"),
                      help="random: half prefer red; minority: the --minority hubs prefer red (default random)")
    game.add_argument("--minority", type=int, default=5, help="hubs preferring red in the minority design (default 5)")
    game.add_argument("--initial", default="preference", choices=("preference", "random"),
                      help="initial colours: each agent's preference, or a fair coin (default preference)")
    game.add_argument("--comm", dest="communication", default="none", choices=COMMUNICATION_MODES,
                      help="who a message reaches: nobody, neighbours or everyone (default none)")
    game.add_argument("--dm", action="store_true", help="also allow a private message to one neighbour")
    game.add_argument("--label", default="llm", choices=("llm", "human"),
                      help="what the rules call the other players (default llm)")
    game.add_argument("--max-rounds", type=int, default=50, help="round limit (default 50)")
    game.add_argument("--seed", type=int, default=1, help="seed of everything random (default 1)")
    game.add_argument("--baseline-permutations", type=int, default=1000,
                      help="random recolourings for the largest-component baseline (default 1000)")
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
    assign = {}
    for item in items:
        selector, eq, spec = item.partition("=")
        if not eq or not selector or not spec:
            raise ConsensusConfigError(f"--assign {item!r} needs the form SELECTOR=POLICY, e.g. hubs:5=stubborn")
        assign[selector.strip()] = spec.strip()
    return assign


def build_model(args: argparse.Namespace) -> ConsensusModel:
    """The model the command line describes (also used by the explorer and sweeps)."""
    llm = _llm_setup(args)
    policy = llm.policy if llm and args.policy.split(":")[0] == "llm" else args.policy
    assign = {k: (llm.policy if llm and v.split(":")[0] == "llm" else v)
              for k, v in parse_assignments(args.assign).items()}
    graph = load_graph(args.graph) if args.graph else None
    model = ConsensusModel(
        n=args.n, topology=args.topology, graph=graph, policy=policy, assign=assign or None,
        preferences=args.preferences, minority=args.minority, initial=args.initial,
        communication=args.communication, direct_messages=args.dm, label=args.label,
        max_rounds=args.max_rounds, baseline_permutations=args.baseline_permutations,
        max_game_tokens=getattr(args, "max_tokens", None), max_game_cost=getattr(args, "max_cost", None),
        rng=args.seed,
    )
    model.llm_setup = llm
    return model


def _llm_setup(args):
    uses_llm = any(s.split(":")[0] == "llm" for s in [args.policy, *(a.partition("=")[2] for a in args.assign)])
    if not uses_llm:
        return None
    return llm_setup_from_args(args)


def run(args: argparse.Namespace) -> int:
    if args.out:
        check_output_dir(args.out)
    model = build_model(args)
    model.run()
    summary = model.summary()
    llm = getattr(model, "llm_setup", None)
    if llm is not None:
        llm.close()
        summary.update(llm.summary_fields())
    if args.out:
        nodes, edges = model.graph_table()
        tables = {"rounds": model.rounds_table(), "agents": model.agents_table(), "nodes": nodes, "edges": edges,
                  "messages": model.messages_table()}
        if llm is not None:
            tables.update(llm.tables(model))
        manifest = build_manifest("consensus", model.parameters, summary=summary,
                                  **(llm.manifest() if llm is not None else {}))
        write_run(args.out, tables, summary, manifest)
    if args.json:
        keys = JSON_KEYS + (("calls", "prompt_tokens", "completion_tokens", "parse_failures", "call_failures")
                            if llm is not None else ())
        extra = {k: summary[k] for k in summary if k not in keys}
        print(json.dumps({**{k: summary[k] for k in keys}, **extra}, default=str))
    else:
        print(format_summary(summary, args.out))
    return 0


def format_summary(s: dict, out: str | None = None) -> str:
    outcome = f"consensus on {s['winner']} after {s['rounds']} rounds" if s["consensus"] else \
        f"no consensus after {s['rounds']} rounds ({s['stop_reason']})"
    lines = [
        f"{s['topology']} graph, {s['n']} agents, policy {s['policy']}, communication {s['communication']}, seed {s['seed']}",
        f"  outcome:            {outcome}; mean payoff {s['mean_payoff']:.3f}",
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
