"""General estimators over tidy tables (one row per game, per transition or per run).

Each takes a pandas DataFrame, checks that it can answer the question (columns
present, outcomes that vary, enough groups) and hands the work to an
established library; bad input raises :class:`AnalysisError`, a ``ValueError``
whose one-line message names the fix.

* :func:`firth_logit`: Firth-penalised logistic regression (``firthmodels``, as
  R's logistf), with the LR test, McFadden's pseudo-R² and profile intervals;
* :func:`mixed_logit`: logistic regression with random intercepts (statsmodels
  ``BinomialBayesMixedGLM``, variational Bayes);
* :func:`rank_tests`: Kruskal-Wallis across conditions and Mann-Whitney against
  a baseline (``scipy.stats``);
* :func:`point_biserial`: point-biserial correlation (``scipy.stats``).

A study's own questions (columns, default formulas, its report of
``llm-mesa analyze``) live with its game (``Game.extensions.analysis``). What a
game's own report is built from is exported too: :class:`Panel` (a figure beside
its table) and :func:`drawn`, :func:`wilson_interval`, the ``figures`` helpers
(SVG with nothing to fetch) and the ``generic`` report any game gets, to extend.
"""

from llm_mesa.analysis import figures, generic
from llm_mesa.analysis.checks import AnalysisError, require_synchronous
from llm_mesa.analysis.firth import FirthRegressionResult, firth_logit
from llm_mesa.analysis.mixed_logit import MixedLogitResult, mixed_logit
from llm_mesa.analysis.point_biserial import PointBiserialResult, point_biserial
from llm_mesa.analysis.proportions import wilson_interval
from llm_mesa.analysis.rank_tests import RankTestsResult, rank_tests
from llm_mesa.analysis.report_html import Panel, drawn

__all__ = [
    "AnalysisError",
    "FirthRegressionResult",
    "MixedLogitResult",
    "Panel",
    "PointBiserialResult",
    "RankTestsResult",
    "drawn",
    "figures",
    "firth_logit",
    "generic",
    "mixed_logit",
    "point_biserial",
    "rank_tests",
    "require_synchronous",
    "wilson_interval",
]
