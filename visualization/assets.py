"""The explorer's front-end, cached offline from the npm registry.

Solara fetches its front-end (the vuetify app, requirejs, font-awesome, the grid
layout of Mesa's component view, vega for altair charts) from a public CDN when a
page loads. Machines without a route to that CDN (HPC clusters, this project's CI)
then show a blank page. Solara serves those files from its asset proxy cache
(``SOLARA_ASSETS_PROXY_CACHE_DIR``) first, laid out as
``<npm-name>@<version-or-range>/<path-inside-the-package>``, and every one of them is
an npm package. So we fill that cache with ``npm pack`` (the npm registry is reachable
where the CDN is not) and point Solara at it before it is imported.

Usage::

    python -m llm_mesa.visualization.assets fill [DIR]   # idempotent
    python -m llm_mesa.visualization.assets check [DIR]  # exit 1 if anything is missing
    python -m llm_mesa.visualization.assets where        # print the cache directory

The cache directory is ``$LLM_MESA_ASSETS_DIR`` if set, else
``$XDG_CACHE_HOME/llm-mesa/solara-cdn`` (``~/.cache/llm-mesa/solara-cdn``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from llm_mesa.errors import LlmMesaError

#: Written inside a package folder once it is complete; its absence means "fill again".
COMPLETE_MARKER = ".llm-mesa-complete"
#: The environment variable Solara reads for its asset proxy cache.
SOLARA_CACHE_ENV = "SOLARA_ASSETS_PROXY_CACHE_DIR"
#: Our own override of the cache location.
ASSETS_DIR_ENV = "LLM_MESA_ASSETS_DIR"


class AssetsError(LlmMesaError):
    """The offline front-end cache cannot be filled or is incomplete; the message names the fix."""


@dataclass(frozen=True)
class NpmAsset:
    """One npm package as Solara asks for it: ``name@spec`` is also its cache folder name.

    ``spec`` is what Solara puts in the URL: an exact version, or a range (``vega@5``)
    that the CDN resolves to its newest match, as ``npm pack`` does.
    ``probe`` is one file the page loads from it, to check a fill is usable.
    """

    name: str
    spec: str
    probe: str
    why: str

    @property
    def folder(self) -> str:
        return f"{self.name}@{self.spec}"


#: What solara 1.64 (vuetify 2 front-end: ipyvue < 3, ipyvuetify < 3) loads from its CDN.
#: Found in solara/server/templates/solara.html.j2, solara/server/settings.py
#: (font-awesome), solara/widgets/vue/gridlayout.vue, solara/widgets/vue/vegalite.vue and
#: solara/components/markdown.py, and confirmed by logging a page's requests in Chromium.
#: tests/test_explorer_assets.py re-reads those sources so a solara upgrade that moves a
#: version fails loudly instead of blanking the page.
SOLARA_ASSETS: tuple[NpmAsset, ...] = (
    NpmAsset("@widgetti/solara-vuetify-app", "10.1.1", "dist/solara-vuetify-app8.min.js",
             "the page itself: Vue 2, vuetify, jupyter-widgets"),
    NpmAsset("requirejs", "2.3.6", "require.js", "module loader of the widgets"),
    NpmAsset("font-awesome", "4.5.0", "css/font-awesome.min.css", "icons"),
    NpmAsset("@widgetti/vue-grid-layout", "2.3.13-alpha.2", "dist/vue-grid-layout.umd.js",
             "Mesa's component grid (GridDraggable)"),
    NpmAsset("vega", "5", "build/vega.min.js", "altair charts"),
    NpmAsset("vega-lite", "5", "build/vega-lite.min.js", "altair charts"),
    NpmAsset("vega-embed", "6", "build/vega-embed.min.js", "altair charts"),
    NpmAsset("katex", "0.16.9", "dist/katex.min.js", "solara.Markdown (maths)"),
    NpmAsset("mermaid", "10.8.0", "dist/mermaid.min.js", "solara.Markdown (diagrams)"),
)


def default_cache_dir() -> Path:
    """Where the cache lives unless told otherwise: per user, outside the work tree."""
    override = os.environ.get(ASSETS_DIR_ENV)
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "llm-mesa" / "solara-cdn"


def missing_assets(cache_dir: Path, assets: Iterable[NpmAsset] = SOLARA_ASSETS) -> list[NpmAsset]:
    """The assets whose folder is not complete (no marker or no probe file)."""
    return [a for a in assets
            if not (cache_dir / a.folder / COMPLETE_MARKER).is_file()
            or not (cache_dir / a.folder / a.probe).is_file()]


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        raise AssetsError(
            "npm is not installed, so the explorer's front-end cannot be cached offline: "
            "install Node.js/npm (Debian: apt-get install -y npm) and run "
            "`python -m llm_mesa.visualization.assets fill`")
    return npm


def _pack(asset: NpmAsset, workdir: Path) -> Path:
    """``npm pack name@spec`` into workdir; return the tarball (ranges resolve to the newest)."""
    result = subprocess.run(
        [_npm(), "pack", f"{asset.name}@{asset.spec}", "--silent",
         "--pack-destination", str(workdir)],
        cwd=workdir, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise AssetsError(
            f"npm pack {asset.folder} failed ({last}); check that the npm registry is "
            "reachable (npm config get registry) and run the fill again")
    tarballs = sorted(workdir.glob("*.tgz"))
    if len(tarballs) != 1:
        raise AssetsError(f"npm pack {asset.folder} gave {len(tarballs)} tarballs, expected 1")
    return tarballs[0]


def _extract_package(tarball: Path, into: Path) -> None:
    """Extract the tarball's ``package/`` folder into ``into`` (no paths outside it)."""
    into.mkdir(parents=True)
    with tarfile.open(tarball, "r:gz") as tar:
        members = []
        for member in tar.getmembers():
            # npm tarballs keep everything under one top folder, usually "package/"
            parts = Path(member.name).parts
            if len(parts) < 2 or not (member.isfile() or member.isdir()):
                continue
            member.name = str(Path(*parts[1:]))
            members.append(member)
        tar.extractall(into, members=members, filter="data")


def fill(cache_dir: Path | None = None, assets: Iterable[NpmAsset] = SOLARA_ASSETS,
         log=print) -> Path:
    """Fill the cache with every asset not yet complete; return the cache directory.

    Idempotent: complete folders are left alone. Atomic per package: each one is
    extracted into a temporary folder beside its target and renamed into place with
    its completion marker, so an interrupted fill never leaves a half package that a
    page would load.
    """
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache_dir.mkdir(parents=True, exist_ok=True)
    todo = missing_assets(cache_dir, assets)
    for asset in todo:
        target = cache_dir / asset.folder
        target.parent.mkdir(parents=True, exist_ok=True)  # scoped names: @scope/
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fill-") as tmp:
            tmp_path = Path(tmp)
            log(f"caching {asset.folder} ({asset.why})")
            tarball = _pack(asset, tmp_path)
            staged = tmp_path / "staged"
            _extract_package(tarball, staged)
            if not (staged / asset.probe).is_file():
                raise AssetsError(
                    f"{asset.folder} from npm has no {asset.probe}; the solara version in use "
                    "may expect another one: update SOLARA_ASSETS in llm_mesa.visualization.assets")
            (staged / COMPLETE_MARKER).write_text(f"{asset.folder}\n")
            if target.exists():  # a partial folder (e.g. files Solara proxied one by one)
                shutil.rmtree(target)
            os.replace(staged, target)
    return cache_dir


def use_cache(cache_dir: Path | None = None, *, fill_missing: bool = True, log=print) -> Path:
    """Make Solara serve its front-end from our cache: fill it if needed, set the env var.

    Must run before ``solara.server.settings`` is imported (Solara reads the variable
    once), i.e. before ``solara run`` starts or in the parent of its process.
    """
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    missing = missing_assets(cache_dir)
    if missing:
        if not fill_missing:
            names = ", ".join(a.folder for a in missing)
            raise AssetsError(
                f"the explorer's offline front-end cache {cache_dir} lacks {names}: run "
                "`python -m llm_mesa.visualization.assets fill`")
        fill(cache_dir, log=log)
    os.environ[SOLARA_CACHE_ENV] = str(cache_dir)
    return cache_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m llm_mesa.visualization.assets",
        description="Cache Solara's front-end from the npm registry so the explorer works offline.")
    sub = parser.add_subparsers(dest="action", required=True)
    for action, text in (("fill", "fetch every missing package (idempotent)"),
                         ("check", "exit 1 if a package is missing")):
        p = sub.add_parser(action, help=text)
        p.add_argument("dir", nargs="?", type=Path, default=None,
                       help=f"cache directory (default: {default_cache_dir()})")
    sub.add_parser("where", help="print the cache directory")
    args = parser.parse_args(argv)
    try:
        if args.action == "where":
            print(default_cache_dir())
            return 0
        cache_dir = args.dir or default_cache_dir()
        if args.action == "fill":
            fill(cache_dir)
            print(f"complete: {cache_dir}")
            return 0
        missing = missing_assets(cache_dir)
        for asset in missing:
            print(f"missing: {asset.folder}", file=sys.stderr)
        if not missing:
            print(f"complete: {cache_dir}")
        return 1 if missing else 0
    except AssetsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
