"""Message-content measures on hand-made message tables."""

import networkx as nx
import pandas as pd

from llm_mesa.models.consensus import messages as mm


def table(rows):
    return pd.DataFrame(rows, columns=["round", "sender", "to", "text"])


def test_counts_per_round_include_silent_rounds():
    msgs = table([(1, 0, None, "go red"), (1, 1, 2, "psst, red"), (3, 2, None, "blue!")])
    counts = mm.messages_per_round(msgs, rounds=3)
    assert counts["messages"].tolist() == [2, 0, 1]
    assert counts["private_messages"].tolist() == [1, 0, 0]


def test_distinct_share_sees_copies_through_punctuation():
    msgs = table([(1, 0, None, "Switch to red!"), (1, 1, None, "switch to red"), (1, 2, None, "I stay blue"),
                  (2, 0, None, "a"), (2, 1, None, "b")])
    share = mm.distinct_share_per_round(msgs)
    assert share[1] == 2 / 3 and share[2] == 1.0


def test_template_similarity_rises_when_agents_copy():
    varied = table([(1, 0, None, "I think we should all pick red now"),
                    (1, 1, None, "blue is what my neighbours hold"),
                    (1, 2, None, "let us wait and see")])
    copied = table([(2, 0, None, "everyone switch to red now please"),
                    (2, 1, None, "everyone switch to red now please"),
                    (2, 2, None, "everyone switch to red now")])
    sim = mm.template_similarity_per_round(pd.concat([varied, copied]))
    assert sim[1] == 0.0
    assert sim[2] > 0.7


def test_relayed_mentions_are_remote_nodes_only():
    g = nx.path_graph(5)  # 0-1-2-3-4
    msgs = table([(1, 0, None, "node 1 is red, and node 4 is blue"),   # 4 is remote for 0
                  (1, 2, None, "Player 3 and player 1 agree"),          # both neighbours of 2
                  (2, 4, None, "agent #0 holds red; node 99 unknown")])  # 0 remote; 99 not a node
    relayed = mm.relayed_mentions(msgs, g)
    assert sorted(map(tuple, relayed[["sender", "remote_node"]].values.tolist())) == [(0, 4), (4, 0)]


def test_summary_of_a_silent_game():
    s = mm.message_summary(table([]), nx.path_graph(3), rounds=5)
    assert s["messages"] == 0 and s["distinct_share"] is None
