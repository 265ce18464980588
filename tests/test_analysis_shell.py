"""The `llm-mesa analyze` shell knows no game: it asks the sweep's game, found through the registry."""

from __future__ import annotations

import json

import pytest

from llm_mesa import registry
from llm_mesa.analysis.cli import AnalysisError, analyze
from llm_mesa.cli import main
from llm_mesa.games import Game
from llm_mesa.sweep import run_sweep


@pytest.fixture(scope="module")
def consensus_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("shell") / "sweep"
    run_sweep({"ws": {"n": 12, "topology": "ws"}, "cc": {"n": 12, "topology": "caveman"}}, "voter", 2, out,
              model_options={"max_rounds": 10, "baseline_permutations": 10}, game="consensus")
    return out


def _set_game(sweep, game):
    """The sweep's manifest, saying ``game`` (None: no "game" key, as sweeps written before games were plugins,
    and before manifests carried their digest); one naming a game is sealed as a sweep of that game would be."""
    from llm_mesa.boundary import seal

    path = sweep / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest.pop("game", None)
    manifest.pop("digest", None)
    if game is not None:
        manifest = seal({**manifest, "game": game})
    path.write_text(json.dumps(manifest))


def test_a_sweep_whose_manifest_names_no_game_is_refused_in_one_line(consensus_dir, capsys):
    assert json.loads((consensus_dir / "manifest.json").read_text())["game"] == "consensus"
    _set_game(consensus_dir, None)
    try:
        assert main(["analyze", str(consensus_dir), "--json"]) == 2
        err = capsys.readouterr().err
        assert "names no game" in err and len(err.strip().splitlines()) == 1
    finally:
        _set_game(consensus_dir, "consensus")


def test_an_unknown_game_is_one_line_and_exit_2(consensus_dir, capsys):
    _set_game(consensus_dir, "chess")
    try:
        assert main(["analyze", str(consensus_dir)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("llm-mesa analyze: error: unknown game 'chess'") and len(err.strip().splitlines()) == 1
    finally:
        _set_game(consensus_dir, "consensus")


def test_a_game_without_analysis_gets_the_generic_report(consensus_dir, capsys, monkeypatch):
    """Per condition and model, every numeric column summarised and every boolean one as a Wilson share."""
    from llm_mesa.analysis.proportions import wilson_interval
    from llm_mesa.sweep import read_sweep

    class Plain(Game):
        name = "plain"

        def build(self, parameters, policy, seed):
            raise AssertionError("analysis never builds a game")

    real = registry.get_game
    monkeypatch.setattr(registry, "get_game", lambda name: Plain() if name == "plain" else real(name))
    _set_game(consensus_dir, "plain")
    try:
        assert main(["analyze", str(consensus_dir), "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert main(["analyze", str(consensus_dir)]) == 0
        text = capsys.readouterr().out
    finally:
        _set_game(consensus_dir, "consensus")
    games = read_sweep(consensus_dir)
    s = report["summaries"]
    assert "consensus" in s["boolean"] and "rounds" in s["numeric"] and "seed" not in s["numeric"]
    for condition in ("ws", "cc"):
        mine = games[games.condition == condition]
        share = next(r for r in s["rows"] if r["measure"] == "consensus" and r["condition"] == condition)
        k = int(mine["consensus"].sum())
        assert share["true"] == k and share["n"] == len(mine) == 2
        assert (share["low"], share["high"]) == pytest.approx(wilson_interval(k, 2))
        rounds = next(r for r in s["rows"] if r["measure"] == "rounds" and r["condition"] == condition)
        assert rounds["mean"] == pytest.approx(mine["rounds"].mean()) and rounds["max"] == mine["rounds"].max()
    assert "consensus:" in text and "rounds:" in text


def test_the_python_api_takes_the_games_options_as_keywords(consensus_dir):
    report = analyze(consensus_dir, formula="consensus ~ C(topology)", keep_invalid=True)
    assert report["game"] == "consensus" and report["firth"]["formula"] == "consensus ~ C(topology)"
    with pytest.raises(AnalysisError, match="unknown option.*formual"):
        analyze(consensus_dir, formual="consensus ~ C(topology)")


def test_help_lists_each_games_options_under_its_name(capsys):
    with pytest.raises(SystemExit):
        main(["analyze", "--help"])
    text = capsys.readouterr().out
    assert "consensus sweeps:" in text and "--max-transitions" in text.split("consensus sweeps:")[1]


def test_a_sweep_without_games_is_bad_input(tmp_path, capsys):
    out = tmp_path / "empty"
    out.mkdir()
    (out / "manifest.json").write_text(json.dumps({"kind": "consensus-sweep", "game": "consensus"}))
    assert main(["analyze", str(out)]) == 2
    assert "holds no finished game" in capsys.readouterr().err
