"""Analysis: the statistics of the two studies over tidy game tables (see ``statistics``)."""

from llm_mesa.analysis.statistics import (
    AnalysisError,
    component_tests,
    firth_consensus_regression,
    majority_following,
    naming_summary,
    stubbornness_vs_consensus,
    transitions_from_rounds,
)

__all__ = [
    "AnalysisError",
    "component_tests",
    "firth_consensus_regression",
    "majority_following",
    "naming_summary",
    "stubbornness_vs_consensus",
    "transitions_from_rounds",
]
