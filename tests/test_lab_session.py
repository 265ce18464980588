"""One lab (``llm_mesa.lab.session``) and its run folder: tokens, who may open what, the start, the data.

Tokens are 256 bits from ``secrets`` and every one is compared in constant time; a seat is
held by the first browser that opens it (a reload of that browser resumes it); the game
starts when every seat is open or when the host starts it, which gives the unopened seats
to the agents' policy; the run folder marks the seats' agents ``human`` with each answer's
response time, counts the timeouts, and is what ``viz --replay`` reads.
"""

from __future__ import annotations

import hmac
import json
import secrets

import lab_pledge
import pandas as pd
import pytest
from lab_people import play

from llm_mesa import register_game
from llm_mesa.cli import main
from llm_mesa.lab import LabError, LabSession
from llm_mesa.lab.run_folder import lab_summary, lab_tables, who_decides
from llm_mesa.lab.session import MAX_TOKEN_CHARS, PLAYING, WAITING, choose_agents
from llm_mesa.llm.store import ResponseStore
from llm_mesa.registry import get_game, unregister_game
from llm_mesa.run_output import parquet_ready
from llm_mesa.views import view_of

CONSENSUS = {"n": 10, "max_rounds": 3}


@pytest.fixture(scope="module", autouse=True)
def pledge_registered():
    register_game(lab_pledge.GAME)
    yield
    unregister_game(lab_pledge.NAME)


def session(seats=2, **kw) -> LabSession:
    return LabSession(get_game("consensus"), CONSENSUS, "majority-inertia", 3, seats, deadline=1.0, **kw)


def test_tokens_have_256_bits_and_differ_and_every_one_is_compared_in_constant_time(monkeypatch):
    lab = session(seats=3)
    tokens = [s.token for s in lab.seats] + [lab.host_token]
    assert len(set(tokens)) == 4 and all(len(t) >= 43 for t in tokens)  # token_urlsafe(32): 256 bits
    compared = []
    real = hmac.compare_digest

    def spy(a, b):
        compared.append(1)
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    monkeypatch.setattr(secrets, "compare_digest", spy)
    assert lab.admit("seat=not-a-token", "browser-a") is None
    assert len(compared) >= 4  # each seat's token and the host's, whatever the first one said
    assert lab.admit(f"?host={lab.host_token}", "browser-a") == "host"
    assert lab.admit("seat=" + "x" * (MAX_TOKEN_CHARS + 1), "browser-a") is None
    assert lab.admit(f"seat={lab.seats[0].token[:-1]}", "browser-a") is None  # one character short


def test_a_seat_is_held_by_its_first_browser_resumed_on_reload_and_refused_to_any_other():
    lab = session()
    first = lab.admit(f"seat={lab.seats[0].token}", "browser-a")
    assert first is lab.seats[0] and lab.state == WAITING
    assert lab.admit(f"seat={lab.seats[0].token}", "browser-a") is first  # a reload resumes it
    assert lab.admit(f"seat={lab.seats[0].token}", "browser-b") is None  # the token is used up
    assert lab.admit(f"seat={lab.seats[1].token}", "browser-b") is lab.seats[1]
    assert lab.state == PLAYING  # every seat open: the game starts


def test_the_hosts_start_gives_the_unopened_seats_to_the_agents_policy_on_the_same_game(tmp_path):
    lab = session(seats=2, seat_agents=[2, 7])
    before = list(lab.model.colours)
    lab.admit(f"seat={lab.seats[0].token}", "browser-a")
    lab.start()
    assert lab.admit(f"seat={lab.seats[1].token}", "browser-b") is None  # closed: its token is used up
    play(lab, {1: lambda r, f: {"colour": "blue"}})
    assert [s.agent for s in lab.open_seats()] == [2]
    who = lab_tables(lab)["nodes"].set_index("node")
    assert who.loc[2, "policy"] == "human" and who.loc[7, "policy"].startswith("majority-inertia")
    assert who.loc[7, "label"] == "rule"
    assert list(lab.model.agents_table().query("round == 0")["colour"]) == before  # same graph and start


def test_seat_agents_are_drawn_from_the_seed_or_given_and_checked():
    names = list(range(10))
    drawn = choose_agents(names, 3, None, 5)
    assert drawn == choose_agents(names, 3, None, 5) and drawn == sorted(drawn) and len(set(drawn)) == 3
    assert drawn != choose_agents(names, 3, None, 6) or drawn != choose_agents(names, 3, None, 7)
    assert choose_agents(names, 2, [7, 2], 5) == [2, 7]
    for given, count, words in (([11], 1, "no agent"), ([2, 2], 2, "twice"), ([1], 2, "names 1 agents")):
        with pytest.raises(LabError, match=words):
            choose_agents(names, count, given, 5)
    with pytest.raises(LabError, match="from 1 to 10"):
        choose_agents(names, 11, None, 5)


def test_the_run_folder_marks_the_people_with_response_times_and_counts_timeouts(tmp_path):
    store = ResponseStore(tmp_path / "calls.sqlite")
    lab = session(seats=2, seat_agents=[3, 8], store=store)
    play(lab, {1: lambda r, f: {"colour": "red", "reason": "I like red"}, 2: lambda r, f: None})
    tables = lab_tables(lab)
    for name in ("nodes", "agents"):
        frame = tables[name]
        people = frame[frame["label"] == "human"]
        assert set(people["node"]) == {3, 8} and set(people["policy"]) == {"human"}
        assert all(p.startswith("majority-inertia") for p in frame[frame["label"] != "human"]["policy"])
    agents = tables["agents"].set_index(["round", "node"])
    rounds = lab.view.round_number(lab.model)
    assert all(agents.loc[(r, 8), "timeout"] for r in range(1, rounds + 1))  # marked in that agent's row
    assert not agents.loc[(1, 3), "timeout"] and agents.loc[(1, 3), "response_s"] < 1.0
    assert pd.isna(agents.loc[(0, 3), "response_s"]) and not agents["timeout"][agents.index.get_level_values(1) != 8].any()
    seats = tables["seats"]
    assert list(seats.columns) == ["seat", "agent", "round", "activation", "answer", "response_s", "timeout"]
    assert json.loads(seats[seats["seat"] == 1]["answer"].iloc[0])["reason"] == "I like red"
    summary = lab_summary(lab, "majority-inertia")
    assert summary["timeouts"] == rounds == int(seats["timeout"].sum()) and summary["seats"] == 2
    assert summary["answers"] == rounds and not summary["invalid"] and summary["failures"] == 0


def test_a_lab_replayed_from_the_command_line_writes_a_run_folder_viz_replay_opens(tmp_path, capsys):
    store = ResponseStore(tmp_path / "lab1.calls.sqlite")
    lab = session(seats=2, seat_agents=[3, 8], store=store)
    play(lab, {1: lambda r, f: {"colour": "red"}, 2: lambda r, f: {"colour": "blue"} if r == 1 else None})
    store.close()
    out = tmp_path / "again"
    status = main(["lab", "--game", "consensus", "--seats", "2", "--seat-agents", "3,8", "--seed", "3",
                   "--deadline", "1", "--set", "n=10", "--set", "max_rounds=3", "--policy", "majority-inertia",
                   "--replay", str(tmp_path / "lab1.calls.sqlite"), "--out", str(out)])
    assert status == 0
    printed = capsys.readouterr().out
    assert "timeouts" in printed and f"written to: {out}" in printed
    kept = {p.stem: pd.read_parquet(p) for p in out.glob("*.parquet")}
    assert set(kept) == set(lab_tables(lab))
    for name, frame in lab_tables(lab).items():  # the replay's tables, as the live lab's would be written
        written = tmp_path / f"{name}.parquet"
        parquet_ready(frame).to_parquet(written, index=False)
        pd.testing.assert_frame_equal(kept[name], pd.read_parquet(written), obj=name)
    summary = json.loads((out / "summary.json").read_text())
    manifest = json.loads((out / "manifest.json").read_text())
    assert summary["timeouts"] == lab.timeouts and summary["seat_agents"] == [3, 8]
    assert [s["agent"] for s in manifest["lab"]["seats"]] == [3, 8]
    assert not any(s.token in (out / "manifest.json").read_text() for s in lab.seats)  # no token on disk
    recording = view_of(get_game("consensus")).recording(out)  # what llm-mesa viz --replay DIR opens
    assert recording.colours_at(1)[3] == "red" and recording.colours_at(1)[8] == "blue"
    assert recording.agent_rows(1, 3)["policy"] == "human"
    # a person's seat in the replay: how long they took, or that they missed the deadline (no time then)
    answered, missed = recording.agent_rows(1, 8), recording.agent_rows(2, 8)
    assert float(answered["decision in round 1 · answered in (s)"]) < 1.0
    assert answered["decision in round 1 · missed the deadline"] == "no"
    assert missed["decision in round 2 · missed the deadline"].startswith("yes")
    assert "decision in round 2 · answered in (s)" not in missed
    assert not any(k.startswith("decision in") for k in recording.agent_rows(1, 0))  # a rule agent has no seat


@pytest.mark.parametrize("argv, words", [
    (["--seats", "0"], "at least one"),
    (["--seats", "11"], "from 1 to 10"),
    (["--seats", "1", "--deadline", "0"], "--deadline"),
    (["--seats", "1", "--deadline", "nan"], "--deadline"),
    (["--seats", "1", "--linger", "-1"], "--linger"),
    (["--seats", "1", "--port", "0"], "not a TCP port"),
    (["--seats", "1", "--set", "n=abc"], "n"),
    (["--seats", "1", "--set", "nosuch=1"], "unknown parameter"),
    (["--seats", "1", "--set", "n"], "NAME=V"),
    (["--seats", "1", "--seat-agents", "99"], "no agent"),
    (["--seats", "1", "--seat-agents", " , "], "empty"),
    (["--seats", "1", "--policy", "nosuch"], "unknown consensus policy"),
    (["--seats", "1", "--replay", "x.sqlite", "--replay-fill"], "replays strictly"),
    (["--seats", "1", "--replay", "missing.sqlite"], "does not exist"),
    (["--seats", "1", "--public-url", "lab.example.org"], "--public-url"),
    (["--seats", "1", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--timeout", "2",
      "--max-attempts", "1"], "127.0.0.1:9"),
])
def test_bad_input_is_one_line_that_names_the_fix_and_exit_status_2(argv, words, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status = main(["lab", "--game", "consensus", "--set", "n=10", *argv])
    printed = capsys.readouterr()
    err = printed.err.strip()
    assert status == 2 and len(err.splitlines()) == 1 and words in err, err
    assert printed.out == ""  # no seat's link was handed out
    assert list(tmp_path.iterdir()) == []  # nothing written, not even a store


def test_a_game_whose_llm_policy_cannot_say_what_it_asks_is_refused_before_any_seat(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status = main(["lab", "--game", "naming", "--seats", "1"])
    err = capsys.readouterr().err.strip()
    assert status == 2 and "question(observation)" in err and len(err.splitlines()) == 1


def test_an_out_folder_that_exists_is_refused_before_the_lab_starts(tmp_path, capsys):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x").write_text("kept")
    status = main(["lab", "--game", "consensus", "--seats", "1", "--out", str(tmp_path / "taken")])
    assert status == 2 and "already exists" in capsys.readouterr().err


def test_two_labs_at_once_share_nothing(tmp_path):
    """The same game and seed in two labs at once: neither's tokens open the other, neither's answers reach it."""
    import threading

    labs = {colour: session(seats=1, seat_agents=[3], store=ResponseStore(tmp_path / f"{colour}.sqlite"))
            for colour in ("red", "blue")}
    red, blue = labs["red"], labs["blue"]
    assert red.admit(f"seat={blue.seats[0].token}", "b") is None and blue.admit(f"host={red.host_token}", "b") is None
    games = [threading.Thread(target=play, args=(lab, {1: lambda r, f, c=colour: {"colour": c}}))
             for colour, lab in labs.items()]
    for game in games:
        game.start()
    for game in games:
        game.join(timeout=60)
    for colour, lab in labs.items():
        assert {json.loads(a.answer)["colour"] for a in lab.answers} == {colour}
        rows = ResponseStore(lab.store.path, "replay").rows()
        assert rows and {json.loads(r["response"]["text"])["colour"] for r in rows} == {colour}


def test_a_mix_splits_the_other_agents_into_blocks_and_the_seats_take_theirs():
    lab = LabSession(get_game("consensus"), CONSENSUS, ["majority-inertia", "voter"], 3, 2, seat_agents=[1, 8],
                     deadline=1.0)
    who = {row.name: row for row in who_decides(lab).itertuples()}
    assert [who[v].label for v in (1, 8)] == ["human", "human"]
    assert all(who[v].policy.startswith("majority-inertia") for v in (0, 2, 3, 4))
    assert all(who[v].policy == "voter" for v in (5, 6, 7, 9))


def test_each_part_of_a_mix_is_checked_before_the_lab_starts(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status = main(["lab", "--game", "consensus", "--set", "n=10", "--seats", "1", "--policy", "voter + nosuch"])
    assert status == 2 and "unknown consensus policy 'nosuch'" in capsys.readouterr().err
