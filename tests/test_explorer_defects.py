"""The explorer's pages as a reviewer found them, fixed: what each page says and offers, without a browser.

(The browser half, what the pages draw and how they respond, is ``test_explorer_browser_defects.py``.)
"""

from __future__ import annotations

import pandas as pd
import pytest

from llm_mesa.registry import game_names, get_game
from llm_mesa.views import view_of
from llm_mesa.views.controls import ControlError, check_value, on_a_step


@pytest.mark.parametrize("name", game_names())
def test_every_pages_defaults_are_on_its_own_sliders(name):
    """A slider shows (and sends back) its nearest step: a default off the steps would play one value, show another."""
    view = view_of(get_game(name))
    for control, spec in view.controls().items():
        on_a_step(control, spec, check_value(control, spec, spec.get("value"), view.game.parameters))


def test_a_link_value_off_a_sliders_steps_is_refused_with_the_sliders_own_range():
    view = view_of(get_game("consensus"))  # N: 8 to 1,000 in steps of 4 (a caveman graph needs cliques of 4)
    values, errors = view.query_values("?n=10&seed=3")
    assert "n" not in values and values["seed"] == 3
    assert "is not a step of this page's slider (8 to 1,000 in steps of 4)" in errors["n"]
    assert view.query_values("?n=12")[0]["n"] == 12


def test_the_naming_page_plays_the_n_its_link_gives_odd_ones_too():
    """SIGN takes any N (with odd N one agent sits each round out): ?n=7 plays 7 and the slider shows 7."""
    view = view_of(get_game("naming"))
    values, errors = view.query_values("?n=7")
    assert errors == {} and values["n"] == 7
    model = view.build_from({**{k: s.get("value") for k, s in view.controls().items()}, "n": 7})
    assert len(view.agents(model)) == 7


def test_the_naming_agent_panel_numbers_agents_as_its_prompt_and_utterances_do():
    """One numbering: the panel, the partner, the utterances and the selector name each agent as its prompt and
    the game's tables do (Mesa's unique_id), where the panel used to count from 0 beside "in its prompt: agent 1"."""
    view = view_of(get_game("naming"))
    model = view.build_from({k: s.get("value") for k, s in view.controls().items()})
    model.step()
    players = view.agents(model)
    names = view.names(model)
    assert names == [a.unique_id for a in players] and view.snapshot(model).names == tuple(names)
    partner = "decision in round 1 · partner"
    for index, agent in enumerate(players):
        rows = view.agent_rows(model, index)
        assert rows["agent"] == str(agent.unique_id) and rows[partner] == str(agent.partner.unique_id)
        back = view.agent_rows(model, names.index(int(rows[partner])))
        assert back[partner] == str(agent.unique_id)  # partners name each other
    said = view.messages(model)
    assert sorted(said["agent"]) == sorted(names)


def test_the_consensus_policy_mix_takes_any_typed_mix_and_offers_its_usual_ones():
    view = view_of(get_game("consensus"))
    spec = view.controls()["policy_mix"]
    assert spec["type"] == "Combobox" and "majority-inertia | hubs:5=stubborn" in spec["values"]
    typed = "voter | hubs:3=stubborn | nodes:0,1=random"  # in no list: the README's form, typed
    assert check_value("policy_mix", spec, typed) == typed
    model = view.build_from({**spec_values(view), "policy_mix": typed})
    policies = [a.policy.spec().split(":")[0] for a in model.agents_by_node]
    hubs = sorted(model.graph.nodes, key=lambda v: (-model.graph.degree(v), v))[:3]
    expected = ["random" if v in (0, 1) else "stubborn" if v in hubs else "voter" for v in model.graph.nodes]
    assert policies == expected  # applied in order: the hubs, then nodes 0 and 1
    with pytest.raises(ControlError, match="selector=policy") as raised:
        view.build_from({**spec_values(view), "policy_mix": "voter | hubs:3"})
    assert raised.value.control == "policy_mix"


def spec_values(view) -> dict:
    return {k: s.get("value") for k, s in view.controls().items()}


def test_the_sweep_browser_shows_a_dash_for_no_value_and_offers_only_measures_that_vary():
    from llm_mesa.visualization.sweep_app import NO_VALUE, shown_table, varying_measures

    table = pd.DataFrame({"condition": ["a", "b"], "games": [1, 2], "rounds (mean)": [4.0, 5.0],
                          "rounds (sd)": [float("nan"), 1.0]})
    shown = shown_table(table)
    assert shown["rounds (sd)"].tolist() == [NO_VALUE, 1.0] and "nan" not in shown.to_string().lower()
    games = pd.DataFrame({"rounds": [3, 9, 4], "n": [36, 36, 36], "max_rounds": [50, 50, 50], "solved": [1, 0, 1]})
    assert varying_measures(games, ["rounds", "n", "max_rounds", "solved"]) == ["rounds", "solved"]
    assert varying_measures(games.iloc[:1], ["rounds", "n"]) == ["rounds"]  # one game: the headline stays


def test_the_colouring_page_says_where_the_game_stands():
    from llm_mesa.models.colouring.model import ColouringModel

    view = view_of(get_game("colouring"))
    moving = ColouringModel("best-response", 3, n=10, k=2, max_rounds=2)
    status = [b for b in view.banners(moving) if b.tag == "llm-mesa-colouring-status"]
    assert status[0].kind == "info"
    assert f"{moving.conflicts} conflict" in status[0].text
    assert f"{moving.agents_in_conflict()} of 10 agents in conflict" in status[0].text
    assert sum(view.picture(moving).flagged) == moving.agents_in_conflict()  # the squares are those agents
    while moving.running:
        moving.step()
    if not moving.solved:
        ended = [b for b in view.banners(moving) if b.tag == "llm-mesa-colouring-status"][0]
        assert ended.kind == "warning" and "Unsolved at round 2, the round limit" in ended.text
    proper = ColouringModel("best-response", 3, n=10, k=2, start=["red", "blue"] * 5)
    done = [b for b in view.banners(proper) if b.tag == "llm-mesa-colouring-status"][0]
    assert done.kind == "done" and "Proper colouring at round 0" in done.text
    assert not any(view.picture(proper).flagged)
