"""Signed private divergences d±_ε and the private transportation cost C*_ε of DP-TT.

Jourdan & Azize (2025), "Optimal Best Arm Identification under Differential Privacy"
(arXiv 2510.17348), for Bernoulli arms (rewards in [0, 1]) under ε-global DP. The divergence

    d_ε(ν, κ) = inf_φ {ε TV(ν, φ) + KL(φ, κ)}

interpolates between KL (ε → ∞) and ε·TV (ε → 0). Between Bernoulli arms of means μ and x it is
d⁺_ε(μ, x) + d⁻_ε(μ, x), of which at most one is non-zero (signed divergences):

    d⁺_ε(μ, x) = 0                                  if x ≤ μ,
                 kl(μ, x)                           if μ < x ≤ g_ε(μ),
                 −log(1 − x (1 − e^{−ε})) − εμ      if x > g_ε(μ),
    d⁻_ε(μ, x) = d⁺_ε(1 − μ, 1 − x),

with g_ε(μ) = μ e^ε / (μ (e^ε − 1) + 1), i.e. logit g_ε(μ) = logit μ + ε. The two non-zero
branches of d⁺_ε meet at g_ε(μ) with equal values and slopes, so d⁺_ε(μ, ·) is convex and C¹.

Every function is a pure ``jax.numpy`` function of arrays, broadcast over its arguments and safe
under ``jit``/``vmap``; ε = ``inf`` (no privacy) is allowed and gives kl. Means and x must lie in
[0, 1] (clip private estimates first); nothing is checked. The kl branch is `kl_bernoulli`, which
clips x to [eps, 1 − eps] (the dtype's machine epsilon): d⁺_∞(μ, 1) is finite, for one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxbai.theory._common import _float
from jaxbai.theory.divergences import kl_bernoulli

__all__ = ["d_minus_eps", "d_plus_eps", "g_eps", "private_cost"]


def _as_floats(*args: ArrayLike) -> tuple[jax.Array, ...]:
    """The arguments as JAX float arrays of one common dtype (not broadcast)."""
    arrays = [_float(a) for a in args]
    dtype = jnp.result_type(*arrays)
    return tuple(a.astype(dtype) for a in arrays)


def _logit(p: jax.Array) -> jax.Array:
    """log(p / (1 − p)), ±inf at p ∈ {0, 1}."""
    return jnp.log(p) - jnp.log1p(-p)


def _beyond_kl(mu: jax.Array, x: jax.Array, eps: jax.Array) -> jax.Array:
    """x > g_ε(μ), tested as logit x − logit μ > ε (exact near x = 1 and for any large ε)."""
    return _logit(x) - _logit(mu) > eps


def _log_one_minus(x: jax.Array, eps: jax.Array) -> jax.Array:
    """log(1 − x (1 − e^{−ε})), accurate for every ε ∈ (0, ∞] and x ∈ [0, 1].

    log1p of the product while it is at most 1/2 (small ε), else log((1 − x) + x e^{−ε}) as a
    log-sum-exp (x near 1 and large ε, where 1 − x (1 − e^{−ε}) cancels).
    """
    cx = -x * jnp.expm1(-eps)
    far = jnp.logaddexp(jnp.log1p(-x), jnp.log(x) - eps)
    return jnp.where(cx <= 0.5, jnp.log1p(-cx), far)


def g_eps(mu: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """g_ε(μ) = μ e^ε / (μ (e^ε − 1) + 1), where d⁺_ε(μ, ·) leaves kl (signed divergences).

    Jourdan & Azize (2025), arXiv 2510.17348. Computed as μ / (μ + (1 − μ) e^{−ε}); g_ε(0) = 0
    and g_∞(μ) = 1 for μ > 0.

    Examples:
        >>> round(float(g_eps(0.5, 1.0)), 6)  # e / (e + 1)
        0.731059
    """
    mu, eps = _as_floats(mu, epsilon)
    return jnp.where(mu > 0, mu / (mu + (1.0 - mu) * jnp.exp(-eps)), 0.0)


def d_plus_eps(mu: ArrayLike, x: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """Signed divergence d⁺_ε(μ, x) of a Bernoulli arm of mean μ moved up to mean x.

    d⁺_ε(μ, x) = 0 if x ≤ μ; kl(μ, x) if μ < x ≤ g_ε(μ); −log(1 − x (1 − e^{−ε})) − εμ if
    x > g_ε(μ) (Jourdan & Azize 2025, arXiv 2510.17348, signed divergences). As ε → ∞ it is
    kl(μ, x) for x > μ; as ε → 0 it is ε (x − μ)_+ + O(ε²). d⁺_ε(μ, 1) = ε (1 − μ) = ε TV for
    finite ε.

    Examples:
        >>> import math
        >>> exact = -math.log(1 - 0.9 * (1 - math.exp(-1.0))) - 0.5  # 0.9 > g_1(0.5) ≈ 0.73
        >>> abs(float(d_plus_eps(0.5, 0.9, 1.0)) - exact) < 1e-6
        True
    """
    mu, x, eps = _as_floats(mu, x, epsilon)
    beyond = -_log_one_minus(x, eps) - eps * mu
    value = jnp.where(_beyond_kl(mu, x, eps), beyond, kl_bernoulli(mu, x))
    return jnp.where(x > mu, value, 0.0)


def d_minus_eps(mu: ArrayLike, x: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """Signed divergence d⁻_ε(μ, x) = d⁺_ε(1 − μ, 1 − x): an arm of mean μ moved down to x.

    Jourdan & Azize (2025), arXiv 2510.17348, signed divergences; zero for x ≥ μ.

    Examples:
        >>> float(d_minus_eps(0.5, 0.9, 1.0))
        0.0
    """
    mu, x, eps = _as_floats(mu, x, epsilon)
    return d_plus_eps(1.0 - mu, 1.0 - x, eps)


def _d_eps(mu: jax.Array, x: jax.Array, eps: jax.Array) -> jax.Array:
    """d_ε(Ber(μ), Ber(x)) = d⁺_ε(μ, x) + d⁻_ε(μ, x) (one of the two is zero)."""
    return d_plus_eps(mu, x, eps) + d_minus_eps(mu, x, eps)


def _d_plus_slope(mu: jax.Array, x: jax.Array, eps: jax.Array) -> jax.Array:
    """∂d⁺_ε(μ, x)/∂x: 0, (x − μ) / (x (1 − x)) (kl branch) or c / (1 − c x), c = 1 − e^{−ε}."""
    beyond = -jnp.expm1(-eps) * jnp.exp(-_log_one_minus(x, eps))
    slope = jnp.where(_beyond_kl(mu, x, eps), beyond, (x - mu) / (x * (1.0 - x)))
    return jnp.where(x > mu, slope, 0.0)


def _private_argmin(
    mu_i: jax.Array, mu_j: jax.Array, w_i: jax.Array, w_j: jax.Array, eps: jax.Array
) -> jax.Array:
    """A minimiser x* ∈ [μ_j, μ_i] of w_i d⁻_ε(μ_i, x) + w_j d⁺_ε(μ_j, x) (μ_i where μ_i ≤ μ_j).

    The objective is convex and C¹ on [μ_j, μ_i]; its slope w_i ∂d⁻ + w_j ∂d⁺ is ≤ 0 at μ_j and
    ≥ 0 at μ_i. Bisection on the sign of the slope, the same number of steps in every lane
    (enough to shrink the bracket below the dtype's resolution: 31 in float32). Where the
    weighted mean lies in the kl branch of both divergences it is the exact minimiser and is
    returned instead (always at ε = ∞).
    """
    mu_i, mu_j, w_i, w_j, eps = jnp.broadcast_arrays(mu_i, mu_j, w_i, w_j, eps)
    lo = jnp.minimum(mu_j, mu_i)
    hi = mu_i

    def slope(x):
        return -w_i * _d_plus_slope(1.0 - mu_i, 1.0 - x, eps) + w_j * _d_plus_slope(mu_j, x, eps)

    def body(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        up = slope(mid) > 0
        return jnp.where(up, lo, mid), jnp.where(up, mid, hi)

    steps = jnp.finfo(lo.dtype).nmant + 8
    lo, hi = jax.lax.fori_loop(0, steps, body, (lo, hi))
    tiny = jnp.finfo(lo.dtype).tiny
    mean = jnp.clip((w_i * mu_i + w_j * mu_j) / jnp.maximum(w_i + w_j, tiny), mu_j, mu_i)
    kl_kl = ~_beyond_kl(mu_j, mean, eps) & ~_beyond_kl(1.0 - mu_i, 1.0 - mean, eps)
    return jnp.where(kl_kl & (mu_i > mu_j), mean, 0.5 * (lo + hi))


def private_cost(
    mu_i: ArrayLike, mu_j: ArrayLike, w_i: ArrayLike, w_j: ArrayLike, epsilon: ArrayLike
) -> jax.Array:
    """Private transportation cost C*_ε(i, j, μ, w) = inf_x w_i d⁻_ε(μ_i, x) + w_j d⁺_ε(μ_j, x).

    Jourdan & Azize (2025), arXiv 2510.17348, private transportation cost: the cheapest way,
    for weights w, to make arm j at least as good as arm i. It is 0 where μ_i ≤ μ_j. The infimum
    over x ∈ [0, 1] is attained in [μ_j, μ_i], where the objective is convex; it is found by a
    fixed-step bisection on its slope (float32-accurate, the same steps in every lane). At
    ε = ∞ it is the Bernoulli-KL cost w_i kl(μ_i, x̄) + w_j kl(μ_j, x̄), x̄ the weighted mean
    (w_i μ_i + w_j μ_j) / (w_i + w_j); it is so for every ε ≥ logit μ_i − logit μ_j.

    Args:
        mu_i: Bernoulli mean in [0, 1] of the arm to beat (i).
        mu_j: Bernoulli mean in [0, 1] of its challenger (j).
        w_i: non-negative weight of arm i (a count or an allocation).
        w_j: non-negative weight of arm j.
        epsilon: privacy budget ε > 0 (``inf`` for no privacy).

    Returns:
        C*_ε, the broadcast shape of the arguments.

    Examples:
        >>> import math
        >>> kl = lambda p, q: p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))
        >>> exact = kl(0.9, 0.7) + kl(0.5, 0.7)  # equal weights, ε = ∞: x* = (0.9 + 0.5) / 2
        >>> abs(float(private_cost(0.9, 0.5, 1.0, 1.0, math.inf)) - exact) < 1e-6
        True
        >>> float(private_cost(0.5, 0.9, 1.0, 1.0, 0.1))  # μ_i ≤ μ_j
        0.0
    """
    mu_i, mu_j, w_i, w_j, eps = _as_floats(mu_i, mu_j, w_i, w_j, epsilon)
    x = _private_argmin(mu_i, mu_j, w_i, w_j, eps)
    cost = w_i * d_minus_eps(mu_i, x, eps) + w_j * d_plus_eps(mu_j, x, eps)
    return jnp.where(mu_i > mu_j, cost, 0.0)
