"""``llm-mesa lab`` in Chromium as people have their browsers: two tabs on one seat, a tab lagging behind, a crash.

One seat on the consensus game with private messages, beside rule agents, under umask 022:

* the seat's link, with the tracking a mail program adds, opens the seat; a second tab of the
  same browser opens it too, and both tabs show the one live question;
* the form offers a private message's recipient among the seat's neighbours only; the message
  sent in one tab is shown as the seat's answer in the other, and it is in ``messages``;
* a tab whose page lags behind (its websocket's frames held back) clicks the form of a
  question that has closed: the click is never recorded for the question open then;
* the host sees the seat connected; the browser crashes (its context closed with the
  question open) and the host sees it disconnected, issues a new link (printed, shown), the
  old link opens nothing, and the person back on the new one finds the open question and
  their answers so far, and plays to the end;
* the host's picture rings the person's node; the run folder and store are private.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat

import pandas as pd
import pytest
from test_explorer_browser import NODES, browser, local  # noqa: F401 - fixtures
from test_lab_browser import click, running_lab, shoot, shows, wait_round

from llm_mesa.visualization.lab_host import PERSON_COLOUR

pytestmark = pytest.mark.slow
TRACKING = "&utm_source&utm_medium&utm_campaign&fbclid"


class Lagging:
    """A tab whose websocket frames from the server can be held back (a page that lags behind the lab)."""

    def __init__(self, page) -> None:
        self.held: list = []
        self.holding = False
        self.tab = None
        page.route_web_socket(re.compile(r".*/jupyter/api/kernels/.*"), self._route)

    def _route(self, ws) -> None:
        server = ws.connect_to_server()
        self.tab = ws
        ws.on_message(server.send)
        server.on_message(self._from_server)

    def _from_server(self, message) -> None:
        if self.holding:
            self.held.append(message)
        else:
            self.tab.send(message)

    def hold(self) -> None:
        self.holding = True

    def release(self) -> None:
        self.holding = False
        held, self.held = self.held, []
        for message in held:
            self.tab.send(message)


@contextlib.contextmanager
def umask(mask: int):
    """The lab started under ``mask``, as a user's shell has it."""
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


def next_round_or_end(page, number: int) -> bool:
    """Wait for round ``number`` (True) or the end of the game (False)."""
    page.locator(f".llm-mesa-round:has-text('Round {number} of 4'), .llm-mesa-lab-ended").first.wait_for(timeout=90_000)
    return page.locator(".llm-mesa-lab-ended").count() == 0


def test_two_tabs_a_lagging_tab_and_a_crashed_browser_back_on_a_new_link(tmp_path, local):  # noqa: F811
    out = tmp_path / "lab1"
    with umask(0o022), running_lab(tmp_path, "--game", "consensus", "--seats", "1", "--seat-agents", "3", "--policy",
                                   "majority-inertia", "--deadline", "40", "--set", "n=10", "--set", "max_rounds=4",
                                   "--set", "communication=local", "--set", "direct_messages=true", "--seed", "2",
                                   "--out", str(out), "--linger", "2") as lab:
        host = local.page(1400, 1100)
        host.goto(lab.urls["host"])
        tab_a = local.page(1000, 1100)
        tab_b = tab_a.context.new_page()
        lagging = Lagging(tab_b)
        tab_a.goto(lab.urls["seat 1"] + TRACKING)
        tab_b.goto(lab.urls["seat 1"])
        for tab in (tab_a, tab_b):  # one live question, in both tabs
            wait_round(tab, 1, 4)
        facts = tab_a.locator(".llm-mesa-lab-facts").inner_text()
        neighbours = [int(n) for n in re.findall(r"node (\d+) (?:red|blue)", facts.split("Your neighbours' colours:")[1]
                                                                                     .split("\n")[1])]
        assert neighbours
        tab_a.get_by_text("Your message to the others").click()
        tab_a.locator(".llm-mesa-lab-select").click()
        options = tab_a.locator(".v-menu__content.menuable__content__active .v-list-item")
        options.first.wait_for(timeout=30_000)
        assert [o.inner_text().strip() for o in options.all()] == ["(none)", *map(str, neighbours)]
        options.nth(1).click()
        tab_a.locator(".llm-mesa-lab-field-message input").fill("psst, go red")
        shoot(tab_a, "lab-seat-private-message.png")
        tab_a.get_by_role("button", name="Send").click()
        shows(tab_b, f"round 1: message psst, go red, message to {neighbours[0]}")  # the other tab shows the answer
        for tab in (tab_a, tab_b):
            wait_round(tab, 2, 4)
        shows(host, "connected")
        rings = host.locator(f'.llm-mesa-network-chart svg path[stroke="{PERSON_COLOUR}"]')
        rings.first.wait_for(state="attached", timeout=60_000)
        assert rings.count() == 1  # the one person's node
        shoot(host, "lab-host-person-ringed.png")
        lagging.hold()  # tab B stops seeing the lab: it shows round 2's form from now on
        click(tab_a, "red")
        assert next_round_or_end(tab_a, 3), "the game ended before the tab could lag"
        click(tab_b, "blue")  # on round 2's form, after round 2 closed
        tab_b.wait_for_timeout(1500)
        lagging.release()
        wait_round(tab_b, 3, 4)
        tab_a.context.close()  # the browser crashes, round 3 open
        shows(host, "disconnected since")
        shoot(host, "lab-host-disconnected.png")
        host.locator(".llm-mesa-lab-reissue-1").click()
        link = re.search(r"http://\S+", host.locator(".llm-mesa-lab-new-link-1").inner_text(timeout=30_000)).group(0)
        assert link != lab.urls["seat 1"]
        assert any(link in lab.next_line(30) for _ in range(3))  # printed for the host too
        old = local.page(900, 500)
        old.goto(lab.urls["seat 1"] + TRACKING)
        shows(old, "This link opens nothing here")
        back = local.page(1000, 1100)
        back.goto(link)
        wait_round(back, 3, 4)
        history = back.locator(".llm-mesa-lab-history").inner_text()
        assert "round 1: message psst, go red" in history and "round 2: colour red" in history
        shoot(back, "lab-seat-back-on-new-link.png")
        shows(host, "connected")
        click(back, "red")
        if next_round_or_end(back, 4):
            click(back, "red")
        shows(back, "The game has ended", timeout=90_000)
        assert lab.wait() == 0
    seats = pd.read_parquet(out / "seats.parquet")
    answers = {int(r): json.loads(a) for r, a in zip(seats["round"], seats["answer"])}
    assert answers[1] == {"message": "psst, go red", "message_to": neighbours[0], "diary": ""}
    assert answers[2]["colour"] == "red" and answers[3]["colour"] == "red"  # the lagging tab's blue: never recorded
    sent = pd.read_parquet(out / "messages.parquet")
    assert sent.query("sender == 3")[["round", "to", "text"]].values.tolist() == [[1, neighbours[0], "psst, go red"]]
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in out.iterdir()} == {0o600}
    assert stat.S_IMODE((tmp_path / "lab1.calls.sqlite").stat().st_mode) == 0o600
