"""The pages as a reviewer reads them, in headless Chromium: nothing cut, rounds that agree, bounded sliders,
refusals beside their control.

* no text of a picture (title, subtitle, legend) runs past its chart's edge: the colouring network
  and the Boltzmann grid, whose subtitle and legend used to be cut;
* the colouring page opens on a game that solves, speaks of conflicts (no echo-chamber map), and
  its round line, banner, agent panel and observation name the same round, to the end;
* every slider runs within its parameter's declared bounds (the page's own range may be narrower);
* a combination of values the game refuses is said beside its control, in the page's words,
  once, and the page plays on;
* Mesa's 50 x 50 prisoner's dilemma draws on a canvas, and its picture still says which round it is.
"""

from __future__ import annotations

import re

import pytest
from test_explorer_browser import (  # noqa: F401 - fixtures
    browser,
    local,
    no_traceback,
    shoot,
    step,
    text_round,
    viz,
)

from llm_mesa.registry import get_game
from llm_mesa.views import view_of

pytestmark = pytest.mark.slow

#: every text of a chart's SVG, with its box and the chart's (a chart's own box is where the page shows it)
CUT_TEXT = """(chart) => {
    const out = [];
    for (const holder of document.querySelectorAll(chart)) {
        const edge = holder.getBoundingClientRect();
        for (const text of holder.querySelectorAll('svg text')) {
            const box = text.getBoundingClientRect();
            if (!text.textContent.trim() || box.width === 0) continue;
            if (box.left < edge.left - 1 || box.right > edge.right + 1) out.push([text.textContent, box.left, box.right, edge.left, edge.right]);
        }
    }
    return out;
}"""


def open_page(page, url: str, chart: str) -> None:
    page.goto(url)
    page.locator(f"{chart} svg .role-title-text").first.wait_for(state="attached", timeout=120_000)


def agent_text(page) -> str:
    return page.locator(".llm-mesa-agent").inner_text()


def test_the_colouring_page_cuts_no_text_speaks_of_conflicts_and_its_rounds_agree(tmp_path, local):  # noqa: F811
    with viz(tmp_path, "--game", "colouring") as url:
        page = local.page(width=1280)
        open_page(page, url, ".llm-mesa-network-chart")
        assert page.locator(".llm-mesa-network-chart svg .role-title-text").first.text_content().startswith("Round 0:")
        assert page.get_by_role("button", name="echo chambers").count() == 0  # a same-colour group is no chamber
        body = page.locator("body").inner_text()
        assert "echo chamber" not in body and "same-colour group" not in body and "conflict" in body
        step(page, 2)
        page.wait_for_function("() => Array.from(document.querySelectorAll('.llm-mesa-network-chart svg .role-title-text'))"
                               ".some(t => t.textContent.startsWith('Round 2:'))", timeout=60_000)
        assert page.evaluate(CUT_TEXT, ".llm-mesa-network-chart") == []
        assert page.evaluate(CUT_TEXT, ".llm-mesa-plots") == []
        t = text_round(page)
        panel = agent_text(page)
        assert page.locator(".llm-mesa-round").first.inner_text().startswith(f"Round {t} of 100")
        assert f"decision in round {t}" in panel
        if page.get_by_role("button", name="Step").is_enabled():
            assert f"observes for round {t + 1}" in panel
        assert not re.search(r"observes for round \d+ · (round|agent):", panel)  # said once, in the heading
        if page.get_by_role("button", name="Play").is_enabled():
            page.get_by_role("button", name="Play").click()
        page.locator(".llm-mesa-colouring-status", has_text="Proper colouring").wait_for(timeout=120_000)  # it solves
        t = text_round(page)
        assert page.locator(".llm-mesa-round").first.inner_text().startswith(f"Round {t} of 100 (ended")
        panel = agent_text(page)
        assert "observes for round" not in panel and "the game has ended" in panel
        no_traceback(page)
        shoot(page, "colouring-solved.png")


def test_the_boltzmann_grid_cuts_no_text_and_its_counts_read_as_counts(tmp_path, local):  # noqa: F811
    with viz(tmp_path, "--game", "boltzmann_wealth_model") as url:
        page = local.page(width=1280)
        open_page(page, url, ".llm-mesa-grid-chart")
        step(page, 3)
        page.wait_for_function("() => Array.from(document.querySelectorAll('.llm-mesa-grid-chart svg .role-title-text'))"
                               ".some(t => t.textContent.startsWith('Round 3:'))", timeout=60_000)
        assert page.evaluate(CUT_TEXT, ".llm-mesa-grid-chart") == []
        marks = page.locator(".llm-mesa-grid-chart svg g.mark-text.role-mark text").all_text_contents()
        assert marks and all(re.fullmatch(r"×\d+", m) for m in marks), marks  # "x3": agents, never a wealth of 3
        chart = page.locator(".llm-mesa-chart-Gini svg").first.bounding_box()
        assert chart["height"] >= 180  # the one chart beside the grid is drawn tall
        no_traceback(page)


@pytest.mark.parametrize("name", ["consensus", "colouring", "schelling", "pd_grid"])
def test_every_slider_runs_within_its_parameters_declared_bounds(tmp_path, local, name):  # noqa: F811
    game = get_game(name)
    specs = view_of(game).controls()
    with viz(tmp_path, "--game", name) as url:
        page = local.page(height=1400)
        page.goto(url)
        page.locator(".llm-mesa-round").first.wait_for(timeout=120_000)
        checked = 0
        for control in specs:
            if control not in game.parameters or not specs[control].get("type", "").startswith("Slider"):
                continue
            slider = page.locator(f".llm-mesa-control-{control} [role=slider]")
            if not slider.count():  # a control this network does not use is hidden
                continue
            low, high = float(slider.first.get_attribute("aria-valuemin")), float(slider.first.get_attribute("aria-valuemax"))
            parameter = game.parameters[control]
            assert parameter.low is None or low >= parameter.low, (control, low, parameter.low)
            assert parameter.high is None or high <= parameter.high, (control, high, parameter.high)
            checked += 1
        assert checked >= 2
        no_traceback(page)


def test_a_refused_combination_is_said_beside_its_control_in_the_pages_words_and_the_page_plays(tmp_path, local):  # noqa: F811
    with viz(tmp_path, "--game", "colouring") as url:
        page = local.page()
        page.goto(url + "?topology=cycle&n=10&chords=60")  # each value is fine alone; together, no game
        error = page.locator(".llm-mesa-control-chords .llm-mesa-control-error")
        error.wait_for(timeout=120_000)
        words = error.inner_text()
        assert "room for" in words and "“Chords”" in words and "--" not in words
        assert page.locator(".llm-mesa-control-error").count() == 1  # said once, beside its control
        page.locator(".llm-mesa-network-chart svg .role-title-text").first.wait_for(state="attached", timeout=60_000)
        assert step(page) == 1  # the defaults play meanwhile
        no_traceback(page)


def test_mesas_50_by_50_prisoners_dilemma_draws_on_a_canvas_that_names_its_round(tmp_path, local):  # noqa: F811
    with viz(tmp_path, "--game", "pd_grid") as url:
        page = local.page()
        page.goto(url)
        drawn = ".llm-mesa-grid-chart [data-title^='Round 0:']"
        page.locator(drawn).first.wait_for(state="attached", timeout=120_000)
        assert page.locator(".llm-mesa-grid-chart canvas").count() == 1  # 2,500 cells: no 2,500 SVG paths
        step(page, 2)
        page.locator(".llm-mesa-grid-chart [data-title^='Round 2:']").first.wait_for(state="attached", timeout=60_000)
        page.wait_for_function("() => /decision in round 2 · saw · payoffs:\\s*C\\/C: 1, C\\/D: 0/"
                               ".test(document.querySelector('.llm-mesa-agent').innerText)", timeout=30_000)  # pairs kept
        no_traceback(page)
