"""SIGN, the schema-induced naming game, as a Mesa model.

Each round the agents are paired (``all``: shuffled into disjoint pairs, with odd N
one sits out; ``one``: a single random pair), every paired agent speaks through its
speaker (a rule speaker or an LLM), the decoder maps each message to a lexicon name or
None, and only then do all pairs update (synchronous rounds; a round's LLM calls are in
flight together).

Update, for each agent of a pair, after both have spoken:

1. it records the partner's decoded name in its FIFO memory of the last K partner names
   (K = 0 means no memory at all; a None is never recorded);
2. if both decoded names are the same valid name, it keeps its current name (win-stay);
3. otherwise, if the partner's decoded name is valid, it adopts it with probability
   ``alpha`` (lose-shift); an agent that does not adopt takes the most frequent name in
   its memory (ties: lowest index), or keeps its current name when its memory is empty.

Choices where the study is silent (recorded in the manifest): memory is written before the
update reads it (so the name just heard counts); two None names are not a match; the
alpha coin is drawn only when the partner's name is valid, in pair order, agent order.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Mapping, Sequence
from typing import Any

import mesa

from llm_mesa.mesa_versions import game_ended, seed_streams, track_rounds
from llm_mesa.parameters import ParameterError
from llm_mesa.policy import Policy, PolicyError, make_policy
from llm_mesa.rounds import PolicyAgent, play_round

from . import game as _game  # noqa: F401  (its catalogue names the policies built by name here, llm included)
from . import metrics
from . import speakers as _speakers  # noqa: F401  (registers the rule speakers the model names)
from .observation import OUTCOMES, NamingConfigError, NamingObservation, Utterance, name_index
from .observation import lexicon as make_lexicon
from .parameters import PARAMETERS
from .prompts import TEMPLATES

_DEFAULTS = PARAMETERS.defaults()
PAIRINGS: tuple[str, ...] = PARAMETERS["pairing"].choices
DEFAULT_MAX_ROUNDS: int = _DEFAULTS["max_rounds"]

SpeakerSpec = str | Policy


def memory_majority(memory: Sequence[str]) -> str | None:
    """The most frequent name in ``memory`` (ties: lowest lexicon index), None if empty."""
    if not memory:
        return None
    counts = Counter(memory)
    return min(counts, key=lambda n: (-counts[n], name_index(n)))


def next_name(current: str, own_said: str | None, partner_said: str | None,
              memory: Sequence[str], adopt: bool) -> str:
    """The SIGN update for one agent (memory already holds the partner's name).

    ``adopt`` is the outcome of the alpha coin; it is ignored when the partner's name is
    None (a None is never adopted).
    """
    if own_said is not None and own_said == partner_said:
        return current
    if partner_said is not None and adopt:
        return partner_said
    return memory_majority(memory) or current


class NamingAgent(PolicyAgent):
    """One player: a current name, a window of partner names, and a speaker (its policy)."""

    def __init__(self, model: "NamingModel", name: str, speaker: Policy, memory_size: int):
        super().__init__(model)
        self.name = name
        self.policy = speaker
        self.memory: deque[str] = deque(maxlen=memory_size)
        self.memory_size = memory_size
        self.utterance: Utterance | None = None
        self.last_said: str | None = None
        self.partner: NamingAgent | None = None

    def observe(self) -> NamingObservation:
        model = self.model
        return NamingObservation(self.unique_id, model.round + 1, self.name, model.mode,
                                 model.lexicon, tuple(self.memory), game_key=model.game_key, prompt=model.prompt)

    @property
    def speaker(self) -> Policy:
        return self.policy

    def advance(self) -> None:
        """The SIGN update, once both partners have spoken (their utterances are ``pending``)."""
        said, heard = self.pending.name, self.partner.pending.name
        self.utterance = self.pending
        self.last_said = said
        self.remember(heard)
        self.name = next_name(self.name, said, heard, self.memory, self.model.adopts(said, heard))

    def remember(self, heard: str | None) -> None:
        """Record a partner's decoded name; K = 0 keeps nothing, None is never kept."""
        if heard is not None and self.memory_size > 0:
            self.memory.append(heard)


class NamingModel(mesa.Model):
    """The SIGN naming game (part B of the specification).

    Parameters: ``n`` agents; ``mode`` ``"nl"`` (K = 0), ``"nl-sw"`` (K > 0) or
    ``"schema"``; ``memory`` K; ``alpha`` lose-shift probability; ``pairing``
    ``"all"``/``"one"``; ``speaker`` one spec or policy for all, or one per agent
    (e.g. a 6 + 6 mixed population); ``lexicon_size`` M; ``max_rounds``;
    ``stop_at_consensus`` ends the run once every agent holds one name (off by default:
    the study always plays its rounds); ``prompt`` the wording LLM speakers get (a variant
    of ``prompts.TEMPLATES`` or ``file:PATH``); ``rng`` the seed of everything random.
    """

    def __init__(self, n: int = _DEFAULTS["n"], mode: str = _DEFAULTS["mode"], memory: int | None = None,
                 alpha: float = _DEFAULTS["alpha"], pairing: str = _DEFAULTS["pairing"],
                 speaker: SpeakerSpec | Sequence[SpeakerSpec] = "echo",
                 lexicon_size: int = _DEFAULTS["lexicon_size"], max_rounds: int = DEFAULT_MAX_ROUNDS,
                 stop_at_consensus: bool = False, convergence_basis: str | None = None,
                 prompt: str = _DEFAULTS["prompt"], rng: int | None = None):
        if isinstance(rng, int) and rng < 0:
            raise NamingConfigError(f"the seed must be a non-negative integer (got {rng})")
        checked = validate({"n": n, "mode": mode, "memory": memory, "alpha": alpha, "pairing": pairing,
                            "lexicon_size": lexicon_size, "max_rounds": max_rounds,
                            "stop_at_consensus": stop_at_consensus, "convergence_basis": convergence_basis,
                            "prompt": prompt})
        super().__init__(rng=rng)
        #: the seed of ``self.random`` (its own stream on every Mesa version): the one given, or
        #: (unseeded) one drawn from OS entropy, so an unseeded game is still named (and replayed) by it
        self.seed: int = seed_streams(self, rng)
        #: the game's clock: rounds played (Mesa 4 keeps no step count)
        self.round = 0
        self.n, self.mode, self.alpha, self.pairing = (checked[k] for k in ("n", "mode", "alpha", "pairing"))
        self.memory_size: int = checked["memory"]
        self.lexicon = make_lexicon(checked["lexicon_size"])
        self.max_rounds: int = checked["max_rounds"]
        self.stop_at_consensus: bool = checked["stop_at_consensus"]
        self.convergence_basis: str = checked["convergence_basis"]
        self.prompt: str = checked["prompt"]
        # the prompt enters the key only away from the study's (games recorded before variants keep theirs), a
        # template file by its content (a copy restored elsewhere replays)
        template = TEMPLATES.load(self.prompt)
        self.game_key = (f"naming|n={self.n}|mode={self.mode}|k={self.memory_size}|alpha={self.alpha}"
                         f"|pairing={self.pairing}|m={len(self.lexicon)}|seed={self.seed}"
                         + ("" if self.prompt == _DEFAULTS["prompt"] else
                            f"|prompt=file:{template.hash}" if template.is_file else f"|prompt={self.prompt}"))
        speakers = self._speakers(speaker)
        for index in range(self.n):
            NamingAgent(self, self.random.choice(self.lexicon), speakers[index], self.memory_size)
        self.players: list[NamingAgent] = list(self.agents)
        #: one row per agent and round (round 0: the names drawn): the ``agents`` table (``agents_frame``)
        self.agent_rows: list[tuple] = [(0, a.unique_id, a.name, None, None, None) for a in self.players]
        #: one speaker object for everyone (per-speaker sums are then the game's own)
        self.single_speaker = all(agent.speaker is self.players[0].speaker for agent in self.players)
        self.round_stats: dict[str, Any] = metrics.empty_round(self)
        self.totals = metrics.Totals()
        self.datacollector = mesa.DataCollector(
            model_reporters={key: _reporter(key) for key in metrics.ROUND_COLUMNS})
        track_rounds(self)  # Mesa 4's data recorders may record the rounds beside the DataCollector
        self.running = True

    # ----------------------------------------------------------------- set-up
    def _speakers(self, speaker: SpeakerSpec | Sequence[SpeakerSpec]) -> list[Policy]:
        specs = [speaker] * self.n if isinstance(speaker, (str, Policy)) else list(speaker)
        if len(specs) != self.n:
            raise NamingConfigError(f"{len(specs)} speakers given for {self.n} agents; give one or exactly n")
        built: dict[str, Policy] = {}
        out: list[Policy] = []
        for spec in specs:
            if isinstance(spec, Policy):
                policy = spec
            else:
                try:
                    policy = built.get(spec) or make_policy(spec, game="naming")
                except PolicyError as exc:
                    raise NamingConfigError(str(exc)) from None
                built[spec] = policy
            if policy.game != "naming":
                raise NamingConfigError(f"policy {policy.spec()!r} plays the {policy.game} game, not naming")
            out.append(policy)
        return out

    # ----------------------------------------------------------------- a round
    def draw_pairs(self) -> list[tuple[NamingAgent, NamingAgent]]:
        """This round's pairs, from the model's rng."""
        if self.pairing == "one":
            a, b = self.random.sample(self.players, 2)
            return [(a, b)]
        order = list(self.players)
        self.random.shuffle(order)
        return [(order[i], order[i + 1]) for i in range(0, len(order) - 1, 2)]

    def step(self) -> None:
        pairs = self.draw_pairs()
        speakers = [agent for pair in pairs for agent in pair]
        for agent in self.players:
            agent.utterance = agent.pending = agent.partner = None
        for a, b in pairs:
            a.partner, b.partner = b, a
        # all speak (LLM calls together), every utterance is checked, and only then do all update
        utterances = play_round(speakers, self.random, advance=False)
        for agent, utterance in zip(speakers, utterances, strict=True):
            if utterance.__class__ is not Utterance and not isinstance(utterance, Utterance):
                raise TypeError(f"speaker {agent.speaker.spec()!r} gave no utterance for agent {agent.unique_id} "
                                f"in round {self.round + 1} (got {type(utterance).__name__}); a naming speaker "
                                "must return an Utterance for every agent it speaks for")
        for agent in speakers:
            agent.advance()
        self.round += 1
        self.agent_rows += [(self.round, a.unique_id, a.name, a.partner.unique_id if a.partner else None,
                             a.utterance.name if a.utterance else None, a.utterance.outcome if a.utterance else None)
                            for a in self.players]
        self.round_stats = metrics.round_stats(self, speakers, len(pairs))
        self.datacollector.collect(self)
        if self.round >= self.max_rounds or (self.stop_at_consensus and self.round_stats["held_share"] == 1.0):
            self.running = False
            game_ended(self)

    def adopts(self, own: str | None, partner: str | None) -> bool:
        if partner is None or (own is not None and own == partner):
            return False
        return self.random.random() < self.alpha

    def run(self) -> "NamingModel":
        """Play until the round limit (or consensus, when asked to stop there)."""
        while self.running:
            self.step()
        return self

    # ----------------------------------------------------------------- results
    def rounds_frame(self):
        """The tidy per-round table (one row per round)."""
        return metrics.rounds_frame(self)

    def agents_frame(self):
        """One row per agent and round: the name it holds after the round (round 0: the one drawn), its partner
        (none: it sat the round out), the name its message was read as (none: it named nothing) and how it was read."""
        import pandas as pd

        frame = pd.DataFrame(self.agent_rows, columns=["round", "agent", "name", "partner", "said", "outcome"])
        return frame.astype({"partner": "Int64", "said": "string", "outcome": "string"})

    def summary(self) -> dict[str, Any]:
        return metrics.summary(self)

    def manifest(self) -> dict[str, Any]:
        return metrics.manifest(self)

    def parameters(self) -> dict[str, Any]:
        speakers = sorted({a.speaker.spec() for a in self.players})
        return {"n": self.n, "mode": self.mode, "memory": self.memory_size, "alpha": self.alpha,
                "pairing": self.pairing, "lexicon_size": len(self.lexicon),
                "max_rounds": self.max_rounds, "stop_at_consensus": self.stop_at_consensus,
                "convergence_basis": self.convergence_basis, "prompt": self.prompt, "speakers": speakers,
                "speaker_counts": dict(Counter(a.speaker.spec() for a in self.players)),
                "seed": self.seed}


def _reporter(key: str):
    return lambda model: model.round_stats[key]


def default_memory(mode: str) -> int:
    """K when none is given: 0 for NL (its definition), 5 otherwise (the study's smaller K)."""
    return 0 if mode == "nl" else 5


def validate(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The game's parameters checked and converted; raises ``NamingConfigError`` naming the fix.

    Types, bounds and choices come from ``PARAMETERS`` (the one definition the command
    line, sweeps and the explorer use too); missing names take their defaults. Then the
    rules that tie parameters together: NL has no memory and NL-SW needs one (memory
    None picks the mode's default K), and the convergence basis defaults by pairing.
    """
    try:
        values = PARAMETERS.validate(parameters, complete=True)
    except ParameterError as exc:
        raise NamingConfigError(str(exc)) from None
    mode, memory = values["mode"], values["memory"]
    if memory is None:
        values["memory"] = default_memory(mode)
    elif mode == "nl" and memory > 0:
        raise NamingConfigError(f"mode nl has no memory (K=0); use mode nl-sw for a window of K={memory}")
    elif mode == "nl-sw" and memory == 0:
        raise NamingConfigError("mode nl-sw needs a memory window K > 0; use mode nl for K=0")
    if values["convergence_basis"] is None:
        values["convergence_basis"] = "said" if values["pairing"] == "all" else "latest"
    return values


__all__ = ["NamingAgent", "NamingModel", "NamingConfigError", "memory_majority", "next_name",
           "OUTCOMES", "PAIRINGS", "validate"]
