"""A message costs `message_cost` of the sender's payoff: stated in the rules, counted in the summary, floored at 0."""

import random

import pytest

from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.models.consensus.observation import ConsensusDecision, ConsensusObservation
from llm_mesa.models.consensus.prompt import ConsensusPrompt
from llm_mesa.policy import Policy


class TalkThenBlue(Policy):
    """Node v sends v % 3 messages (rounds 1..), then everyone turns blue: a consensus on blue."""

    name = "talk-then-blue"

    def decide(self, obs: ConsensusObservation, rng: random.Random) -> ConsensusDecision:
        if obs.round <= obs.agent_id % 3:
            return ConsensusDecision(obs.colour, message=f"round {obs.round}")
        return ConsensusDecision("blue")


@pytest.mark.parametrize("cost", [0.0, 0.01, 0.05, 0.5])
def test_each_message_is_charged_to_its_sender_and_no_payoff_goes_below_zero(cost):
    model = ConsensusModel(12, "ws", communication="local", policy=TalkThenBlue(), message_cost=cost, rng=4,
                           baseline_permutations=0).run()
    summary = model.summary()
    assert summary["consensus"] and summary["winner"] == "blue" and summary["message_cost"] == cost
    sent = [sum(m.sender == v for m in model.message_log) for v in range(12)]
    assert sent == [v % 3 for v in range(12)]
    earned = [0.20 if p == "blue" else 0.15 for p in model.preferences]
    paid = [max(0.0, e - cost * s) for e, s in zip(earned, sent)]
    assert summary["mean_payoff"] == pytest.approx(sum(paid) / 12)
    assert summary["message_charges"] == pytest.approx(sum(e - p for e, p in zip(earned, paid)))
    assert min(paid) >= 0 and (cost < 0.5 or 0.0 in paid)


def test_the_rules_state_the_cost_only_where_messages_can_be_sent():
    def rules(cost, communication):
        obs = ConsensusObservation(agent_id=0, round=1, preference="red", colour="red", neighbour_ids=(1,),
                                   neighbour_colours=("blue",), communication=communication, message_cost=cost)
        return ConsensusPrompt().messages(obs)[0]["content"]

    assert "Each message you send costs £0.05, taken from your payoff" in rules(0.05, "local")
    assert "never goes below £0" in rules(0.05, "global")
    assert "costs" not in rules(0.0, "local") and "costs" not in rules(0.05, "none")
