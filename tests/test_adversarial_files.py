"""Every file and folder a command reads, as an adversary or an unlucky disk would leave it: one line, exit 2.

One row per hostile input: ``make(tmp)`` lays the file out in a fresh folder and returns the
arguments; the command must print one line holding the fragment, exit 2, print no
traceback, and write nothing beyond what the row made.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from llm_mesa.cli import main

DEEP = "[" * 200_000 + "]" * 200_000


def manifest(tmp: Path, text: str | bytes, name: str = "sweep") -> Path:
    out = tmp / name
    (out / "games").mkdir(parents=True)
    data = text.encode() if isinstance(text, str) else text
    (out / "manifest.json").write_bytes(data)
    return out


def experiment(tmp: Path, text: str | bytes) -> Path:
    path = tmp / "study.toml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def with_llm(table: str) -> str:
    return ('game = "consensus"\nrepetitions = 1\nconditions = ["ba-local"]\npolicies = ["llm"]\n[llm]\n'
            'base_url = "http://127.0.0.1:9/v1"\nmodel = "m"\n' + table + "\n")


SWEEP = ["sweep", "--game", "consensus", "--conditions", "ws-none", "--policies", "voter", "--seeds", "1",
         "--set", "max_rounds=2", "--quiet", "--out"]

ROWS = [
    ("sweep: manifest nested 200,000 deep", lambda t: [*SWEEP, str(manifest(t, DEEP))], "nested deeper than 64"),
    ("sweep: manifest not UTF-8", lambda t: [*SWEEP, str(manifest(t, b'{"kind": "\xff"}'))], "not valid UTF-8"),
    ("sweep: manifest a list", lambda t: [*SWEEP, str(manifest(t, "[]"))], "holds a JSON list, not an object"),
    ("sweep: manifest grid a list", lambda t: [*SWEEP, str(manifest(t, json.dumps(
        {"kind": "consensus-sweep", "game": "consensus", "grid": []})))], "'grid' is not an object"),
    ("analyze: manifest nested 200,000 deep", lambda t: ["analyze", str(manifest(t, DEEP))], "nested deeper than 64"),
    ("analyze: manifest = []", lambda t: ["analyze", str(manifest(t, "[]"))], "not an object"),
    ("analyze: grid of the wrong shape", lambda t: ["analyze", str(manifest(t, json.dumps(
        {"kind": "consensus-sweep", "game": "consensus", "grid": {"conditions": [1], "policies": {}}})))],
     "its grid's 'conditions' is not an object"),
    ("analyze: seeds not numbers", lambda t: ["analyze", str(manifest(t, json.dumps(
        {"kind": "consensus-sweep", "game": "consensus", "grid": {"conditions": {}, "policies": {}, "seeds": ["x"]}})))],
     "'seeds' are not whole numbers"),
    ("report: manifest nested", lambda t: ["report", str(manifest(t, DEEP)), "--out", str(t / "r.html")],
     "nested deeper than 64"),
    ("toml nested 200,000 deep", lambda t: ["sweep", str(experiment(t, "x = " + DEEP)), "--dry-run"],
     "nested deeper than 64"),
    ("toml of 2 MB", lambda t: ["sweep", str(experiment(t, "# " + "x" * 2_000_000)), "--dry-run"],
     "too large for an experiment file"),
    ("toml not UTF-8", lambda t: ["sweep", str(experiment(t, b'game = "\xff"')), "--dry-run"], "not valid UTF-8"),
    ("[llm] timeout 1e300", lambda t: ["sweep", str(experiment(t, with_llm("timeout = 1e300"))), "--dry-run"],
     "[llm]: timeout 1e+300 s is above the limit"),
    ("[llm] ftp URL", lambda t: ["sweep", str(experiment(t, with_llm('base_url = "ftp://x/v1"').replace(
        'base_url = "http://127.0.0.1:9/v1"\n', ""))), "--dry-run"], "is not an http(s) URL"),
    ("[llm] a key for a variable", lambda t: ["sweep", str(experiment(t, with_llm('api_key_env = "sk-live-abc"'))),
                                              "--dry-run"], "must be the NAME of an environment variable"),
    ("[llm] price of one number", lambda t: ["sweep", str(experiment(t, with_llm("price = [1]"))), "--dry-run"],
     "needs the form PROMPT,COMPLETION"),
    ("[llm] extra body not JSON", lambda t: ["sweep", str(experiment(t, with_llm('extra_body = "{bad"'))),
                                             "--dry-run"], "is not valid JSON"),
    ("[llm] concurrency 0", lambda t: ["sweep", str(experiment(t, with_llm("concurrency = 0"))), "--dry-run"],
     "concurrency must be auto or a positive whole number, got 0"),
    ("[llm] concurrency a float", lambda t: ["sweep", str(experiment(t, with_llm("concurrency = 1e300"))),
                                             "--dry-run"], "concurrency must be auto or a positive whole number, got 1e+300"),
    ("[llm] max_attempts 10**9", lambda t: ["sweep", str(experiment(t, with_llm("max_attempts = 1000000000"))),
                                            "--dry-run"], "above the limit of 100"),
    ("[llm] answer bytes 10", lambda t: ["sweep", str(experiment(t, with_llm("max_answer_bytes = 10"))),
                                         "--dry-run"], "max_answer_bytes must be a whole number of bytes"),
    ("[llm] temperature a word", lambda t: ["sweep", str(experiment(t, with_llm('temperature = "hot"'))),
                                            "--dry-run"], "temperature = 'hot' in [llm] must be a number"),
    ("[llm] unknown dialect", lambda t: ["sweep", str(experiment(t, with_llm('dialect = "xml"'))), "--dry-run"],
     "unknown dialect 'xml'"),
    ("[llm] unknown key", lambda t: ["sweep", str(experiment(t, with_llm("frob = 1"))), "--dry-run"],
     "unknown key 'frob' in [llm]"),
    ("[execution] processes 1e300", lambda t: ["sweep", str(experiment(
        t, with_llm("[execution]\nprocesses = 1e300"))), "--dry-run"], "processes must be a whole number from 1 to 4,096"),
    ("[execution] batch size 1e300", lambda t: ["sweep", str(experiment(
        t, with_llm("[execution]\nbatch_size = 1e300"))), "--dry-run"], "batch size must be a whole number from 1 to"),
    ("--repetitions 10**9", lambda t: ["sweep", str(experiment(t, with_llm(""))), "--repetitions", "1000000000",
                                       "--dry-run"], "--repetitions must be a whole number from 1 to 1,000,000"),
    ("66 M games played", lambda t: ["sweep", str(experiment(t, with_llm("").replace(
        "repetitions = 1", "repetitions = 1000000").replace('["ba-local"]', '"study"') + "[axes]\nn = [12, 24, 36, 48, 60, 72]")),
        "--out", str(t / "big")], "above the limit of 2,000,000 games a sweep"),
    ("120,000 conditions", lambda t: ["sweep", "--game", "consensus", "--set", "n=" + ",".join(map(str, range(4, 404))),
                                      "--set", "max_rounds=" + ",".join(map(str, range(1, 301))), "--dry-run"],
     "above the limit of 100,000"),
    ("--latency nan", lambda t: ["sweep", "--game", "consensus", "--dry-run", "--latency", "nan"],
     "must be a finite number of seconds > 0"),
    ("--timeout a week", lambda t: ["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                                    "--timeout", "604800"], "above the limit of 86400 s"),
    ("--max-answer-bytes 0", lambda t: ["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1",
                                        "--model", "m", "--max-answer-bytes", "0"], "max_answer_bytes must be"),
    ("--record under a file", lambda t: ["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1",
                                         "--model", "m", "--record", str(experiment(t, "x") / "calls.sqlite")],
     "is not a folder"),
    ("--replay of a file that is not a store", lambda t: ["consensus", "--policy", "llm", "--base-url",
                                                          "http://127.0.0.1:9/v1", "--model", "m", "--replay",
                                                          str(experiment(t, "not sqlite " * 100))],
     "is not a readable response store"),
]


def snapshot(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_size for p in folder.rglob("*")}


def run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    try:
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            status = main(argv)
    except SystemExit as exc:
        status = exc.code
    return status, err.getvalue()


def test_the_table_walks_every_reader(tmp_path):
    commands = {make(tmp_path / str(i))[0] for i, (_, make, _) in enumerate(ROWS) if (tmp_path / str(i)).mkdir() or 1}
    assert len(ROWS) >= 30 and commands == {"sweep", "analyze", "report", "consensus"}


@pytest.mark.parametrize("name, make, fragment", ROWS, ids=[row[0] for row in ROWS])
def test_a_hostile_file_is_one_line_exit_2_and_nothing_written(name, make, fragment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = make(tmp_path)
    before = snapshot(tmp_path)
    status, err = run(argv)
    lines = err.strip().splitlines()
    assert status == 2 and "Traceback" not in err, err[-800:]
    assert len(lines) == 1 and fragment in lines[0], err[-800:]
    assert snapshot(tmp_path) == before


def test_a_read_only_store_folder_is_named_as_such(tmp_path, monkeypatch):
    """As root every folder is writable, so the refusal the kernel would give is played by the probe folder's
    creation (``llm_mesa.files.new_folder``)."""
    import llm_mesa.llm.store_file as store

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(store, "new_folder", refuse)
    status, err = run(["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                       "--record", str(tmp_path / "calls.sqlite")])
    assert status == 2 and "its folder is not writable (Permission denied)" in err and "damaged" not in err, err
    assert "--record FILE" in err and list(tmp_path.iterdir()) == []


# -- recorded calls, parts and rows that are not what they should be -----------------------------------


def record_game(tmp_path: Path) -> tuple[list[str], Path]:
    from llm_mesa.loopback.server import LoopbackServer

    store = tmp_path / "calls.sqlite"
    with LoopbackServer() as server:
        game = ["consensus", "--policy", "llm", "--base-url", server.base_url, "--model", "rule:majority-inertia",
                "--n", "8", "--topology", "caveman", "--max-rounds", "1", "--json"]
        assert run([*game, "--record", str(store)])[0] == 0
    return game, store


@pytest.mark.parametrize("damage", [
    b"D" + bytes(range(40)),                                   # a dictionary tag, then noise
    b"x\x9c" + bytes(range(30)),                                # zlib's header, then noise
    "caf\udcff".encode("utf-8", "surrogateescape"),             # text that is not UTF-8
    '{"text": 5, "prompt_tokens": -3}',                         # an old JSON row of the wrong types
    "[" * 100_000 + "]" * 100_000,                              # an old JSON row nested deep
], ids=["noise", "zlib noise", "not UTF-8", "wrong types", "nested"])
def test_a_damaged_store_row_is_one_line_and_replay_fill_replaces_it(tmp_path, damage):
    import sqlite3

    from llm_mesa.loopback.server import LoopbackServer

    game, store = record_game(tmp_path)
    with sqlite3.connect(store) as conn:
        if damage == "caf\udcff".encode("utf-8", "surrogateescape"):
            conn.execute("UPDATE calls SET response = CAST(? AS TEXT)", (damage,))
        else:
            conn.execute("UPDATE calls SET response = ?", (damage,))
    status, err = run([*game, "--replay", str(store)])
    assert status == 2 and len(err.strip().splitlines()) == 1 and "is damaged" in err and "--replay-fill" in err, err
    with LoopbackServer() as server:  # following the advice: the damaged answers are called for again
        fill = [*game[:4], server.base_url, *game[5:]]
        assert run([*fill, "--replay", str(store), "--replay-fill"])[0] == 0
        assert server.stats()["answered"] >= 8
    assert run([*game, "--replay", str(store)])[0] == 0  # and the store replays whole again


def small_sweep(tmp_path: Path, game: str, name: str, *extra: str) -> Path:
    out = tmp_path / name
    argv = {"consensus": ["sweep", "--game", "consensus", "--conditions", "ws-none", "--policies", "voter",
                          "--set", "max_rounds=2", "--set", "baseline_permutations=0"],
            "naming": ["sweep", "--game", "naming", "--set", "speaker=echo", "--set", "max_rounds=3", "--set", "n=4"]}[game]
    assert run([*argv, "--seeds", "3", "--quiet", "--out", str(out), *extra])[0] == 0
    return out


@pytest.mark.parametrize("command", ["analyze", "report"])
def test_another_game_s_rows_copied_into_a_sweep_are_refused_not_counted(tmp_path, command):
    consensus = small_sweep(tmp_path, "consensus", "consensus")
    naming = small_sweep(tmp_path, "naming", "naming")
    for part in (naming / "games").glob("*.parquet"):
        shutil.copy(part, consensus / "games" / f"part-foreign-{part.name}")
    argv = [command, str(consensus)] + (["--out", str(tmp_path / "r.html")] if command == "report" else [])
    status, err = run(argv)
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert "15 of its 18 game rows are not games of its grid" in err and "consensus sweep" in err, err
    assert not (tmp_path / "r.html").exists()


def test_the_advice_for_a_damaged_part_loses_no_game_when_followed(tmp_path):
    from llm_mesa.sweep import read_sweep

    out = small_sweep(tmp_path, "consensus", "sweep", "--tables", "agents")
    complete = read_sweep(out, "agents")
    games = read_sweep(out)
    damaged = sorted((out / "agents").glob("*.parquet"))[0]  # compacted: one part holds every game's agents
    damaged.write_bytes(b"PAR1 not parquet at all")
    status, err = run(["analyze", str(out)])
    assert status == 2 and "mkdir -p" in err, err
    advice = err.split("`")[1]  # the shell command the line gives
    subprocess.run(["bash", "-c", advice], check=True)
    small_sweep(tmp_path, "consensus", "sweep", "--tables", "agents")  # rerun the same command
    again = read_sweep(out, "agents")
    assert len(again) == len(complete) and len(read_sweep(out)) == len(games)
    assert set(zip(again["seed"], again["node"], again["round"])) == \
        set(zip(complete["seed"], complete["node"], complete["round"]))
