"""The consensus game's loopback behaviours: stand-ins that read its prompt and answer.

Registered with the loopback endpoint when it first lists or builds behaviours
(``ConsensusGame.behaviours_module``):

* ``rule:<policy spec>`` reads the consensus prompt and answers as that rule
  policy of the project would (``rule:majority-inertia?inertia=0``,
  ``rule:stubborn``, ``rule:voter``, ``rule:relay``); ``talk`` (default 0.3; 0 for
  the talking policies, which decide when they talk) is the chance of sending a
  message when the prompt allows messages, ``dm`` (default 0.3) the chance that
  such a message is private when private messages are allowed. Talking policies
  read their diary and last round's messages from the prompt.
* ``random``: a fair coin as a consensus answer, whatever the prompt.

The rule behaviours read every variant of the prompt the game declares (``prompt_variants``) by
that variant's own templates, so a variant may word its state as it likes; any other prompt is read
by the study's line labels, tolerant of extra text (a template of one's own that keeps them).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from llm_mesa.loopback.behaviours import (
    Behaviour,
    BehaviourNotFound,
    PromptNotUnderstood,
    PromptView,
    last_match,
    probability_param,
    register_behaviour,
)
from llm_mesa.loopback.faults import LoopbackError
from llm_mesa.policy import Policy, PolicyError, available_policies, make_policy
from llm_mesa.prompt_templates import pattern

from .observation import ConsensusObservation, Message
from .prompt import PRIVATE_MESSAGES, ConsensusPrompt

# Matched against lower-cased text: case-sensitive patterns keep the regex engine's
# fast literal-prefix search, which re.IGNORECASE would disable.
_PREFERRED = re.compile(r"your preferred colou?r\s*:\s*(red|blue)\b")
_CURRENT = re.compile(r"your current colou?r\s*:\s*(red|blue)\b")
_NEIGHBOURS = re.compile(r"your neighbou?rs?['\u2019]?s? current colou?rs?\s*:[ \t]*([^\n]*)")
_NEIGHBOUR_PAIR = re.compile(r"(\d+)\s*:\s*(red|blue)\b")
_ROUND = re.compile(r"round\s*:\s*(\d+)\s*of\s*(\d+)")
_COMMUNICATION = re.compile(r"communication\s*:\s*(none|local|global)\b")
_PRIVATE = re.compile(r"private messages\s*:\s*allowed\b")
_AGENT_ID = re.compile(r"you are (?:agent|node|player)\s+(\d+)")
_ALONGSIDE = re.compile(r"besides choosing a colou?r")
# Read from the prompt as written (not lower-cased): the diary and the quoted messages are data.
_DIARY = re.compile(r"Your private diary:\n(.*?)\nChoose your colou?r", re.S)
_HISTORY_ROW = re.compile(r"^- round (\d+)(?: so far)?: ", re.M)
_QUOTED = re.compile(r"^  - node (\d+) said (privately to you|to its audience): (\".*\")$", re.M)


def _last_round_messages(text: str, rows: tuple[re.Pattern[str], ...] = (_HISTORY_ROW,),
                         quoted_line: re.Pattern[str] = _QUOTED) -> tuple[int, list[Message]]:
    """The last history row's round and the messages quoted under it (the agent's inbox of last round)."""
    found = sorted((m for row in rows for m in row.finditer(text)), key=lambda m: m.start())
    if not found:
        return 0, []
    last = found[-1]
    end = text.find("\nYour private diary:", last.end())
    block = text[last.end(): end if end >= 0 else len(text)]
    received = []
    for sender, scope, quoted in quoted_line.findall(block):
        try:
            words = json.loads(quoted)
        except ValueError:
            continue
        received.append(Message(int(sender), int(last.group(1)), str(words),
                                to=-1 if scope.startswith("privately") else None))
    return int(last.group(1)), received


#: what each placeholder of a variant's state reads
_STATE_GROUPS = {"round": r"\d+", "max_rounds": r"\d+", "agent_id": r"\d+", "preference": "red|blue", "colour": "red|blue",
                 "neighbours": r"[^\n]*", "communication": "none|local|global",
                 "direct": f"(?:{re.escape(PRIVATE_MESSAGES)})?", "history": ".*?", "diary": ".*?"}
_ROW_GROUPS = {"round": r"\d+", "own": "red|blue", "neighbours": r"[^\n]*"}
_QUOTED_GROUPS = {"sender": r"\d+", "scope": "privately to you|to its audience", "text": r'"[^\n]*"'}


@dataclass(frozen=True)
class _VariantReader:
    """One declared variant's prompt as regular expressions: its state whole, its history rows and messages."""

    state: re.Pattern[str]
    rows: tuple[re.Pattern[str], ...]
    quoted: re.Pattern[str]
    alongside: tuple[str, ...]


@cache
def _variant_readers() -> tuple[_VariantReader, ...]:
    from .prompt_variants import PROMPT_VARIANTS

    return tuple(dict.fromkeys(_reader_of(p) for p in PROMPT_VARIANTS.values()))


def _reader_of(prompt: ConsensusPrompt) -> _VariantReader:
    words = prompt.history_text
    # the state ends the prompt (a completion prompt adds its cue): the diary, its last field, may hold anything
    state = re.compile(pattern(prompt.state, _STATE_GROUPS) + r"(?:\nAnswer: )?\Z", re.S)
    rows = tuple(re.compile("^" + pattern(words[k], _ROW_GROUPS), re.M) for k in ("row", "current"))
    quoted = re.compile("^" + pattern(words["message"], _QUOTED_GROUPS) + "$", re.M)
    return _VariantReader(state, rows, quoted, tuple(prompt.alongside_text.values()))


def _read_variant(prompt: PromptView, reader: _VariantReader, found: re.Match[str]) -> ConsensusObservation:
    g = found.groupdict()
    pairs = _NEIGHBOUR_PAIR.findall(g["neighbours"].lower())
    round_now, round_limit = int(g["round"]), int(g.get("max_rounds") or 0)
    _, inbox = _last_round_messages(g["history"], reader.rows, reader.quoted)
    return ConsensusObservation(
        agent_id=int(g["agent_id"]) if g.get("agent_id") else -1, round=round_now, preference=g["preference"],
        colour=g["colour"], neighbour_ids=tuple(int(i) for i, _ in pairs), neighbour_colours=tuple(c for _, c in pairs),
        communication=g.get("communication") or "none", direct_messages=bool(g.get("direct")),
        message_replaces_move=not any(text in prompt.full for text in reader.alongside),
        rounds_left=max(round_limit - round_now, 0), max_rounds=round_limit,
        diary="" if g["diary"] == "(empty)" else g["diary"], inbox=inbox)


def read_consensus_prompt(prompt: PromptView) -> ConsensusObservation:
    """Rebuild the observation a consensus prompt shows: by a declared variant's templates where one wrote
    it, else by the study's line labels (regexes, tolerant of extra text)."""
    for reader in _variant_readers():
        found = reader.state.search(prompt.last_user)
        if found is not None:
            return _read_variant(prompt, reader, found)
    texts = (prompt.last_user.lower(), prompt.full.lower())
    preferred = last_match(_PREFERRED, *texts)
    current = last_match(_CURRENT, *texts)
    if preferred is None or current is None:
        missing = "Your preferred colour: red" if preferred is None else "Your current colour: blue"
        raise PromptNotUnderstood(
            f"the consensus prompt has no line like {missing!r}; the rule behaviours read "
            "'Your preferred colour', 'Your current colour', 'Your neighbours' current colours' "
            "and 'Round: t of T' lines")
    ids: list[int] = []
    colours: list[str] = []
    neighbours = last_match(_NEIGHBOURS, *texts)
    if neighbours is not None:
        for node, colour in _NEIGHBOUR_PAIR.findall(neighbours.group(1)):
            ids.append(int(node))
            colours.append(colour)
    round_match = last_match(_ROUND, *texts)
    round_now, round_limit = (int(round_match.group(1)), int(round_match.group(2))) if round_match else (0, 0)
    communication = last_match(_COMMUNICATION, *texts)
    agent = last_match(_AGENT_ID, texts[0])
    diary = last_match(_DIARY, prompt.last_user, prompt.full)
    _, inbox = _last_round_messages(prompt.last_user)
    return ConsensusObservation(
        agent_id=int(agent.group(1)) if agent else -1,
        round=round_now,
        preference=preferred.group(1),  # type: ignore[arg-type]
        colour=current.group(1),  # type: ignore[arg-type]
        neighbour_ids=tuple(ids),
        neighbour_colours=tuple(colours),  # type: ignore[arg-type]
        communication=communication.group(1) if communication else "none",
        direct_messages=last_match(_PRIVATE, *texts) is not None,
        message_replaces_move=last_match(_ALONGSIDE, texts[1]) is None,
        rounds_left=max(round_limit - round_now, 0),
        max_rounds=round_limit,
        diary="" if diary is None or diary.group(1) == "(empty)" else diary.group(1),
        inbox=inbox,
    )


#: malformed consensus answers: none of them parses as JSON
_CONSENSUS_MALFORMED = (
    '{"colour": "{c}", "reason": "I think',
    "I will choose {c} this round.",
    '{"colour": purple}',
    "colour={c}",
)


class _ConsensusBehaviour(Behaviour):
    json_answer = True
    uses_rng = True
    schema_aliases = {"color": "colour"}  # a schema's American spelling reads the answer's key

    def malformed(self, prompt: PromptView, rng: random.Random) -> str:
        return rng.choice(_CONSENSUS_MALFORMED).replace("{c}", rng.choice(("red", "blue")))


class RuleBehaviour(_ConsensusBehaviour):
    """Answers the consensus prompt as one of the project's rule policies would."""

    def __init__(self, policy_spec: str, params: dict[str, str], model: str):
        given = set(params)
        self.talk = probability_param(params, "talk", 0.3, model)
        self.dm = probability_param(params, "dm", 0.3, model)
        name, _, inline = policy_spec.partition(":")
        pieces = [p for p in inline.split(",") if p] + [f"{k}={v}" for k, v in params.items()]
        params.clear()  # every other parameter is the policy's: it refuses those it lacks
        spec = name + (":" + ",".join(pieces) if pieces else "")
        try:
            self.policy: Policy = make_policy(spec, game="consensus")
        except PolicyError as exc:
            if name not in available_policies("consensus"):
                raise BehaviourNotFound(str(exc)) from None
            raise LoopbackError(f"model {model!r}: {exc}") from None
        if self.policy.is_async:
            raise LoopbackError(f"model {model!r}: {name!r} is not a rule policy; "
                                "the loopback endpoint answers only as rule policies")
        if getattr(self.policy, "reads_messages", False) and "talk" not in given:
            self.talk = 0.0  # a talking policy decides when it talks: no chatter added
        self.kind = f"rule:{name}"

    def answer(self, prompt: PromptView, rng: random.Random | None) -> dict[str, Any]:
        assert rng is not None
        obs = read_consensus_prompt(prompt)
        decision = self.policy.decide(obs, rng)
        colour = decision.colour
        n_blue = sum(c == "blue" for c in obs.neighbour_colours)
        n_red = len(obs.neighbour_colours) - n_blue
        message, message_to = decision.message, decision.message_to
        may_broadcast = obs.communication in ("local", "global")
        if message is None and (may_broadcast or obs.direct_messages) and rng.random() < self.talk:
            private = obs.direct_messages and obs.neighbour_ids and (
                not may_broadcast or rng.random() < self.dm)
            if private:
                message_to = obs.neighbour_ids[int(rng.random() * len(obs.neighbour_ids))]
                message = f"Neighbour {message_to}, I hold {colour}; please switch to {colour}."
            elif colour == obs.colour:
                message = f"I am staying {colour}; please switch to {colour}."
            else:
                message = f"I am switching to {colour}; let us all pick {colour}."
        if not obs.direct_messages:
            message_to = None
        kept = "kept" if colour == obs.colour else "switched to"
        diary = decision.diary or f"Round {obs.round}: {kept} {colour}; neighbours {n_red} red, {n_blue} blue."
        move = {"colour": colour, "reason": decision.reason or (
            f"{self.policy.spec()}: {n_red} red and {n_blue} blue neighbours, so {colour}"), "diary": diary}
        if message is None or obs.communication == "none":
            return move  # a move, and no message key (the study's schema has no null message)
        said = {"message": message, **({"message_to": message_to} if message_to is not None else {})}
        if obs.message_replaces_move:
            return {**said, "diary": diary}  # the other form: a message instead of a move, no colour
        return {**move, **said}


class RandomBehaviour(_ConsensusBehaviour):
    """A fair coin as a consensus answer; needs no particular prompt."""

    kind = "random"

    def answer(self, prompt: PromptView, rng: random.Random | None) -> dict[str, Any]:
        assert rng is not None
        colour = "blue" if rng.random() < 0.5 else "red"
        return {"colour": colour, "reason": "a coin flip (loopback stand-in)", "diary": f"flipped a coin: {colour}"}


def _rule_listing() -> dict[str, str]:
    return {f"rule:{name}": f"consensus rule policy: {summary}"
            for name, summary in available_policies("consensus").items() if name != "llm"}


register_behaviour("rule:", RuleBehaviour, "a consensus rule policy: rule:NAME?param=value",
                   listing=_rule_listing)
register_behaviour("random", RandomBehaviour, "a random consensus JSON answer")
