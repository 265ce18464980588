"""The generic explorer in Chromium on games the test installs itself: a continuous state, grids, no space.

``space_games`` is laid out as an installed distribution in a folder of this run and put on the
servers' ``PYTHONPATH``: a network public-goods game (contributions 0..10, declared continuous),
residents on an ``OrthogonalMooreGrid``, opinions on a ``HexGrid``, and coins changing hands with
no space. Each page is checked against the same game built here, and saved (``shoot``): the
continuous state with its legend bar, the Moore grid, the hex grid, charts alone; then Mesa's
own SolaraViz drawing the grid with llm-mesa's components.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from space_games import GAMES, install, registered
from test_explorer_browser import (  # noqa: F401 - fixtures
    NODES,
    browser,
    free_port,
    local,
    no_traceback,
    shoot,
    step,
    stop,
    text_round,
    viz,
    wait_for_port,
    wait_picture,
)

from llm_mesa.views import view_of
from llm_mesa.views.colours import DARK_INK, LIGHT_INK
from llm_mesa.views.controls import initial_values

pytestmark = pytest.mark.slow
CELLS = ".llm-mesa-grid-chart svg g.cells_marks path"


@pytest.fixture(scope="module", autouse=True)
def installed(tmp_path_factory):
    """The games installed for the servers this module starts (and registered in this process, to compare)."""
    site = install(tmp_path_factory.mktemp("space-site"))
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(site), *([saved] if saved else [])])
    try:
        with registered():
            yield site
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def built(name: str, **values):
    view = view_of(GAMES[name])
    return view, view.build_from({**initial_values(view.controls()), **values})


def open_page(page, url: str, selector: str) -> None:
    page.goto(url)
    page.locator(selector).first.wait_for(state="attached", timeout=120_000)


def test_a_continuous_state_has_a_legend_bar_readable_labels_and_a_slider_widened_by_the_link(tmp_path, local):  # noqa: F811
    with viz(tmp_path, "--game", "pgoods") as url:
        page = local.page(height=1300)
        open_page(page, url, NODES)
        page.wait_for_function(f"() => document.querySelectorAll('{NODES}').length === 24", timeout=60_000)
        chart = page.locator(".llm-mesa-network-chart")
        assert chart.locator("svg linearGradient").count() >= 1  # the legend bar of a continuous scale
        assert page.get_by_role("button", name="echo chambers").count() == 0  # numbers have no chambers
        assert "same-state" not in chart.inner_text() and "mean" in chart.inner_text()
        inks = page.eval_on_selector_all(".llm-mesa-network-chart svg g.labels_marks text", "ts => ts.map(t => t.getAttribute('fill'))")
        _, model = built("pgoods")
        expected = {DARK_INK if a.state >= 7 else LIGHT_INK for a in model.by_node if a.state >= 7 or a.state <= 2}
        assert expected <= set(inks) <= {DARK_INK, LIGHT_INK}
        assert step(page) == 1
        wait_picture(page, 1)
        shares = page.locator(".llm-mesa-chart-shares").inner_text()
        assert "failed" not in shares  # a count never on the shares' axis
        # no failure yet: listed with its value under "Unchanged so far", not drawn as a flat line
        page.locator(".llm-mesa-chart-unchanged svg text", has_text="failed decisions: 0").first.wait_for(
            state="attached", timeout=30_000)
        assert page.locator(".llm-mesa-chart-failed").count() == 0
        no_traceback(page)
        shoot(page, "continuous-state.png")
        wide = local.page()
        open_page(wide, url + "?n=150", NODES)  # beyond the slider's offered 5..96: shown and played
        wide.wait_for_function(f"() => document.querySelectorAll('{NODES}').length === 150", timeout=60_000)
        assert "n: 150" in wide.locator(".llm-mesa-control-n").inner_text()
        assert wide.locator(".llm-mesa-control-n .llm-mesa-typed input").input_value() == "150"
        assert wide.locator(".llm-mesa-control-error").count() == 0
        no_traceback(wide)


def test_a_moore_grid_shows_every_cell_and_a_click_selects_the_agent_in_it(tmp_path, local):  # noqa: F811
    view, model = built("segregate")
    picture = view.picture(model)
    occupied = [c for c, members in zip(picture.coordinates, picture.agents) if members]
    with viz(tmp_path, "--game", "segregate") as url:
        page = local.page(height=1200)
        open_page(page, url, CELLS)
        page.wait_for_function(f"() => document.querySelectorAll('{CELLS}').length === {len(occupied)}",
                               timeout=60_000)
        assert "12 x 9 grid" in page.locator(".llm-mesa-grid-chart").inner_text()
        assert f"{len(occupied)} of 108 cells occupied" in page.locator(".llm-mesa-grid-chart").inner_text()
        page.locator(CELLS).nth(7).click(force=True)
        x, y = occupied[7]
        page.wait_for_function(f"() => /cell:\\s*\\({x}, {y}\\)/.test(document.querySelector('.llm-mesa-agent').innerText)",
                               timeout=30_000)
        chosen = page.locator(".llm-mesa-agent-select input").input_value()  # the agent's name, as its tables give it
        assert view.agents(model)[view.names(model).index(int(chosen))].cell.coordinate == (x, y)
        assert step(page) == 1
        page.wait_for_function("() => Array.from(document.querySelectorAll('.llm-mesa-grid-chart svg .role-title-text'))"
                               ".some(t => t.textContent.startsWith('Round 1:'))", timeout=60_000)
        no_traceback(page)
        shoot(page, "grid-moore.png")


def test_a_hex_grid_draws_its_hexagons(tmp_path, local):  # noqa: F811
    with viz(tmp_path, "--game", "hexop") as url:
        page = local.page()
        open_page(page, url, CELLS)
        page.wait_for_function(f"() => document.querySelectorAll('{CELLS}').length === 63", timeout=60_000)
        assert "hexagonal grid" in page.locator(".llm-mesa-grid-chart").inner_text()
        assert page.locator(".llm-mesa-grid-chart svg linearGradient").count() >= 1
        step(page, 2)
        no_traceback(page)
        shoot(page, "grid-hex.png")


def test_a_model_with_no_space_is_charts_alone(tmp_path, local):  # noqa: F811
    with viz(tmp_path, "--game", "wallet") as url:
        page = local.page()
        open_page(page, url, ".llm-mesa-chart-richest svg .mark-line path")
        assert page.locator(".llm-mesa-network-chart, .llm-mesa-grid-chart").count() == 0
        assert step(page, 2) == 2
        assert "observes for round 3 · wealth:" in page.locator(".llm-mesa-agent").inner_text()
        no_traceback(page)
        shoot(page, "no-space.png")


APP = '''
import solara
from mesa.visualization import SolaraViz

from llm_mesa import play
from llm_mesa.registry import get_game
from llm_mesa.visualization.components import components, model_params

GAME = get_game("segregate")


@solara.component
def Page():
    model = solara.use_memo(lambda: play.make_model(GAME, {}, "unhappy-moves", 1), dependencies=[])
    SolaraViz(model, components=components("segregate"),
              model_params=model_params("segregate", policy="unhappy-moves", seed=1), name="segregate in SolaraViz")
'''


def test_mesas_solaraviz_draws_a_grid_with_llm_mesas_components(tmp_path, local):  # noqa: F811
    app = tmp_path / "grid_app.py"
    app.write_text(APP)
    port = free_port()
    env = {**os.environ, "SOLARA_TELEMETRY_MIXPANEL_ENABLE": "false"}
    env.pop("SOLARA_ASSETS_PROXY_CACHE_DIR", None)
    command = [sys.executable, "-m", "solara", "run", str(app), "--host", "127.0.0.1", "--port", str(port),
               "--no-open", "--production"]
    log = tmp_path / "solara.log"
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                   cwd=str(Path(app).parent))
    try:
        wait_for_port(port, process)
        page = local.page(height=1300)
        page.goto(f"http://127.0.0.1:{port}/")
        page.locator(CELLS).first.wait_for(state="attached", timeout=120_000)
        assert text_round(page) == 0
        page.get_by_role("button", name="Step").first.click()
        page.wait_for_function("() => Array.from(document.querySelectorAll('.llm-mesa-grid-chart svg .role-title-text'))"
                               ".some(t => t.textContent.startsWith('Round 1:'))", timeout=60_000)
        assert "cell:" in page.locator(".llm-mesa-component-agent").inner_text()
        no_traceback(page)
        shoot(page, "solaraviz-grid.png")
    finally:
        stop(process)
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


def test_a_grid_run_replays_from_its_agents_table_and_the_sweep_browser_lists_only_tables(tmp_path, local):  # noqa: F811
    cli = [sys.executable, "-m", "llm_mesa.cli"]
    run, sweep = tmp_path / "run", tmp_path / "sweep"
    subprocess.run([*cli, "segregate", "--seed", "4", "--max-rounds", "4", "--out", str(run)], check=True,
                   capture_output=True)
    view, model = built("segregate", seed=4, max_rounds=4)
    model.step()
    after = view.picture(model)
    with viz(tmp_path, "--replay", str(run)) as url:
        page = local.page(height=1200)
        open_page(page, url, CELLS)
        assert text_round(page, ".llm-mesa-replay-round") == 0
        page.get_by_role("button", name="Next", exact=True).click()
        page.wait_for_function("() => Array.from(document.querySelectorAll('.llm-mesa-grid-chart svg .role-title-text'))"
                               ".some(t => t.textContent.startsWith('Round 1:'))", timeout=60_000)
        first = next(i for i, members in enumerate(after.agents) if members)
        page.locator(CELLS).nth(0).hover(force=True)
        tooltip = page.locator("#vg-tooltip-element")
        tooltip.wait_for(state="visible", timeout=10_000)
        x, y = after.coordinates[first]
        assert f"({x}, {y})" in tooltip.inner_text() and "kind" in tooltip.inner_text()  # round 1's cell, its row
        no_traceback(page)
        shoot(page, "replay-grid.png")
    subprocess.run([*cli, "sweep", "--game", "pgoods", "--set", "r=1,3", "--policies", "dice", "--seeds", "2",
                    "--tables", "rounds,agents", "--out", str(sweep), "--quiet"], check=True, capture_output=True)
    subprocess.run([*cli, "analyze", str(sweep)], check=True, capture_output=True)
    with viz(tmp_path, "--sweep", str(sweep)) as url:
        page = local.page(height=1600)
        page.goto(url)
        page.locator(".llm-mesa-sweep-table").wait_for(timeout=120_000)
        summary = page.locator(".llm-mesa-sweep-summary").inner_text()
        assert "per-game tables kept: agents, rounds" in summary and "analysis-cache" not in summary
        page.locator(".llm-mesa-sweep-replay").locator(NODES).first.wait_for(state="attached", timeout=60_000)
        no_traceback(page)
