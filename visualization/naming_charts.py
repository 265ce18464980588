"""The naming game's charts, from its per-round table: shared by the live page and the sweep replay.

Every chart fits its cell (``width: container``) and spans every round played,
the latest included: areas are drawn linearly between rounds (a step-after area
gave the last round no width, so it never showed), and the x axis runs to the
last round. A ``current_round`` rule marks the round a replay shows.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from llm_mesa.models.naming.metrics import THRESHOLDS
from llm_mesa.models.naming.observation import OUTCOMES, name_index

AGREEMENT_SERIES = {
    "agreement": "said this round (headline)",
    "held_share": "holding the most common name",
    "agreement_latest": "latest name said by each agent",
}
#: Fixed colours per decoding outcome: the schema's successes green, failures warm.
OUTCOME_COLOURS = {"schema": "#2ca02c", "retry": "#bcbd22", "salvage": "#ff7f0e", "text": "#1f77b4",
                   "none": "#d62728"}
SVG = {"embedOptions": {"renderer": "svg", "actions": False}}  # SVG: browser tests can count the marks


def _rounds(source) -> pd.DataFrame:
    return source.rounds_frame() if hasattr(source, "rounds_frame") else source


def agreement_frame(source) -> pd.DataFrame:
    """Long table (round, series, value) of the agreement measures, one row per round and series."""
    rounds = _rounds(source)
    long = rounds.melt(id_vars="round", value_vars=list(AGREEMENT_SERIES), var_name="series", value_name="value")
    long["series"] = long["series"].map(AGREEMENT_SERIES)
    return long.astype({"round": int, "value": float})


def outcomes_frame(source) -> pd.DataFrame:
    """Long table (round, outcome, utterances) of how each round's messages were decoded."""
    rounds = _rounds(source)[["round", *(f"outcome_{o}" for o in OUTCOMES)]]
    long = rounds.melt(id_vars="round", value_vars=[f"outcome_{o}" for o in OUTCOMES],
                       var_name="outcome", value_name="utterances")
    long["outcome"] = long["outcome"].str.removeprefix("outcome_")
    return long.astype({"round": int, "utterances": int})


def round_axis(last_round: int) -> alt.X:
    return alt.X("round:Q", title="round", scale=alt.Scale(domain=[0, max(int(last_round), 1)], nice=False),
                 axis=alt.Axis(format="d", tickMinStep=1))


def _with_marker(chart, last_round: int, current_round: int | None):
    if current_round is None:
        return chart
    rule = alt.Chart(pd.DataFrame({"round": [int(current_round)]})).mark_rule(
        color="#ff7f0e", strokeWidth=2, strokeDash=[5, 3]).encode(x=round_axis(last_round))
    return alt.layer(chart, rule)


def agreement_chart(source, last_round: int | None = None, current_round: int | None = None) -> alt.TopLevelMixin:
    data = agreement_frame(source)
    last = int(data["round"].max()) if last_round is None and len(data) else int(last_round or 0)
    if hasattr(source, "steps"):
        last = source.steps
    lines = alt.Chart(data).mark_line(point=len(data) <= 900).encode(
        x=round_axis(last), y=alt.Y("value:Q", title="share of N", scale=alt.Scale(domain=[0, 1], nice=False)),
        color=alt.Color("series:N", title=None, sort=list(AGREEMENT_SERIES.values()),
                        legend=alt.Legend(orient="bottom", columns=1, labelLimit=300)),
        strokeWidth=alt.condition(alt.datum.series == AGREEMENT_SERIES["agreement"], alt.value(4), alt.value(1.8)),
        tooltip=["round", "series", alt.Tooltip("value:Q", format=".3f")])
    marks = alt.Chart(pd.DataFrame({"level": list(THRESHOLDS)})).mark_rule(
        color="#999999", strokeDash=[3, 3]).encode(y="level:Q")
    return (_with_marker(alt.layer(marks, lines), last, current_round).properties(
        width="container", height=170,
        title=alt.Title("Population agreement per round", subtitle="dashed: the 50/60/70% thresholds"))
        .properties(usermeta=SVG))


def names_chart(names: pd.DataFrame, lexicon: list[str], n: int, last_round: int,
                current_round: int | None = None) -> alt.TopLevelMixin:
    """Agents holding each name after each round (``names``: round, name, agents)."""
    order = sorted(lexicon, key=name_index)
    chart = (alt.Chart(names).mark_area(interpolate="linear").encode(
        x=round_axis(last_round), y=alt.Y("agents:Q", stack="zero", title="agents holding it",
                                          scale=alt.Scale(domain=[0, n], nice=False)),
        color=alt.Color("name:N", title="name", sort=order, scale=alt.Scale(domain=order, scheme="tableau20"),
                        legend=alt.Legend(orient="bottom", columns=6, symbolType="square")),
        order=alt.Order("name_order:Q"),
        tooltip=["round", "name", "agents"])
        .transform_calculate(name_order="toNumber(slice(datum.name, 1))"))
    return (_with_marker(chart, last_round, current_round)
            .properties(width="container", height=170, title="Names in use: agents holding each name after the round")
            .properties(usermeta=SVG))


def outcomes_chart(source, last_round: int | None = None, current_round: int | None = None) -> alt.TopLevelMixin:
    data = outcomes_frame(source)
    last = source.steps if hasattr(source, "steps") else int(last_round if last_round is not None
                                                             else (data["round"].max() if len(data) else 0))
    chart = (alt.Chart(data).mark_area(interpolate="linear").encode(
        x=round_axis(last), y=alt.Y("utterances:Q", stack="zero", title="utterances"),
        color=alt.Color("outcome:N", title="decoded by", sort=list(OUTCOMES),
                        scale=alt.Scale(domain=list(OUTCOMES), range=[OUTCOME_COLOURS[o] for o in OUTCOMES]),
                        legend=alt.Legend(orient="bottom", columns=5, symbolType="square")),
        order=alt.Order("outcome_order:Q"),
        tooltip=["round", "outcome", "utterances"])
        .transform_calculate(outcome_order=f"indexof({list(OUTCOMES)!r}, datum.outcome)"))
    return (_with_marker(chart, last, current_round)
            .properties(width="container", height=150,
                        title=alt.Title("Decoding outcomes per round",
                                        subtitle=["schema: first reply parsed; retry: after the reminder;",
                                                  "salvage: free-text fallback; text: NL reply; none: no name"]))
            .properties(usermeta=SVG))


__all__ = ["AGREEMENT_SERIES", "OUTCOME_COLOURS", "agreement_chart", "agreement_frame", "names_chart",
           "outcomes_chart", "outcomes_frame", "round_axis"]
