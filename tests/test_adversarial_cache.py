"""What the project reads back as trusted proves what it holds, or is computed again (or refused), never shown.

The analysis cache: each row damages the entry ``analyze`` kept for a sweep (of the guide's game,
tinyvote), then runs ``analyze`` again: the report printed is the true one (the statistics are
computed again), and the entry written in its place proves itself on the next read. Then
manifests: a sweep's and a run's manifest carry the digest of their content, and one edited
since is refused in one line; a compaction journal that names files outside its sweep is not
obeyed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from llm_mesa.analysis.cache import cache_folder
from llm_mesa.cli import main
from llm_mesa.sweep import run_sweep


@pytest.fixture
def sweep(tmp_path):
    out = tmp_path / "tiny"
    run_sweep({"a": {"n": 8, "max_rounds": 5}}, "coin", 6, out, game="tinyvote")
    return out


@pytest.fixture
def analyses(monkeypatch):
    """The times the game's statistics are computed."""
    from llm_mesa.analysis import game_analysis

    calls = []
    original = game_analysis.analyze

    def counted(game, sweep, options):
        calls.append(1)
        return original(game, sweep, options)

    monkeypatch.setattr(game_analysis, "analyze", counted)
    return calls


def analyze(capsys, sweep) -> dict:
    assert main(["analyze", str(sweep), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def entry_of(sweep) -> Path:
    (entry,) = cache_folder(sweep).glob("*.json")
    return entry


def edited(change):
    def damage(entry: Path, other: Path) -> None:
        held = json.loads(entry.read_text())
        change(held)
        entry.write_text(json.dumps(held))
    return damage


def false_games(held):
    held["report"]["games"] = 999  # the right name, the right key, a false number


def false_games_old_format(held):
    held.clear()
    held.update({"game": "tinyvote", "games": 999})  # an entry of the format before digests: a bare report


#: (id, what is done to the entry (given the entry and another sweep's entry))
DAMAGE = [
    ("false numbers under the right key", edited(false_games)),
    ("a bare report of the old format", edited(false_games_old_format)),
    ("nested 200,000 deep", lambda e, o: e.write_text("[" * 200_000 + "]" * 200_000)),
    ("a list, not an entry", lambda e, o: e.write_text("[1, 2, 3]")),
    ("a text", lambda e, o: e.write_text('"a report"')),
    ("not JSON", lambda e, o: e.write_bytes(b"\x00\xff not json")),
    ("empty", lambda e, o: e.write_text("")),
    ("a report that is a list", edited(lambda h: h.update(report=[1]))),
    ("its digest removed", edited(lambda h: h.pop("digest"))),
    ("another format", edited(lambda h: h.update(format="llm-mesa-analysis-1"))),
    ("another sweep's entry under this name", lambda e, o: shutil.copyfile(o, e)),
    ("a folder in its place", lambda e, o: (e.unlink(), e.mkdir())),
]


@pytest.mark.parametrize("damage", [d for _, d in DAMAGE], ids=[i for i, _ in DAMAGE])
def test_a_cache_entry_that_does_not_prove_itself_is_computed_again(damage, sweep, analyses, capsys, tmp_path):
    truth = analyze(capsys, sweep)
    assert len(analyses) == 1 and truth["games"] == 6
    other = tmp_path / "other"
    run_sweep({"a": {"n": 8, "max_rounds": 5}}, "coin", 4, other, game="tinyvote")
    analyze(capsys, other)
    entry = entry_of(sweep)
    damage(entry, entry_of(other))
    assert analyze(capsys, sweep) == truth  # computed again, never the entry's numbers
    assert len(analyses) == 3
    if entry.is_file():
        assert analyze(capsys, sweep) == truth and len(analyses) == 3  # the entry written in its place proves itself


def test_an_intact_entry_is_read_and_computes_nothing(sweep, analyses, capsys):
    truth = analyze(capsys, sweep)
    entry = entry_of(sweep)
    entry.write_text(json.dumps(json.loads(entry.read_text()), indent=4))  # the same content, other spacing
    assert analyze(capsys, sweep) == truth and len(analyses) == 1


# -- manifests carry the digest of their content ------------------------------------------------------

#: (id, an edit of the sweep's manifest, refused?)
MANIFEST_EDITS = [
    ("a seed added to the grid", lambda m: m["grid"]["seeds"].append(99), True),
    ("the game renamed", lambda m: m.update(game="consensus"), True),
    ("a date changed", lambda m: m.update(created="2000-01-01T00:00:00+00:00"), True),
    ("its digest false", lambda m: m.update(digest="0" * 64), True),
    ("only its spacing", lambda m: None, False),
    ("its digest removed (a manifest of before)", lambda m: m.pop("digest"), False),
]


@pytest.mark.parametrize("edit, refused", [r[1:] for r in MANIFEST_EDITS], ids=[r[0] for r in MANIFEST_EDITS])
def test_a_sweep_manifest_edited_since_it_was_written_is_refused_in_one_line(edit, refused, sweep, capsys):
    path = sweep / "manifest.json"
    manifest = json.loads(path.read_text())
    edit(manifest)
    path.write_text(json.dumps(manifest, indent=1))
    for argv in (["analyze", str(sweep)], ["sweep", "--game", "tinyvote", "--policies", "coin", "--seeds", 6,
                                           "--set", "n=8", "--set", "max_rounds=5", "--quiet", "--out", str(sweep)]):
        status = main([str(a) for a in argv])
        err = capsys.readouterr().err
        if refused:
            assert status == 2 and len(err.strip().splitlines()) == 1 and "does not hold what was written" in err, err
        else:
            assert status == 0 or "does not hold" not in err, err


#: (id, the file of a run directory edited, how)
RUN_EDITS = [
    ("its manifest's seed", "manifest.json", lambda d: d.update(seed=7)),
    ("its summary's result", "summary.json", lambda d: d.update(share_a=0.123)),
]


@pytest.mark.parametrize("name, edit", [r[1:] for r in RUN_EDITS], ids=[r[0] for r in RUN_EDITS])
def test_a_run_whose_manifest_or_summary_was_edited_is_refused_by_the_replay(name, edit, tmp_path, capsys):
    from llm_mesa.registry import get_game
    from llm_mesa.views import view_of
    from llm_mesa.views.runs import ReplayError, open_run

    run = tmp_path / "run"
    assert main(["tinyvote", "--n", "8", "--max-rounds", "4", "--out", str(run)]) == 0
    view = view_of(get_game("tinyvote"))
    assert open_run(view, run) is not None  # as written: it replays
    file = run / name
    data = json.loads(file.read_text())
    edit(data)
    file.write_text(json.dumps(data, indent=2))
    with pytest.raises(ReplayError, match="edited or damaged"):
        open_run(view, run)


# -- a compaction journal is obeyed only inside its sweep -------------------------------------------

def test_a_compaction_journal_naming_files_outside_its_sweep_deletes_nothing(sweep, tmp_path):
    from llm_mesa.sweep.output import SweepOutput
    from llm_mesa.sweep.parts import JOURNAL

    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    inside = next(sweep.rglob("*.parquet"))
    output = SweepOutput(sweep)
    (output.root / JOURNAL).write_text(json.dumps({"complete": True, "targets": [str(inside)],
                                                   "replaced": [str(precious), str(inside)]}))
    output.recover()
    assert precious.read_text() == "keep me" and inside.exists()  # not obeyed: it names a file outside
    assert not (output.root / JOURNAL).exists()
    assert len(output.read("games")) == 6  # and the sweep reads whole
