"""The prompt's history block as the study ran it: per round of the window, the agent's colour, its
neighbours' colours and every message it received; bounded; grammatical; no fake round-1 history."""

import json
import random
import re

import pytest

from llm_mesa import declared
from llm_mesa.llm.endpoint import Endpoint
from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.models.consensus.game import GAME
from llm_mesa.models.consensus.observation import ConsensusDecision, ConsensusObservation, Message, RoundRecord
from llm_mesa.models.consensus.prompt import ConsensusPrompt
from llm_mesa.policy import Policy


class Recorder(Policy):
    """Renders every agent's prompt, and talks half the time (its words name sender and round)."""

    name = "recorder"
    needs_history = True

    def __init__(self, prompt: ConsensusPrompt | None = None):
        self.prompt = prompt or ConsensusPrompt()
        self.prompts: dict[tuple[int, int], str] = {}

    def decide(self, obs: ConsensusObservation, rng: random.Random) -> ConsensusDecision:
        self.prompts[(obs.agent_id, obs.round)] = "\n".join(m["content"] for m in self.prompt.messages(obs))
        talk = rng.random() < 0.5
        colour = obs.colour if rng.random() < 0.7 else ("red" if obs.colour == "blue" else "blue")
        return ConsensusDecision(colour, message=f"node {obs.agent_id} in round {obs.round}" if talk else None,
                                 diary="d")


def play(history: int, communication: str = "local", rounds: int = 14, seed: int = 3, **game):
    policy = Recorder()
    model = ConsensusModel(20, "ba", communication=communication, policy=policy, history=history, max_rounds=rounds,
                           baseline_permutations=0, rng=seed, **game).run()
    return model, policy


@pytest.mark.parametrize("history, communication", [(10, "local"), (3, "local"), (10, "global"), (1, "global")])
def test_every_message_received_in_the_window_is_in_the_prompt_and_no_older_one(history, communication):
    model, policy = play(history, communication)
    assert model.round == 14 and model.message_log  # a long game with messages in it
    checked = 0
    for (agent, now), prompt in policy.prompts.items():
        for message in model.message_log:
            quoted = policy.prompt.quote(message)
            received = agent in ([v for v in range(model.n) if v != message.sender] if communication == "global"
                                 else model.agents_by_node[message.sender].neighbour_ids)
            in_window = now - history <= message.round < now
            assert (quoted in prompt) == (received and in_window), (agent, now, message)
            checked += received and in_window
    assert checked > 100


def test_each_round_of_the_window_shows_the_colours_after_it():
    model, policy = play(3, rounds=8)
    history = model.colour_history
    agent = model.agents_by_node[4]
    prompt = policy.prompts[(4, 8)]
    for r in (5, 6, 7):
        neighbours = ", ".join(f"{i}: {history[r][i]}" for i in agent.neighbour_ids)
        assert f"- round {r}: you {history[r][4]}; neighbours {neighbours}" in prompt
    assert "- round 4:" not in prompt and "History of the last 3 rounds" in prompt


def test_round_one_shows_no_history_and_numbers_are_grammatical():
    model, policy = play(10, rounds=3)
    first, second = policy.prompts[(0, 1)], policy.prompts[(0, 2)]
    assert "History: none yet (this is the first round)." in first and "- round" not in first
    assert "History of the last round (" in second and "the last 1 round" not in second
    one = Recorder()
    ConsensusModel(2, "er", policy=one, max_rounds=1, baseline_permutations=0, rng=1).run()
    text = one.prompts[(0, 1)]
    assert "with 1 other player," in text and "at most 1 round." in text and "1 rounds" not in text


def test_a_window_of_zero_rounds_shows_no_history_and_no_message():
    model, policy = play(0, rounds=6)
    assert model.message_log
    later = [p for (_, now), p in policy.prompts.items() if now > 1]
    assert all("History: not shown (this game shows no earlier rounds)." in p and " said " not in p for p in later)


def test_the_history_is_bounded_and_cuts_the_oldest_messages_first():
    words = [Message(v, r, f"round {r} sender {v} " + "x" * 60) for r in range(1, 11) for v in range(1, 36)]
    history = [RoundRecord(r, "red", {1: "blue", 2: "red"}, [m for m in words if m.round == r]) for r in range(1, 11)]
    obs = ConsensusObservation(agent_id=0, round=11, preference="red", colour="red", neighbour_ids=(1, 2),
                               neighbour_colours=("blue", "red"), communication="global", history=history)
    prompt = ConsensusPrompt(history_chars=4000)
    block = prompt.history(obs)
    assert len(block) <= 4000  # the bound, with the heading and the lines that say what was cut
    kept = [m for m in words if prompt.quote(m) in block]
    assert kept and max(m.round for m in words) == max(m.round for m in kept)  # the newest round is shown
    cut_round = min(m.round for m in kept)  # the one round cut part-way: all newer whole, all older gone
    assert cut_round > 1 and all((prompt.quote(m) in block) == (m.round > cut_round) for m in words
                                 if m.round != cut_round)
    assert all(f"- round {r}: you red" in block for r in range(1, 11))  # every round's colours stay
    assert "more messages not shown (the history keeps at most 4000 characters; older ones go first)" in block
    unbounded = ConsensusPrompt(history_chars=10**7).history(obs)
    assert all(prompt.quote(m) in unbounded for m in words)


def _observation(rounds: int, senders: int, text: str, neighbours: int = 2, communication: str = "global"):
    words = [Message(v, r, text) for r in range(1, rounds + 1) for v in range(1, senders + 1)]
    colours = {i: "blue" if i % 2 else "red" for i in range(1, neighbours + 1)}
    history = [RoundRecord(r, "red", colours, [m for m in words if m.round == r]) for r in range(1, rounds + 1)]
    return ConsensusObservation(agent_id=0, round=rounds + 1, preference="red", colour="red",
                                neighbour_ids=tuple(colours), neighbour_colours=tuple(colours.values()),
                                communication=communication, history=history), words


#: (id, rounds in the window, senders a round, message text, neighbours, communication, bound)
HISTORY_BOUNDS = [
    ("the study's worst: 35 senders x 280 chars, 10 rounds", 10, 35, "x" * 280, 2, "global", 16_000),
    ("the issue's case: the heading and cut lines pushed it to 16,921", 10, 35, "y" * 300, 35, "global", 16_000),
    ("silent rounds: one 'no messages' line each", 10, 0, "", 300, "local", 4_000),
    ("quotes that double under JSON quoting", 10, 35, '"\\' * 140, 2, "global", 6_000),
    ("a window of 1,000 rounds: long counts in the cut lines", 1_000, 3, "z" * 50, 2, "global", 16_000),
    ("a hub whose colour rows alone overflow: the oldest rows go", 10, 1, "m", 4_000, "local", 16_000),
    ("a hub whose one row overflows: every row goes, counted", 3, 1, "m", 20_000, "local", 16_000),
    ("the smallest bound", 10, 35, "w" * 280, 3, "global", 500),
    ("one message per round, no cut needed", 10, 1, "short", 2, "local", 16_000),
]


@pytest.mark.parametrize("rounds, senders, text, neighbours, communication, bound",
                         [row[1:] for row in HISTORY_BOUNDS], ids=[row[0] for row in HISTORY_BOUNDS])
def test_the_history_bound_counts_everything_it_adds(rounds, senders, text, neighbours, communication, bound):
    import re

    obs, words = _observation(rounds, senders, text, neighbours, communication)
    prompt = ConsensusPrompt(history_chars=bound)
    block = prompt.history(obs)
    assert len(block) <= bound, len(block)
    lines = block.split("\n")
    shown_rows = [r for r in range(1, rounds + 1) if any(x.startswith(f"- round {r}: you red") for x in lines)]
    left_out = re.search(r"^- (\d+) earlier rounds? not shown", block, re.M)
    assert len(shown_rows) + (int(left_out.group(1)) if left_out else 0) == rounds  # every round shown or counted
    assert shown_rows == list(range(rounds - len(shown_rows) + 1, rounds + 1))  # the newest kept
    shown_messages = sum(line.startswith("  - node ") for line in lines)
    counted = sum(int(n) for n in re.findall(r"^  - (\d+) more messages? not shown", block, re.M))
    received = sum(len(obs.history[r - 1].messages) for r in shown_rows)
    assert shown_messages + counted == received  # every message of a kept round shown or counted
    # and it is no stingier than it must be: with room for everything, everything is shown
    whole = ConsensusPrompt(history_chars=10**8).history(obs)
    if len(whole) <= bound - 200 * rounds:
        assert block == whole


def test_a_history_bound_below_the_heading_is_refused():
    with pytest.raises(ValueError, match="at least 500"):
        ConsensusPrompt(history_chars=120)


def test_history_is_a_parameter_and_a_sweep_axis_and_keys_games_only_when_set(tmp_path):
    from llm_mesa.sweep import read_sweep, run_sweep

    default = ConsensusModel(36, "ba", rng=1, baseline_permutations=0)
    assert ConsensusModel(36, "ba", rng=1, history=10, baseline_permutations=0).game_key == default.game_key
    assert ConsensusModel(36, "ba", rng=1, history=3, baseline_permutations=0).game_key != default.game_key
    # computed by the code before `history` and `message_cost` existed: earlier recordings keep their keys
    assert default.game_key == "e69587e4d3a71bd9"
    run_sweep({"ba": {"n": 12, "topology": "ba", "max_rounds": 3, "baseline_permutations": 0}}, "majority-inertia", 2,
              tmp_path / "sweep", axes=["history=0,3"], game="consensus")
    games = read_sweep(tmp_path / "sweep")
    assert sorted(games["condition"].unique()) == ["ba|history=0", "ba|history=3"]
    assert sorted(games["history"].unique()) == [0, 3]


def test_the_dry_run_counts_the_history_and_stays_bounded():
    endpoint = Endpoint("http://127.0.0.1:9/v1", "m", max_tokens=300)
    tokens = {(c, h): declared.estimate(GAME, {"communication": c, "history": h}, endpoint).prompt_tokens_per_call
              for c in ("none", "local", "global") for h in (0, 1, 10, 20)}
    for c in ("none", "local", "global"):
        assert tokens[(c, 0)] < tokens[(c, 1)] < tokens[(c, 10)] <= tokens[(c, 20)]
    assert tokens[("none", 10)] < tokens[("local", 10)] < tokens[("global", 10)]
    limit = (len(json.dumps(ConsensusPrompt().rules)) + ConsensusPrompt().history_chars + 3000) / 4
    assert tokens[("global", 20)] < limit  # the bound holds under global communication at 35 messages a round


def test_a_recording_made_with_an_older_prompt_is_refused_in_one_line(tmp_path):
    """Games recorded before the history block (another template hash) do not replay as if they matched."""
    import subprocess
    import sys

    from llm_mesa.llm.store import ResponseStore
    from llm_mesa.loopback.server import LoopbackServer
    from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy

    older = ConsensusPrompt(state=ConsensusPrompt().state.replace("{history}", "History (you / neighbours):\n{history}"))
    assert older.template_hash != ConsensusPrompt().template_hash
    with LoopbackServer(seed=1) as server:
        store = ResponseStore(tmp_path / "old.sqlite", "record")
        policy = LLMConsensusPolicy(Endpoint(server.base_url, "rule:majority-inertia", timeout=5.0), store=store,
                                    prompt=older)
        ConsensusModel(8, "ws", policy=policy, max_rounds=2, rng=1, baseline_permutations=0).run()
        store.close()
    done = subprocess.run([sys.executable, "-m", "llm_mesa.cli", "consensus", "--policy", "llm", "--base-url",
                           "http://127.0.0.1:9/v1", "--model", "rule:majority-inertia", "--n", "8", "--topology", "ws",
                           "--max-rounds", "2", "--seed", "1", "--replay", str(tmp_path / "old.sqlite")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "no recorded answer" in done.stderr and "template" in done.stderr


def test_under_turns_the_window_holds_its_rounds_played_then_the_round_so_far():
    """A window of 10 under random-sequential: rounds t-10..t-1 as played, then "round t so far" (not 9 + 1)."""
    model, policy = play(10, rounds=14, update="random-sequential")
    prompt = policy.prompts[(4, 14)]
    played = [int(r) for r in re.findall(r"^- round (\d+):", prompt, flags=re.M)]
    assert played == list(range(4, 14))  # the ten rounds played before this one
    assert "- round 14 so far:" in prompt and "History of the last 10 rounds" in prompt
    early = policy.prompts[(4, 3)]  # fewer rounds played than the window: all of them, then the round so far
    assert "- round 1:" in early and "- round 2:" in early and "- round 3 so far:" in early
    assert "History of the last 2 rounds" in early
