"""The offline front-end cache: it covers what Solara asks for, and fills atomically."""

from __future__ import annotations

import io
import os
import re
import stat
import tarfile
from pathlib import Path

import pytest

from llm_mesa.visualization import assets

SOLARA_DIR = Path(__import__("solara").__file__).parent
# The sources through which the explorer's page reaches Solara's CDN.
CDN_SOURCES = [
    "server/templates/solara.html.j2",
    "widgets/vue/gridlayout.vue",
    "widgets/vue/vegalite.vue",
    "components/markdown.py",
]
CDN_URL = re.compile(r"(?:\{\{cdn\}\}|\$\{this\.getCdn\(\)\})/((?:@[\w.-]+/)?[\w.-]+)@([\w.-]+)/")


def test_every_package_solara_fetches_from_its_cdn_is_cached():
    """A solara upgrade that moves a version must fail here, not blank the page."""
    wanted = set()
    for relative in CDN_SOURCES:
        wanted |= set(CDN_URL.findall((SOLARA_DIR / relative).read_text()))
    from solara.server.settings import assets as solara_assets
    name, spec = solara_assets.fontawesome_path.strip("/").split("/")[0].rsplit("@", 1)
    wanted.add((name, spec))
    # only the vuetify 2 front-end is served with ipyvue < 3
    wanted = {(n, s) for n, s in wanted if n != "@widgetti/solara-vuetify3-app"}
    cached = {(a.name, a.spec) for a in assets.SOLARA_ASSETS}
    assert wanted, "no CDN url found: the regular expression no longer matches solara's sources"
    assert wanted <= cached, f"not cached: {sorted(wanted - cached)}"


def _fake_npm(tmp_path: Path, monkeypatch, fail_on: str | None = None) -> Path:
    """An ``npm`` on PATH that packs a tiny tarball holding each asset's probe file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tarballs = tmp_path / "tarballs"
    tarballs.mkdir()
    for asset in assets.SOLARA_ASSETS:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            data = f"// {asset.folder}\n".encode()
            info = tarfile.TarInfo(f"package/{asset.probe}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        safe = asset.folder.replace("/", "_").replace("@", "_")
        (tarballs / f"{safe}.tgz").write_bytes(buffer.getvalue())
    script = bin_dir / "npm"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$2" >> "{tmp_path}/calls"\n'
        + (f'[ "$2" = "{fail_on}" ] && {{ echo "npm error 404" >&2; exit 1; }}\n' if fail_on else "")
        + 'safe=$(echo "$2" | tr "/@" "__")\n'
        f'cp "{tarballs}/$safe.tgz" "$5/"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tmp_path / "calls"


def test_fill_lays_packages_out_as_solara_serves_them_and_is_idempotent(tmp_path, monkeypatch):
    calls = _fake_npm(tmp_path, monkeypatch)
    cache = tmp_path / "cache"
    assets.fill(cache, log=lambda _: None)
    # Solara serves /_solara/cdn/<name>@<spec>/<path> from <cache>/<name>@<spec>/<path>
    vega = cache / "vega@5" / "build" / "vega.min.js"
    assert vega.read_text() == "// vega@5\n"
    assert (cache / "@widgetti" / "vue-grid-layout@2.3.13-alpha.2" / "dist" / "vue-grid-layout.umd.js").is_file()
    assert assets.missing_assets(cache) == []
    assert len(calls.read_text().split()) == len(assets.SOLARA_ASSETS)
    assets.fill(cache, log=lambda _: None)  # nothing left to fetch
    assert len(calls.read_text().split()) == len(assets.SOLARA_ASSETS)


def test_failed_fill_leaves_no_half_package_and_names_the_fix(tmp_path, monkeypatch):
    _fake_npm(tmp_path, monkeypatch, fail_on="vega-lite@5")
    cache = tmp_path / "cache"
    with pytest.raises(assets.AssetsError, match="npm pack vega-lite@5 failed"):
        assets.fill(cache, log=lambda _: None)
    assert not (cache / "vega-lite@5").exists()
    assert not list(cache.glob(".fill-*"))
    missing = {a.folder for a in assets.missing_assets(cache)}
    assert "vega-lite@5" in missing and "requirejs@2.3.6" not in missing


def test_use_cache_points_solara_at_the_cache_or_refuses_when_incomplete(tmp_path, monkeypatch):
    monkeypatch.delenv(assets.SOLARA_CACHE_ENV, raising=False)
    with pytest.raises(assets.AssetsError, match="assets fill"):
        assets.use_cache(tmp_path / "empty", fill_missing=False)
    _fake_npm(tmp_path, monkeypatch)
    cache = assets.use_cache(tmp_path / "cache", log=lambda _: None)
    assert os.environ[assets.SOLARA_CACHE_ENV] == str(cache)


def test_cache_dir_follows_the_override(tmp_path, monkeypatch):
    monkeypatch.setenv(assets.ASSETS_DIR_ENV, str(tmp_path / "here"))
    assert assets.default_cache_dir() == tmp_path / "here"
