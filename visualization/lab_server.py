"""The lab's web server: Solara's, in the lab's process, serving the lab's pages and its own files, nothing else.

Solara's asset route (``/_solara/cdn/...``) answers a file its cache lacks by fetching it
from a public CDN (``SOLARA_ASSETS_CDN``, jsdelivr by default), with no token asked: a
stranger could make the lab reach the internet, and each such request held one of the
server's threads for up to 40 s, so a flood of them stalled every seat's page. The lab
serves that route from its offline cache alone (``LocalAssets``): a file the cache holds is
sent, any other is a 404 at once, and nothing is ever fetched, whatever the environment
says. The page itself is told to load its front-end from this route (Solara's proxy on),
never from the CDN.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from llm_mesa.errors import LlmMesaError

#: where Solara's pages load their front-end from (the lab's own files, under this path)
ASSET_ROUTE = "/_solara/cdn"


class ServingError(LlmMesaError):
    """The lab's server cannot start as asked; the message names the fix."""


def local_asset(cache: Path, path: str) -> Path | None:
    """The file ``path`` names in the cache (Solara's layout: a bare package name is its ``__main.js``), or None:
    not there, or not inside the cache."""
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    if not parts or any(p in (".", "..") for p in parts):
        return None
    found = cache.joinpath(*parts, "__main.js") if len(parts) == 1 else cache.joinpath(*parts)
    try:
        found = found.resolve(strict=True)
        root = cache.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    return found if found.is_file() and found.is_relative_to(root) else None


def local_assets(cache: Path) -> Any:
    """Solara's asset app (its cache headers, compression and auth), looking in ``cache`` only, never fetching."""
    from solara.server.starlette import StaticCdn

    class LocalAssets(StaticCdn):
        def lookup_path(self, path: str) -> tuple[str, os.stat_result | None]:
            found = local_asset(cache, path)
            return ("", None) if found is None else (str(found), found.stat())

    return LocalAssets(directory=cache)


def own_assets_only(app: Any, cache: Path) -> None:
    """Route ``ASSET_ROUTE`` of Solara's ``app`` to the cache alone (in place of Solara's fetching proxy)."""
    from starlette.routing import Mount

    routes = app.router.routes
    mount = Mount(ASSET_ROUTE, app=local_assets(cache))
    at = next((i for i, r in enumerate(routes) if isinstance(r, Mount) and r.path == ASSET_ROUTE), None)
    if at is None:  # Solara's proxy was off when its routes were made: put the route before the catch-all page
        at = next((i for i, r in enumerate(routes) if getattr(r, "path", "") == "/{fullpath:path}"), len(routes))
        routes.insert(at, mount)
    else:
        routes[at] = mount


def serve(session: Any, host: str, port: int, cache: Path) -> Any:
    """Solara's server in this process, on a thread of its own, holding ``session``; no telemetry, no CDN."""
    check_port_free(host, port)
    from . import assets

    os.environ.update({"SOLARA_APP": "llm_mesa.visualization.lab_app", "SOLARA_TELEMETRY_MIXPANEL_ENABLE": "false",
                       assets.SOLARA_CACHE_ENV: str(cache), "SERVER_NAME": host, "SERVER_PORT": str(port)})
    import solara.server.settings as settings
    import solara.settings

    settings.main.mode = "production"  # no solara.dev check, minified bundles
    settings.telemetry.mixpanel_enable = False
    solara.settings.assets.proxy = True  # the page loads its front-end from this server, never from the CDN
    settings.assets.proxy_cache_dir = cache
    warnings.filterwarnings("ignore", message="Cookies with samesite=none require https")
    import uvicorn
    from solara.server.starlette import app

    from . import lab_app

    own_assets_only(app, cache)
    lab_app.LAB = session
    # no access log: a page's address carries its token, and no token reaches a log
    config = uvicorn.Config(app, host=host, port=port, access_log=False, log_level="warning",
                            timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    server.thread = threading.Thread(target=server.run, name="llm-mesa-lab-server", daemon=True)
    server.thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        if not server.thread.is_alive() or time.monotonic() > deadline:
            raise ServingError(f"the lab's server did not start on {host}:{port}; pass another --port")
        time.sleep(0.05)
    return server


def check_port_free(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise ServingError(f"cannot listen on {host}:{port} ({exc.strerror}); pass another --port or --host") \
                from None


__all__ = ["ASSET_ROUTE", "ServingError", "check_port_free", "local_asset", "local_assets", "own_assets_only", "serve"]
