"""`llm-mesa report` reuses what `llm-mesa analyze` computed, through a cache addressed by the sweeps' content."""

from __future__ import annotations

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
    """Counts the times the game's statistics are computed (the generic analysis of the tiny game)."""
    from llm_mesa.analysis import game_analysis

    calls = []
    original = game_analysis.analyze

    def counted(game, sweep, options):
        calls.append(sweep.name)
        return original(game, sweep, options)

    monkeypatch.setattr(game_analysis, "analyze", counted)
    return calls


def test_a_report_after_an_analysis_computes_nothing_again(sweep, analyses, tmp_path, capsys):
    assert main(["analyze", str(sweep), "--json"]) == 0
    assert len(analyses) == 1 and list(cache_folder(sweep).glob("*.json"))
    assert main(["report", str(sweep), "--out", str(tmp_path / "r.html")]) == 0
    assert main(["analyze", str(sweep)]) == 0
    assert len(analyses) == 1  # the report and the second analysis read the cache
    assert main(["report", str(sweep), "--out", str(tmp_path / "r2.html"), "--no-cache"]) == 0
    assert len(analyses) == 2


def test_any_change_to_the_sweeps_data_is_another_key(sweep, analyses, capsys):
    import json

    assert main(["analyze", str(sweep), "--json"]) == 0
    before = json.loads(capsys.readouterr().out)
    run_sweep({"a": {"n": 8, "max_rounds": 5}}, "coin", 9, sweep, game="tinyvote", extend=True)  # more games
    assert main(["analyze", str(sweep), "--json"]) == 0
    after = json.loads(capsys.readouterr().out)
    assert len(analyses) == 2 and after["games"] == 9 and before["games"] == 6
    part = next(p for p in sorted(sweep.rglob("*.parquet")) if "games" in p.parts)
    part.write_bytes(part.read_bytes())  # the same bytes: the same key
    assert main(["analyze", str(sweep)]) == 0 and len(analyses) == 2
    manifest = sweep / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"game"', '"game" ', 1))  # one byte more: another key
    assert main(["analyze", str(sweep)]) == 0 and len(analyses) == 3


def test_a_change_to_what_the_game_declares_its_measures_to_be_is_another_key(sweep, analyses, monkeypatch):
    """The generic report draws a column by its declared type: a game that declares it anew is analysed anew."""
    from llm_mesa import count
    from llm_mesa.registry import get_game

    assert main(["analyze", str(sweep)]) == 0 and len(analyses) == 1
    assert main(["analyze", str(sweep)]) == 0 and len(analyses) == 1  # nothing changed: read back
    game = get_game("tinyvote")
    monkeypatch.setattr(type(game), "measures", {**game.measures, "rounds": count(label="rounds played")})
    assert main(["analyze", str(sweep)]) == 0 and len(analyses) == 2
