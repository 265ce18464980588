"""SIGN naming game: decoder, update rule, and the dynamics theory predicts."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest

from llm_mesa.models.naming.decoding import decode_free_text, decode_schema, decode_with_retry
from llm_mesa.models.naming.game import PARAMETERS
from llm_mesa.models.naming.model import NamingConfigError, NamingModel, memory_majority, next_name
from llm_mesa.models.naming.observation import OUTCOMES, NamingObservation, Utterance, lexicon
from llm_mesa.models.naming.prompts import TEMPLATE_HASH, build_prompt
from llm_mesa.models.naming.speakers import EchoSpeaker, NoisySpeaker
from llm_mesa.policy import Policy, available_policies, make_policy


# ------------------------------------------------------------------ decoder
@pytest.mark.parametrize("text, expected", [
    ("@say {name: C3}", "C3"),
    ("@say {name: C12} | everyone else says it", "C12"),
    ("  @say{name:C7}|short  ", "C7"),
    ("@say {name: C4} | ok\nand then the model rambles on about C9", "C4"),
    ("\n\n@say {name: C5}", "C5"),
    ("@say {name: c3}", None),            # the schema's C is upper case
    ("@say {name: C13}", None),           # not in the lexicon (M = 12)
    ("@say {name: C0}", None),
    ("I say @say {name: C3}", None),      # the line must be the schema, in full
    ("@say {name: C3} @say {name: C4}", None),
    ("name: C3", None),
    ("", None),
])
def test_schema_decoder(text, expected):
    assert decode_schema(text, 12) == expected


@pytest.mark.parametrize("text, expected", [
    ("I propose the name C3.", "C3"),
    ("C12 is my choice", "C12"),          # never read as C1
    ("c5, definitely c5", "C5"),          # lower case names a name; repeats are one name
    ("Either C3 or C4", None),            # two names
    ("I like the letter C", None),        # none
    ("ABC3 and C13", None),               # not whole words / outside the lexicon
    ("@say {name: C9} | because", "C9"),
])
def test_free_text_decoder(text, expected):
    assert decode_free_text(text, 12) == expected


def test_pipeline_outcomes_schema_retry_salvage_none():
    good, free, babble = "@say {name: C2}", "I pick C2", "hmm"
    assert decode_with_retry("schema", good, lambda: pytest.fail("no retry")).outcome == "schema"
    assert (u := decode_with_retry("schema", babble, lambda: good)).outcome == "retry" and u.name == "C2"
    assert (u := decode_with_retry("schema", babble, lambda: free)).outcome == "salvage" and u.name == "C2"
    assert (u := decode_with_retry("schema", free, lambda: babble)).outcome == "salvage" and u.name == "C2"
    assert (u := decode_with_retry("schema", babble, lambda: babble)).outcome == "none" and u.name is None
    assert len(u.replies) == 2
    assert decode_with_retry("nl", free, lambda: pytest.fail("NL has no retry")).outcome == "text"
    assert decode_with_retry("nl-sw", "C1 or C2", lambda: pytest.fail("")).outcome == "none"


# ------------------------------------------------------------------ update rule
def test_win_stay_keeps_current_names_even_when_alpha_says_adopt():
    assert next_name("C4", "C4", "C4", ["C1", "C1"], adopt=True) == "C4"


def test_alpha_one_adopts_partner_name():
    assert next_name("C4", "C4", "C9", ["C1", "C1"], adopt=True) == "C9"


def test_not_adopting_takes_memory_majority_lowest_index_on_ties():
    assert next_name("C4", "C4", "C9", ["C9", "C2", "C2"], adopt=False) == "C2"
    assert next_name("C4", "C4", "C9", ["C9", "C11", "C3", "C11", "C3"], adopt=False) == "C3"
    assert memory_majority(["C10", "C2"]) == "C2"   # index order, not string order
    assert memory_majority([]) is None


def test_empty_memory_keeps_current_name():
    assert next_name("C4", "C4", "C9", [], adopt=False) == "C4"


def test_none_is_never_adopted_and_none_never_matches():
    assert next_name("C4", "C4", None, [], adopt=True) == "C4"
    assert next_name("C4", "C4", None, ["C6"], adopt=True) == "C6"
    assert next_name("C4", None, None, ["C6"], adopt=True) == "C6"   # two Nones: no win-stay


class _Scripted(EchoSpeaker):
    """Says the names of a script in order (a test double, not registered)."""

    def __init__(self, script):
        self.script = list(script)

    def compose(self, observation, rng):
        return self.script.pop(0)


def _two_agent_model(memory, alpha, scripts, mode="schema"):
    model = NamingModel(n=2, mode=mode, memory=memory, alpha=alpha,
                        speaker=[_Scripted(s) for s in scripts], rng=0)
    return model, model.players


def test_memory_records_partner_names_fifo_and_never_none():
    a_says = ["@say {name: C1}", "@say {name: C2}", "@say {name: C3}", "hmm", "hmm", "@say {name: C4}"]
    b_says = ["@say {name: C5}", "@say {name: C6}", "@say {name: C7}", "@say {name: C8}", "@say {name: C9}"]
    model, (a, b) = _two_agent_model(3, 0.0, [a_says, b_says])
    for _ in range(4):
        model.step()
    assert list(a.memory) == ["C6", "C7", "C8"]       # window of 3, oldest (C5) dropped
    assert list(b.memory) == ["C1", "C2", "C3"]       # round 4's undecodable reply left no trace


def test_k_zero_keeps_no_memory_and_keeps_names_when_alpha_zero():
    model, (a, b) = _two_agent_model(0, 0.0, [["I say C1"] * 3, ["I say C2"] * 3], mode="nl")
    start = (a.name, b.name)
    for _ in range(3):
        model.step()
    assert list(a.memory) == [] and list(b.memory) == []
    assert (a.name, b.name) == start


def test_alpha_zero_moves_to_memory_majority_after_hearing():
    model, (a, b) = _two_agent_model(5, 0.0, [["@say {name: C1}"], ["@say {name: C2}"]])
    model.step()
    assert (a.name, b.name) == ("C2", "C1")           # each takes the one name it remembers


class _ByAgent(Policy):
    """Says the name derived from the agent it speaks for (C1 + id mod M); None for ``silent`` ids."""

    game = "naming"

    def __init__(self, silent=()):
        self.silent = set(silent)

    def decide(self, observation, rng):
        if observation.agent_id in self.silent:
            return None
        name = own_name(observation.agent_id, len(observation.lexicon))
        return Utterance(name, "schema", [f"@say {{name: {name}}}"])


class _AsyncByAgent(_ByAgent):
    is_async = True

    async def adecide(self, observation, rng):
        await asyncio.sleep(0.001 * (observation.agent_id % 3))  # answers come back out of order
        return self.decide(observation, rng)


def own_name(agent_id, size):
    return f"C{agent_id % size + 1}"


def test_every_agent_is_attributed_the_utterance_its_own_speaker_produced_for_it():
    speakers = [_AsyncByAgent() if i % 2 else _ByAgent() for i in range(13)]
    model = NamingModel(n=13, memory=5, alpha=0.0, speaker=speakers, rng=3, max_rounds=4)
    for _ in range(4):
        model.step()
        spoke = [a for a in model.players if a.partner is not None]
        assert len(spoke) == 12
        for agent in spoke:
            assert agent.utterance.name == agent.last_said == own_name(agent.unique_id, 12)
            assert agent.memory[-1] == own_name(agent.partner.unique_id, 12)


@pytest.mark.parametrize("speaker", [_ByAgent, _AsyncByAgent])
def test_a_speaker_that_gives_some_agents_no_utterance_fails_the_round_and_changes_nobody(speaker):
    # The old model dropped the missing utterances and zipped the rest onto the speakers:
    # each later agent was given its neighbour's utterance, silently.
    model = NamingModel(n=12, memory=5, alpha=1.0, speaker=speaker(silent={3, 8}), rng=1, max_rounds=3)
    before = [(a.name, list(a.memory)) for a in model.players]
    with pytest.raises(TypeError, match=r"no utterance for agent (3|8) .*must return an Utterance"):
        model.step()
    assert [(a.name, list(a.memory)) for a in model.players] == before


# ------------------------------------------------------------------ model
def test_pairing_all_pairs_everyone_once_odd_one_sits_out():
    for n in (12, 13):
        model = NamingModel(n=n, rng=5, max_rounds=20)
        for _ in range(20):
            pairs = model.draw_pairs()
            seen = Counter(a.unique_id for pair in pairs for a in pair)
            assert len(pairs) == n // 2
            assert all(count == 1 for count in seen.values())
            assert len(seen) == n - (n % 2)


def test_pairing_one_is_a_single_pair_and_counts_two_utterances():
    model = NamingModel(n=12, pairing="one", rng=2, max_rounds=5).run()
    frame = model.rounds_frame()
    assert (frame["pairs"] == 1).all() and (frame["utterances"] == 2).all()
    assert frame["agreement"].max() <= 2 / 12
    assert model.summary()["convergence_basis"] == "latest"


def test_unseeded_games_key_their_samples_by_the_seed_they_drew():
    # seed=None in the key made every unseeded game share sample keys: replay-fill mixed games
    first, second = NamingModel(n=4), NamingModel(n=4)
    assert "seed=None" not in first.game_key and first.game_key != second.game_key
    assert isinstance(first.seed, int) and first.summary()["seed"] == first.seed
    again = NamingModel(n=4, rng=first.seed)          # the key names the game: the drawn seed replays it
    assert again.game_key == first.game_key
    assert [a.name for a in again.players] == [a.name for a in first.players]
    assert first.players[0].observe().game_key == first.game_key


def test_pairing_one_summary_reads_agreement_on_its_convergence_basis_and_says_so():
    # a round of one pair says 2 names: the said-agreement is capped at 2/N, useless as a headline
    model = NamingModel(n=12, pairing="one", alpha=0.9, rng=2, max_rounds=300).run()
    frame, summary = model.rounds_frame(), model.summary()
    assert summary["agreement_basis"] == summary["convergence_basis"] == "latest"
    assert summary["agreement_final"] == frame["agreement_latest"].iloc[-1] > 2 / 12
    assert summary["agreement_max"] == frame["agreement_latest"].max()
    assert summary["agreement_mean_last_10"] == pytest.approx(frame["agreement_latest"].tail(10).mean())
    everyone = NamingModel(n=12, rng=2, max_rounds=20).run()
    assert everyone.summary()["agreement_basis"] == "said"
    assert everyone.summary()["agreement_final"] == everyone.rounds_frame()["agreement"].iloc[-1]


def test_rule_speakers_make_no_calls_so_tokens_to_convergence_are_none_not_zero():
    summary = NamingModel(n=12, speaker="echo", rng=1, max_rounds=100).run().summary()
    assert summary["calls"] == 0 and summary["rounds_to_50"] is not None
    assert all(summary[f"{kind}_to_{p}"] is None for kind in ("tokens", "total_tokens") for p in (50, 60, 70))


@pytest.mark.parametrize("alpha", [0.5, 0.75, 0.9])
@pytest.mark.parametrize("mode, memory", [("schema", 5), ("nl", 0), ("nl-sw", 10)])
def test_echo_speakers_reach_the_absorbing_consensus_and_stay(alpha, mode, memory):
    model = NamingModel(n=24, mode=mode, memory=memory, alpha=alpha, speaker="echo",
                        max_rounds=300, rng=11).run()
    frame = model.rounds_frame()
    reached = frame.index[frame["held_share"] == 1.0]
    assert len(reached) > 0, "echo speakers must reach consensus within 300 rounds"
    after = frame.loc[reached[0]:]
    assert (after["held_share"] == 1.0).all() and after["top_held"].nunique() == 1
    # names said in a round are held before its update: unanimity shows one round later
    assert (frame.loc[reached[0] + 1:, "agreement"] == 1.0).all()
    summary = model.summary()
    assert summary["agreement_final"] == 1.0 and summary["consensus"]
    assert summary["rounds_to_50"] <= summary["rounds_to_60"] <= summary["rounds_to_70"]


@pytest.mark.parametrize("pairing", ["all", "one"])
def test_alpha_one_only_swaps_names_so_their_counts_never_change(pairing):
    # Both agents of a mismatched pair adopt at once: a swap. The multiset of held names
    # is invariant, so alpha = 1 never converges from a mixed start (memory is never read).
    model = NamingModel(n=12, memory=5, alpha=1.0, pairing=pairing, rng=8, max_rounds=100)
    start = Counter(a.name for a in model.players)
    for _ in range(100):
        model.step()
        assert Counter(a.name for a in model.players) == start


def test_alpha_zero_without_memory_never_changes_a_name():
    model = NamingModel(n=12, mode="nl", memory=0, alpha=0.0, rng=4, max_rounds=30)
    start = [a.name for a in model.players]
    model.run()
    assert [a.name for a in model.players] == start


def test_same_seed_same_run_different_seeds_differ():
    def trace(seed):
        return NamingModel(n=24, speaker="noisy:p=0.4", alpha=0.5, rng=seed, max_rounds=60).run().rounds_frame()

    assert trace(3).equals(trace(3))
    assert not trace(3).equals(trace(4))


def test_noisy_speakers_produce_every_schema_outcome_and_counts_sum_to_utterances():
    model = NamingModel(n=24, speaker="noisy:p=0.5", rng=9, max_rounds=40).run()
    frame = model.rounds_frame()
    outcome_sum = frame[[f"outcome_{o}" for o in OUTCOMES]].sum(axis=1)
    assert (outcome_sum == frame["utterances"]).all()
    totals = model.summary()["outcomes"]
    assert all(totals[o] > 0 for o in ("schema", "retry", "salvage", "none"))
    assert totals["text"] == 0
    assert sum(totals.values()) == 24 * 40


def test_noisy_outcome_rates_match_their_probabilities():
    # p = 0.5: schema 1/2; retry 1/4; salvage: both malformed (1/4) and one readable (3/4) -> 3/16
    model = NamingModel(n=24, speaker="noisy:p=0.5", rng=1, max_rounds=300).run()
    totals = model.summary()["outcomes"]
    total = sum(totals.values())
    for outcome, expected in (("schema", 1 / 2), ("retry", 1 / 4), ("salvage", 3 / 16), ("none", 1 / 16)):
        assert totals[outcome] / total == pytest.approx(expected, abs=0.015)


def test_mixed_population_and_summary_manifest():
    model = NamingModel(n=12, speaker=["echo"] * 6 + ["noisy:p=0.3"] * 6, rng=1, max_rounds=10).run()
    manifest = model.manifest()
    assert manifest["prompt_template_hash"] == TEMPLATE_HASH
    assert manifest["parameters"]["speaker_counts"] == {"echo": 6, "noisy:p=0.3": 6}
    assert manifest["seed"] == 1 and manifest["versions"]["mesa"]
    assert model.summary()["rounds"] == 10


@pytest.mark.parametrize("kwargs, fragment", [
    ({"n": 1}, "minimum 2"), ({"alpha": 1.5}, "alpha"), ({"mode": "json"}, "unknown mode 'json'"),
    ({"memory": -1}, "memory=-1 is below its minimum 0"), ({"mode": "nl", "memory": 5}, "nl-sw"),
    ({"mode": "nl-sw", "memory": 0}, "K > 0"),
    ({"pairing": "ring"}, "pairing"), ({"speaker": "majority-inertia"}, "unknown naming policy"),
    ({"speaker": "echo:volume=3"}, r"unknown parameter\(s\) volume"),
])
def test_bad_input_raises_one_clear_error(kwargs, fragment):
    with pytest.raises(NamingConfigError, match=fragment):
        NamingModel(**kwargs)


@pytest.mark.parametrize("name", ["alpha", "max_rounds", "lexicon_size", "memory"])
def test_the_model_checks_its_parameters_against_the_one_definition(name):
    parameter = PARAMETERS[name]
    kwargs = {"mode": "nl-sw"} if name == "memory" else {}
    NamingModel(**kwargs, **{name: parameter.high})
    beyond = parameter.high + (0.5 if parameter.kind is float else 1)
    with pytest.raises(NamingConfigError, match=f"{name}={beyond} is above its maximum"):
        NamingModel(**kwargs, **{name: beyond})
    with pytest.raises(NamingConfigError, match=f"{name}="):
        NamingModel(**kwargs, **{name: "many"})
    with pytest.raises(NamingConfigError, match="unknown convergence basis 'sometimes'"):
        NamingModel(convergence_basis="sometimes")


def test_registry_lists_the_rule_speakers():
    names = available_policies("naming")
    assert {"echo", "noisy", "minimal"} <= set(names)
    assert isinstance(make_policy("noisy:p=0.2", game="naming"), NoisySpeaker)


def test_prompt_lines_are_the_authors():
    obs = NamingObservation(3, 7, "C5", "schema", lexicon())
    assert build_prompt(obs).splitlines() == [
        "You are agent 3 in round 7.", "Your current proposed name is C5.",
        "Reply EXACTLY one line as: @say {name: C5} | rationale."]
    nl = NamingObservation(3, 7, "C5", "nl", lexicon())
    assert build_prompt(nl).splitlines()[-1] == "Reply EXACTLY one line proposing your name."


def test_minimal_speaker_says_names_from_its_inventory():
    speaker = make_policy("minimal", game="naming")
    rng = random.Random(0)
    obs = NamingObservation(1, 1, "C2", "schema", lexicon(), memory=("C7", "C7", "C9"))
    said = Counter(speaker.decide(obs, rng).name for _ in range(3000))
    assert set(said) == {"C2", "C7", "C9"}
    assert all(abs(c / 3000 - 1 / 3) < 0.04 for c in said.values())
