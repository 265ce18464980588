"""Open the Solara explorer in a browser, for any installed game: play it, compare, replay, browse a sweep.

The first run caches Solara's front-end from the npm registry (see
``python -m llm_mesa.visualization.assets``), so the page also renders on machines
without a route to a public CDN. Then it starts ``solara run`` on the chosen page.

  llm-mesa viz --game NAME            # play a game: step, play, reset with new controls
  llm-mesa viz --game NAME --compare  # two policies on the same graph and seed, side by side
  llm-mesa viz --replay runs/g1       # scrub through a game written with llm-mesa GAME ... --out runs/g1
  llm-mesa viz --sweep runs/sweep1    # browse a sweep's results and replay its games
  llm-mesa viz --port 8521 --host 127.0.0.1

With one game installed it is the default; with several, ``--game`` is required
(``--replay`` and ``--sweep`` read the game from what they open).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from llm_mesa.errors import LlmMesaError
from llm_mesa.registry import default_game, game_argument, game_names, get_game
from llm_mesa.views import view_of
from llm_mesa.views.runs import REPLAY_DIR_ENV, run_directory
from llm_mesa.views.sweeps import SWEEP_DIR_ENV, SweepGames

from . import assets
from .controls import GAME_ENV

APP_MODULE = "llm_mesa.visualization.app"
REPLAY_MODULE = "llm_mesa.visualization.replay_app"
COMPARE_MODULE = "llm_mesa.visualization.compare_app"
SWEEP_MODULE = "llm_mesa.visualization.sweep_app"


class VizError(LlmMesaError):
    """The explorer cannot start as asked; the message names the fix."""


def configure(parser: argparse.ArgumentParser) -> None:
    names = game_names()
    parser.add_argument("--game", type=game_argument, metavar="{" + ",".join(names) + "}", default=None,
                        help="which game to play" + (f" (default: {names[0]}, the only one installed)" if len(names) == 1
                                                     else "; required when several are installed"))
    parser.add_argument("--replay", metavar="DIR", type=Path, default=None,
                        help="open the replay viewer on a run directory written by llm-mesa GAME ... --out DIR")
    parser.add_argument("--compare", action="store_true",
                        help="two policies on the same graph and seed, side by side (any game with a policy choice)")
    parser.add_argument("--sweep", metavar="DIR", type=Path, default=None,
                        help="browse a sweep's results (llm-mesa sweep --out DIR) and replay its games")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback)")
    parser.add_argument("--port", type=int, default=8521,
                        help="port to listen on (default: 8521; the loopback endpoint's `serve` uses 8765)")
    parser.add_argument("--assets-dir", type=Path, default=None,
                        help=f"offline front-end cache (default: ${assets.ASSETS_DIR_ENV} or "
                             f"{assets.default_cache_dir()})")
    parser.add_argument("--no-fill", action="store_true",
                        help="do not fetch missing front-end packages from npm; fail instead")
    parser.add_argument("--open", action="store_true", help="open a browser window")
    parser.add_argument("--dev", action="store_true",
                        help="Solara development mode (auto-reload, unminified bundles)")


def app_module(args: argparse.Namespace) -> str:
    """The page to serve: the replay viewer, the sweep browser, the comparison, else the live game."""
    chosen = [flag for flag, on in (("--replay", getattr(args, "replay", None) is not None),
                                    ("--sweep", getattr(args, "sweep", None) is not None),
                                    ("--compare", bool(getattr(args, "compare", False)))) if on]
    if len(chosen) > 1:
        raise VizError(f"{' and '.join(chosen)} open different pages; choose one")
    if getattr(args, "sweep", None) is not None:
        return SWEEP_MODULE
    if getattr(args, "replay", None) is not None:
        return REPLAY_MODULE
    return COMPARE_MODULE if getattr(args, "compare", False) else APP_MODULE


def chosen_game(args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    """The game the page shows and the environment that names it (and the run or sweep), each checked here."""
    env: dict[str, str] = {}
    if getattr(args, "replay", None) is not None:
        path, manifest = run_directory(args.replay)  # a bad directory fails here, in one line
        name = str(manifest["kind"])
        if args.game and args.game != name:
            raise VizError(f"{path} holds a {name} run; drop --game {args.game}")
        view_of(get_game(name)).recording(path)  # its tables read, before any server starts
        env[REPLAY_DIR_ENV] = str(path.resolve())
    elif getattr(args, "sweep", None) is not None:
        sweep = SweepGames.open(args.sweep)
        name = sweep.game_name or default_game(args.game).name
        if args.game and args.game != name:
            raise VizError(f"{args.sweep} holds a {name} sweep; drop --game {args.game}")
        get_game(name)  # an uninstalled game is one line here
        env[SWEEP_DIR_ENV] = str(sweep.path.resolve())
    else:
        view = view_of(default_game(args.game))
        name = view.game.name
        if getattr(args, "compare", False) and not view.policy_choices():
            raise VizError(f"the {name} game offers no policy choice; --compare needs two policies")
    env[GAME_ENV] = name
    return name, env


def solara_environment(cache_dir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of the Solara server: our asset cache, no telemetry, the game and what to open."""
    env = dict(os.environ)
    env[assets.SOLARA_CACHE_ENV] = str(cache_dir)
    env["SOLARA_TELEMETRY_MIXPANEL_ENABLE"] = "false"  # no calls home from offline machines
    env.update(extra or {})
    return env


def solara_command(args: argparse.Namespace) -> list[str]:
    """``solara run`` on the page, never asking PyPI for Solara's newest version (it would at every start)."""
    command = [sys.executable, "-m", "solara", "run", app_module(args), "--host", args.host, "--port", str(args.port),
               "--no-check-version"]
    command.append("--open" if args.open else "--no-open")
    if not args.dev:
        command.append("--production")  # minified bundles
    return command


def run(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        raise VizError(f"--port {args.port} is not a TCP port; use e.g. --port 8521")
    command = solara_command(args)
    name, extra = chosen_game(args)
    _check_port_free(args.host, args.port)
    cache_dir = assets.use_cache(args.assets_dir, fill_missing=not args.no_fill,
                                 log=lambda text: print(f"llm-mesa viz: {text}", file=sys.stderr))
    print(f"llm-mesa viz: the {name} game, serving on http://{args.host}:{args.port}/ (front-end from {cache_dir})",
          file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    # replace this process: a signal to `llm-mesa viz` then reaches the server itself
    os.execve(command[0], command, solara_environment(cache_dir, extra))
    return 0  # not reached


def _check_port_free(host: str, port: int) -> None:
    """One clear line, before Solara starts, when the port is taken."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise VizError(f"port {port} on {host} is taken ({exc.strerror}); pass another --port") from None


__all__ = ["APP_MODULE", "COMPARE_MODULE", "REPLAY_MODULE", "SWEEP_MODULE", "VizError", "app_module", "chosen_game",
           "configure", "run", "solara_command", "solara_environment"]
