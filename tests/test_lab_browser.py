"""``llm-mesa lab`` from outside, in Chromium: people in browser contexts of their own beside rule agents.

The command runs as a researcher runs it; each person is a browser context (its own cookies,
so its own browser session), and every context refuses any request that would leave this
machine. What is checked:

* two seats and rule agents play the consensus game to its end: seat 1 clicks ``red`` every
  round, seat 2 clicks ``blue`` in round 1 only, then its deadlines pass; seat 1 reloads
  its page mid-game and the seat resumes; the run folder marks exactly those two agents
  human, seat 1's round-1 colour is the one it clicked, and the summary's ``timeouts``
  equals seat 2's missed rounds;
* while round 1 is open a made-up token sees the refusal and no round, and seat 1's link
  opened in another browser is refused too (its token is used up);
* a seat's page and every websocket frame it received hold no other agent's preference
  (consensus) and no other agent's secret (``pledge``, a game the test installs: a slider
  and a text box from its schema, no code of its own for seats);
* the colouring game's k colours are k buttons, and the clicked colour is played; the host's Start
  gives a seat nobody opened to ``--policy`` (its link is refused after);
* a lab stopped (SIGTERM) before its game ends writes no run folder;
* the recorded game replays exactly (``llm-mesa lab ... --replay``: the same tables).

Screenshots (seat page, host page, refusal) go to ``LLM_MESA_SCREENSHOTS`` or a folder of the run's own.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from test_explorer_browser import CLI, NODES, browser, free_port, local, screenshots  # noqa: F401 - fixtures

pytestmark = pytest.mark.slow
TESTS = Path(__file__).resolve().parent


class Lab:
    """A running ``llm-mesa lab``: its links, its printed lines, its exit."""

    def __init__(self, process: subprocess.Popen, log: Path) -> None:
        self.process, self.log = process, log
        self.lines: queue.Queue[str] = queue.Queue()
        self.printed: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.urls: dict[str, str] = {}
        deadline = time.monotonic() + 240
        while "host" not in self.urls:
            line = self.next_line(deadline - time.monotonic())
            name, _, url = line.partition(": ")
            if name.startswith(("seat ", "host")) and url.startswith("http://127.0.0.1:"):
                self.urls[name] = url

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put("")  # the end

    def next_line(self, timeout: float) -> str:
        try:
            line = self.lines.get(timeout=max(timeout, 0.1))
        except queue.Empty:
            raise AssertionError(f"the lab printed nothing more; its log: {self.log.read_text()[-2000:]}") from None
        if line == "" and self.process.poll() is not None:
            raise AssertionError(f"the lab ended ({self.process.returncode}); its log: {self.log.read_text()[-2000:]}")
        self.printed.append(line)
        return line

    def wait(self, timeout: float = 180) -> int:
        status = self.process.wait(timeout=timeout)
        while not self.lines.empty():
            self.printed.append(self.lines.get())
        return status


@contextlib.contextmanager
def running_lab(tmp: Path, *options: str, env: dict[str, str] | None = None):
    port = free_port()
    log = tmp / "lab.log"
    with open(log, "w") as err:
        process = subprocess.Popen([CLI, "lab", "--port", str(port), *options], stdout=subprocess.PIPE, stderr=err,
                                   text=True, start_new_session=True, cwd=tmp, env={**os.environ, **(env or {})})
    try:
        yield Lab(process, log)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
        text = log.read_text()
        assert "Traceback" not in text and "raised exception" not in text, text[-3000:]


class Frames:
    """Every websocket frame a page receives, as text."""

    def __init__(self, page) -> None:
        self.received: list[str] = []
        page.on("websocket", lambda ws: ws.on("framereceived", self._got))

    def _got(self, payload) -> None:
        self.received.append(payload if isinstance(payload, str) else payload.decode("utf-8", "replace"))

    @property
    def text(self) -> str:
        return "\n".join(self.received)


def shoot(page, name: str) -> Path:
    """Save the page (a refusal is small: a page with anything drawn is more than a few kilobytes)."""
    folder = screenshots()
    folder.mkdir(parents=True, exist_ok=True)
    time.sleep(1.0)  # let the charts finish drawing
    path = folder / name
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 5_000
    return path


def shows(page, text: str, timeout: float = 60_000) -> None:
    page.get_by_text(text).first.wait_for(timeout=timeout)


def click(page, choice: str) -> None:
    page.get_by_role("button", name=choice, exact=True).click(timeout=30_000)


def wait_round(page, number: int, limit: int, timeout: float = 60_000) -> None:
    page.locator(".llm-mesa-round", has_text=f"Round {number} of {limit}").wait_for(timeout=timeout)


def test_two_seats_and_rule_agents_play_consensus_to_the_end(tmp_path, local):  # noqa: F811
    out = tmp_path / "lab1"
    with running_lab(tmp_path, "--game", "consensus", "--seats", "2", "--policy", "majority-inertia",
                     "--deadline", "15", "--set", "n=10", "--set", "max_rounds=3", "--out", str(out),
                     "--linger", "3") as lab:
        assert set(lab.urls) == {"seat 1", "seat 2", "host"}
        assert all(len(url.rsplit("=", 1)[1]) >= 43 for url in lab.urls.values())  # 256-bit tokens
        host = local.page()
        host.goto(lab.urls["host"])
        shows(host, "Waiting for people: 0 of 2 seats opened.")
        shoot(host, "lab-host-waiting.png")
        one, two = local.page(1000, 900), local.page(1000, 900)
        frames_one, frames_two = Frames(one), Frames(two)
        one.goto(lab.urls["seat 1"])
        shows(one, "Waiting for people: 1 of 2 seats opened.")
        two.goto(lab.urls["seat 2"])  # the last seat opens: the game starts
        wait_round(two, 1, 3)
        click(two, "blue")
        shows(two, "Your answer for round 1 is in: colour blue")
        stranger = local.page(900, 500)  # while round 1 is open (seat 1 has not answered)
        frames_stranger = Frames(stranger)
        stranger.goto(lab.urls["host"].split("?")[0] + "?seat=" + "A" * 43)
        shows(stranger, "This link opens nothing here")
        shoot(stranger, "lab-refusal.png")
        wait_round(one, 1, 3)
        shoot(one, "lab-seat.png")
        click(one, "red")
        seen = stranger.locator("body").inner_text() + "\n" + frames_stranger.text
        assert not [word for word in ("Round", "node", "colour", "preferred", "Seat") if word in seen]
        thief = local.page(900, 500)  # seat 1's link in another browser: used up
        frames_thief = Frames(thief)
        thief.goto(lab.urls["seat 1"])
        shows(thief, "This link opens nothing here")
        seen = thief.locator("body").inner_text() + "\n" + frames_thief.text
        assert not [word for word in ("Round", "node", "colour", "preferred", "Seat") if word in seen]
        wait_round(one, 2, 3)
        one.reload()  # mid-game: the seat resumes in this browser
        wait_round(one, 2, 3)
        click(one, "red")
        host.locator(NODES).first.wait_for(state="attached", timeout=60_000)  # the explorer's network view
        shows(host, "answering")
        shoot(host, "lab-host.png")
        assert "seat 2" in host.locator(".llm-mesa-lab-seats").inner_text()
        wait_round(one, 3, 3, timeout=90_000)
        click(one, "red")
        shows(one, "The game has ended", timeout=90_000)
        shows(two, "The game has ended", timeout=30_000)
        assert lab.wait() == 0
        logged = lab.log.read_text() + "\n".join(lab.printed[3:])
        assert not [url for url in lab.urls.values() if url.rsplit("=", 1)[1] in logged]  # no token in a log
        for page, frames in ((one, frames_one), (two, frames_two)):
            text = page.locator("body").inner_text() + "\n" + frames.text
            # a seat is told its own preferred colour, and no other agent's: not by name, not as a field
            owners = {m.group(1).lower() for m in re.finditer(r"(\w+) preferred colour", text)}
            assert owners == {"your"} and "preference" not in text, owners
    nodes = pd.read_parquet(out / "nodes.parquet")
    people = nodes[nodes["label"] == "human"]
    summary = json.loads((out / "summary.json").read_text())
    assert list(people["node"]) == summary["seat_agents"] and len(people) == 2 and set(people["policy"]) == {"human"}
    agents = pd.read_parquet(out / "agents.parquet")
    first, second = summary["seat_agents"]
    assert agents.query(f"round == 1 and node == {first}")["colour"].item() == "red"
    assert agents.query(f"round == 1 and node == {second}")["colour"].item() == "blue"
    missed = agents.query(f"node == {second} and timeout")
    assert summary["timeouts"] == len(missed) == summary["rounds"] - 1 >= 1
    assert not agents.query(f"node == {first}")["timeout"].any()
    # the recorded game replays exactly, with nobody at the seats
    replay = [line for line in lab.printed if line.strip().startswith("replay:")]
    assert replay, lab.printed
    words = replay[0].split("replay:", 1)[1].split()
    again = tmp_path / "again"
    done = subprocess.run([CLI, *words[1:], "--out", str(again)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    for table in out.glob("*.parquet"):
        pd.testing.assert_frame_equal(pd.read_parquet(table), pd.read_parquet(again / table.name), obj=table.name)


def install_pledge(site: Path) -> Path:
    """The test's own game as an installed distribution (its module and its entry point), for the lab's process."""
    site.mkdir(parents=True, exist_ok=True)
    shutil.copy(TESTS / "lab_pledge.py", site / "lab_pledge.py")
    info = site / "lab_pledge-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lab-pledge\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[llm_mesa.games]\npledge = lab_pledge:GAME\n")
    return site


def test_a_seat_of_a_game_of_the_tests_own_gets_a_slider_and_sees_no_other_agents_secret(tmp_path, local):  # noqa: F811
    import sys

    sys.path.insert(0, str(TESTS))
    from lab_pledge import secret_of

    site = install_pledge(tmp_path / "site")
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    out = tmp_path / "pledge1"
    with running_lab(tmp_path, "--game", "pledge", "--seats", "1", "--seat-agents", "2", "--policy", "match",
                     "--deadline", "30", "--set", "n=6", "--set", "max_rounds=2", "--seed", "4", "--out", str(out),
                     "--linger", "1", env={"PYTHONPATH": path}) as lab:
        seat = local.page(1000, 900)
        frames = Frames(seat)
        seat.goto(lab.urls["seat 1"])
        wait_round(seat, 1, 2)
        seat.locator(".llm-mesa-lab-slider").first.wait_for(timeout=30_000)
        assert "from 0 to 5" in seat.locator(".llm-mesa-lab-slider-label").inner_text()
        seat.locator(".llm-mesa-lab-field-note input").fill("x" * 60)  # the box holds its limit of 40
        shows(seat, "40 of at most 40 characters")
        shoot(seat, "lab-seat-pledge.png")
        seat.get_by_role("button", name="Send").click()
        wait_round(seat, 2, 2)
        seat.get_by_role("button", name="Send").click()
        shows(seat, "The game has ended")
        assert lab.wait() == 0
        text = seat.locator("body").inner_text() + frames.text
        assert secret_of(4, 2) in frames.text
        assert not [a for a in range(6) if a != 2 and secret_of(4, a) in text]
    answers = pd.read_parquet(out / "seats.parquet")
    # the slider never moved answers its shown value (its low bound); round 2's note, left empty, is sent empty
    assert [json.loads(a) for a in answers["answer"]] == [{"pledge": 0, "note": "x" * 40}, {"pledge": 0, "note": ""}]


def test_the_colouring_games_colours_are_buttons_and_the_hosts_start_gives_an_unopened_seat_away(tmp_path, local):  # noqa: F811
    out = tmp_path / "colouring1"
    with running_lab(tmp_path, "--game", "colouring", "--seats", "2", "--seat-agents", "3,7", "--policy",
                     "best-response", "--deadline", "30", "--set", "n=10", "--set", "topology=cycle", "--set", "k=3",
                     "--set", "inertia=0", "--set", "max_rounds=2", "--out", str(out), "--linger", "1") as lab:
        seat = local.page(1000, 900)
        seat.goto(lab.urls["seat 1"])
        shows(seat, "Waiting for people: 1 of 2 seats opened.")
        host = local.page()
        host.goto(lab.urls["host"])
        host.get_by_role("button", name="Start now").click(timeout=60_000)  # seat 2 nobody opened: best response
        wait_round(seat, 1, 2)
        late = local.page(900, 500)
        late.goto(lab.urls["seat 2"])
        shows(late, "This link opens nothing here")
        shows(host, "given to the agents' policy")
        buttons = seat.locator(".llm-mesa-lab-choice")
        assert sorted(b.inner_text().lower() for b in buttons.all()) == sorted(["red", "green", "blue"])
        shoot(seat, "lab-seat-colouring.png")
        click(seat, "green")
        seat.locator(".llm-mesa-round:has-text('Round 2 of 2'), .llm-mesa-lab-ended").first.wait_for(timeout=60_000)
        if seat.locator(".llm-mesa-lab-ended").count() == 0:  # not solved in round 1
            click(seat, "green")
        shows(seat, "The game has ended")
        assert lab.wait() == 0
    agents = pd.read_parquet(out / "agents.parquet")
    assert agents.query("round == 1 and agent == 3")["colour"].item() == "green"
    assert agents.query("agent == 3")["label"].eq("human").all() and agents.query("agent == 7")["label"].eq("rule").all()
    assert json.loads((out / "summary.json").read_text())["seat_agents"] == [3]


def test_a_lab_interrupted_before_its_game_ends_writes_no_run_folder(tmp_path):
    out = tmp_path / "cut"
    with running_lab(tmp_path, "--game", "consensus", "--seats", "1", "--set", "n=10", "--out", str(out)) as lab:
        os.killpg(lab.process.pid, signal.SIGTERM)  # the people are still coming
        assert lab.wait(timeout=60) == 128 + signal.SIGTERM
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".cut")]
    assert "terminated" in lab.log.read_text()
