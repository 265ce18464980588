"""People in the game: seat humans beside LLM and rule agents, each in a browser of their own.

  llm-mesa lab --game GAME --seats 2 --policy RULE --set NAME=V --out runs/lab1
  llm-mesa lab --game GAME --seats 4 --policy llm --base-url http://127.0.0.1:8765/v1 --model MODEL --out runs/pilot1
  llm-mesa lab ...the same options... --seat-agents 5,6 --replay runs/lab1.calls.sqlite --out runs/lab1-again

(the README's "People in the game" has a pilot of 4 people and 32 LLM agents, every option at work)

It prints one line a seat, ``seat N: URL``, and ``host: URL``, each link with a token of
its own: give each person their seat's link, open the host's yourself. The game starts when
every seat is open (or when the host presses Start: the seats nobody opened go to
``--policy``). Each round's questions close when every seat has answered or at
``--deadline``; a missed answer is the game's default action, counted as a timeout. The host
page shows whether each seat's person is connected; a person whose browser crashed gets a new
link from the host page's **New link** (printed here too): the old link then opens nothing,
and the new one resumes the seat with its answers (docs/lab.md).

When the game ends, ``--out`` is written at once as the game's run folder (``viz --replay``
opens it), the seats marked ``human``, and the pages stay up ``--linger`` seconds. Every
answer is recorded (``--record``; by default beside the run folder, ``DIR.calls.sqlite``),
so ``--replay FILE`` plays the same game again with no person and no call. The run folder
and the store hold people's answers: they are private to their owner (0700 and 0600), under
any umask, where every other output of llm-mesa follows the umask.

Serving: ``--host 127.0.0.1`` (the default) lets only this machine in. ``--host 0.0.0.0``
serves every network this machine is on, over plain HTTP: anyone who can reach the port
and holds a link sees that seat (or, with the host's link, the whole game, every agent's
preference included). For people on other machines put TLS in front with a reverse proxy
(Caddy, nginx) on this machine and keep the lab on 127.0.0.1, e.g. for Caddy:
``caddy reverse-proxy --from lab.example.org --to 127.0.0.1:8522`` (it forwards the
websocket too).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from llm_mesa import declared
from llm_mesa.errors import LlmMesaError
from llm_mesa.registry import default_game, game_argument, game_names

DEFAULT_PORT = 8522
#: a lab's files hold people's data: the folder and the store are its owner's alone, whatever the umask
PRIVATE_UMASK = 0o077
#: the longest deadline and linger a lab takes (a day)
MAX_SECONDS = 86_400.0


class LabCommandError(LlmMesaError):
    """The lab cannot start as asked; the message names the fix."""


def configure(parser: argparse.ArgumentParser) -> None:
    from llm_mesa.llm.endpoint import add_endpoint_arguments
    from llm_mesa.llm.recording import add_recording_arguments

    names = game_names()
    lab = parser.add_argument_group("the lab")
    lab.add_argument("--game", type=game_argument, metavar="{" + ",".join(names) + "}", default=None,
                     help="which game" + (f" (default: {names[0]}, the only one installed)" if len(names) == 1
                                          else "; required when several are installed"))
    lab.add_argument("--seats", type=int, required=True, help="how many agents are people (each gets a link)")
    lab.add_argument("--seat-agents", metavar="A,B,...", default=None,
                     help="which agents the seats seat, by the names the game's tables give them (network nodes: "
                          "their numbers); "
                          "default: drawn from the seed")
    lab.add_argument("--set", dest="settings", action="append", default=[], metavar="NAME=V",
                     help="a game parameter, e.g. --set n=36 --set topology=ba (repeatable)")
    lab.add_argument("--policy", default=None,
                     help="every other agent's policy: a rule spec, llm (with the endpoint options), or a mix "
                          "A + B (equal blocks of agents); default the game's first rule policy")
    lab.add_argument("--seed", type=int, default=1, help="seed of everything random (default 1)")
    lab.add_argument("--deadline", type=float, default=30.0,
                     help="seconds a round's questions stay open (default 30); a missed answer is the game's default")
    lab.add_argument("--out", metavar="DIR", help="write the game's run folder here when it ends")
    lab.add_argument("--linger", type=float, default=60.0,
                     help="seconds the pages stay up after the game ends, so people see the end (default 60)")
    serve = parser.add_argument_group("serving")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on (default 127.0.0.1: this machine only; see the description "
                            "for serving others and TLS)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})")
    serve.add_argument("--public-url", metavar="URL", default=None,
                       help="the address people reach the lab at, printed in the links instead of http://HOST:PORT/ "
                            "(behind a reverse proxy: e.g. https://lab.example.org/)")
    serve.add_argument("--assets-dir", type=Path, default=None, help="offline front-end cache (as llm-mesa viz)")
    serve.add_argument("--no-fill", action="store_true", help="do not fetch missing front-end packages from npm")
    add_endpoint_arguments(parser, unset=True)
    add_recording_arguments(parser, default_shown="DIR.calls.sqlite beside --out, else a new file here")


def run(args: argparse.Namespace) -> int:
    from llm_mesa.run_output import check_output_dir

    _check_numbers(args)
    game = default_game(args.game)
    parameters = _parameters(game, args.settings)
    if args.out is not None:
        check_output_dir(args.out)
    previous = os.umask(PRIVATE_UMASK)  # the store and the run folder are made private from their first byte
    try:
        store = _store(args)
        try:
            return _run(args, game, parameters, store)
        finally:
            if store is not None:
                store.close()
                _private(Path(store.path))
    finally:
        os.umask(previous)


def _run(args: argparse.Namespace, game: Any, parameters: dict[str, Any], store: Any) -> int:
    from llm_mesa.lab.session import LabSession
    from llm_mesa.llm.preflight_check import passed
    from llm_mesa.llm.runtime import run_sync

    spec = args.policy or declared.first_policy(game)
    policy = _policy(game, spec, args, store)
    session = LabSession(game, parameters, policy, args.seed, args.seats, seat_agents=_agents(args.seat_agents),
                         deadline=args.deadline, store=store)
    agents = ", ".join(s.label for s in session.seats)
    if store is not None and store.mode == "replay":  # no person: every seat's answers come from the store
        print(f"llm-mesa lab: replaying the {game.name} game's seats ({agents}) from {store.path}", file=sys.stderr)
        for seat in session.seats:
            seat.claim("replay")
        _play(session, store)
        return _finish(args, session, spec, store)
    for endpoint in {p.endpoint for p in session.llm_policies}:  # a bad endpoint is one line before anyone is seated
        run_sync(passed(endpoint))
    server = _serve(session, args)
    base = args.public_url or f"http://{args.host if args.host not in ('0.0.0.0', '::') else '127.0.0.1'}:{args.port}/"
    print(f"llm-mesa lab: the {game.name} game, {len(session.seats)} seat(s) ({agents}), the others on {spec}; "
          f"serving on {base} (deadline {args.deadline:g} s)", file=sys.stderr)
    for name, url in session.urls(base):
        print(f"{name}: {url}", flush=True)
    try:
        _play(session, store)
        status = _finish(args, session, spec, store)
        _linger(args.linger)
        return status
    except BaseException:
        session.stop("The lab was stopped before the game ended; nothing was written.")
        raise
    finally:
        server.should_exit = True
        server.thread.join(timeout=10)


def _play(session: Any, store: Any) -> None:
    """Play the lab to its end; a store that does not fit it (the LLM agents' calls as the people's answers) is
    refused in the lab's words, whose fixes the lab takes (never ``--replay-fill``)."""
    from llm_mesa.lab.seat import not_recorded, recorded_before
    from llm_mesa.llm.store import AlreadyRecorded, ReplayMiss

    try:
        session.play()
    except ReplayMiss:
        raise not_recorded(store.path, "an LLM agent's call of this game") from None
    except AlreadyRecorded:
        raise recorded_before(store.path, "an LLM agent's call of this game") from None


def _private(path: Path) -> None:
    """Make ``path`` (a run folder and everything in it, or a store and its journal files) its owner's alone."""
    for found in [path, *(path.rglob("*") if path.is_dir() else path.parent.glob(path.name + "-*"))]:
        if found.exists() and not found.is_symlink():
            found.chmod(0o700 if found.is_dir() else 0o600)


def _check_numbers(args: argparse.Namespace) -> None:
    if not 0 < args.port < 65536:
        raise LabCommandError(f"--port {args.port} is not a TCP port; use e.g. --port {DEFAULT_PORT}")
    if args.public_url is not None:
        from urllib.parse import urlparse

        url = urlparse(args.public_url)
        if url.scheme not in ("http", "https") or not url.hostname or url.query or url.fragment:
            raise LabCommandError(f"--public-url {args.public_url!r} is not the http(s) address of the lab; give e.g. "
                                  "--public-url https://lab.example.org/")
    if args.seats < 1:
        raise LabCommandError(f"--seats {args.seats}: seat at least one person (--seats 1)")
    for name in ("deadline", "linger"):
        value = getattr(args, name)
        low_ok = value > 0 if name == "deadline" else value >= 0
        if not (math.isfinite(value) and low_ok and value <= MAX_SECONDS):
            raise LabCommandError(f"--{name} {value:g}: give seconds from {'above 0' if name == 'deadline' else '0'} "
                                  f"to {MAX_SECONDS:g}, e.g. --{name} 30")


def _parameters(game: Any, settings: list[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for item in settings:
        name, eq, value = item.partition("=")
        name = name.strip().replace("-", "_")
        if not eq or not name:
            raise LabCommandError(f"--set {item!r} needs the form NAME=V, e.g. --set n=36")
        values[name] = game.parameters[name].convert(value.strip())
    return game.parameters.validate(values, complete=True)


def _agents(text: str | None) -> list[Any] | None:
    if text is None:
        return None
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise LabCommandError("--seat-agents is empty; name the seated agents, e.g. --seat-agents 3,7")
    return [int(n) if n.lstrip("-").isdigit() else n for n in names]


def _store(args: argparse.Namespace) -> Any:
    """The store of the people's answers (and the LLM agents' calls): the recording options, with the lab's
    own default (a new file, beside the run folder), so that two labs never record into one file by default."""
    from llm_mesa.llm.recording import recording_from_args
    from llm_mesa.llm.store import ResponseStore

    if getattr(args, "replay_fill", False):
        raise LabCommandError("a lab replays strictly (its people cannot answer again); drop --replay-fill")
    if args.out is not None:
        default = f"{str(args.out).rstrip('/')}.calls.sqlite"
    else:
        default = f"llm-mesa-lab-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.calls.sqlite"
    path, mode = recording_from_args(args, default=default)
    if path is None:
        return None
    if mode == "record" and args.record is None and Path(path).exists():
        raise LabCommandError(f"{path} exists (an earlier lab's answers); choose a new --out, or --record FILE")
    return ResponseStore(Path(path), mode)


def _policy(game: Any, spec: str, args: argparse.Namespace, store: Any) -> Any:
    """Every other agent's policy: a rule spec (checked), the game's LLM policy (its endpoint checked before the
    game), or a list of them for a mix ``A + B``."""
    from llm_mesa.policy import make_policy, parse_policy_spec

    parts = [p.strip() for p in spec.split(" + ")] if " + " in spec else [spec]
    built: list[Any] = []
    for part in parts:
        if parse_policy_spec(part)[0] != "llm":
            make_policy(part, game)  # a bad spec fails here, in one line
            built.append(part)
            continue
        if not game.llm.policy:
            raise LabCommandError(f"the {game.name} game has no LLM policy; choose one of its rule policies")
        built.append(declared.llm_policy(game, _endpoint(game, part, args, store), store))
    return built if len(built) > 1 else built[0]


def _endpoint(game: Any, spec: str, args: argparse.Namespace, store: Any) -> Any:
    from llm_mesa.llm.endpoint import ENDPOINT_OPTIONS, endpoint_with_options
    from llm_mesa.llm.preflight_check import schedule
    from llm_mesa.policy import parse_policy_spec

    given = {o.name: o.parse(getattr(args, o.dest)) for o in ENDPOINT_OPTIONS if getattr(args, o.dest, None) is not None}
    values = {**game.llm.endpoint_defaults, **given}
    options = parse_policy_spec(spec)[1]
    base = {k: v for k, v in values.items() if k not in ("base_url", "model")}
    endpoint = endpoint_with_options(None, {**{k: values[k] for k in ("base_url", "model") if k in values}, **options},
                                     f"--policy {spec!r}", extra=base)
    if store is None or store.mode != "replay":
        schedule(endpoint)  # checked in the background while people open their seats
    return endpoint


def _serve(session: Any, args: argparse.Namespace) -> Any:
    """The lab's server (``lab_server``), its front-end from the offline cache (filled first if need be)."""
    from . import assets, lab_server

    lab_server.check_port_free(args.host, args.port)
    cache = assets.use_cache(args.assets_dir, fill_missing=not args.no_fill,
                             log=lambda text: print(f"llm-mesa lab: {text}", file=sys.stderr))
    return lab_server.serve(session, args.host, args.port, cache)


def _finish(args: argparse.Namespace, session: Any, spec: str, store: Any) -> int:
    """Write the run folder at once, then say what was played and how to replay it."""
    from llm_mesa.game_cli import format_summary
    from llm_mesa.lab.run_folder import lab_manifest_part, lab_summary, lab_tables
    from llm_mesa.run_output import build_manifest, write_run

    from . import lab_app

    if store is not None:
        store.flush()
    summary = lab_summary(session, spec)
    replay = _replay_command(args, session, store)
    if args.out is not None:
        manifest = build_manifest(session.game.name, session.parameters, summary=summary, policy=spec, seed=args.seed,
                                  lab=lab_manifest_part(session, replay), **_endpoints(session))
        write_run(args.out, lab_tables(session), summary, manifest, private=True)  # people's data: its owner's alone
        _private(Path(args.out))  # and its store beside it, whatever the run writer did
        lab_app.WRITTEN[:] = [str(args.out)]
    print(format_summary(session.game, summary, args.out))
    if replay:
        print(f"  replay:  {replay}")
    return 0


def _endpoints(session: Any) -> dict[str, Any]:
    from llm_mesa.llm.dialects import endpoint_manifest

    llms = session.llm_policies
    return {"endpoints": [endpoint_manifest(p.endpoint) for p in llms]} if llms else {}


def _replay_command(args: argparse.Namespace, session: Any, store: Any) -> str:
    """The command that plays this game again from the store, with no person and no call."""
    if store is None:
        return ""
    open_seats = session.open_seats()
    words = ["llm-mesa", "lab"] + [w for w in getattr(args, "_argv", [])[1:] if w]
    skip = {"--seats", "--seat-agents", "--record", "--replay", "--out", "--port", "--host", "--linger", "--public-url"}
    kept, i = [], 0
    while i < len(words):
        word = words[i]
        name = word.split("=", 1)[0]
        if name in skip or name == "--no-record":
            i += 1 if "=" in word or name == "--no-record" else 2
            continue
        kept.append(word)
        i += 1
    kept += ["--seats", str(len(open_seats)), "--seat-agents", ",".join(str(s.agent) for s in open_seats),
             "--replay", str(store.path)]
    import shlex

    return " ".join(shlex.quote(w) for w in kept)


def _linger(seconds: float) -> None:
    """Keep the pages up a while after the game (written already): an interrupt now just ends the lab."""
    if seconds > 0:
        print(f"llm-mesa lab: the pages stay up {seconds:g} s (Ctrl-C ends the lab now)", file=sys.stderr, flush=True)
        try:
            time.sleep(seconds)
        except KeyboardInterrupt:
            pass


__all__ = ["DEFAULT_PORT", "LabCommandError", "configure", "run"]
