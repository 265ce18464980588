"""The whole suite runs in an open world: a game from outside the tree is installed beside the project's.

``tinyvote``, the game ``docs/write-a-game.md`` writes (its blocks marked
``file: tinyvote.py``, on the public API alone), is installed for the test run as a
package of its own, with its one entry point in the
``llm_mesa.games`` group, on ``sys.path`` and on ``PYTHONPATH`` (so servers and
commands started as subprocesses see it too), before the tests are collected (a test
parametrized over ``llm_mesa.registry.game_names()`` covers it). No test may assume which games are
installed; the open-world tests run every command and page over this one.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

EXTRA_GAME = "tinyvote"
GUIDE = Path(__file__).resolve().parent.parent / "docs" / "write-a-game.md"
_BLOCK = re.compile(r"<!-- file: (\S+) -->\n```python\n(.*?)```", re.DOTALL)


def guide_files() -> dict[str, str]:
    """The files the guide writes: each ``file: NAME`` block, in order, joined per file."""
    files: dict[str, str] = {}
    for name, code in _BLOCK.findall(GUIDE.read_text()):
        files[name] = files.get(name, "") + ("\n\n" if name in files else "") + code
    return files


def install_extra_game(site: Path) -> Path:
    """Lay ``tinyvote`` out in ``site`` as an installed distribution: its module and its dist-info."""
    site.mkdir(parents=True, exist_ok=True)
    for name, code in guide_files().items():
        (site / name).write_text(code)
    info = site / f"{EXTRA_GAME}-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {EXTRA_GAME}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[llm_mesa.games]\n{EXTRA_GAME} = {EXTRA_GAME}:GAME\n")
    return site


_SAVED: dict[str, object] = {}


def pytest_configure(config):
    """Install ``tinyvote`` before collection, so that tests parametrized over ``game_names()`` cover it too."""
    site = install_extra_game(Path(tempfile.mkdtemp(prefix="llm-mesa-site-")))
    _SAVED.update(site=str(site), pythonpath=os.environ.get("PYTHONPATH"))
    sys.path.insert(0, str(site))
    saved = _SAVED["pythonpath"]
    os.environ["PYTHONPATH"] = str(site) if not saved else os.pathsep.join([str(site), str(saved)])


def pytest_unconfigure(config):
    site = _SAVED.pop("site", None)
    if site is None:
        return
    if site in sys.path:
        sys.path.remove(site)
    saved = _SAVED.pop("pythonpath", None)
    if saved is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = str(saved)
    shutil.rmtree(site, ignore_errors=True)
