"""Open the Solara explorer in a browser: play a game, or replay a recorded one.

The first run caches Solara's front-end from the npm registry (see
``python -m llm_mesa.visualization.assets``), so the page also renders on machines
without a route to a public CDN. Then it starts ``solara run`` on the chosen page.

  llm-mesa viz                      # the consensus game: step, play, reset with new controls
  llm-mesa viz --game naming        # the naming game (SIGN)
  llm-mesa viz --replay runs/cave1  # scrub through a game recorded with llm-mesa consensus --out
  llm-mesa viz --compare            # LLM agents against a rule, same graph and seed, side by side
  llm-mesa viz --sweep runs/sweep1  # browse a sweep's results and replay its games
  llm-mesa viz --port 8521 --host 127.0.0.1
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from llm_mesa.errors import LlmMesaError

from . import assets

APP_MODULE = "llm_mesa.visualization.app"
#: The page of each game, and of the replay viewer.
APP_MODULES = {"consensus": APP_MODULE, "naming": "llm_mesa.visualization.naming_app"}
REPLAY_MODULE = "llm_mesa.visualization.replay_app"
COMPARE_MODULE = "llm_mesa.visualization.compare_app"
SWEEP_MODULE = "llm_mesa.visualization.sweep_app"
#: The environment variable through which ``llm-mesa viz --sweep DIR`` names the sweep.
SWEEP_DIR_ENV = "LLM_MESA_SWEEP_DIR"


class VizError(LlmMesaError):
    """The explorer cannot start as asked; the message names the fix."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--game", choices=tuple(APP_MODULES), default="consensus",
                        help="which game to play (default consensus)")
    parser.add_argument("--replay", metavar="DIR", type=Path, default=None,
                        help="open the replay viewer on a run directory written by llm-mesa consensus --out DIR")
    parser.add_argument("--compare", action="store_true",
                        help="LLM agents against a rule policy on the same graph, preferences and seed, side by side")
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
                        help="Solara development mode (auto-reload; the page pings solara.dev)")


def solara_environment(cache_dir: Path, replay_dir: Path | None = None,
                       sweep_dir: Path | None = None) -> dict[str, str]:
    """The environment of the Solara server: our asset cache, no telemetry, the run to replay."""
    env = dict(os.environ)
    env[assets.SOLARA_CACHE_ENV] = str(cache_dir)
    env["SOLARA_TELEMETRY_MIXPANEL_ENABLE"] = "false"  # no calls home from offline machines
    if replay_dir is not None:
        from .replay import REPLAY_DIR_ENV
        env[REPLAY_DIR_ENV] = str(replay_dir)
    if sweep_dir is not None:
        env[SWEEP_DIR_ENV] = str(sweep_dir)
    return env


def app_module(args: argparse.Namespace) -> str:
    """The page to serve: the replay viewer, the sweep browser, the comparison, else the chosen game."""
    chosen = [flag for flag, on in (("--replay", getattr(args, "replay", None) is not None),
                                    ("--sweep", getattr(args, "sweep", None) is not None),
                                    ("--compare", bool(getattr(args, "compare", False)))) if on]
    if len(chosen) > 1:
        raise VizError(f"{' and '.join(chosen)} open different pages; choose one")
    if getattr(args, "sweep", None) is not None:
        return SWEEP_MODULE
    if getattr(args, "compare", False):
        if getattr(args, "game", "consensus") != "consensus":
            raise VizError("--compare plays the consensus game; drop --game naming")
        return COMPARE_MODULE
    if getattr(args, "replay", None) is not None:
        if getattr(args, "game", "consensus") != "consensus":
            raise VizError("--replay opens recorded consensus games; drop --game naming")
        return REPLAY_MODULE
    return APP_MODULES[getattr(args, "game", "consensus")]


def solara_command(args: argparse.Namespace) -> list[str]:
    command = [sys.executable, "-m", "solara", "run", app_module(args),
               "--host", args.host, "--port", str(args.port)]
    command.append("--open" if args.open else "--no-open")
    if not args.dev:
        command.append("--production")  # minified bundles, and no solara.dev check iframe
    return command


def run(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        raise VizError(f"--port {args.port} is not a TCP port; use e.g. --port 8521")
    replay_dir = None
    if args.replay is not None:
        from .replay import RecordedGame
        replay_dir = RecordedGame.load(args.replay).path.resolve()  # a bad directory fails here, in one line
    sweep_dir = None
    if getattr(args, "sweep", None) is not None:
        sweep_dir = args.sweep.expanduser().resolve()
        if not (sweep_dir / "games").is_dir() and not (sweep_dir.suffix == ".parquet" and sweep_dir.is_file()):
            raise VizError(f"{args.sweep} holds no sweep results (no games/ folder); "
                           "give the directory passed to llm-mesa sweep --out")
    _check_port_free(args.host, args.port)
    command = solara_command(args)
    cache_dir = assets.use_cache(args.assets_dir, fill_missing=not args.no_fill,
                                 log=lambda text: print(f"llm-mesa viz: {text}", file=sys.stderr))
    print(f"llm-mesa viz: serving on http://{args.host}:{args.port}/ (front-end from {cache_dir})",
          file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    # replace this process: a signal to `llm-mesa viz` then reaches the server itself
    os.execve(command[0], command, solara_environment(cache_dir, replay_dir, sweep_dir))
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
