"""The naming-game explorer's data: a thin layer over NamingModel that draws what it measures."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest

from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.models.naming.model import NamingModel
from llm_mesa.models.naming.observation import OUTCOMES, NamingConfigError
from llm_mesa.visualization import naming_app
from llm_mesa.visualization.naming_app import ExplorerNamingModel


def test_the_explorer_plays_the_very_game_of_the_model():
    """Same controls and seed: the explorer's rounds are NamingModel's rounds."""
    explorer = ExplorerNamingModel(n=12, mode="nl-sw", memory=5, alpha=0.75, speaker="noisy:p=0.3", seed=4,
                                   rounds=25)
    plain = NamingModel(n=12, mode="nl-sw", memory=5, alpha=0.75, speaker="noisy:p=0.3", max_rounds=25, rng=4)
    explorer_initial = [a.name for a in explorer.players]
    assert explorer_initial == [a.name for a in plain.players]
    while explorer.running:
        explorer.step()
    plain.run()
    pd.testing.assert_frame_equal(explorer.rounds_frame(), plain.rounds_frame())
    assert explorer.steps == 25 and len(explorer.names_held) == 26  # round 0, then one per round
    assert explorer.names_held[0] == Counter(explorer_initial)


def test_names_in_use_count_every_agent_every_round():
    model = ExplorerNamingModel(n=10, speaker="echo", seed=2, rounds=15)
    for _ in range(15):
        model.step()
    names = naming_app.names_frame(model)
    per_round = names.groupby("round")["agents"].sum()
    assert list(per_round.index) == list(range(16)) and (per_round == 10).all()
    final = names[names["round"] == 15].set_index("name")["agents"].to_dict()
    assert final == dict(Counter(a.name for a in model.players))
    # the most held name in the table is the model's own top_held, at every round
    frame = model.rounds_frame()
    for r in range(1, 16):
        counts = names[names["round"] == r].set_index("name")["agents"]
        assert counts.max() / model.n == pytest.approx(frame.loc[frame["round"] == r, "held_share"].item())


def test_agreement_and_outcome_series_are_the_models_columns():
    model = ExplorerNamingModel(n=12, speaker="noisy:p=0.5", seed=5, rounds=20)
    for _ in range(20):
        model.step()
    frame = model.rounds_frame()
    agreement = naming_app.agreement_frame(model)
    for column, series in naming_app.AGREEMENT_SERIES.items():
        values = agreement[agreement["series"] == series].sort_values("round")["value"].to_numpy()
        assert list(values) == list(frame[column].astype(float))
    outcomes = naming_app.outcomes_frame(model)
    per_round = outcomes.groupby("round")["utterances"].sum()
    assert (per_round.to_numpy() == frame["utterances"].to_numpy()).all() and (per_round == 12).all()
    seen = set(outcomes.loc[outcomes["utterances"] > 0, "outcome"])
    assert "schema" in seen and seen & {"retry", "salvage", "none"}  # p=0.5 breaks some replies
    assert set(outcomes["outcome"]) == set(OUTCOMES)


def test_charts_carry_titles_and_legends():
    model = ExplorerNamingModel(n=8, speaker="echo", seed=1, rounds=5)
    empty = naming_app.agreement_chart(model).to_dict()  # before the first round: an empty plot, no error
    assert empty["title"]["text"] == "Population agreement per round"
    model.step()
    names = naming_app.names_chart(model).to_dict()
    assert names["encoding"]["color"]["title"] == "name"
    assert names["encoding"]["color"]["scale"]["domain"] == [f"C{k}" for k in range(1, 13)]
    outcomes = naming_app.outcomes_chart(model).to_dict()
    assert outcomes["encoding"]["color"]["scale"]["domain"] == list(OUTCOMES)


def test_nl_has_no_memory_and_nl_sw_without_memory_is_refused():
    assert ExplorerNamingModel(mode="nl", memory=5).memory_size == 0
    with pytest.raises(NamingConfigError, match="nl-sw needs a memory window"):
        ExplorerNamingModel(mode="nl-sw", memory=0)
    with pytest.raises(NamingConfigError, match="model name"):
        ExplorerNamingModel(speaker="llm", llm_model=" ")


def test_llm_speakers_over_loopback_http_fill_the_outcome_plot():
    with LoopbackServer(seed=7) as server:
        model = ExplorerNamingModel(n=8, speaker="llm", llm_endpoint=server.base_url,
                                    llm_model="naming:noisy?p=0.5", seed=3, rounds=4)
        for _ in range(4):
            model.step()
        requests = server.stats()["requests"]
    assert model.totals.calls == requests > 4 * 8  # one per utterance, plus the reminders
    outcomes = naming_app.outcomes_frame(model)
    assert outcomes.loc[outcomes["outcome"] == "retry", "utterances"].sum() > 0
