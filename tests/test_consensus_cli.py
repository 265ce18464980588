"""The llm-mesa consensus command, run as a user would."""

import json
import subprocess
import sys

import pandas as pd
import pytest


def cli(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "llm_mesa.cli", "consensus", *args],
                          capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_json_output_has_the_documented_keys():
    out = json.loads(cli("--topology", "er", "--seed", "1", "--json").stdout)
    for key, kind in [("consensus", bool), ("rounds", int), ("largest_component", int),
                      ("stubborn_moves", int), ("stubbornness", float), ("pseudo_equilibrium", bool),
                      ("seed", int)]:
        assert isinstance(out[key], kind), key
    assert out["winner"] in ("red", "blue", None)
    assert out["largest_component_colour"] in ("red", "blue")
    assert out["seed"] == 1


def test_same_seed_same_json():
    a = cli("--topology", "ws", "--seed", "5", "--json", "--policy", "voter").stdout
    b = cli("--topology", "ws", "--seed", "5", "--json", "--policy", "voter").stdout
    def untimed(text):  # timing fields end in _s: the same game, not the same clock
        return {k: v for k, v in json.loads(text).items() if not k.endswith("_s")}

    assert untimed(a) == untimed(b) and "wall_s" in json.loads(a)


def test_readable_summary():
    out = cli("--topology", "caveman", "--seed", "2").stdout
    assert "caveman graph, 36 agents" in out and "stubbornness" in out


def test_out_writes_tables_and_manifest(tmp_path):
    out = tmp_path / "run"
    cli("--topology", "ba", "--seed", "3", "--assign", "hubs:5=stubborn", "--preferences", "minority",
        "--out", str(out))
    rounds = pd.read_parquet(out / "rounds.parquet")
    agents = pd.read_parquet(out / "agents.parquet")
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(agents) == 36 * len(rounds)
    assert manifest["parameters"]["seed"] == 3 and manifest["parameters"]["assign"] == {"hubs:5": "stubborn"}
    assert "mesa" in manifest["versions"]


@pytest.mark.parametrize("args, words", [
    (["--topology", "hexagon"], "unknown topology"),
    (["--topology", "caveman", "--n", "30"], "multiple"),
    (["--preferences", "minority", "--minority", "40"], "impossible"),
    (["--policy", "oracle"], "unknown consensus policy"),
    (["--graph", "/no/such/file.graphml"], "cannot read graph file"),
    (["--assign", "hubs:5"], "SELECTOR=POLICY"),
])
def test_bad_input_one_line_exit_2_nothing_written(tmp_path, args, words):
    out = tmp_path / "never"
    proc = cli(*args, "--out", str(out), check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0]
    assert not out.exists()


def test_graph_file_edge_list(tmp_path):
    path = tmp_path / "g.edges"
    path.write_text("a b\nb c\nc a\nc d\n")
    out = json.loads(cli("--graph", str(path), "--json", "--policy", "majority-inertia:inertia=0").stdout)
    assert out["rounds"] >= 1


def test_help_documents_every_option():
    text = cli("--help").stdout
    for option in ["--topology", "--n", "--policy", "--assign", "--comm", "--label", "--seed", "--json", "--out"]:
        assert option in text


def test_out_creates_missing_parent_folders(tmp_path):
    out = tmp_path / "runs" / "deep" / "g1"
    cli("--topology", "ba", "--seed", "2", "--out", str(out))
    assert (out / "manifest.json").exists()
