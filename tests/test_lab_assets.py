"""The lab's server serves its own files and nothing else, under the project's socket audit.

``llm-mesa lab`` runs as a researcher runs it, in a process whose every socket is audited
(``tests/network_audit``: any address off this machine is logged and refused), with
``SOLARA_ASSETS_CDN`` pointing at a black hole on this machine: a listener that takes
connections and never answers, counting them. A fetching asset route would either reach
the black hole (and hang there) or, ignoring the variable, reach for the CDN (and be
caught by the audit). While 50 requests for files the cache lacks (with a seat's token,
the host's, or none) arrive at once, a seat's page asks for ``require.js``: every missing
file is a 404, ``require.js`` is the cached file itself, the black hole was never called,
and the audit saw nothing leave. Time is measured in ``benchmarks/bench_lab_assets.py``.
"""

from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from test_explorer_offline import Audit
from test_lab_browser import running_lab

from llm_mesa.visualization import assets
from llm_mesa.visualization.lab_server import local_asset

REQUIRE = "requirejs@2.3.6/require.js"


class BlackHole:
    """A listener on 127.0.0.1 that accepts connections and never answers; it counts them."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            self.held.append(conn)

    def close(self) -> None:
        for conn in self.held:
            conn.close()
        self.sock.close()


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=90) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""


def test_local_asset_finds_cached_files_only_and_nothing_outside_the_cache(tmp_path):
    cache = tmp_path / "cache"
    (cache / "pkg@1.0.0" / "dist").mkdir(parents=True)
    (cache / "pkg@1.0.0" / "dist" / "a.js").write_text("a")
    (cache / "pkg@1.0.0" / "__main.js").write_text("main")
    (tmp_path / "secret.txt").write_text("no")
    (cache / "link.js").symlink_to(tmp_path / "secret.txt")
    assert local_asset(cache, "pkg@1.0.0/dist/a.js") == (cache / "pkg@1.0.0" / "dist" / "a.js").resolve()
    assert local_asset(cache, "pkg@1.0.0") == (cache / "pkg@1.0.0" / "__main.js").resolve()  # Solara's bare name
    for path in ("pkg@1.0.0/dist/b.js", "left-pad@1.3.0/index.js", "../secret.txt", "pkg@1.0.0/../../secret.txt",
                 "link.js", "pkg@1.0.0/dist", "", "/", "%2e%2e/secret.txt"):
        assert local_asset(cache, path) is None, path


def test_missing_assets_are_404_at_once_nothing_is_fetched_and_require_js_is_served_through_a_flood(tmp_path):
    cache = assets.default_cache_dir()
    if assets.missing_assets(cache):
        assets.fill(cache)
    audit = Audit(tmp_path / "audit")
    hole = BlackHole()
    env = {**audit.env(), "SOLARA_ASSETS_CDN": f"http://127.0.0.1:{hole.port}/npm/"}
    try:
        with running_lab(tmp_path, "--game", "consensus", "--seats", "1", "--set", "n=8", env=env) as lab:
            base = lab.urls["host"].split("?")[0].rstrip("/")
            tokens = ["", "?" + lab.urls["seat 1"].split("?")[1], "?" + lab.urls["host"].split("?")[1]]
            missing = [f"{base}/_solara/cdn/left-pad@1.3.{i}/index.js{tokens[i % 3]}" for i in range(50)]
            missing += [f"{base}/_solara/cdn/left-pad@1.3.0", f"{base}/_solara/cdn/requirejs@2.3.6/nope.js"]
            with ThreadPoolExecutor(max_workers=len(missing) + 1) as pool:
                flood = [pool.submit(get, url) for url in missing]
                page = pool.submit(get, f"{base}/_solara/cdn/{REQUIRE}")
                statuses = [f.result()[0] for f in flood]
                served = page.result()
        assert statuses == [404] * len(missing)
        assert served == (200, (cache / REQUIRE).read_bytes())
        assert hole.connections == 0, "the lab reached for the CDN it was told of"
    finally:
        hole.close()
    assert audit.watched("lab"), "the lab did not run under the audit: it watched nothing"
    assert audit.off_the_machine() == [], "\n\n".join(audit.off_the_machine())
