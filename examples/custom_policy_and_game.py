"""Write your own policy, and your own small game on the same policy seam.

1. A consensus policy, Granovetter's threshold rule (switch colour once more than
   a share ``q`` of neighbours hold the other), registered by name, so that
   ``ConsensusModel(policy="threshold:q=0.6")`` finds it once this module is imported.
2. A new game, DeGroot averaging on a ring, on the same seam as the built-in games:
   its agents are ``PolicyAgent``s and ``play_round`` has them all observe, decide
   together (LLM policies' calls would be gathered concurrently), then all apply.
   Theory: equal weights keep the mean and shrink the spread to 0; one agent that
   never moves pulls everyone to its value.

    python examples/custom_policy_and_game.py
"""

import random
from dataclasses import dataclass

import mesa

from llm_mesa import seed_streams
from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.models.consensus.observation import ConsensusDecision, other
from llm_mesa.policy import Policy, make_policy, register_policy
from llm_mesa.rounds import PolicyAgent, play_round


@register_policy("threshold", "consensus", "switch once more than a share q of neighbours hold the other colour")
class Threshold(Policy):
    def __init__(self, q: float = 0.5):
        self.q = q

    def params(self):  # what a manifest records, and what spec() writes back
        return {"q": self.q}

    def decide(self, obs, rng: random.Random) -> ConsensusDecision:
        against = sum(c != obs.colour for c in obs.neighbour_colours) / max(len(obs.neighbour_colours), 1)
        return ConsensusDecision(other(obs.colour) if against > self.q else obs.colour)


for q in (0.5, 0.75):
    games = [ConsensusModel(36, "er", policy=f"threshold:q={q}", baseline_permutations=0, rng=s).run() for s in range(10)]
    print(f"threshold q={q}: consensus in {sum(g.summary()['consensus'] for g in games)}/10 Erdos-Renyi games")


@dataclass
class RingView:  # the new game's observation: own value and the two neighbours'
    own: float
    neighbours: tuple[float, float]


@register_policy("degroot", "averaging", "the mean of own and neighbours' values")
class DeGroot(Policy):
    def decide(self, obs: RingView, rng) -> float:
        return (obs.own + sum(obs.neighbours)) / 3


@register_policy("zealot", "averaging", "never moves")
class Zealot(Policy):
    def decide(self, obs: RingView, rng) -> float:
        return obs.own


class RingAgent(PolicyAgent):
    def __init__(self, model, value: float, policy: Policy):
        super().__init__(model)
        self.value, self.policy = value, policy

    def observe(self) -> RingView:  # what it may see: its own value and its two neighbours'
        ring = self.model.ring
        i = ring.index(self)
        return RingView(self.value, (ring[i - 1].value, ring[(i + 1) % len(ring)].value))

    def advance(self) -> None:  # applied only after every agent has decided
        self.value = self.pending


class RingAveraging(mesa.Model):
    def __init__(self, n: int = 12, policies: dict[int, str] | None = None, rng: int = 0):
        super().__init__(rng=rng)
        seed_streams(self, rng)  # self.random from the seed itself: the same game on Mesa 3 and Mesa 4
        self.ring = [RingAgent(self, self.random.uniform(0, 100), make_policy((policies or {}).get(i, "degroot"), game="averaging"))
                     for i in range(n)]

    @property
    def values(self) -> list[float]:
        return [agent.value for agent in self.ring]

    def step(self) -> None:
        play_round(self.ring, self.random)  # all observe, all decide, then all apply


plain, pulled = RingAveraging(rng=4), RingAveraging(policies={0: "zealot"}, rng=4)
start_mean, start_spread, zealot_value = sum(plain.values) / 12, max(plain.values) - min(plain.values), pulled.values[0]
for _ in range(1000):
    plain.step()
    pulled.step()
print(f"ring of 12, DeGroot: mean {start_mean:.4f} -> {sum(plain.values) / 12:.4f}, "
      f"spread {start_spread:.2f} -> {max(plain.values) - min(plain.values):.2e}")
print(f"with a zealot at {zealot_value:.4f}: everyone ends within "
      f"{max(abs(x - zealot_value) for x in pulled.values):.2e} of it")
