"""A lab's files hold people's data: private to their owner under any umask; and a replay's errors name fixes it takes.

* Under umask 022, where llm-mesa's other outputs are readable by others (0644/0755), a lab's
  run folder is 0700 with its files 0600, and so is its store of answers: also when the run
  writer itself makes files for others to read (the test makes it do so).
* A lab replayed with options other than its recording's (another seed; another model for its
  LLM agents) stops in one line whose every option is one ``llm-mesa lab`` accepts: never
  "replay-fill", which a lab refuses.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest
from lab_people import play

from llm_mesa import declared
from llm_mesa.cli import build_parser, main
from llm_mesa.lab import LabSession
from llm_mesa.llm.endpoint import Endpoint
from llm_mesa.llm.store import ResponseStore
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.registry import get_game

CONSENSUS = ["--game", "consensus", "--set", "n=10", "--set", "max_rounds=3", "--seats", "2", "--seat-agents", "3,8",
             "--deadline", "1", "--policy", "majority-inertia"]
MODEL = "rule:majority-inertia?inertia=0.2"


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def recorded(path: Path, seed: int = 3, policy=None) -> Path:
    """A lab of two seats on consensus (seat 1 red, seat 2 silent), its answers recorded in ``path``."""
    store = ResponseStore(path)
    game = get_game("consensus")
    lab = LabSession(game, {"n": 10, "max_rounds": 3}, policy(store) if policy else "majority-inertia", seed, 2,
                     seat_agents=[3, 8], deadline=1.0, store=store)
    play(lab, {1: lambda r, f: {"colour": "red"}, 2: lambda r, f: None})
    store.close()
    return path


def modes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder.parent)): stat.S_IMODE(p.stat().st_mode) for p in [folder, *folder.rglob("*")]}


def lab_options() -> set[str]:
    parser = build_parser("lab")
    lab = parser._subparsers._group_actions[0].choices["lab"]  # noqa: SLF001 - argparse keeps subcommands there
    return {option for action in lab._actions for option in action.option_strings}  # noqa: SLF001


def assert_names_only_fixes_the_lab_takes(err: str) -> None:
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and "replay-fill" not in err, err
    named = set(re.findall(r"--[a-z][a-z-]+", errors[0]))
    assert named and named <= lab_options(), named - lab_options()


@pytest.mark.parametrize("writer_follows_umask", [False, True])
def test_a_labs_run_folder_and_store_are_private_under_umask_022(writer_follows_umask, tmp_path, monkeypatch, capsys,
                                                                 umask_022):
    store = recorded(tmp_path / "lab1.calls.sqlite")
    assert stat.S_IMODE(store.stat().st_mode) == 0o644  # what umask 022 gives a file anyone makes
    if writer_follows_umask:  # the run writer as llm-mesa's other outputs have it: readable by others
        import llm_mesa.run_output as run_output

        write_run = run_output.write_run

        def shared(out, *args, **kwargs):
            written = write_run(out, *args, **kwargs)
            for p in [Path(out), *Path(out).rglob("*")]:
                p.chmod(0o755 if p.is_dir() else 0o644)
            return written

        monkeypatch.setattr(run_output, "write_run", shared)
    out = tmp_path / "again"
    assert main(["lab", *CONSENSUS, "--seed", "3", "--replay", str(store), "--out", str(out)]) == 0
    capsys.readouterr()
    found = modes(out)
    assert found["again"] == 0o700 and len(found) > 3
    assert all(mode == 0o600 for name, mode in found.items() if name != "again"), found
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    assert os.umask(0o022) == 0o022  # the lab gave the process its umask back


def test_a_lab_replayed_with_another_seed_names_only_fixes_the_lab_takes(tmp_path, capsys):
    store = recorded(tmp_path / "lab1.calls.sqlite")
    status = main(["lab", *CONSENSUS, "--seed", "4", "--replay", str(store), "--out", str(tmp_path / "again")])
    err = capsys.readouterr().err
    # both seats decide round 1 at once: whichever asks first meets the missing answer
    assert status == 2 and re.search(r"holds no answer for node (3|8)'s decision in round 1", err), err
    assert_names_only_fixes_the_lab_takes(err)
    assert not (tmp_path / "again").exists()


def test_a_lab_whose_llm_agents_calls_are_not_in_its_store_names_only_fixes_the_lab_takes(tmp_path, capsys):
    game = get_game("consensus")
    with LoopbackServer(seed=3) as server:
        store = recorded(tmp_path / "lab1.calls.sqlite",
                         policy=lambda s: declared.llm_policy(game, Endpoint(server.base_url, MODEL, max_attempts=2), s))
        options = [o if o != "majority-inertia" else "llm" for o in CONSENSUS]
        status = main(["lab", *options, "--base-url", server.base_url, "--model", MODEL.replace("0.2", "0.3"),
                       "--seed", "3", "--replay", str(store)])
    err = capsys.readouterr().err
    assert status == 2 and "an LLM agent's call" in err  # the people's answers replay; the agents' calls do not
    assert_names_only_fixes_the_lab_takes(err)
