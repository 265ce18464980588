"""Open the Solara explorer of the network consensus game in a browser.

The first run caches Solara's front-end from the npm registry (see
``python -m llm_mesa.visualization.assets``), so the page also renders on machines
without a route to a public CDN. Then it starts ``solara run`` on the explorer.

  llm-mesa viz                      # play games: step, play, reset with new controls
  llm-mesa viz --port 8765 --host 127.0.0.1
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import assets

APP_MODULE = "llm_mesa.visualization.app"


class VizError(ValueError):
    """The explorer cannot start as asked; the message names the fix."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback)")
    parser.add_argument("--port", type=int, default=8765, help="port to listen on (default: 8765)")
    parser.add_argument("--assets-dir", type=Path, default=None,
                        help=f"offline front-end cache (default: ${assets.ASSETS_DIR_ENV} or "
                             f"{assets.default_cache_dir()})")
    parser.add_argument("--no-fill", action="store_true",
                        help="do not fetch missing front-end packages from npm; fail instead")
    parser.add_argument("--open", action="store_true", help="open a browser window")
    parser.add_argument("--dev", action="store_true",
                        help="Solara development mode (auto-reload; the page pings solara.dev)")


def solara_environment(cache_dir: Path) -> dict[str, str]:
    """The environment of the Solara server: our asset cache, no telemetry."""
    env = dict(os.environ)
    env[assets.SOLARA_CACHE_ENV] = str(cache_dir)
    env["SOLARA_TELEMETRY_MIXPANEL_ENABLE"] = "false"  # no calls home from offline machines
    return env


def solara_command(args: argparse.Namespace) -> list[str]:
    command = [sys.executable, "-m", "solara", "run", APP_MODULE,
               "--host", args.host, "--port", str(args.port)]
    command.append("--open" if args.open else "--no-open")
    if not args.dev:
        command.append("--production")  # minified bundles, and no solara.dev check iframe
    return command


def run(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        raise VizError(f"--port {args.port} is not a TCP port; use e.g. --port 8765")
    cache_dir = assets.use_cache(args.assets_dir, fill_missing=not args.no_fill,
                                 log=lambda text: print(f"llm-mesa viz: {text}", file=sys.stderr))
    print(f"llm-mesa viz: serving on http://{args.host}:{args.port}/ (front-end from {cache_dir})",
          file=sys.stderr)
    command = solara_command(args)
    sys.stdout.flush()
    sys.stderr.flush()
    # replace this process: a signal to `llm-mesa viz` then reaches the server itself
    os.execve(command[0], command, solara_environment(cache_dir))
    return 0  # not reached
