"""Files follow the umask like any Unix tool's, and are still written atomically.

Under umask 022 a sweep's parts, its manifest and its recording, a game's ``--out`` folder, an analysis
and a report are 0644 (folders 0755), so colleagues and workers under other accounts can read them; under
077 they are their owner's alone. They were made with ``mkstemp``/``mkdtemp`` (0600/0700 whatever the
umask) and renamed into place. A lab's run folder, which holds people's data, stays private whatever the
umask. One helper makes every such file (``llm_mesa.files``); no other module calls ``tempfile``'s.
"""

from __future__ import annotations

import ast
import io
import os
import re
import stat
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

import pandas as pd
import pytest
from conftest import EXTRA_GAME

from llm_mesa.cli import main
from llm_mesa.files import new_file, new_folder, replace_atomically, write_text_atomic
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.run_output import write_run

ROOT = Path(__file__).resolve().parent.parent
UMASKS = [0o022, 0o077]


@contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def modes_under(root: Path) -> dict[str, int]:
    """Every file and folder under ``root`` (itself included), by path relative to it: its mode."""
    return {str(p.relative_to(root.parent)): mode(p) for p in [root, *root.rglob("*")]}


def as_made(root: Path, mask: int) -> list[str]:
    """What under ``root`` is not as the umask makes it: 0666 & ~mask for a file, 0777 & ~mask for a folder."""
    return [f"{name}: {oct(m)}" for name, m in modes_under(root).items()
            if m != ((0o777 if (root.parent / name).is_dir() else 0o666) & ~mask)]


def cli(*argv) -> int:
    with redirect_stderr(io.StringIO()), redirect_stdout(io.StringIO()):
        return main([*map(str, argv)])


@pytest.mark.parametrize("mask", UMASKS, ids=oct)
def test_the_helper_makes_files_and_folders_as_the_umask_says_and_a_private_folder_on_request(mask, tmp_path):
    with umask(mask):
        fd, path = new_file(tmp_path, ".x-", ".txt")
        os.close(fd)
        folder, private = new_folder(tmp_path, ".f-"), new_folder(tmp_path, ".p-", private=True)
        write_text_atomic(tmp_path / "text.json", "{}\n")
    assert mode(path) == 0o666 & ~mask and path.name.startswith(".x-") and path.suffix == ".txt"
    assert mode(folder) == 0o777 & ~mask and mode(private) == 0o700
    assert mode(tmp_path / "text.json") == 0o666 & ~mask and (tmp_path / "text.json").read_text() == "{}\n"


def test_an_atomic_write_that_fails_leaves_the_old_file_and_no_temporary_one(tmp_path):
    target = tmp_path / "manifest.json"
    target.write_text("old")

    def half(tmp: Path) -> None:
        tmp.write_text("ne")
        raise KeyboardInterrupt  # an interrupt halfway

    with pytest.raises(KeyboardInterrupt):
        replace_atomically(target, half)
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]
    names = {new_file(tmp_path)[1].name for _ in range(50)}
    assert len(names) == 50  # each a name of its own


@pytest.mark.parametrize("mask", UMASKS, ids=oct)
def test_a_sweep_its_recording_an_analysis_and_a_report_are_made_as_the_umask_says(mask, tmp_path):
    out = tmp_path / "sweep"
    with umask(mask), LoopbackServer(seed=1) as server:
        assert cli("sweep", "--game", EXTRA_GAME, "--policies", "llm", "--model", f"{EXTRA_GAME}:follow",
                   "--base-url", server.base_url, "--set", "n=6", "--set", "max_rounds=2", "--seeds", "3",
                   "--tables", "agents", "--out", out, "--quiet") == 0
        assert cli("analyze", out, "--json", "--out", tmp_path / "analysis.json") == 0
        assert cli("report", out, "--out", tmp_path / "report.html") == 0
    written = modes_under(out)
    assert {"sweep/manifest.json", "sweep/calls.sqlite", "sweep/games", "sweep/agents"} <= set(written)
    assert any(re.fullmatch(r"sweep/games/.+\.parquet", name) for name in written)
    assert as_made(out, mask) == []
    for made in ("analysis.json", "report.html"):
        assert mode(tmp_path / made) == 0o666 & ~mask, made


@pytest.mark.parametrize("mask", UMASKS, ids=oct)
def test_a_games_out_folder_is_made_as_the_umask_says(mask, tmp_path):
    with umask(mask):
        assert cli(EXTRA_GAME, "--policy", "follow", "--n", "6", "--out", tmp_path / "run") == 0
    assert (tmp_path / "run" / "manifest.json").exists()
    assert as_made(tmp_path / "run", mask) == []


@pytest.mark.parametrize("mask", UMASKS, ids=oct)
def test_a_private_run_folder_is_its_owners_alone_whatever_the_umask(mask, tmp_path):
    """What a lab's run (people's data) asks for: the folder 0700, so nothing in it is readable by others."""
    with umask(mask):
        write_run(tmp_path / "lab", {"rounds": pd.DataFrame({"round": [1]})}, {"rounds": 1}, {"kind": "lab"},
                  private=True)
    assert mode(tmp_path / "lab") == 0o700 and (tmp_path / "lab" / "rounds.parquet").exists()


def test_the_lab_asks_for_a_private_run_folder():
    tree = ast.parse((ROOT / "visualization" / "lab_cli.py").read_text())
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "write_run"]
    assert calls and all(any(k.arg == "private" and getattr(k.value, "value", None) is True for k in call.keywords)
                         for call in calls)


def test_no_module_makes_its_files_with_tempfiles_owner_only_modes():
    """Every new file or folder of llm-mesa goes through ``llm_mesa.files`` (a scratch folder that is deleted,
    ``TemporaryDirectory``, may stay)."""
    calls = re.compile(r"\b(mkstemp|mkdtemp|NamedTemporaryFile)\s*\(")
    found = [f"{p.relative_to(ROOT)}" for folder in ("llm_mesa", "visualization", "models")
             for p in sorted((ROOT / folder).rglob("*.py")) if calls.search(p.read_text())]
    assert found == []
