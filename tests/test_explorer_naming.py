"""The naming game's view: a thin layer over NamingModel that draws what it measures."""

from __future__ import annotations

from collections import Counter

import pytest

from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.models.naming.model import NamingModel
from llm_mesa.models.naming.observation import OUTCOMES
from llm_mesa.models.naming.view import AGREEMENT_SERIES, CountedNamingModel
from llm_mesa.registry import get_game
from llm_mesa.views import view_of
from llm_mesa.views.controls import ControlError, initial_values

VIEW = view_of(get_game("naming"))


def defaults(**changes):
    return {**initial_values(VIEW.controls()), **changes}


def test_the_page_plays_the_very_game_of_the_model():
    """Same controls and seed: the page's rounds are NamingModel's rounds."""
    page = VIEW.build_from(defaults(mode="nl-sw", memory=5, alpha=0.75, speaker="noisy:p=0.3", seed=4, max_rounds=25))
    plain = NamingModel(n=12, mode="nl-sw", memory=5, alpha=0.75, speaker="noisy:p=0.3", max_rounds=25, rng=4)
    assert [a.name for a in page.players] == [a.name for a in plain.players]
    while page.running:
        page.step()
    plain.run()
    assert page.rounds_frame().equals(plain.rounds_frame())
    assert VIEW.round_number(page) == 25 and VIEW.round_label(page) == "Round 25 of 25"


def test_names_in_use_count_every_agent_every_round():
    model = CountedNamingModel(n=10, speaker="echo", rng=2, max_rounds=15)
    for _ in range(15):
        model.step()
    rounds = VIEW.rounds(model)
    held = rounds[[c for c in rounds.columns if c.startswith("holds_")]]
    assert list(rounds["round"]) == list(range(16)) and (held.sum(axis=1) == 10).all()
    assert {c.removeprefix("holds_"): int(v) for c, v in held.iloc[-1].items() if v} == dict(Counter(a.name for a in model.players))
    # the most held name is the model's own held share, every round (round 0: the start)
    assert (held.max(axis=1) / 10).round(9).tolist() == rounds["held_share"].round(9).tolist()


def test_agreement_and_outcome_charts_carry_the_models_columns():
    model = CountedNamingModel(n=12, speaker="noisy:p=0.5", rng=5, max_rounds=20)
    for _ in range(20):
        model.step()
    frame = model.rounds_frame()
    charts = dict(VIEW.charts(VIEW.rounds(model)))
    lines = charts["llm-mesa-naming-agreement"]["data"]["values"]
    for column, series in AGREEMENT_SERIES.items():
        values = [r["value"] for r in sorted(lines, key=lambda r: r["round"]) if r["series"] == series and r["round"] > 0]
        assert values == pytest.approx(list(frame[column].astype(float)))
    outcomes = charts["llm-mesa-naming-outcomes"]["data"]["values"]
    per_round = Counter()
    for row in outcomes:
        per_round[row["round"]] += row["value"]
    assert set(per_round.values()) == {12} and len(per_round) == 20
    seen = {r["outcome"] for r in outcomes if r["value"] > 0}
    assert "schema" in seen and seen & {"retry", "salvage", "none"}  # p=0.5 breaks some replies
    assert charts["llm-mesa-naming-outcomes"]["layer"][0]["encoding"]["color"]["scale"]["domain"] == list(OUTCOMES)
    assert charts["llm-mesa-naming-names"]["layer"][0]["encoding"]["color"]["scale"]["domain"] == [f"C{k}" for k in range(1, 13)]


def test_the_agreement_chart_draws_at_round_zero():
    model = VIEW.build_from(defaults(n=8))
    charts = dict(VIEW.charts(VIEW.snapshot(model).rounds))
    agreement = charts["llm-mesa-naming-agreement"]
    assert agreement["title"]["text"] == "Population agreement per round"
    assert agreement["layer"][1]["encoding"]["x"]["scale"]["domain"] == [0, 1]
    assert [r["series"] for r in agreement["data"]["values"]] == ["holding the most common name"]
    assert VIEW.snapshot(model).banners[0].text == "Press Step or Play to run rounds."


@pytest.mark.parametrize(("changes", "control"), [
    ({"speaker": "llm", "llm_model": " "}, "llm_model"),
    ({"speaker": "llm", "llm_endpoint": "ftp://x"}, "llm_endpoint"),
    ({"mode": "nl-sw", "memory": 0}, "memory"),
    ({"n": 50}, "n"),
])
def test_the_naming_page_names_the_control_at_fault(changes, control):
    with pytest.raises(ControlError) as caught:
        VIEW.build_from(defaults(**changes))
    assert caught.value.control == control


def test_nl_has_no_memory():
    assert VIEW.build_from(defaults(mode="nl", memory=5)).memory_size == 0


def test_llm_speakers_over_loopback_http_fill_the_outcome_chart_and_the_agent_panel():
    with LoopbackServer(seed=7) as server:
        model = VIEW.build_from(defaults(n=8, speaker="llm", llm_endpoint=server.base_url,
                                         llm_model="naming:noisy?p=0.5", seed=3, max_rounds=10))
        for _ in range(4):
            model.step()
        requests = server.stats()["requests"]
    assert model.totals.calls > 4 * 8  # one per utterance, plus the reminders
    assert requests == model.totals.calls + 1  # and the page asked the endpoint once before the game
    snapshot = VIEW.snapshot(model, selected=2)
    said = f"decision in round {snapshot.round_number} · "
    assert snapshot.agent[said + "reply"] != "-" and snapshot.agent[said + "decoded by"] in OUTCOMES
    assert len(snapshot.messages) == 8 and snapshot.messages_title == "Utterances"
    assert any(b.tag == "llm-mesa-llm-totals" for b in snapshot.banners)


def test_a_naming_run_directory_replays_as_it_was_played(tmp_path):
    """The game's own ``--out`` run (its rounds, its speakers in the manifest), played again and checked round by round."""
    from llm_mesa.cli import main

    out = tmp_path / "run"
    assert main(["naming", "--rounds", "15", "--speaker", "noisy:p=0.3", "--seed", "6", "--out", str(out)]) == 0
    recording = VIEW.recording(out)
    assert recording.note == "" and (recording.first_round, recording.last_round) == (0, 15)
    snapshot = recording.snapshot(15)
    assert snapshot.label == "Round 15 of 15" and snapshot.picture is None
    charts = dict(VIEW.charts(recording.rounds, current_round=15, last_round=15))
    names = charts["llm-mesa-naming-names"]["data"]["values"]
    assert sum(r["value"] for r in names if r["round"] == 15) == 12  # every agent holds a name
