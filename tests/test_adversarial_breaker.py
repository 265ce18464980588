"""A sweep whose games keep failing stops (exit 3, the causes in one line), whether one cause or several made
them fail; one that finishes with invalid games says how many in its last line, and exits 3 when every game is.

Each row is a server that answers the pre-flight soundly and the games' calls as the row says (the
shape of the failures the breaker must see through), against a 12-game LLM sweep of the consensus
game (the game whose rows carry the ``invalid`` verdict today) and a game of the test's own that
sets ``invalid`` and ``failure_cause`` in its summary (any registered game).
"""

from __future__ import annotations

import asyncio
import io
import json
import threading
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import replace

import pytest
from aiohttp import web
from conftest import EXTRA_GAME
from hostile_server import MOVE, HostileServer, completion, game_handler, raw

from llm_mesa import declared
from llm_mesa.cli import main
from llm_mesa.registry import get_game, register_game, unregister_game

GAMES = 12


def sweep(base_url, out, in_flight: int) -> tuple[int, str, str]:
    argv = ["sweep", "--game", "consensus", "--conditions", "cc-local", "--policies", "llm", "--base-url", base_url,
            "--model", "m", "--seeds", str(GAMES), "--set", "n=8", "--set", "max_rounds=1",
            "--set", "baseline_permutations=0", "--max-attempts", "1", "--games-in-flight", str(in_flight),
            "--out", str(out), "--quiet"]
    err, stdout = io.StringIO(), io.StringIO()
    with redirect_stderr(err), redirect_stdout(stdout):
        status = main(argv)
    return status, stdout.getvalue(), err.getvalue()


def counted(answer):
    """A handler of the games' calls that answers the n-th call (from 0) with ``answer(n)``."""
    lock, seen = threading.Lock(), [0]

    async def hostile(request, body):
        with lock:
            n, seen[0] = seen[0], seen[0] + 1
        await asyncio.sleep(0.02)  # a server's answer takes a moment: games end one after another, not all at once
        return answer(n)
    return hostile


def good(n):
    return web.json_response(completion(MOVE))


#: (id, the n-th game call's answer, games in flight, tripped?, the cause named, exit, last line says)
SHAPES = [
    ("every answer malformed", lambda n: raw("not json"), 4, True, "malformed", 3, None),
    ("every answer an HTTP 500 page", lambda n: raw("<html>oops</html>", status=500), 2, True, "server", 3, None),
    ("every call refused: a bad key", lambda n: raw('{"error": "bad key"}', status=401), 1, True, "auth", 3, None),
    ("answers that decide nothing", lambda n: web.json_response(completion("I like turtles")), 3, True,
     "parse_failure", 3, None),
    ("two causes in turn, game by game", lambda n: raw("not json") if (n // 8) % 2 else raw("x", status=500), 1,
     True, ("malformed", "server"), 3, None),
    ("malformed answers and answers that decide nothing, in turn", lambda n: raw("not json") if (n // 8) % 2
     else web.json_response(completion("I like turtles")), 2, True, ("malformed", "parse_failure"), 3, None),
    ("one game in four invalid", lambda n: raw("not json") if 8 <= n < 16 else good(n), 1, False, None, 0,
     "1 of 12 games are invalid"),
    ("a sound server", good, 4, False, None, 0, None),
]


@pytest.mark.parametrize("answer, in_flight, tripped, cause, status, last", [r[1:] for r in SHAPES],
                         ids=[r[0] for r in SHAPES])
def test_the_breaker_stops_a_sweep_failing_for_one_cause_and_counts_invalid_games(answer, in_flight, tripped, cause,
                                                                                  status, last, tmp_path):
    from llm_mesa.sweep import read_sweep
    from llm_mesa.sweep.breaker import MIN_RUN

    with HostileServer(game_handler(counted(answer))) as server:
        got, out, err = sweep(server.base_url, tmp_path / "s", in_flight)
        calls = len(server.completions())
    assert got == status and "Traceback" not in err, err
    games = read_sweep(tmp_path / "s")
    if tripped:
        line = err.strip().splitlines()[-1]
        assert len(err.strip().splitlines()) <= 2 and line.startswith("llm-mesa sweep: error: stopped:"), err
        if isinstance(cause, str):
            assert f"for one cause: {cause}:" in line and "kept in" in line
        else:  # several causes: each named with its count and its fix
            assert f"for {len(cause)} causes: " in line and "kept in" in line
            assert all(f" for {kind}: " in line for kind in cause), line
        run = max(MIN_RUN, in_flight)
        assert run <= len(games) < GAMES and games["invalid"].all()  # kept what it played, stopped before the rest
        assert calls <= 2 * 8 * (len(games) + in_flight)  # nothing paid for beyond the games in flight (8 agents,
        return                                            # a reminder each)
    assert len(games) == GAMES
    lines = out.strip().splitlines()
    if last is None:
        assert "invalid" not in lines[-1]
    else:
        assert last in lines[-1], out  # the last line counts them
    if status == 3:
        assert "every game is invalid" in err.strip().splitlines()[-1]


def test_a_slow_writer_does_not_let_the_games_run_past_the_breaker(tmp_path, monkeypatch):
    """The breaker sees a game after it is written, on the sweep's own thread: while that thread writes (the first
    write of a process imports the Parquet stack, a second or more on a slow machine), no further game may start,
    or a grid of quickly failing games is played whole before the breaker sees the first of them."""
    import time

    from llm_mesa.sweep import read_sweep
    from llm_mesa.sweep.output import SweepOutput

    append = SweepOutput.append

    def slow_append(self, results):
        time.sleep(1.0)
        append(self, results)

    monkeypatch.setattr(SweepOutput, "append", slow_append)
    with HostileServer(game_handler(counted(lambda n: raw("not json")))) as server:
        got, _, err = sweep(server.base_url, tmp_path / "s", 4)
    assert got == 3 and "stopped:" in err.strip().splitlines()[-1], err
    assert 4 <= len(read_sweep(tmp_path / "s")) <= 4 + 4 < GAMES  # the run that tripped it and the games in flight


def test_a_registered_game_that_reports_invalid_games_trips_the_breaker_too(tmp_path, capsys):
    """The breaker reads the row's verdict, whatever game wrote it: a game of the test's own."""
    from llm_mesa import Policy, PolicyCatalog, make_policy, register_policy

    @register_policy("follow", "always-invalid", "the majority of three")
    class Follow(Policy):
        def decide(self, obs, rng):
            return obs.state

    tiny = type(get_game(EXTRA_GAME))

    def invalid(game, model):  # the guide's summary row, every game reported invalid
        return {**declared.summary_row(get_game(EXTRA_GAME), model), "invalid": True, "failure_cause": "timeout"}

    class AlwaysInvalid(tiny):
        name = "always-invalid"
        policies = PolicyCatalog()  # its own policy, registered above, and no other
        extensions = replace(tiny.extensions, summary=invalid)

        def build(self, parameters, policy, seed):
            return tiny.build(self, parameters, make_policy(policy, self.name), seed)

    register_game(AlwaysInvalid())
    try:
        status = main(["sweep", "--game", "always-invalid", "--seeds", "10", "--set", "max_rounds=2", "--quiet",
                       "--out", str(tmp_path / "s")])
        err = capsys.readouterr().err
        assert status == 3 and "for one cause: timeout: the server did not answer within --timeout" in err, err
        from llm_mesa.sweep import read_sweep

        assert len(read_sweep(tmp_path / "s")) == 3  # the first three, one game in flight: then it stopped
        manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
        assert manifest["games_total"] == 10
    finally:
        unregister_game("always-invalid")
