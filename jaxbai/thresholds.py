"""Stopping thresholds: theory (Eq. 4, 12, 14 with Eq. 20) and heuristic (Remark 53) families,
and DP-TT's per-arm thresholds (Jourdan & Azize 2025).

The theory thresholds need 𝒞_G (Eq. 20), a 1-D minimisation involving the Riemann ζ function.
It is tabulated once on the host (float64) and evaluated in the step by linear interpolation,
so a step costs O(K) like the heuristic thresholds.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxbai.costs import doubling_index

__all__ = [
    "THRESHOLD_FAMILIES",
    "c_gaussian_fn",
    "c_gaussian_threshold",
    "c_private_threshold",
    "c_tilde_private_threshold",
    "dp_tt_heuristic_threshold",
    "dp_tt_theory_threshold",
    "g_gaussian",
    "h_threshold",
    "heuristic_gaussian_threshold",
    "heuristic_private_threshold",
    "heuristic_tilde_private_threshold",
    "lambert_w_bar",
    "riemann_zeta",
]

THRESHOLD_FAMILIES = ("heuristic", "theory")

# Euler–Maclaurin for ζ(s), s > 1: B_2/2!, B_4/4!, B_6/6!, B_8/8!.
_EM_TERMS = 20
_EM_COEFFS = (1 / 12, -1 / 720, 1 / 30240, -1 / 1209600)
_CG_X_MAX = 1.0e4


def riemann_zeta(s: ArrayLike) -> np.ndarray:
    """Riemann ζ(s) for real s > 1 in float64 (Euler–Maclaurin, error < 1e-14 for s ≤ 3)."""
    s = np.asarray(s, dtype=np.float64)
    n = np.arange(1, _EM_TERMS, dtype=np.float64)
    big_n = float(_EM_TERMS)
    total = np.sum(n[:, None] ** -s.reshape(1, -1), axis=0).reshape(s.shape)
    total = total + big_n ** (1 - s) / (s - 1) + 0.5 * big_n**-s
    rising = s.copy()  # s (s+1) ... (s+2k-2)
    for j, coeff in enumerate(_EM_COEFFS):
        total = total + coeff * rising * big_n ** (-s - 2 * j - 1)
        rising = rising * (s + 2 * j + 1) * (s + 2 * j + 2)
    return total


def g_gaussian(lam: ArrayLike) -> np.ndarray:
    """g_G(λ) = 2λ − 2λ log(4λ) + log ζ(2λ) − ½ log(1 − λ), λ ∈ (1/2, 1) (Eq. 20)."""
    lam = np.asarray(lam, dtype=np.float64)
    return (
        2 * lam - 2 * lam * np.log(4 * lam) + np.log(riemann_zeta(2 * lam)) - 0.5 * np.log1p(-lam)
    )


@functools.cache
def _cg_table() -> tuple[np.ndarray, np.ndarray]:
    """(x, 𝒞_G(x)) on a grid of x ∈ [0, 1e4], by minimising over a dense grid of λ."""
    lam = 1.0 - np.logspace(np.log10(0.5) - 1e-9, -9, 20001)
    g = g_gaussian(lam)
    xs = np.expm1(np.linspace(0.0, np.log1p(_CG_X_MAX), 2049))
    values = np.array([np.min((g + x) / lam) for x in xs])
    return xs, values


def c_gaussian_fn(x: ArrayLike) -> jax.Array:
    """𝒞_G(x) = min_{λ ∈ (1/2, 1]} (g_G(λ) + x)/λ (Eq. 20), interpolated from a host table.

    𝒞_G(x) ≈ x + log x for large x. Valid on [0, 1e4], which covers every accepted δ
    (≥ 1e-30) and K < 2³¹.
    """
    xs, values = _cg_table()
    return jnp.interp(jnp.asarray(x, jnp.float32), jnp.asarray(xs), jnp.asarray(values))


def lambert_w_bar(x: ArrayLike, iterations: int = 8) -> jax.Array:
    """W̄₋₁(x) = −W₋₁(−e^{−x}) for x ≥ 1: the root y ≥ 1 of y − log y = x (Lemma 23).

    Newton's method, a fixed number of iterations, from y₀ = x + log x, or near the double
    root at x = 1 from the series y₀ = 1 + √(2(x−1)) + 2(x−1)/3.
    """
    x = jnp.asarray(x, jnp.float32)
    near_one = 1 + jnp.sqrt(2 * jnp.maximum(x - 1, 0)) + 2 * (x - 1) / 3
    y = jnp.where(x < 2, near_one, x + jnp.log(x))
    for _ in range(iterations):
        step = (y - jnp.log(y) - x) / (1 - 1 / y)
        y = jnp.where(y > 1, y - step, y)
    return y


def c_gaussian_threshold(
    w_a: ArrayLike, w_b: ArrayLike, delta: ArrayLike, num_arms: int
) -> jax.Array:
    """c^G_{a,b}(ω, δ) = 2𝒞_G(log((K−1)/δ)/2) + 2 log(4 + log ω_a) + 2 log(4 + log ω_b) (Eq. 4)."""
    base = 2 * c_gaussian_fn(jnp.log((num_arms - 1) / jnp.asarray(delta)) / 2)
    log_terms = 2 * jnp.log(4 + jnp.log(w_a)) + 2 * jnp.log(4 + jnp.log(w_b))
    return base + log_terms


def _privacy_log(w: ArrayLike, delta: ArrayLike, num_arms: int, divisor: float) -> jax.Array:
    """log(π² K k(w)² / (divisor·δ)), the Laplace concentration term of Eq. (12) and (14)."""
    k = doubling_index(w)
    return jnp.log(jnp.pi**2 * num_arms * k**2 / (divisor * jnp.asarray(delta)))


def c_private_threshold(
    w_a: ArrayLike,
    w_b: ArrayLike,
    delta: ArrayLike,
    epsilon: ArrayLike,
    sigma2: ArrayLike,
    num_arms: int,
) -> jax.Array:
    """c^{G,ε}_{a,b}(ω, δ) of Lemma 21 (Eq. 12).

    2 c^G_{a,b}(ω, δ (k(ω_a)² k(ω_b)² π⁴/18)⁻¹)
    + (1/(ε²σ²)) Σ_{c ∈ {a,b}} (1/ω_c) log(π² K k(ω_c)²/(3δ))².
    """
    k_a, k_b = doubling_index(w_a), doubling_index(w_b)
    delta_g = jnp.asarray(delta) / (k_a**2 * k_b**2 * jnp.pi**4 / 18)
    gaussian_part = 2 * c_gaussian_threshold(w_a, w_b, delta_g, num_arms)
    laplace_part = sum(
        _privacy_log(w, delta, num_arms, 3.0) ** 2 / jnp.asarray(w, jnp.float32) for w in (w_a, w_b)
    )
    return gaussian_part + laplace_part / (jnp.asarray(epsilon) ** 2 * jnp.asarray(sigma2))


def h_threshold(w: ArrayLike, delta: ArrayLike, num_arms: int) -> jax.Array:
    """h(x, δ) = W̄₋₁(2 log(π² K k(x)²/(2δ)) + 4 log(4 + log x) + 1/2)/2 (Lemma 23)."""
    w = jnp.asarray(w, jnp.float32)
    arg = 2 * _privacy_log(w, delta, num_arms, 2.0) + 4 * jnp.log(4 + jnp.log(w)) + 0.5
    return lambert_w_bar(arg) / 2


def c_tilde_private_threshold(
    mu_a: ArrayLike,
    mu_b: ArrayLike,
    w_a: ArrayLike,
    w_b: ArrayLike,
    delta: ArrayLike,
    epsilon: ArrayLike,
    sigma2: ArrayLike,
    num_arms: int,
) -> jax.Array:
    """c̃^{G,ε}_{a,b}(μ, ω, δ) of Lemma 23 (Eq. 14), mean-aware.

    If (μ_a − μ_b)₊ < ε/2:
        ½ c^{G,ε}_{a,b}(ω, 2δ/3) + (√2/(εσ)) Σ_c √(h(ω_c, δ)/ω_c) log(π² K k(ω_c)²/(2δ));
    otherwise:
        (1/(2σ²)) log(π² K max_c k(ω_c)/(2δ)) + (ε/(2√2 σ)) Σ_c √(ω_c h(ω_c, δ)).
    """
    sigma = jnp.sqrt(jnp.asarray(sigma2))
    eps = jnp.asarray(epsilon)
    ws = (jnp.asarray(w_a, jnp.float32), jnp.asarray(w_b, jnp.float32))
    hs = tuple(h_threshold(w, delta, num_arms) for w in ws)
    low = 0.5 * c_private_threshold(w_a, w_b, 2 * jnp.asarray(delta) / 3, eps, sigma2, num_arms)
    low = low + (jnp.sqrt(2.0) / (eps * sigma)) * sum(
        jnp.sqrt(h / w) * _privacy_log(w, delta, num_arms, 2.0) for h, w in zip(hs, ws, strict=True)
    )
    k_max = jnp.maximum(doubling_index(w_a), doubling_index(w_b))
    high = jnp.log(jnp.pi**2 * num_arms * k_max / (2 * jnp.asarray(delta))) / (2 * sigma2)
    high = high + eps / (2 * jnp.sqrt(2.0) * sigma) * sum(
        jnp.sqrt(w * h) for h, w in zip(hs, ws, strict=True)
    )
    gap = jnp.maximum(jnp.asarray(mu_a) - jnp.asarray(mu_b), 0.0)
    return jnp.where(gap < eps / 2, low, high)


def heuristic_gaussian_threshold(total: ArrayLike, delta: ArrayLike) -> jax.Array:
    """c = log((1 + log n)/δ), n the number of samples so far (TTUCB, CTB-TT, Gaussian TT).

    The published code's TTUCB threshold; there it is compared with a statistic computed with
    σ = 1, 4× smaller than W^G with the paper's σ = 1/2 (docs/published-code.md).
    """
    return jnp.log((1 + jnp.log(jnp.asarray(total, jnp.float32))) / jnp.asarray(delta))


def heuristic_private_threshold(
    w_a: ArrayLike, w_b: ArrayLike, delta: ArrayLike, epsilon: ArrayLike, sigma2: ArrayLike
) -> jax.Array:
    """AdaP-TT heuristic: log(1/δ) + log(1 + log Ñ_a) + log(1 + log Ñ_b)
    + (1/Ñ_a + 1/Ñ_b) log(1/δ)²/(ε²σ²).

    The form of the empirical threshold in the code published with the paper (Remark 53), with
    σ written explicitly: at σ = 1 it is that code's threshold. jaxbai's AdaP-TT takes the
    paper's σ = 1/2 (after Eq. 4; Alg. 9), which makes the privacy term 4× the published one
    while the stopping statistic W^G (Eq. 3) is 4× the published one too
    (docs/published-code.md). Lemma 21's own δ → 0 form is
    2 log(1/δ) + (1/Ñ_a + 1/Ñ_b) log(1/δ)²/(ε²σ²).
    """
    w_a, w_b = jnp.asarray(w_a, jnp.float32), jnp.asarray(w_b, jnp.float32)
    log_inv = jnp.log(1 / jnp.asarray(delta))
    base = log_inv + jnp.log(1 + jnp.log(w_a)) + jnp.log(1 + jnp.log(w_b))
    return base + (1 / w_a + 1 / w_b) * log_inv**2 / (jnp.asarray(epsilon) ** 2 * sigma2)


def heuristic_tilde_private_threshold(
    mu_a: ArrayLike,
    mu_b: ArrayLike,
    w_a: ArrayLike,
    w_b: ArrayLike,
    delta: ArrayLike,
    epsilon: ArrayLike,
    sigma2: ArrayLike,
) -> jax.Array:
    """AdaP-TT* heuristic: the δ → 0 forms of Eq. (14) stated after Lemma 23.

    With d = (μ_a − μ_b)₊: if d ≥ ε/2, (1/(2σ²)) log(1/δ) + (ε/(2√2σ))(√Ñ_a + √Ñ_b)√log(1/δ);
    else log(1/δ) + (1/(2ε²σ²))(1/Ñ_a + 1/Ñ_b) log(1/δ)²
    + (√2/(εσ))(1/√Ñ_a + 1/√Ñ_b) log(1/δ)^{3/2}.
    """
    w_a, w_b = jnp.asarray(w_a, jnp.float32), jnp.asarray(w_b, jnp.float32)
    eps = jnp.asarray(epsilon)
    sigma = jnp.sqrt(jnp.asarray(sigma2))
    log_inv = jnp.log(1 / jnp.asarray(delta))
    high = log_inv / (2 * sigma2) + eps / (2 * jnp.sqrt(2.0) * sigma) * (
        jnp.sqrt(w_a) + jnp.sqrt(w_b)
    ) * jnp.sqrt(log_inv)
    low = (
        log_inv
        + (1 / w_a + 1 / w_b) * log_inv**2 / (2 * eps**2 * sigma2)
        + jnp.sqrt(2.0) / (eps * sigma) * (1 / jnp.sqrt(w_a) + 1 / jnp.sqrt(w_b)) * log_inv**1.5
    )
    gap = jnp.maximum(jnp.asarray(mu_a) - jnp.asarray(mu_b), 0.0)
    return jnp.where(gap >= eps / 2, high, low)


def dp_tt_theory_threshold(counts: ArrayLike, delta: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """DP-TT's per-arm threshold c(m, ε, δ) = log(1/δ) + log m · log(1 + εm / log m).

    The form Jourdan & Azize (2025, arXiv 2510.17348) state δ-correctness for, read literally
    (docs/semantics.md §34): the second term is 0 at m = 1 (its limit); it grows like
    log m · log(εm) and has no finite limit as ε → ∞, so it is meant for finite ε. The stopping
    rule compares a pair's cost with c(Ñ_a) + c(Ñ_b), so log(1/δ) enters twice, which also
    covers the union over the K − 1 pairs while K − 1 ≤ 1/δ.

    Examples:
        >>> import math
        >>> m, eps, delta = 100.0, 1.0, 0.01
        >>> exact = math.log(1 / delta) + math.log(m) * math.log(1 + eps * m / math.log(m))
        >>> abs(float(dp_tt_theory_threshold(m, delta, eps)) - exact) < 1e-4
        True
    """
    m = jnp.asarray(counts, jnp.float32)
    log_m = jnp.log(jnp.maximum(m, 1.0))
    grows = m > 1
    growth = log_m * jnp.log1p(jnp.asarray(epsilon) * m / jnp.where(grows, log_m, 1.0))
    return jnp.log(1 / jnp.asarray(delta)) + jnp.where(grows, growth, 0.0)


def dp_tt_heuristic_threshold(counts: ArrayLike, delta: ArrayLike) -> jax.Array:
    """DP-TT's heuristic per-arm threshold c(m, δ) = ½ log((1 + log m)/δ).

    The Top Two literature's heuristic log((1 + log n)/δ) split evenly over the two arms of a
    pair, each at its own count (docs/semantics.md §34): two arms of equal counts m give
    log((1 + log m)/δ).

    Examples:
        >>> round(float(dp_tt_heuristic_threshold(1.0, 0.01)), 6)  # ½ log(100)
        2.302585
    """
    m = jnp.asarray(counts, jnp.float32)
    return 0.5 * jnp.log((1 + jnp.log(m)) / jnp.asarray(delta))
