"""llm-mesa naming: play SIGN, the schema-induced naming game.

Rule speakers (no LLM): echo, noisy:p=0.3, minimal. An LLM speaker: --speaker llm with
--base-url and --model (defaults: raw completion, max 32 tokens, temperature 0.7,
top-p 0.9, repetition penalty 1.1, as the study ran it); the spec's own parameters
(--speaker llm:model=X,temperature=0.3) win over those options. Every LLM call is
recorded, by default to llm-mesa-calls.sqlite (--record FILE elsewhere, --no-record not
at all); --replay FILE replays them exactly, with zero calls (--replay-fill: a missing
call goes to the endpoint).

  llm-mesa naming --n 12 --mode schema --memory 5 --alpha 0.5 --speaker echo --seed 1
  llm-mesa naming --speaker llm --base-url http://127.0.0.1:8000/v1 --model naming:noisy?p=0.3
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from llm_mesa.decisions import judge
from llm_mesa.errors import InvalidGame
from llm_mesa.game_cli import invalid_words
from llm_mesa.json_values import json_text
from llm_mesa.play import failure_share
from llm_mesa.run_output import build_manifest, check_output_dir, write_run

from .game import GAME
from .metrics import BASIS_MEANINGS
from .model import NamingModel, validate
from .observation import NamingConfigError
from .parameters import PARAMETERS

#: the placeholder URL of a strict replay, which never calls anything
REPLAY_ONLY_URL = "http://127.0.0.1:9/v1"

JSON_KEYS = ("agreement_final", "agreement_max", "agreement_basis", "held_share_final", "consensus",
             "tokens_to_50", "tokens_to_60", "tokens_to_70",
             "total_tokens_to_50", "total_tokens_to_60", "total_tokens_to_70",
             "rounds_to_50", "rounds_to_60", "rounds_to_70", "rounds", "outcomes", "seed")


class _ValuesCheckedByTheGame:
    """An argument group whose options keep the text they were given.

    The values are checked by ``PARAMETERS`` when the model is built, so a bad one is
    one line and exit status 2, like every other error of the command (argparse's own
    check would print the usage and exit from inside the parser).
    """

    def __init__(self, group: argparse._ArgumentGroup) -> None:
        self.group = group

    def add_argument(self, *names: str, type: Any = None, choices: Any = None, **kwargs: Any) -> argparse.Action:
        if choices is not None:
            kwargs["metavar"] = "{" + ",".join(map(str, choices)) + "}"
        return self.group.add_argument(*names, **kwargs)


def configure(parser: argparse.ArgumentParser) -> None:
    game = parser.add_argument_group("game")
    PARAMETERS.add_arguments(_ValuesCheckedByTheGame(game))  # every parameter (--rounds is max_rounds)
    game.add_argument("--seed", type=int, default=1, help="seed of everything random (default 1)")
    agents = parser.add_argument_group("speakers")
    agents.add_argument("--speaker", default="echo",
                        help="echo, noisy:p=0.3, minimal, or llm (default echo)")
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    out.add_argument("--out", metavar="DIR", help="write the per-round table (Parquet) and a manifest here")
    from llm_mesa.llm.endpoint import add_endpoint_arguments
    from llm_mesa.llm.recording import add_recording_arguments

    from .game import GAME

    add_endpoint_arguments(parser, **GAME.llm.endpoint_defaults)  # the study's sampling, said once in the game
    add_recording_arguments(parser)


def speaker_endpoint(args: argparse.Namespace):
    """The endpoint of ``--speaker llm[:k=v,...]``: the command line's options, then the spec's own."""
    from llm_mesa.llm.endpoint import endpoint_from_spec
    from llm_mesa.policy import PolicyError, parse_policy_spec

    try:
        _, options = parse_policy_spec(args.speaker)
    except PolicyError as exc:
        raise NamingConfigError(str(exc)) from None
    if args.replay and not args.replay_fill and not args.base_url and "base_url" not in options:
        options["base_url"] = REPLAY_ONLY_URL
    return endpoint_from_spec(options, args, f"--speaker {args.speaker!r}")


def _llm_speaker(args: argparse.Namespace):
    from llm_mesa.llm.preflight_check import schedule
    from llm_mesa.llm.recording import game_recording, store_from_args

    from .llm_speaker import LLMSpeaker

    _, mode = game_recording(args)  # contradictory options fail before any call or file
    endpoint = speaker_endpoint(args)
    store = store_from_args(args)  # records by default (the library only when given a store); checked before any call
    if mode != "replay":  # a strict replay calls nothing; a fill checks only when a call misses the recording
        schedule(endpoint, lazy=mode == "replay-fill")
    return LLMSpeaker(endpoint, store=store)


def build_model(args: argparse.Namespace) -> NamingModel:
    """The model the command line describes (also used by sweeps and the explorer).

    The game's parameters are checked first, so a bad one never waits on an endpoint.
    """
    parameters = validate(PARAMETERS.from_args(args))
    speaker: Any = args.speaker
    if args.speaker.split(":")[0] == "llm":
        speaker = _llm_speaker(args)
    elif args.record or args.replay or args.replay_fill:
        raise NamingConfigError("--record/--replay/--replay-fill apply to --speaker llm only")
    return NamingModel(speaker=speaker, rng=args.seed, **parameters)


def run(args: argparse.Namespace) -> int:
    if args.out is not None:
        check_output_dir(args.out)
    model = build_model(args)
    try:
        model.run()
    finally:
        _close_stores(model)
    summary = model.summary()
    if args.out is not None:
        manifest = build_manifest("naming", model.parameters(), summary=summary, **_manifest_extra(model))
        write_run(args.out, {"rounds": model.rounds_frame(), "agents": model.agents_frame()}, summary, manifest)
    if args.json:
        extra = {k: v for k, v in summary.items() if k not in JSON_KEYS}
        print(json_text({**{k: summary[k] for k in JSON_KEYS}, **extra}))  # NaN and infinities as null: JSON
    else:
        print(format_summary(summary, args.out))
    share = failure_share(GAME, GAME.parameters.defaults())
    if judge(dict(summary), share)["invalid"]:  # every call of too many utterances failed
        raise InvalidGame(f"the game is invalid: {invalid_words(summary, share)}")
    return 0


def _close_stores(model: NamingModel) -> None:
    """Commit every recorded call (a store is shared by the agents of one speaker)."""
    stores = {id(s): s for a in model.players if (s := getattr(a.speaker, "store", None)) is not None}
    for store in stores.values():
        store.close()


def _manifest_extra(model: NamingModel) -> dict[str, Any]:
    full = model.manifest()
    return {k: full[k] for k in ("seed", "rules", "prompt_variant", "prompt_template_hash", "prompt_file", "speakers")
            if k in full}


def _fmt(value: Any) -> str:
    return "never" if value is None else f"{value:,}"


def format_summary(s: dict[str, Any], out: str | None = None) -> str:
    o = s["outcomes"]
    lines = [
        f"naming game: {s['n']} agents, mode {s['mode']}, K={s['memory']}, alpha={s['alpha']}, "
        f"pairing {s['pairing']}, seed {s['seed']}, {s['rounds']} rounds",
        f"  agreement:        final {s['agreement_final']:.3f}, max {s['agreement_max']:.3f} "
        f"(basis {s['agreement_basis']}: {BASIS_MEANINGS[s['agreement_basis']]}); "
        f"holding the top name {s['held_share_final']:.3f}" + ("  (consensus)" if s["consensus"] else ""),
        "  rounds to 50/60/70%:  " + " / ".join(_fmt(s[f"rounds_to_{p}"]) for p in (50, 60, 70)),
        f"  decoding:         {s['utterances']:,} utterances: " + ", ".join(f"{k} {v:,}" for k, v in o.items()),
    ]
    if s["calls"]:
        lines.append("  tokens to 50/60/70%:  " + " / ".join(_fmt(s[f"tokens_to_{p}"]) for p in (50, 60, 70))
                     + " completion; " + " / ".join(_fmt(s[f"total_tokens_to_{p}"]) for p in (50, 60, 70))
                     + " prompt + completion")
        lines.append(f"  LLM:              {s['calls']:,} calls, {s['prompt_tokens']:,} prompt + "
                     f"{s['completion_tokens']:,} completion tokens, {s['failures']} failed calls")
    if out:
        lines.append(f"  written to:       {out}")
    return "\n".join(lines)


if __name__ == "__main__":
    from llm_mesa.cli import main

    sys.exit(main(["naming", *sys.argv[1:]]))
