"""Lower bounds on the sample complexity, privacy-regime switches and asymptotic upper bounds.

All functions accept means of shape (..., K) and broadcast ε (and β) against the batch shape.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxbai.theory._common import (
    _as_means,
    _check_choice,
    _check_means,
    _check_open_unit,
    _check_positive,
    _float,
    _gaps,
)
from jaxbai.theory.characteristic_times import (
    t_star,
    t_star_dp,
    t_star_global_proxy,
    t_star_tv_closed_form,
)
from jaxbai.theory.private_divergences import _logit

__all__ = [
    "adap_tt_bound",
    "adap_tt_star_bound",
    "ctb_tt_bound",
    "free_privacy_epsilon",
    "g1",
    "g2",
    "lower_bound_dp",
    "lower_bound_samples",
    "practical_bound",
    "regime_switch",
]


# --------------------------------------------------------------------------------------------
# Regime switches and lower bounds on the sample complexity
# --------------------------------------------------------------------------------------------


def _local_switch_from_ratio(ratio: jax.Array) -> jax.Array:
    """Solve c(ε) = ratio for ε (c is increasing; c(log 2) = 4)."""
    low = jnp.log((1.0 + jnp.sqrt(1.0 + 4.0 * jnp.sqrt(ratio))) / 2.0)  # e^ε(e^ε − 1) = √r
    high = jnp.log1p(jnp.sqrt(ratio) / 2.0)  # 2(e^ε − 1) = √r
    return jnp.where(ratio <= 4.0, low, high)


def regime_switch(means: ArrayLike, model: str = "local") -> jax.Array:
    """Privacy budget ε at which the two terms of the relaxed lower bound cross.

    * ``"local"`` (Corollary 11, Section 3.1): c(ε) = T*_TV²(ν) / T*_KL(ν), in closed form:
      ε = log((1 + √(1 + 4√r)) / 2) if r ≤ 4, else log(1 + √r / 2).
    * ``"global"`` (Corollary 18, Section 4.1): ε = T*_TV(ν) / T*_KL(ν).

    Examples:
        >>> eps = regime_switch([0.95, 0.9, 0.9, 0.9, 0.5], "global")
        >>> bool(0.0 < float(eps) < 1.0)
        True
    """
    _check_choice("model", model, ("local", "global"))
    _check_means(means, bernoulli=True)
    t_kl, _ = t_star(means, "kl_bernoulli")
    if model == "local":
        t_tv2, _ = t_star(means, "tv2")
        return _local_switch_from_ratio(t_tv2 / t_kl)
    return t_star_tv_closed_form(means) / t_kl


def lower_bound_samples(time: ArrayLike, delta: ArrayLike, kind: str = "log") -> jax.Array:
    """Expected-sample-complexity lower bound from a characteristic time.

    ``kind="log"``: T · log(1/(2.4δ)) (Lemma 5, Theorems 10 and 17); ``kind="kl"``: the sharper
    T · kl(1 − δ, δ) = T (1 − 2δ) log((1 − δ)/δ) from which they are derived (Appendix D).

    Examples:
        >>> round(float(lower_bound_samples(100.0, 0.01)), 2)
        372.97
    """
    _check_choice("kind", kind, ("log", "kl"))
    _check_open_unit("delta", delta)
    t = _float(time)
    d = jnp.asarray(delta, t.dtype)
    if kind == "log":
        return t * jnp.log(1.0 / (2.4 * d))
    return t * (1.0 - 2.0 * d) * jnp.log((1.0 - d) / d)


def free_privacy_epsilon(means: ArrayLike) -> jax.Array:
    """ε from which privacy is free, max_{a ≠ a*} log(μ_{a*} (1 − μ_a) / (μ_a (1 − μ_{a*}))).

    Jourdan & Azize (2025), arXiv 2510.17348, lower bound: for ε at least this, g_ε(μ_a) ≥
    μ_{a*} for every a, so d±_ε = kl on every [μ_a, μ_{a*}] and T*_ε = T*_KL. It is
    max_a logit μ_{a*} − logit μ_a: ``inf`` if μ_{a*} = 1 or some μ_a = 0.

    Examples:
        >>> round(float(free_privacy_epsilon([0.9, 0.5, 0.8])), 4)  # log 9
        2.1972
    """
    _check_means(means, bernoulli=True)
    m = _as_means(means)
    _, is_best, _ = _gaps(m)
    top = jnp.max(m, axis=-1, keepdims=True)
    return jnp.max(jnp.where(is_best, -jnp.inf, _logit(top) - _logit(m)), axis=-1)


def lower_bound_dp(
    means: ArrayLike, epsilon: ArrayLike, delta: ArrayLike, *, tol: float = 1e-5
) -> jax.Array:
    """ε-global-DP lower bound T*_ε(ν) log(1/(3δ)) on E[τ] of a δ-correct algorithm.

    Jourdan & Azize (2025), arXiv 2510.17348, lower bound; T*_ε from `t_star_dp`, broadcast
    over the batch shape, ε and δ.

    Examples:
        >>> T, _ = t_star_dp([0.95, 0.9, 0.9, 0.9, 0.5], 1.0)
        >>> bound = lower_bound_dp([0.95, 0.9, 0.9, 0.9, 0.5], 1.0, 0.01)
        >>> bool(abs(bound / (T * np.log(1 / 0.03)) - 1) < 1e-6)
        True
    """
    _check_open_unit("delta", delta)
    if np.any(np.asarray(delta, np.float64) >= 1 / 3):
        raise ValueError(f"delta must be < 1/3 for log(1/(3δ)) > 0, got {delta!r}")
    time, _ = t_star_dp(means, epsilon, tol=tol)
    return time * jnp.log(1.0 / (3.0 * jnp.asarray(delta, time.dtype)))


def practical_bound(
    time: ArrayLike,
    delta: ArrayLike,
    threshold: Callable[[np.ndarray, np.ndarray], ArrayLike],
    tol: float = 1e-6,
) -> np.ndarray:
    """The smallest t ≥ 1 with t ≥ T · c(t, δ): the samples a run allocated at its optimal
    proportions needs before the GLR statistic, which grows like t/T, can pass the stopping
    threshold c(t, δ) (the "practical" bound of the BAI literature, beside the asymptotic
    T · log(1/(2.4δ)) of `lower_bound_samples`).

    ``threshold(t, δ)`` must be non-decreasing in t. Then the iterates t_{k+1} = T · c(t_k, δ)
    from t_0 = 1 increase to the smallest fixed point (each stays below it, since c is
    monotone); they contract at the rate T·∂c/∂t < 1 near it for thresholds in log t or
    log log t. Computed on the host in float64 (the threshold's own precision otherwise).

    Raises:
        ValueError: the iteration did not settle (a threshold that grows like t or faster).

    Examples:
        >>> import numpy as np
        >>> c = lambda t, d: np.log((1 + np.log(t)) / d)  # the heuristic threshold
        >>> t = practical_bound(100.0, 0.01, c)
        >>> bool(abs(t - 100.0 * c(t, 0.01)) < 1e-3), bool(t > 100.0 * np.log(1 / 0.024))
        (True, True)
    """
    _check_open_unit("delta", delta)
    big_t = np.asarray(time, np.float64)
    dlt = np.asarray(delta, np.float64)
    t = np.ones(np.broadcast_shapes(big_t.shape, dlt.shape))
    with np.errstate(over="ignore"):
        for _ in range(500):
            nxt = np.maximum(t, big_t * np.asarray(threshold(t, dlt), np.float64))
            if not np.isfinite(nxt).all():
                break
            done = np.all(nxt - t <= tol * nxt)
            t = nxt
            if done:
                return t
    raise ValueError("practical_bound: t = T·c(t, δ) has no fixed point this iteration reaches")


# --------------------------------------------------------------------------------------------
# Asymptotic upper bounds of the algorithms
# --------------------------------------------------------------------------------------------


def g1(y: ArrayLike) -> jax.Array:
    """g₁(y) = sup{x | x² < x + y√(2x) + y²/4} (Theorem 24).

    The set is an interval (x² − x − y√(2x) − y²/4 is convex and ≤ 0 at x = 1), so g₁(y) is
    its largest root, found by bisection on [1, (1 + y)² + 1]. g₁(0) = 1, g₁(12) ≤ 10.

    Examples:
        >>> round(float(g1(0.0)), 6)
        1.0
    """
    y = _float(y)

    def f(x):
        return x * x - x - y * jnp.sqrt(2.0 * x) - y * y / 4.0

    def body(_, carry):
        lo, hi = carry
        mid = 0.5 * (lo + hi)
        neg = f(mid) < 0
        return jnp.where(neg, mid, lo), jnp.where(neg, hi, mid)

    lo, hi = jax.lax.fori_loop(0, 100, body, (jnp.ones_like(y), (1.0 + y) ** 2 + 1.0))
    return 0.5 * (lo + hi)


def g2(y: ArrayLike) -> jax.Array:
    """g₂(y) = 1 + 2 (√(1 + 1/y) − 1)⁻¹ = 1 + 2y + 2√(y(1 + y)) (Theorem 24); g₂ → 1 as y → 0.

    Examples:
        >>> round(float(g2(1.0)), 4)
        5.8284
    """
    y = _float(y)
    return 1.0 + 2.0 * y + 2.0 * jnp.sqrt(y * (1.0 + y))


def ctb_tt_bound(means: ArrayLike, epsilon: ArrayLike, beta: ArrayLike = 0.5) -> jax.Array:
    """CTB-TT asymptotic bound (1 + 2/(e^ε − 1))² T*_{KL,β}(ν), Eq. (5) with σ = 1/2 (Sec. 3.2).

    1 + 2/(e^ε − 1) = coth(ε/2), computed as 1 / tanh(ε/2).

    Examples:
        >>> T = ctb_tt_bound([0.9, 0.5], 1.0)
        >>> bool(T > 0)
        True
    """
    _check_means(means, bernoulli=True)
    _check_positive("epsilon", epsilon)
    _check_open_unit("beta", beta)
    t_beta, _ = t_star(means, "kl_gaussian", beta=beta, sigma=0.5)
    return t_beta / jnp.tanh(jnp.asarray(epsilon) / 2.0) ** 2


def adap_tt_bound(
    means: ArrayLike, epsilon: ArrayLike, beta: ArrayLike = 0.5, sigma: ArrayLike = 0.5
) -> jax.Array:
    """AdaP-TT asymptotic bound 4 T*_{KL,β}(ν) (1 + √(1 + Δ_max² / (2σ⁴ε²))) (Theorem 22).

    T*_{KL,β} as in Eq. (5) for σ (the paper's σ = 1/2).

    Examples:
        >>> T = adap_tt_bound([0.9, 0.5], 1.0)
        >>> bool(T > 0)
        True
    """
    _check_means(means, bernoulli=True)
    _check_positive("epsilon", epsilon)
    _check_open_unit("beta", beta)
    _check_positive("sigma", sigma)
    m = _as_means(means)
    t_beta, _ = t_star(m, "kl_gaussian", beta=beta, sigma=sigma)
    _, is_best, gaps = _gaps(m)
    dmax = jnp.max(jnp.where(is_best, 0.0, gaps), axis=-1)
    s = jnp.asarray(sigma)
    eps = jnp.asarray(epsilon)
    return 4.0 * t_beta * (1.0 + jnp.sqrt(1.0 + dmax**2 / (2.0 * s**4 * eps**2)))


def adap_tt_star_bound(
    means: ArrayLike, epsilon: ArrayLike, beta: ArrayLike = 0.5, sigma: ArrayLike = 0.5
) -> jax.Array:
    """AdaP-TT* asymptotic bound (Theorem 24).

    4 T*_{KL,β}(ν) g₁(Δ_max / (σ²ε)) if Δ_max < ε/2, else
    2 T*_{KL,β}(ν_{G,ε}) g₂(ε² T*_{KL,β}(ν_{G,ε}) max{β, 1 − β} / 4) / σ², with T*_{KL,β} as in
    Eq. (5) and T*_{KL,β}(ν_{G,ε}) as in Eq. (15), both for σ (the paper's σ = 1/2).

    Examples:
        >>> T = adap_tt_star_bound([0.9, 0.5], 0.1)
        >>> bool(T > 0)
        True
    """
    _check_means(means, bernoulli=True)
    _check_positive("epsilon", epsilon)
    _check_open_unit("beta", beta)
    _check_positive("sigma", sigma)
    m = _as_means(means)
    eps = jnp.asarray(epsilon, m.dtype)
    b = jnp.asarray(beta, m.dtype)
    s = jnp.asarray(sigma, m.dtype)
    t_beta, _ = t_star(m, "kl_gaussian", beta=beta, sigma=sigma)
    t_beta_eps = t_star_global_proxy(m, eps, beta=beta, sigma=sigma)
    _, is_best, gaps = _gaps(m)
    dmax = jnp.max(jnp.where(is_best, 0.0, gaps), axis=-1)
    low = 4.0 * t_beta * g1(dmax / (s**2 * eps))
    high = 2.0 * t_beta_eps * g2(eps**2 * t_beta_eps * jnp.maximum(b, 1.0 - b) / 4.0) / s**2
    return jnp.where(dmax < eps / 2.0, low, high)
