"""Which rule plays like these agents: a rule's parameters by maximum likelihood from recorded decisions.

The engine knows no game. It is given pairs ``(observation, decision)`` (what an agent saw,
what it chose: a game's ``PolicyCatalog.observed`` reader yields them from a run's tables) and
a rule policy that declares ``distribution(observation) -> {decision: probability}`` and
``fit_parameters`` (name -> (low, high)). The log-likelihood of the decisions is the sum of
the logs of the probabilities the rule gave them.

* **Estimates**: the parameters that maximise it (a grid over the parameters' box, then
  Powell's method from the best point and a coordinate search between grid points, within
  the box; ``scipy.optimize``); a rule's spec
  may fix some (``RULE:NAME=V`` holds NAME at V and estimates the others).
* **Intervals (95 %)**: profile likelihood, {t : 2 (l_max - l_profile(t)) <= chi2_1(0.95)},
  each end found by Brent's root finder. Why not Wald (estimate +- 1.96 / sqrt(observed
  information)): the estimates often sit on the box's edge (inertia 0, an error rate 0),
  where Wald's interval leaves the box and its normal approximation fails, and some
  parameters (a threshold) move the likelihood in steps, whose curvature is 0 almost
  everywhere; the profile needs neither smoothness nor an interior optimum, and does not
  change when a parameter is re-expressed.
* **Trembling hand**: a rule that gives an observed decision probability 0 at every
  parameter value gets one more parameter, ``error_rate`` e: P' = (1 - e) P + e / K over the
  K decisions possible on that observation (the keys of its distribution, with the
  decision observed), so that every log-likelihood and AIC is finite.
* **AIC** = 2 k - 2 l, k the parameters estimated (``error_rate`` included).

Decisions are grouped by what the rule reads of each observation (``distribution_key(observation)``
when the rule gives one, else the observation itself, or its ``repr``), so that the
likelihood costs one ``distribution`` call per distinct situation, not per decision.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from llm_mesa.analysis.checks import AnalysisError
from llm_mesa.policy import Policy, make_policy, parse_policy_spec

__all__ = ["ERROR_RATE", "LEVEL", "Likelihood", "RuleFit", "declares_distribution", "fit_rule"]

#: the trembling hand's parameter
ERROR_RATE = "error_rate"
#: the intervals' coverage
LEVEL = 0.95
#: a probability below this counts as 0 (the objective takes its log without overflow)
FLOOR = 1e-300
_ERROR_GRID = (0.0, 0.001, 0.01, 0.03, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0)


def declares_distribution(policy: Policy | type) -> bool:
    """Does this policy say how likely its decisions are (``Policy.distribution`` overridden)?"""
    cls = policy if isinstance(policy, type) else type(policy)
    return getattr(cls, "distribution", None) is not Policy.distribution


def _key_of(rule: Policy) -> Callable[[Any], Any]:
    declared = getattr(rule, "distribution_key", None)
    if callable(declared):
        return declared

    def key(observation: Any) -> Any:
        try:
            hash(observation)
            return observation
        except TypeError:
            return repr(observation)

    return key


@dataclass
class RuleFit:
    """One rule fitted to one set of decisions: estimates with intervals, log-likelihood, AIC, decisions."""

    rule: str
    spec: str  # the rule as fitted, its estimates filled in (what the check plays), error rate left out
    parameters: dict[str, dict[str, Any]]
    log_likelihood: float
    aic: float
    decisions: int
    error_rate: float = 0.0

    def json(self) -> dict[str, Any]:
        return {"rule": self.rule, "parameters": self.parameters, "log_likelihood": self.log_likelihood,
                "aic": self.aic, "decisions": self.decisions}


@dataclass
class Likelihood:
    """A rule's log-likelihood of grouped decisions, as a function of its free parameters.

    ``free``: the parameters estimated, in order (``error_rate`` last when the rule trembles);
    ``bounds``: their boxes. ``__call__`` takes their values in that order.
    """

    game: str
    name: str
    fixed: dict[str, Any]
    free: list[str]
    bounds: list[tuple[float, float]]
    situations: list[Any]  # one observation per distinct situation
    entries: list[tuple[int, Any, int]]  # (situation, decision, count)
    trembles: bool = False
    _cache: dict[tuple, np.ndarray] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._counts = np.array([c for _, _, c in self.entries], dtype=float)

    @classmethod
    def of(cls, game: Any, spec: str, pairs: Iterable[tuple[Any, Any]]) -> Likelihood:
        name, fixed = parse_policy_spec(spec)
        rule = make_policy(spec, game)
        if not declares_distribution(rule):
            raise AnalysisError(f"the {getattr(game, 'name', game)} rule {name!r} does not say how likely its decisions are (no distribution); "
                                "fit another rule (--rules)")
        free = [p for p in type(rule).fit_parameters if p not in fixed]
        bounds = [tuple(map(float, type(rule).fit_parameters[p])) for p in free]
        key = _key_of(rule)
        index: dict[Any, int] = {}
        situations: list[Any] = []
        counts: dict[tuple[int, Any], int] = {}
        for observation, decision in pairs:
            k = key(observation)
            at = index.get(k)
            if at is None:
                at = index[k] = len(situations)
                situations.append(observation)
            counts[(at, decision)] = counts.get((at, decision), 0) + 1
        if not counts:
            raise AnalysisError(f"no recorded decision to fit {name!r} to")
        entries = [(s, d, c) for (s, d), c in counts.items()]
        return cls(game, name, dict(fixed), free, bounds, situations, entries)

    @property
    def decisions(self) -> int:
        return sum(c for _, _, c in self.entries)

    @property
    def rule_parameters(self) -> list[str]:
        return [p for p in self.free if p != ERROR_RATE]

    def tremble(self) -> Likelihood:
        """The same decisions under the rule with a trembling hand (one more parameter)."""
        return Likelihood(self.game, self.name, self.fixed, [*self.rule_parameters, ERROR_RATE],
                          [*self.bounds[: len(self.rule_parameters)], (0.0, 1.0)], self.situations, self.entries, True)

    def policy(self, values: Mapping[str, float]) -> Policy:
        return make_policy(self.name, self.game, **{**self.fixed, **{k: v for k, v in values.items() if k != ERROR_RATE}})

    def probabilities(self, theta: Sequence[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per entry: the rule's probability of the decision, the decisions possible (K), the count."""
        key = tuple(round(float(t), 12) for t in theta)
        cached = self._cache.get(key)
        if cached is None:
            policy = self.policy(dict(zip(self.rule_parameters, theta)))
            shown = [policy.distribution(o) for o in self.situations]
            p = np.fromiter((shown[s].get(d, 0.0) for s, d, _ in self.entries), float, len(self.entries))
            k = np.fromiter((len(shown[s]) + (d not in shown[s]) for s, d, _ in self.entries), float, len(self.entries))
            cached = np.stack([p, k, self._counts])
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[key] = cached
        return cached[0], cached[1], cached[2]

    def __call__(self, values: Sequence[float], exact: bool = False) -> float:
        """The log-likelihood at ``values`` (the free parameters' values in order); ``exact``: -inf where
        a decision has probability 0 (else each such decision costs log(FLOOR), which an optimiser can leave)."""
        rule_values = values[: len(self.rule_parameters)]
        p, k, c = self.probabilities(rule_values)
        if self.trembles:
            e = float(values[-1])
            p = (1.0 - e) * p + e / k
        if exact and np.any(p <= 0.0):
            return -math.inf
        return float(np.sum(c * np.log(np.maximum(p, FLOOR))))


def _grid(names: Sequence[str], bounds: Sequence[tuple[float, float]], coarse: bool = False) -> list[np.ndarray]:
    points = ({1: 6, 2: 4} if coarse else {1: 21, 2: 11, 3: 7}).get(len(names), 3 if coarse else 5)
    axes = []
    for name, (low, high) in zip(names, bounds):
        if name == ERROR_RATE:
            axes.append(np.array([low + (high - low) * g for g in _ERROR_GRID]))
        else:
            axes.append(np.linspace(low, high, points))
    return axes


def _maximise(objective: Callable[[np.ndarray], float], names: Sequence[str], bounds: Sequence[tuple[float, float]],
              start: np.ndarray | None = None, coarse: bool = False) -> tuple[np.ndarray, float]:
    """The maximum of ``objective`` over the box: the best of a grid (``coarse``: fewer points, for a profile's inner
    search) and ``start``, refined by Powell's method (several parameters) and by coordinate ascent."""
    from scipy.optimize import minimize

    if not names:
        return np.array([]), objective(np.array([]))
    axes = _grid(names, bounds, coarse)
    mesh = np.stack([a.ravel() for a in np.meshgrid(*axes, indexing="ij")], axis=1)
    candidates = [*mesh, *([start] if start is not None else [])]
    values = [objective(x) for x in candidates]
    best = int(np.argmax(values))
    x0, f0 = np.asarray(candidates[best], dtype=float), values[best]
    low, high = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])
    if len(names) > 1 and not coarse:  # a profile's inner search starts at the estimate: coordinate ascent does
        result = minimize(lambda x: -objective(np.clip(x, low, high)), x0, method="Powell", bounds=bounds,
                          options={"xtol": 1e-6, "ftol": 1e-10, "maxfev": 4000})
        x1 = np.clip(np.asarray(result.x, dtype=float), low, high)
        f1 = objective(x1)
        if f1 >= f0:
            x0, f0 = x1, f1
    return _coordinates(objective, x0, f0, axes)


def _coordinates(objective: Callable[[np.ndarray], float], x: np.ndarray, f: float, axes: Sequence[np.ndarray],
                 sweeps: int = 6) -> tuple[np.ndarray, float]:
    """Coordinate ascent by bounded Brent steps, each between the grid points either side of ``x``: where Powell
    stops on a box's edge or on a likelihood that moves in steps (a threshold), one parameter at a time finds the way."""
    from scipy.optimize import minimize_scalar

    for _ in range(sweeps):
        start = f
        for i in range(len(x)):
            below, above = axes[i][axes[i] < x[i]], axes[i][axes[i] > x[i]]
            a = below.max() if len(below) else axes[i].min()
            b = above.min() if len(above) else axes[i].max()
            if b <= a:
                continue

            def along(t: float, i: int = i, base: np.ndarray = x) -> float:
                y = base.copy()
                y[i] = t
                return -objective(y)

            found = minimize_scalar(along, bounds=(a, b), method="bounded", options={"xatol": 1e-7})
            for t in (float(found.x), a, b):
                if -along(t) > f:
                    x, f = x.copy(), -along(t)
                    x[i] = t
        if f - start < 1e-10:
            break
    return x, f


def _profile(likelihood: Likelihood, j: int, estimate: np.ndarray) -> Callable[[float], float]:
    """l_profile(t): the most likely the decisions are with parameter ``j`` held at t, the others free."""
    others = [i for i in range(len(likelihood.free)) if i != j]
    names = [likelihood.free[i] for i in others]
    bounds = [likelihood.bounds[i] for i in others]

    def at(t: float) -> float:
        def objective(rest: np.ndarray) -> float:
            x = np.empty(len(likelihood.free))
            x[j] = t
            x[others] = rest
            return likelihood(x)

        return _maximise(objective, names, bounds, start=estimate[others], coarse=True)[1] if others else \
            objective(np.array([]))

    return at


def _interval(likelihood: Likelihood, j: int, estimate: np.ndarray, best: float) -> tuple[float, float]:
    """The profile-likelihood interval of parameter ``j`` (clipped to its box)."""
    from scipy.optimize import brentq
    from scipy.stats import chi2

    cut = best - chi2.ppf(LEVEL, 1) / 2.0
    profile = _profile(likelihood, j, estimate)
    low, high = likelihood.bounds[j]
    theta = float(estimate[j])
    ends = []
    for edge in (low, high):
        if edge == theta or profile(edge) >= cut:
            ends.append(edge)
            continue
        ends.append(float(brentq(lambda t: profile(t) - cut, *sorted((edge, theta)), xtol=1e-4)))
    return ends[0], ends[1]


def fit_rule(game: Any, spec: str, pairs: Iterable[tuple[Any, Any]]) -> RuleFit:
    """Fit the rule ``spec`` (its free ``fit_parameters``; those the spec names stay fixed) to ``pairs``."""
    likelihood = Likelihood.of(game, spec, pairs)
    estimate, best = _maximise(likelihood, likelihood.free, likelihood.bounds)
    if not math.isfinite(likelihood(estimate, exact=True)):
        likelihood = likelihood.tremble()
        estimate, best = _maximise(likelihood, likelihood.free, likelihood.bounds, start=np.array([*estimate, 0.5]))
    parameters = {}
    for j, name in enumerate(likelihood.free):
        low, high = _interval(likelihood, j, estimate, best)
        parameters[name] = {"estimate": float(estimate[j]), "ci": [low, high]}
    log_likelihood = likelihood(estimate, exact=True)
    values = dict(zip(likelihood.free, map(float, estimate)))
    fitted = likelihood.policy(values).spec()
    return RuleFit(likelihood.name, fitted, parameters, log_likelihood, 2 * len(likelihood.free) - 2 * log_likelihood,
                   likelihood.decisions, values.get(ERROR_RATE, 0.0))
