"""Exact Clopper–Pearson limits and the privacy bound they certify.

The beta quantile is computed here, in double precision, from the regularised incomplete beta
function I_x(a, b) (continued fraction, modified Lentz method) and bisection; the test suite
checks it against `scipy.stats.beta`, which is not a runtime dependency.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["certified_epsilon", "clopper_pearson", "score_epsilon"]

_TINY = 1e-300
_CF_TOLERANCE = 1e-15
_CF_MAX_TERMS = 1_000_000
_BISECTIONS = 400
_LEVEL_GUARD = 1e-6
"""Limits are solved at level α(1 − 10⁻⁶): this absorbs the rounding of I_x (≤ 10⁻⁸ relative up
to n = 10⁷, from the log-gamma terms), so the limits stay conservative."""


def _continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (Numerical Recipes' ``betacf``, modified Lentz)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _CF_MAX_TERMS):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _CF_TOLERANCE:
            return h
    raise ArithmeticError(f"incomplete beta: no convergence for a={a}, b={b}, x={x}")


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b) = P(Beta(a, b) ≤ x), for a, b > 0."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        a * math.log(x) + b * math.log1p(-x) + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _continued_fraction(b, a, 1.0 - x) / b


def _lower_quantile(a: float, b: float, alpha: float) -> float:
    """The x with I_x(a, b) = α, by bisection to double precision."""
    lo, hi = 0.0, 1.0
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _incomplete_beta(a, b, mid) < alpha:
            lo = mid
        else:
            hi = mid
    return lo


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """One-sided Clopper–Pearson limits, each at level ``alpha``.

    ``lower`` is the α-quantile of Beta(k, n − k + 1) (0 if k = 0) and ``upper`` the
    (1 − α)-quantile of Beta(k + 1, n − k) (1 if k = n): P(p < lower) ≤ α and P(p > upper) ≤ α
    for the success probability p of k successes in n Bernoulli trials, exactly.

    Args:
        successes: k, 0 ≤ k ≤ n.
        trials: n ≥ 1.
        alpha: one-sided level in (0, 1).

    Returns:
        ``(lower, upper)``.

    Examples:
        >>> lower, upper = clopper_pearson(0, 10, 0.05)
        >>> lower, round(upper, 6)  # upper = 1 − 0.05^(1/10)
        (0.0, 0.258866)
    """
    k, n = int(successes), int(trials)
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1, got {k}, {n}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}")
    level = alpha * (1.0 - _LEVEL_GUARD)
    lower = 0.0 if k == 0 else _lower_quantile(k, n - k + 1, level)
    upper = 1.0 if k == n else 1.0 - _lower_quantile(n - k, k + 1, level)
    return lower, upper


def certified_epsilon(
    successes: int, trials: int, successes_prime: int, trials_prime: int, alpha: float, delta: float
) -> float:
    """log((p_lower − δ)/p′_upper): the ε that an event with k of n under one input and k′ of n′
    under its neighbour certifies, each limit one-sided at ``alpha`` (−inf if p_lower ≤ δ).

    (ε, δ)-DP implies P(E | x) ≤ e^ε P(E | x′) + δ for every event E (the hockey-stick form), so
    ε ≥ log((P(E | x) − δ)/P(E | x′)); the limits make it hold with probability ≥ 1 − 2α.

    Examples:
        >>> round(certified_epsilon(500, 1000, 100, 1000, 0.025, 0.0), 3)
        1.36
    """
    lower = clopper_pearson(successes, trials, alpha)[0]
    upper = clopper_pearson(successes_prime, trials_prime, alpha)[1]
    if lower <= delta:
        return -math.inf
    return math.log((lower - delta) / upper)


def _wilson(counts: np.ndarray, trials: float, z: float, sign: float) -> np.ndarray:
    """Wilson score limit (sign −1: lower, +1: upper) of the proportion counts/trials."""
    p = counts / trials
    centre = p + z * z / (2 * trials)
    spread = z * np.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    return (centre + sign * spread) / (1 + z * z / trials)


def score_epsilon(
    counts: np.ndarray,
    trials: float,
    counts_prime: np.ndarray,
    trials_prime: float,
    z: float,
    delta: float,
) -> np.ndarray:
    """A cheap, vectorised stand-in for `certified_epsilon` (Wilson score limits at ``z``), used
    only to rank candidate events on the selection half; −inf where nothing is certified."""
    lower = _wilson(np.asarray(counts, np.float64), trials, z, -1.0) - delta
    upper = _wilson(np.asarray(counts_prime, np.float64), trials_prime, z, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(lower > 0, np.log(np.maximum(lower, 1e-300) / upper), -np.inf)
