"""Observations that exercise every part of the consensus and naming prompts (shared by the prompt tests).

The fixtures in ``tests/data/prompt_before`` were rendered from these with the code as it was before
prompt variants became an axis: the default's text and hashes must stay byte for byte what they were.
"""

from __future__ import annotations

from llm_mesa.models.consensus.observation import ConsensusObservation, Message, RoundRecord
from llm_mesa.models.naming.observation import NamingObservation, lexicon


def consensus_observations() -> list[ConsensusObservation]:
    """Round 1 of the study's game; a late round with a history of messages, private ones, a cost, the
    "human" label and other payoffs; a game without history; one under sequential turns."""
    heard = [Message(3, 4, "stay blue, 7 is blue too"), Message(7, 4, "I'll switch", to=5)]
    history = [RoundRecord(3, "red", {3: "red", 7: "blue", 9: "red"}, []),
               RoundRecord(4, "red", {3: "blue", 7: "blue", 9: "red"}, heard)]
    return [
        ConsensusObservation(agent_id=0, round=1, preference="red", colour="red", neighbour_ids=(1, 4),
                             neighbour_colours=("blue", "red")),
        ConsensusObservation(agent_id=5, round=5, preference="blue", colour="red", neighbour_ids=(3, 7, 9),
                             neighbour_colours=("blue", "blue", "red"), communication="local", direct_messages=True,
                             label="human", history=history, history_rounds=2, inbox=heard,
                             diary="7 leads; follow the blues", max_rounds=9, n_players=12,
                             payoff_preferred=0.30, payoff_other=0.05, message_cost=0.01),
        ConsensusObservation(agent_id=2, round=3, preference="blue", colour="blue", neighbour_ids=(0, 1, 3),
                             neighbour_colours=("red", "red", "blue"), communication="global",
                             message_replaces_move=False, history_rounds=0, max_rounds=20, n_players=20),
        ConsensusObservation(agent_id=4, round=2, preference="red", colour="blue", neighbour_ids=(2,),
                             neighbour_colours=("red",), history=history[:1], history_rounds=3,
                             update="random-sequential", activation=7, n_players=8),
    ]


def naming_observations() -> list[NamingObservation]:
    """The three modes, a first reply and the Schema retry's."""
    return [NamingObservation(3, 1, "C2", "schema", lexicon()),
            NamingObservation(11, 217, "C12", "schema", lexicon(), attempt=1),
            NamingObservation(0, 5, "C7", "nl", lexicon()),
            NamingObservation(6, 40, "C1", "nl-sw", lexicon(), memory=("C1", "C3"))]
