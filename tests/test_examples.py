"""The user examples run as scripts and say what they should.

Each example is run as its own process, as a user would, and its printed output
is checked against what is known to hold: stubborn agents with split preferences
never agree, rule agents make no LLM calls, a recorded game replays with zero
calls and identical tables, DeGroot averaging keeps the mean and a zealot wins.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_example(name: str, *args: str) -> str:
    done = subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True,
                          timeout=240, cwd=EXAMPLES.parent)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


def table_rows(output: str) -> dict[str, list[str]]:
    """Rows of the swap table: policy name -> [consensus, mean rounds, stubbornness, calls]."""
    rows = {}
    for line in output.splitlines():
        match = re.match(r"^(\S.*?)\s+(\d+)/(\d+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)$", line)
        if match:
            rows[match.group(1)] = list(match.groups()[1:])
    return rows


def test_swap_policies_plays_every_policy_on_the_same_seeds():
    out = run_example("swap_policies.py")
    rows = table_rows(out)
    assert set(rows) == {"majority-inertia:inertia=0.2", "voter", "stubborn", "llm (loopback)",
                         "llm + 3 stubborn hubs"}
    wins, games, rounds, stubbornness, calls = rows["stubborn"]
    # half the agents prefer each colour and nobody moves: never a consensus, every
    # opportunity is a stubborn move, and all games run to the round limit
    assert wins == "0" and float(stubbornness) == 1.0 and float(rounds) == 10.0
    for rule in ("majority-inertia:inertia=0.2", "voter", "stubborn"):
        assert rows[rule][4] == "0"
    llm_calls = int(rows["llm (loopback)"][4]) + int(rows["llm + 3 stubborn hubs"][4])
    assert int(rows["llm (loopback)"][4]) > 0 and int(rows["llm + 3 stubborn hubs"][4]) > 0
    # one call per LLM agent per round: 20 (or 17) agents x mean rounds (printed to 0.1) x games
    for name, agents in (("llm (loopback)", 20), ("llm + 3 stubborn hubs", 17)):
        calls_made, mean_rounds = int(rows[name][4]), float(rows[name][2])
        assert calls_made % agents == 0
        assert abs(calls_made - agents * mean_rounds * int(games)) <= agents * 0.05 * int(games)
    answered = int(re.search(r"answered (\d+) calls", out).group(1))
    assert answered == llm_calls


def test_llm_game_records_every_call(tmp_path):
    from llm_mesa.llm import ResponseStore

    store_path = tmp_path / "calls.sqlite"
    out = run_example("llm_game_loopback.py", "--store", str(store_path))
    calls = int(re.search(r"decisions (\d+) calls", out).group(1))
    rounds = int(re.search(r"after (\d+) rounds", out).group(1))
    requests = int(re.search(r"endpoint saw: (\d+)", out).group(1))
    recorded = int(re.search(r"recorded (\d+) calls to (\S+)", out).group(1))
    assert calls == 20 * rounds and recorded == calls
    assert requests > calls  # 5% of requests were refused with 429 and retried
    assert "0 failed decisions" in out
    store = ResponseStore(store_path, "replay")
    try:
        assert len(store) == calls
        assert all(row["response"]["error"] is None for row in store.rows())
    finally:
        store.close()
    # the last round's row, 20 calls (the prompt states N = 20 since the rules come from the game)
    assert re.search(rf"^\s+{rounds}\s+[\d.]+\s+[\d.]+\s+\d+\s+20$", out, re.M)


def test_replay_makes_zero_calls_and_reproduces_the_game():
    out = run_example("replay_a_game.py")
    recorded = int(re.search(r"recorded: (\d+) calls", out).group(1))
    replayed = int(re.search(r"replayed: (\d+) answers", out).group(1))
    assert recorded == replayed == 16 * int(re.search(r"after (\d+) rounds", out).group(1)) > 0
    assert ", 0 calls to the endpoint" in out
    assert "identical rounds table: True; agents table: True; messages: True; decisions: True" in out


def test_custom_policy_and_game_match_theory():
    out = run_example("custom_policy_and_game.py")
    counts = re.findall(r"threshold q=([\d.]+): consensus in (\d+)/10", out)
    assert [q for q, _ in counts] == ["0.5", "0.75"]
    start, end = map(float, re.search(r"mean ([\d.]+) -> ([\d.]+)", out).groups())
    assert start == end  # equal weights on a ring keep the mean
    assert float(re.search(r"spread [\d.]+ -> (\S+)", out).group(1).rstrip(",")) < 1e-6
    assert float(re.search(r"ends within (\S+) of it", out).group(1)) < 1e-6


def test_the_solaraviz_example_builds_its_components_and_model_params():
    """The script's own check (the page itself is driven in Chromium in test_explorer_browser_open_world)."""
    out = run_example("solaraviz_consensus.py")
    assert re.search(r"round 1: 3 components, \d+ model parameters", out)


def scan_rates(output: str) -> list[tuple[str, int, int]]:
    """The batch_run example's table: (rule, successes, games) per row, in order."""
    return [(m.group(1), int(m.group(2)), int(m.group(3)))
            for m in re.finditer(r"^.*?(\S+)\s+(\d+)\s+(\d+)\s+[\d.]+$", output, re.M)]


def test_batch_run_example_plays_the_same_scan_as_the_sweep_on_any_mesa():
    """Mesa 3: batch_run; Mesa 4: it says batch_run needs Mesa 3 and sweeps; the same games either way."""
    from llm_mesa.mesa_versions import HAS_BATCH_RUN

    default = run_example("batch_run_consensus.py")
    swept = run_example("batch_run_consensus.py", "--sweep")
    if HAS_BATCH_RUN:
        assert "(Mesa batch_run, 10 seeds each)" in default
    else:
        assert "batch_run needs Mesa 3" in default and "(llm-mesa sweep, 10 seeds each)" in default
    rows = scan_rates(default)
    assert [rule for rule, _, _ in rows] == ["majority-inertia:inertia=0.2", "voter"] * 3
    assert all(games == 10 for _, _, games in rows)
    assert rows == scan_rates(swept)
    # the voter model reaches consensus far more often than majority-with-inertia's echo chambers
    assert sum(s for r, s, _ in rows if r == "voter") > sum(s for r, s, _ in rows if r != "voter")
