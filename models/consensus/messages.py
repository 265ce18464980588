"""Message-content measures: how much agents talk, imitate and relay.

All take the tidy messages table of a game (columns round, sender, to, text).
"""

from __future__ import annotations

import re

import networkx as nx
import numpy as np
import pandas as pd

_WORD = re.compile(r"[a-z0-9]+")
_NODE_MENTION = re.compile(r"\b(?:node|player|agent|neighbou?r)\s*#?\s*(\d+)\b", re.IGNORECASE)


def normalise(text: str) -> str:
    """Lower case words only: two messages that differ in punctuation are one template."""
    return " ".join(_WORD.findall(text.lower()))


def ngrams(text: str, n: int = 3) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    if len(words) < n:
        return {tuple(words)} if words else set()
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def messages_per_round(messages: pd.DataFrame, rounds: int) -> pd.DataFrame:
    """Messages and private messages sent in each round 1..rounds (zeros included)."""
    index = pd.RangeIndex(1, rounds + 1, name="round")
    total = messages.groupby("round").size().reindex(index, fill_value=0)
    private = messages[messages["to"].notna()].groupby("round").size().reindex(index, fill_value=0)
    return pd.DataFrame({"messages": total, "private_messages": private}).reset_index()


def distinct_share_per_round(messages: pd.DataFrame) -> pd.Series:
    """Per round: distinct normalised texts / messages (1 = all different, low = copying)."""
    norm = messages.assign(norm=messages["text"].map(normalise))
    return norm.groupby("round")["norm"].agg(lambda s: s.nunique() / len(s)).rename("distinct_share")


def template_similarity_per_round(messages: pd.DataFrame, n: int = 3) -> pd.Series:
    """Per round: mean pairwise Jaccard similarity of word n-gram sets across senders.

    Rising values mean messages converge to a few templates (imitation).
    """
    return messages.groupby("round")["text"].agg(lambda texts: mean_jaccard([ngrams(t, n) for t in texts]))\
        .rename("template_similarity")


#: rows of the pairwise intersection matrix computed at once (bounds its memory for rounds of many messages)
_BLOCK = 1024


def mean_jaccard(grams: list[set]) -> float:
    """The mean Jaccard similarity over all pairs of sets in which at least one is non-empty (NaN: no pair).

    As one sparse product, intersections = M @ M.T over a sets-by-n-grams incidence matrix:
    a round of 500 relay messages has 124,750 pairs, which a loop over pairs took 9 s to visit.
    """
    from scipy import sparse

    vocabulary: dict = {}
    rows = [[vocabulary.setdefault(g, len(vocabulary)) for g in s] for s in grams]
    sizes = np.array([len(r) for r in rows], dtype=np.float64)
    k = len(rows)
    if k < 2:
        return float("nan")
    incidence = sparse.csr_array((np.ones(int(sizes.sum())), np.concatenate([r for r in rows if r] or [[]]).astype(np.int64),
                                  np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)),
                                 shape=(k, max(len(vocabulary), 1)))
    total, pairs = 0.0, 0
    for start in range(0, k, _BLOCK):
        block = (incidence[start:start + _BLOCK] @ incidence.T).toarray()
        i, j = np.triu_indices(k, 1)
        keep = (i >= start) & (i < start + _BLOCK)
        i, j = i[keep], j[keep]
        union = sizes[i] + sizes[j] - block[i - start, j]
        valid = union > 0
        total += float((block[i - start, j][valid] / union[valid]).sum())
        pairs += int(valid.sum())
    return total / pairs if pairs else float("nan")


def relayed_mentions(messages: pd.DataFrame, graph: nx.Graph) -> pd.DataFrame:
    """Messages that mention a node that is neither the sender nor its neighbour.

    Such a mention relays the state of a remote part of the network. Returns one
    row per (message, remote node mentioned).
    """
    rows = []
    for m in messages.itertuples(index=False):
        near = set(graph.neighbors(m.sender)) | {m.sender}
        for node in {int(x) for x in _NODE_MENTION.findall(m.text)}:
            if node in graph and node not in near:
                rows.append({"round": m.round, "sender": m.sender, "remote_node": node})
    return pd.DataFrame(rows, columns=["round", "sender", "remote_node"])


def message_summary(messages: pd.DataFrame, graph: nx.Graph, rounds: int) -> dict[str, float]:
    """One-row summary of a game's messages (None where undefined: JSON-friendly, equal to itself)."""
    if messages.empty:
        return {"messages": 0, "private_messages": 0, "distinct_share": None,
                "template_similarity": None, "relayed_mentions": 0}
    def mean_or_none(series: pd.Series) -> float | None:
        value = series.mean()
        return None if pd.isna(value) else float(value)

    return {
        "messages": int(len(messages)),
        "private_messages": int(messages["to"].notna().sum()),
        "distinct_share": mean_or_none(distinct_share_per_round(messages)),
        "template_similarity": mean_or_none(template_similarity_per_round(messages)),
        "relayed_mentions": int(len(relayed_mentions(messages, graph))),
    }
