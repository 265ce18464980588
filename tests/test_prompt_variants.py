"""Every variant of a game's prompt, and a template file of one's own, carries every fact of the study's prompt;
LLM agents on the stand-in play each variant, each call is recorded under its variant's hash, and a replay
is exact per variant.

The facts are checks on the rendered text for observations with distinctive numbers and names: the consensus
study's (SPEC part A: players and their label, payoffs, round limit, turns, the end at one colour, the
communication options and their cost, the diary, the answer's fields; the round, node, preference, colour,
neighbours' colours, history window and messages) and the naming study's (SPEC part B: agent, round, current
name, one line, the ``@say {name: ...}`` form in Schema mode and none in NL, the retry's reminder).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from llm_mesa.llm.endpoint import Endpoint
from llm_mesa.llm.store import ReplayMiss, ResponseStore
from llm_mesa.loopback.behaviours import PromptView
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.models.consensus.behaviours import read_consensus_prompt
from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy
from llm_mesa.models.consensus.observation import ConsensusObservation, Message, RoundRecord
from llm_mesa.models.consensus.prompt import ConsensusPrompt
from llm_mesa.models.consensus.prompt_variants import PROMPT_VARIANTS, consensus_prompt
from llm_mesa.models.naming.llm_speaker import LLMSpeaker, sign_endpoint
from llm_mesa.models.naming.model import NamingModel
from llm_mesa.models.naming.observation import NamingObservation, lexicon
from llm_mesa.models.naming.prompts import VARIANTS as NAMING_VARIANTS
from llm_mesa.models.naming.prompts import build_prompt, retry_suffix
from llm_mesa.update import TURN_RULES

# ----------------------------------------------------------------------------------------------- consensus facts
HEARD = [Message(4, 16, "hold blue please"), Message(15, 16, "switch now?", to=23)]
HISTORY = [RoundRecord(14, "red", {4: "red", 8: "red", 15: "blue"}, []),
           RoundRecord(15, "blue", {4: "blue", 8: "red", 15: "blue"}, []),
           RoundRecord(16, "red", {4: "blue", 8: "red", 15: "blue"}, HEARD)]
OBSERVATIONS = [
    ConsensusObservation(agent_id=23, round=17, preference="blue", colour="red", neighbour_ids=(4, 8, 15),
                         neighbour_colours=("blue", "red", "blue"), communication="local", direct_messages=True,
                         label="human", history=HISTORY, history_rounds=3, inbox=HEARD, diary="node 8 never moves",
                         max_rounds=41, n_players=29, payoff_preferred=0.35, payoff_other=0.05, message_cost=0.02),
    ConsensusObservation(agent_id=6, round=1, preference="red", colour="red", neighbour_ids=(2,),
                         neighbour_colours=("blue",), max_rounds=12, n_players=9),
    ConsensusObservation(agent_id=11, round=3, preference="blue", colour="blue", neighbour_ids=(0, 13),
                         neighbour_colours=("red", "red"), communication="global", message_replaces_move=False,
                         history_rounds=0, max_rounds=30, n_players=14, diary="all red so far"),
    ConsensusObservation(agent_id=5, round=9, preference="red", colour="blue", neighbour_ids=(1, 2),
                         neighbour_colours=("red", "blue"), history=[RoundRecord(8, "blue", {1: "red", 2: "blue"}, []),
                                                                     RoundRecord(9, "blue", {1: "red", 2: "red"}, [],
                                                                                 current=True)],
                         history_rounds=1, update="random-sequential", activation=3, n_players=18, max_rounds=20),
]


def consensus_facts(obs: ConsensusObservation) -> dict[str, tuple[str, str]]:
    """Each fact of the study's prompt for ``obs``: (where, a regular expression its text must match)."""
    others = obs.n_players - 1
    facts = {
        "players": ("rules", rf"\b{others} other"),
        "what the others are": ("rules", "humans" if obs.label == "human" else "LLM agents"),
        "red or blue": ("rules", r"\bred\b[^\n]*\bblue\b"),
        "a private preference": ("rules", r"(?i)prefer"),
        "payoff, own colour": ("rules", re.escape(f"£{obs.payoff_preferred:.2f}")),
        "payoff, other colour": ("rules", re.escape(f"£{obs.payoff_other:.2f}")),
        "payoff, no consensus": ("rules", r"£0(?![.\d])"),
        "round limit": ("rules", rf"\b{obs.max_rounds} rounds\b"),
        "the end at one colour": ("rules", r"same colour"),
        "turns": ("rules", r"(?i)same time|simultaneous|at once" if obs.update == "synchronous"
                  else re.escape(TURN_RULES[obs.update])),
        "a private diary": ("rules", r"(?i)diary"),
        "answer: colour, reason, diary": ("rules", r'"colour"[^\n]*"reason"[^\n]*"diary"'),
        "node": ("state", rf"\b{obs.agent_id}\b"),
        "round of the limit": ("state", rf"\b{obs.round}\b[^\n]*\b{obs.max_rounds}\b"),
        "preference": ("state", rf"(?i)prefer[^\n]*\b{obs.preference}\b"),
        "current colour": ("state", rf"(?i)current colour[^\n]*\b{obs.colour}\b"),
        "neighbours' colours": ("state", ", ".join(f"{i}: {c}" for i, c in zip(obs.neighbour_ids, obs.neighbour_colours))),
        "diary": ("state", re.escape(obs.diary or "(empty)")),
    }
    if obs.communication == "none":
        facts["no communication"] = ("rules", r"(?i)no communication")
    else:
        audience = "neighbours" if obs.communication == "local" else "every player"
        facts["who a message reaches"] = ("rules", rf"(?i)message[^\n]*{audience}")
        facts["answer: message"] = ("rules", '"message"')
        facts["a message instead of, or besides, a move"] = (
            "rules", r"(?i)instead" if obs.message_replaces_move else r"(?i)besides")
    if obs.direct_messages:
        facts["private messages"] = ("rules", '"message_to"')
        facts["private messages allowed"] = ("state", "Private messages: allowed")
    if obs.message_cost and obs.communication != "none":
        facts["message cost"] = ("rules", re.escape(f"£{obs.message_cost:.2f}"))
    if obs.history:
        played = sum(not r.current for r in obs.history)
        facts["history window"] = ("state", rf"\b{played} rounds\b" if played > 1 else r"(?i)last round")
        for record in obs.history:
            facts[f"round {record.round}"] = ("state", rf"round {record.round}\b[^\n]*"
                                              + "[^\n]*".join(f"{i}: {c}" for i, c in record.neighbour_colours.items()))
            for message in record.messages:
                facts[f"message of {message.sender}"] = ("state", rf"\b{message.sender}\b[^\n]*"
                                                         + re.escape(json.dumps(message.text)))
        if any(m.to is not None for r in obs.history for m in r.messages):
            facts["a private message marked"] = ("state", r"(?i)privately")
    else:
        facts["no history"] = ("state", r"(?i)first round" if obs.round <= 1 else r"(?i)not shown")
    return facts


def missing_consensus_facts(prompt: ConsensusPrompt, obs: ConsensusObservation) -> list[str]:
    system, user = (m["content"] for m in prompt.messages(obs))
    texts = {"rules": system, "state": user}
    return [name for name, (where, fact) in consensus_facts(obs).items() if not re.search(fact, texts[where])]


@pytest.mark.parametrize("variant", sorted(PROMPT_VARIANTS))
def test_every_consensus_variant_carries_every_fact(variant):
    assert len(PROMPT_VARIANTS) >= 4
    for obs in OBSERVATIONS:
        assert missing_consensus_facts(PROMPT_VARIANTS[variant], replace(obs, prompt=variant)) == [], obs.round


def test_the_fact_checks_can_fail():
    study = PROMPT_VARIANTS["study"]
    vague = replace(study, rules=study.rules.replace("lasts at most {round_limit}", "lasts a while"))
    assert missing_consensus_facts(vague, OBSERVATIONS[0]) == ["round limit"]
    blind = replace(study, state=study.state.replace("Your preferred colour: {preference}\n", ""))
    assert missing_consensus_facts(blind, OBSERVATIONS[0]) == ["preference"]


#: a consensus template of one's own: other words for the rules and the state, the rest the study's
USER_CONSENSUS = '''base = "study"
rules = """
We play a game on a network, me and {other_players}: they are {players}. I only see my colour and my direct neighbours' colours.
Everyone holds red or blue and has a secret preferred colour. We play at most {round_limit}.
All players choose at the same time in each round and see the choices together afterwards.
The game stops once every player holds the same colour.
If the whole network ends on my preferred colour I get £{payoff_preferred:.2f}, on the other one £{payoff_other:.2f},
and £0 if there is no single colour by the last round.
{communication}
I keep a private diary that only I read and rewrite every round.
{answer_format}"""
turns = "All players choose at the same time in each round and see the choices together afterwards."
state = """
Now: round {round} of {max_rounds}; I am node {agent_id}.
My preferred colour: {preference}. My current colour: {colour}.
My neighbours: {neighbours}{direct}
{history}
My diary says:
{diary}"""
'''


def test_a_template_file_of_ones_own_carries_every_fact_and_plays_under_its_hash(tmp_path):
    (tmp_path / "mine.toml").write_text(USER_CONSENSUS)
    value = f"file:{tmp_path / 'mine.toml'}"
    prompt = consensus_prompt(value)
    for obs in OBSERVATIONS:
        assert missing_consensus_facts(prompt, replace(obs, prompt=value)) == [], obs.round
    assert prompt.template_hash not in {p.template_hash for p in PROMPT_VARIANTS.values()}
    assert prompt.history_text == PROMPT_VARIANTS["study"].history_text  # what the file leaves out: its base's


# ------------------------------------------------------------------------------------------------- naming facts
NAMING_OBSERVATIONS = [NamingObservation(17, 213, "C9", "schema", lexicon()),
                       NamingObservation(4, 58, "C11", "nl", lexicon()),
                       NamingObservation(21, 7, "C3", "nl-sw", lexicon(), memory=("C3", "C5"))]


def missing_naming_facts(prompt: str, retry: str, obs: NamingObservation) -> list[str]:
    schema = obs.mode == "schema"
    facts = {
        "agent": (prompt, rf"\b{obs.agent_id}\b"), "round": (prompt, rf"\b{obs.round}\b"),
        "current name": (prompt, rf"\b{obs.name}\b"), "one line": (prompt, r"(?i)one line"),
        "a fresh line for the reply": (prompt, r"\n\Z"),
    }
    if schema:
        facts["the @say form with the current name"] = (prompt, re.escape(f"@say {{name: {obs.name}}}") + r" \| rationale")
        facts["the retry's form"] = (retry, re.escape("@say {name: Ck}") + r"\n\Z")
        facts["the retry: one line"] = (retry, r"(?i)one line")
    else:
        facts["a name proposed"] = (prompt, r"(?i)propos\w* your name")
    missing = [name for name, (text, fact) in facts.items() if not re.search(fact, text)]
    if not schema and "@say" in prompt:
        missing.append("no @say form in NL")
    return missing


@pytest.mark.parametrize("variant", sorted(NAMING_VARIANTS))
def test_every_naming_variant_carries_every_fact(variant):
    assert len(NAMING_VARIANTS) >= 3
    for obs in NAMING_OBSERVATIONS:
        obs = replace(obs, prompt=variant)
        assert missing_naming_facts(build_prompt(obs), retry_suffix(obs), obs) == [], obs.mode


USER_NAMING = '''prompt = """
Player {agent_id} here, round {round_id}. The name I propose right now: {name}.
{instruction}"""
schema = "Write EXACTLY one line: @say {{name: {name}}} | rationale"
nl = "Write EXACTLY one line that proposes your name."
retry = "Again, EXACTLY one line: @say {{name: Ck}}"
'''


def test_a_naming_template_file_carries_every_fact_and_the_checks_can_fail(tmp_path):
    (tmp_path / "mine.toml").write_text(USER_NAMING)
    for obs in NAMING_OBSERVATIONS:
        obs = replace(obs, prompt=f"file:{tmp_path / 'mine.toml'}")
        assert missing_naming_facts(build_prompt(obs), retry_suffix(obs), obs) == [], obs.mode
    obs = NAMING_OBSERVATIONS[1]
    assert missing_naming_facts(build_prompt(obs).replace("one line", "a line"), "", obs) == ["one line"]
    assert missing_naming_facts(build_prompt(obs) + "@say {name: C1}\n", "", obs) == ["no @say form in NL"]


# ------------------------------------------------------------------------------------- the stand-in reads each
@pytest.mark.parametrize("variant", sorted(PROMPT_VARIANTS))
def test_the_stand_in_reads_back_every_consensus_variant(variant):
    prompt = PROMPT_VARIANTS[variant]
    for obs in OBSERVATIONS:
        for folded in (False, True):
            messages = replace(prompt, system_role=not folded).messages(obs)
            view = PromptView(last_user=messages[-1]["content"], full="\n".join(m["content"] for m in messages), chat=True)
            read = read_consensus_prompt(view)
            assert (read.agent_id, read.round, read.max_rounds, read.preference, read.colour, read.neighbour_ids,
                    read.neighbour_colours, read.communication, read.direct_messages, read.message_replaces_move,
                    read.diary) == (obs.agent_id, obs.round, obs.max_rounds, obs.preference, obs.colour,
                                    obs.neighbour_ids, obs.neighbour_colours, obs.communication, obs.direct_messages,
                                    obs.message_replaces_move, obs.diary)
            last = [m for r in obs.history[-1:] for m in r.messages]
            assert [(m.sender, m.text, m.to is not None) for m in read.inbox] == \
                   [(m.sender, m.text, m.to is not None) for m in last]


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(seed=5) as running:
        yield running


def play_consensus(server_url: str, variant: str, store: ResponseStore) -> tuple[ConsensusModel, LLMConsensusPolicy]:
    policy = LLMConsensusPolicy(Endpoint(server_url, "rule:majority-inertia?talk=0.5&dm=0.5", timeout=5.0), store=store)
    model = ConsensusModel(n=8, topology="ws", communication="local", direct_messages=True, max_rounds=4,
                           baseline_permutations=0, rng=3, policy=policy, prompt=variant)
    model.run()
    return model, policy


def test_llm_agents_on_the_stand_in_play_each_consensus_variant_and_replay_it_exactly(tmp_path, server):
    hashes = {}
    for variant in PROMPT_VARIANTS:
        path = tmp_path / f"{variant}.sqlite"
        store = ResponseStore(path, "record")
        live, policy = play_consensus(server.base_url, variant, store)
        rows = store.rows()
        store.close()
        assert policy.usage.calls == len(rows) >= 8 and not policy.usage.failures, variant  # every prompt read
        assert {row["request"]["template_hash"] for row in rows} == {PROMPT_VARIANTS[variant].template_hash}
        assert any(m.text for m in live.message_log)  # messages went round: the history blocks carried them
        hashes[variant] = PROMPT_VARIANTS[variant].template_hash
        nowhere = "http://127.0.0.1:9/v1"  # a replay calls nothing: the server would not be there
        store = ResponseStore(path, "replay")
        replayed, again = play_consensus(nowhere, variant, store)
        store.close()
        assert again.usage.replayed == again.usage.calls == policy.usage.calls
        assert replayed.transcript == live.transcript
    assert len(set(hashes.values())) == len(PROMPT_VARIANTS)
    store = ResponseStore(tmp_path / "study.sqlite", "replay")  # one variant's recording answers no other's calls
    with pytest.raises(ReplayMiss, match="template or sampling changed"):
        play_consensus("http://127.0.0.1:9/v1", "terse", store)
    store.close()


@pytest.mark.parametrize("variant", sorted(PROMPT_VARIANTS))
def test_a_rule_read_through_any_variant_plays_the_rules_own_game(server, variant):
    """Theory: majority-with-inertia at inertia 0 is deterministic (a tie keeps the colour), and with threshold 0.7
    it reads the preference too. The stand-in answering as that rule from a variant's prompt must play, round for
    round, the game the rule plays itself: the variant carried every fact the rule decides on."""
    game = {"n": 16, "topology": "ba", "max_rounds": 8, "baseline_permutations": 0, "rng": 11, "initial": "random"}
    rule = ConsensusModel(policy="majority-inertia:inertia=0,threshold=0.7", **game)
    rule.run()
    policy = LLMConsensusPolicy(Endpoint(server.base_url, "rule:majority-inertia?inertia=0&threshold=0.7&talk=0",
                                         timeout=5.0))
    llm = ConsensusModel(policy=policy, prompt=variant, **game)
    llm.run()
    assert llm.colour_history == rule.colour_history and not policy.usage.failures
    assert len({tuple(c) for c in rule.colour_history}) > 2  # colours moved: the facts were put to use


def test_llm_speakers_on_the_stand_in_play_each_naming_variant_and_replay_it_exactly(tmp_path, server):
    hashes = set()
    for variant in NAMING_VARIANTS:
        path = tmp_path / f"{variant}.sqlite"
        store = ResponseStore(path, "record")
        speaker = LLMSpeaker(sign_endpoint(server.base_url, "naming:noisy?p=0.4"), store=store)
        live = NamingModel(n=6, mode="schema", memory=5, speaker=speaker, rng=2, max_rounds=6, prompt=variant).run()
        rows = store.rows()
        store.close()
        summary = live.summary()
        assert summary["outcomes"]["schema"] > 0 and summary["outcomes"]["retry"] > 0, variant  # read, and retried
        hashes |= {row["request"]["template_hash"] for row in rows}
        assert len({row["request"]["template_hash"] for row in rows}) == 1
        store = ResponseStore(path, "replay")
        replayer = LLMSpeaker(sign_endpoint("http://127.0.0.1:9/v1", "naming:noisy?p=0.4"), store=store)
        replayed = NamingModel(n=6, mode="schema", memory=5, speaker=replayer, rng=2, max_rounds=6, prompt=variant).run()
        store.close()
        assert replayer.usage.replayed == replayer.usage.calls == summary["calls"]
        assert replayed.rounds_frame().equals(live.rounds_frame())
    assert len(hashes) == len(NAMING_VARIANTS)


def test_a_sweep_crosses_variants_and_a_file_and_a_copy_from_its_manifest_replays_it(tmp_path, server, capsys):
    from llm_mesa.cli import main
    from llm_mesa.sweep import read_sweep

    # its own rules, the study's state: the stand-in reads a file's prompt by the study's line labels
    (tmp_path / "mine.toml").write_text(USER_CONSENSUS.partition('state = """')[0])
    value = f"file:{tmp_path / 'mine.toml'}"

    def sweep(*argv: str) -> int:
        return main(["sweep", "--game", "consensus", "--policies", "llm", "--base-url", server.base_url, "--model",
                     "rule:majority-inertia", "--seeds", "2", "--set", "n=6", "--set", "max_rounds=2", "--set",
                     "baseline_permutations=0", "--quiet", *argv])

    assert sweep("--set", f"prompt=study,terse,{value}", "--out", str(tmp_path / "s")) == 0, capsys.readouterr().err
    games = read_sweep(tmp_path / "s")
    hashes = {condition: set(rows) for condition, rows in games.groupby("condition")["prompt_template_hash"]}
    assert hashes == {"prompt=study": {PROMPT_VARIANTS["study"].template_hash},
                      "prompt=terse": {PROMPT_VARIANTS["terse"].template_hash},
                      f"prompt={value}": {consensus_prompt(value).template_hash}}
    assert (games["failures"] == 0).all() and (games["calls"] > 0).all()  # the stand-in read every prompt
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert manifest["templates"][value]["content"] == (tmp_path / "mine.toml").read_text()
    # the file written back from the manifest elsewhere replays its games with zero calls: the hash and the
    # game's key are of its content, not of where it lies
    (tmp_path / "elsewhere").mkdir()
    copy = tmp_path / "elsewhere" / "restored.toml"
    copy.write_text(manifest["templates"][value]["content"])
    before = server.stats()["requests"]
    assert sweep("--set", f"prompt=study,file:{copy}", "--replay", str(tmp_path / "s" / "calls.sqlite"),
                 "--out", str(tmp_path / "again")) == 0, capsys.readouterr().err
    assert server.stats()["requests"] == before
    again = read_sweep(tmp_path / "again")
    again = again[again["condition"] == f"prompt=file:{copy}"].sort_values("seed")
    played = games[games["condition"] == f"prompt={value}"].sort_values("seed")
    for column in ("consensus", "rounds", "calls", "prompt_template_hash"):
        assert again[column].tolist() == played[column].tolist()


def test_the_example_templates_the_docs_use_carry_every_fact():
    from pathlib import Path

    examples = Path(__file__).resolve().parent.parent / "examples" / "prompts"
    consensus = f"file:{examples / 'consensus-plain.toml'}"
    for obs in OBSERVATIONS:
        assert missing_consensus_facts(consensus_prompt(consensus), replace(obs, prompt=consensus)) == [], obs.round
    for obs in NAMING_OBSERVATIONS:
        obs = replace(obs, prompt=f"file:{examples / 'naming-plain.toml'}")
        assert missing_naming_facts(build_prompt(obs), retry_suffix(obs), obs) == [], obs.mode


@pytest.mark.parametrize("game, levels", [("consensus", ["study", "terse", "markdown"]), ("naming", ["study", "terse"])])
def test_an_experiments_prompt_axis_plays_the_same_games_at_every_level(tmp_path, game, levels):
    """The prompt changes nothing that is drawn: its levels get the same derived seeds (paired comparisons),
    and those of the study's wording are the seeds the experiment had without the axis."""
    from llm_mesa.sweep.experiment import parse_experiment

    (tmp_path / "mine.toml").write_text(USER_CONSENSUS if game == "consensus" else USER_NAMING)
    levels = [*levels, f"file:{tmp_path / 'mine.toml'}"]
    plain = parse_experiment({"game": game, "repetitions": 3, "seed": 4, "parameters": {"n": 12}}).seeds()
    crossed = parse_experiment({"game": game, "repetitions": 3, "seed": 4, "parameters": {"n": 12},
                                "axes": {"prompt": levels}}).seeds()
    assert len(crossed) == len(levels) and len({tuple(s) for s in crossed.values()}) == 1
    assert list(next(iter(crossed.values()))) == list(next(iter(plain.values())))


def test_the_stand_in_reads_a_naming_file_of_ones_own_in_schema_mode_by_its_say_form(tmp_path, server):
    (tmp_path / "mine.toml").write_text(USER_NAMING)
    speaker = LLMSpeaker(sign_endpoint(server.base_url, "naming:echo"))
    model = NamingModel(n=6, mode="schema", memory=5, speaker=speaker, rng=4, max_rounds=3,
                        prompt=f"file:{tmp_path / 'mine.toml'}").run()
    summary = model.summary()
    assert summary["outcomes"]["schema"] == summary["utterances"] == 18 and not speaker.usage.failures
