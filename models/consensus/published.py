"""The consensus study's published numbers (SPEC part A), and which of our games they match.

A published cell is matched by its condition (topology, communication,
preference design, opponent label, private messages, N = 36, synchronous rounds), never by a
condition's name, so a sweep with its own names is compared all the same; a
published model by a pattern on our model's name (e.g. ``Qwen/Qwen2.5-3B-Instruct``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

__all__ = ["OPEN_MODELS", "PER_CONDITION", "condition_matches", "published_conditions", "published_models"]

#: (topology, communication, preferences, label) -> (open-model successes of 180, closed-model successes of 30)
PER_CONDITION: Mapping[tuple[str, str, str, str], tuple[int | None, int | None]] = {
    ("ba", "global", "random", "llm"): (63, None),
    ("ba", "local", "random", "llm"): (0, 30),
    ("ba", "none", "random", "llm"): (1, 28),
    ("er", "local", "random", "llm"): (1, None),
    ("er", "none", "random", "llm"): (19, None),
    ("ba", "local", "minority", "llm"): (26, None),
    ("ws", "local", "random", "llm"): (None, 30),
    ("ws", "none", "random", "llm"): (None, 23),
    ("caveman", "local", "random", "llm"): (None, 18),
    ("caveman", "none", "random", "llm"): (None, 0),
}
#: open models: successes of 360 games each, and a pattern that finds them among our model names
OPEN_MODELS: Mapping[str, tuple[int, str]] = {
    "Llama 3 70B": (9, r"llama.?3.*70b"),
    "Llama 3 8B": (10, r"llama.?3.*\b8b"),
    "Mistral Large 2407": (81, r"mistral.?large"),
    "Qwen 2.5 32B": (3, r"qwen.?2\.?5.*32b"),
    "Qwen 2.5 3B": (59, r"qwen.?2\.?5.*\b3b"),
    "Qwen 2.5 72B": (3, r"qwen.?2\.?5.*72b"),
}
TOTALS = "open models 165/2160 (7.6 %); closed model 129/180; human experiments of this kind: 18 %-95 %"


def _cell(row: Mapping[str, Any]) -> tuple[str, str, str, str] | None:
    if str(row.get("direct_messages", False)) == "True" or int(row.get("n", 36)) != 36:
        return None
    update = row.get("update")
    if isinstance(update, str) and update != "synchronous":  # the study's rounds were synchronous
        return None
    key = tuple(str(row.get(k, d)) for k, d in (("topology", "ba"), ("communication", "none"),
                                                ("preferences", "random"), ("label", "llm")))
    return key if key in PER_CONDITION else None  # type: ignore[return-value]


def condition_matches(games: pd.DataFrame) -> dict[str, tuple[str, str, str, str]]:
    """Our condition names whose games match a published cell, and that cell."""
    out = {}
    for condition, frame in games.groupby("condition", sort=False):
        cell = _cell(frame.iloc[0].to_dict())
        if cell is not None:
            out[str(condition)] = cell
    return out


def published_conditions(games: pd.DataFrame, conditions: Sequence[str]) -> pd.DataFrame:
    """Per matching condition: the published successes beside our pooled ones."""
    matches = condition_matches(games)
    rows = []
    for condition in conditions:
        if condition not in matches:
            continue
        open_, closed = PER_CONDITION[matches[condition]]
        ours = games[games["condition"] == condition]
        rows.append({"condition": condition, "published_open_models": f"{open_}/180" if open_ is not None else "",
                     "published_open_rate": open_ / 180 if open_ is not None else None,
                     "published_closed_model": f"{closed}/30" if closed is not None else "",
                     "published_closed_rate": closed / 30 if closed is not None else None,
                     "ours_all_models": f"{int(ours['consensus'].sum())}/{len(ours)}"})
    return pd.DataFrame(rows)


def published_models(games: pd.DataFrame, models: Sequence[str]) -> pd.DataFrame:
    """Each open model's published successes of 360, beside ours when one of our models matches it."""
    rows = []
    for name, (successes, pattern) in OPEN_MODELS.items():
        ours = [m for m in models if re.search(pattern, m, re.IGNORECASE)]
        frame = games[games["model"].isin(ours)]
        rows.append({"published_model": name, "published": f"{successes}/360", "published_rate": successes / 360,
                     "our_model": ", ".join(ours), "ours": f"{int(frame['consensus'].sum())}/{len(frame)}" if ours else "",
                     "our_rate": float(frame["consensus"].mean()) if len(frame) else None})
    return pd.DataFrame(rows)
