"""Rule baselines that talk: communication with a rule counterpart, so that "information sharing" and
"the model" can be told apart.

In the study's game a message replaces the move, so a talking agent alternates talking and
moving. Both policies keep what they know in their diary (the private memory every agent has)
and pass it on in messages of a fixed, readable form; they read only messages of that form
and ignore any other (an LLM's words). Each decides from at most one uniform draw a round
(``StreamPolicy``): with no communication neither ever talks, and each plays the game its
silent counterpart, majority-with-inertia, plays from the same seed (tested).

``relay`` (``inertia``, ``relay_every``): in round 1 it messages its own colour and the colours
it sees; from round 2 on it moves towards the majority of everything it knows (the colours of
its neighbours now, and every colour reported in a message it sent or received, the newest
report of each node kept, none older than the game's ``history`` window: the memory an LLM
agent is given, so that memory length has a rule counterpart), keeping its colour with
probability ``inertia``; and every
``relay_every`` rounds (default 2: it alternates talking and moving; 0: never again) it talks
instead, passing on all it knows, which is how knowledge travels under local communication
(on the study's grid at ``inertia=0``, caveman with local messages reached consensus in 21 of
30 games at 2, against 12 at 3 and 3 at 5: knowledge older than the window is forgotten, so it
must cross the 9 cliques within it; BA and WS reached it in every game at each). A tie goes to the colour of the
lowest-numbered node known by report, one rule all relay agents share (with nothing reported,
it keeps its colour). Theory: under global communication every relay agent knows every colour
after round 1, so with ``inertia=0`` all move to the same colour in round 2.

``announce`` (``inertia``): it messages the colour it intends to hold, and follows the majority
of the intentions it has heard (its own included; a tie: the lowest-numbered announcer's),
announcing again, instead of moving, whenever its intention changes. Knowledge never travels
further than one hop: it separates commitment from relaying. Under global communication with
``inertia=0`` every game ends within 3 rounds (announce, re-announce, move).
"""

from __future__ import annotations

import random
import re

from llm_mesa.policy import register_policy

from .observation import ConsensusDecision, ConsensusObservation
from .policies import StreamPolicy, _check_probability

_GROUP = re.compile(r"@(\d+) ((?:(?:blue|red):[\d,]+\s*)+)")
_INTENT = re.compile(r"I intend to hold (blue|red)\b")
_HEARD = re.compile(r"(blue|red):([\d,]+)")

Knowledge = dict[int, tuple[str, int]]  # node -> (colour, round in which it was seen)


def format_knowledge(known: Knowledge) -> str:
    """``@3 blue:1,2,5 red:0,4; @1 blue:9``: colours by the round they were seen in, newest first."""
    groups: dict[int, dict[str, list[int]]] = {}
    for node, (colour, seen) in sorted(known.items()):
        groups.setdefault(seen, {}).setdefault(colour, []).append(node)
    return "; ".join(f"@{seen} " + " ".join(f"{c}:{','.join(map(str, nodes))}" for c, nodes in sorted(by.items()))
                     for seen, by in sorted(groups.items(), reverse=True))


def parse_knowledge(*texts: str) -> Knowledge:
    """What relay texts report (``format_knowledge``, anywhere in them), the newest report of each node;
    anything else in them is ignored."""
    groups = sorted(((int(seen), colour, nodes) for text in texts for seen, colours in _GROUP.findall(text)
                     for colour, nodes in _HEARD.findall(colours)), key=lambda g: g[0])
    known: Knowledge = {}
    for seen, colour, nodes in groups:  # oldest first: a newer report of a node replaces an older one
        known.update(dict.fromkeys(map(int, filter(None, nodes.split(","))), (colour, seen)))
    return known


def _merge(known: Knowledge, node: int, colour: str, seen: int) -> None:
    if node not in known or known[node][1] < seen:
        known[node] = (colour, seen)


def _majority(counts: dict[str, int], tie: str) -> str:
    return "blue" if counts["blue"] > counts["red"] else "red" if counts["red"] > counts["blue"] else tie


@register_policy("relay", "consensus", "talk in round 1 and every relay_every rounds, passing on every colour "
                 "known; otherwise move to the majority of all it knows")
class Relay(StreamPolicy):
    """Talks in round 1 and every ``relay_every`` rounds; otherwise moves to the majority it knows (module doc)."""

    reads_messages = True

    def __init__(self, inertia: float = 0.0, relay_every: int = 2):
        self.inertia = _check_probability("inertia", inertia)
        if isinstance(relay_every, bool) or not isinstance(relay_every, int) or relay_every < 0:
            from llm_mesa.policy import PolicyError

            raise PolicyError(f"relay_every={relay_every!r} must be a whole number >= 0 (0: talk in round 1 only)")
        self.relay_every = relay_every

    def params(self):
        return {"inertia": self.inertia, "relay_every": self.relay_every}

    def talks(self, obs: ConsensusObservation) -> bool:
        if obs.communication == "none":
            return False
        return obs.round == 1 or (self.relay_every > 0 and (obs.round - 1) % self.relay_every == 0)

    def decide(self, obs: ConsensusObservation, rng: random.Random) -> ConsensusDecision:
        reported = parse_knowledge(obs.diary, *(m.text for m in obs.inbox))  # what it said and heard
        oldest = obs.round - obs.history_rounds  # it remembers what an LLM agent is shown: the game's window
        reported = {node: entry for node, entry in reported.items() if entry[1] >= oldest}
        known = dict(reported)
        for node, colour in zip(obs.neighbour_ids, obs.neighbour_colours):
            _merge(known, node, colour, obs.round)  # what it sees now
        draw = rng.random()
        if self.talks(obs):
            _merge(known, obs.agent_id, obs.colour, obs.round)
            said = format_knowledge(known)
            counts = {c: sum(v[0] == c for v in known.values()) for c in ("red", "blue")}
            return ConsensusDecision(obs.colour, message=f"I hold {obs.colour}; I know {counts['blue']} blue, "
                                                         f"{counts['red']} red: {said}", diary=said)
        diary = format_knowledge(known if reported else {})
        if draw < self.inertia or not known:
            return ConsensusDecision(obs.colour, diary=diary)
        counts = {c: sum(v[0] == c for v in known.values()) for c in ("red", "blue")}
        tie = reported[min(reported)][0] if reported else obs.colour
        return ConsensusDecision(_majority(counts, tie), diary=diary)


def _intentions(text: str) -> dict[int, str]:
    """``announced blue; heard blue:1,5 red:3`` -> {node: colour} of the announcements heard."""
    heard: dict[int, str] = {}
    _, _, rest = text.partition("heard ")
    for colour, nodes in _HEARD.findall(rest):
        heard.update({int(node): colour for node in filter(None, nodes.split(","))})
    return heard


@register_policy("announce", "consensus", "announce the colour it intends to hold; follow the announced majority, "
                 "announcing again when its intention changes")
class Announce(StreamPolicy):
    """Announces its intended colour and follows the announced majority (module doc)."""

    reads_messages = True

    def __init__(self, inertia: float = 0.0):
        self.inertia = _check_probability("inertia", inertia)

    def params(self):
        return {"inertia": self.inertia}

    def decide(self, obs: ConsensusObservation, rng: random.Random) -> ConsensusDecision:
        draw = rng.random()
        if obs.communication == "none":  # nothing is ever announced: the neighbourhood majority, ties kept
            counts = {c: obs.neighbour_colours.count(c) for c in ("red", "blue")}
            keep = draw < self.inertia or not obs.neighbour_colours
            return ConsensusDecision(obs.colour if keep else _majority(counts, obs.colour))
        own = re.match(r"announced (blue|red)", obs.diary)
        heard = _intentions(obs.diary)
        for message in obs.inbox:
            said = _INTENT.search(message.text)
            if said:
                heard[message.sender] = said.group(1)
        if own is None:  # round 1 (or a diary it did not write): announce where it stands
            return self._announce(obs.colour, heard)
        everyone = {**heard, obs.agent_id: own.group(1)}
        counts = {c: sum(v == c for v in everyone.values()) for c in ("red", "blue")}
        intention = _majority(counts, everyone[min(everyone)])
        if intention != own.group(1):
            return self._announce(intention, heard, keep=obs.colour)
        diary = self._diary(intention, heard)
        return ConsensusDecision(obs.colour if draw < self.inertia else intention, diary=diary)

    def _announce(self, intention: str, heard: dict[int, str], keep: str | None = None) -> ConsensusDecision:
        return ConsensusDecision(keep or intention, message=f"I intend to hold {intention}.",
                                 diary=self._diary(intention, heard))

    @staticmethod
    def _diary(intention: str, heard: dict[int, str]) -> str:
        groups = {c: ",".join(str(v) for v in sorted(n for n, col in heard.items() if col == c)) for c in ("blue", "red")}
        return f"announced {intention}; heard " + " ".join(f"{c}:{nodes}" for c, nodes in groups.items() if nodes)


__all__ = ["Announce", "Relay", "format_knowledge", "parse_knowledge"]
