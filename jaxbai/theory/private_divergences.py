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


def _log_one_minus(y: jax.Array, y_bar: jax.Array, c: jax.Array, e: jax.Array) -> jax.Array:
    """log(1 − c y) for y ∈ [0, 1] given with y_bar = 1 − y, c = 1 − e^{−ε} and e = e^{−ε},
    accurate for every ε ∈ (0, ∞]: log1p(−c y) while c y ≤ ½, else log(e + c y_bar), a sum of
    non-negative terms where 1 − c y would cancel (y near 1 and large ε)."""
    cy = c * y
    return jnp.where(cy <= 0.5, jnp.log1p(-cy), jnp.log(e + c * y_bar))


def _contraction(eps: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(c, e) = (1 − e^{−ε}, e^{−ε}), each accurate relative to itself."""
    return -jnp.expm1(-eps), jnp.exp(-eps)


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
    beyond = -_log_one_minus(x, 1.0 - x, *_contraction(eps)) - eps * mu
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


def _rise(x: jax.Array, x_bar: jax.Array, mu: jax.Array, mu_bar: jax.Array) -> jax.Array:
    """x − μ, as μ̄ − x̄ above ½ (where 1 − x and 1 − μ carry the digits x and μ lose)."""
    return jnp.where(x > 0.5, mu_bar - x_bar, x - mu)


def _kl(mu: jax.Array, mu_bar: jax.Array, x: jax.Array, x_bar: jax.Array) -> jax.Array:
    """kl(μ, x) = μ log1p((μ − x)/x) + μ̄ log1p((x − μ)/x̄), with μ̄ = 1 − μ and x̄ = 1 − x given
    apart (so means and points near 1 keep their accuracy); 0 log 0 = 0."""
    rise = _rise(x, x_bar, mu, mu_bar)
    up = jnp.where(mu > 0, mu * jnp.log1p(-rise / x), 0.0)
    return up + jnp.where(mu_bar > 0, mu_bar * jnp.log1p(rise / x_bar), 0.0)


def _kl_root(
    mu: jax.Array,
    mu_bar: jax.Array,
    w_kl: jax.Array,
    w_beyond: jax.Array,
    c: jax.Array,
    e: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """(x, 1 − x) at the stationary point x ≥ μ where an arm of mean μ (μ̄ = 1 − μ) and weight
    w_kl moves up on its kl branch and the other arm (weight w_beyond) moves down on its beyond
    branch (c = 1 − e^{−ε}, e = e^{−ε}, w_kl + w_beyond > 0).

    The slope w_kl (x − μ)/(x(1 − x)) − w_beyond c/(e + c x) changes sign once on [μ, 1), at the
    root of a quadratic. Written in t = x − μ it is A t² + B t − C, with A = c (w_kl + w_beyond),
    B = w_kl (e + c μ) − w_beyond c (1 − 2μ), C = w_beyond c μ μ̄ ≥ 0: its non-negative root. In
    s = 1 − x it is A s² − B' s + C', with B' = c w_beyond + w_kl (1 + c μ̄), C' = w_kl μ̄: its
    smaller root, whose discriminant is (A − u)² + 4 A w_kl e μ, u = w_kl (e + c μ̄), a sum of
    non-negative terms (e + c = 1). Each root is taken in its cancellation-free form and is
    accurate relative to itself; the point is μ + t near μ and 1 − s near 1, so a stationary
    point within float32's resolution of μ is μ itself and one near 1 keeps its distance to 1.
    """
    a = c * (w_kl + w_beyond)
    b = w_kl * (e + c * mu) - w_beyond * c * (1.0 - 2.0 * mu)
    k = w_beyond * c * mu * mu_bar
    root = jnp.sqrt(b * b + 4.0 * a * k)
    up = b + root
    t = jnp.where(b >= 0, 2.0 * k / jnp.where(up > 0, up, 1.0), (root - b) / (2.0 * a))
    u = w_kl * (e + c * mu_bar)
    spread = c * w_beyond + w_kl * (1.0 + c * mu_bar)
    s = 2.0 * w_kl * mu_bar / (spread + jnp.sqrt((a - u) ** 2 + 4.0 * a * w_kl * e * mu))
    near = t <= s
    return jnp.where(near, mu + t, 1.0 - s), jnp.where(near, mu_bar - t, s)


def _kl_edge(mu: jax.Array, mu_bar: jax.Array, c: jax.Array, e: jax.Array) -> tuple:
    """(g_ε(μ) − μ, 1 − g_ε(μ)) = (μ μ̄ c, μ̄ e) / (μ + μ̄ e), μ̄ = 1 − μ: where d⁺_ε(μ, ·) leaves kl,
    as its distances to μ and to 1 (c = 1 − e^{−ε}, e = e^{−ε}), each accurate relative to
    itself (a breakpoint within float32's resolution of μ rounds to μ). (0, 1) at μ = 0, also
    where e^{−ε} underflows."""
    spread = mu + mu_bar * e
    spread = jnp.where(spread > 0, spread, 1.0)
    return mu * mu_bar * c / spread, jnp.where(mu > 0, mu_bar * e / spread, 1.0)


Point = tuple[jax.Array, jax.Array]
"""A point x of [0, 1] as (x, 1 − x), each accurate relative to itself."""


def _pick(condition: jax.Array, a: Point, b: Point) -> Point:
    return jnp.where(condition, a[0], b[0]), jnp.where(condition, a[1], b[1])


def _clip(x: Point, lo: Point, hi: Point) -> Point:
    return _pick(x[0] < lo[0], lo, _pick(x[0] > hi[0], hi, x))


def _private_argmin(
    mu_i: jax.Array, mu_j: jax.Array, w_i: jax.Array, w_j: jax.Array, eps: jax.Array
) -> tuple[Point, jax.Array, jax.Array]:
    """The minimiser x* ∈ [μ_j, μ_i] of w_i d⁻_ε(μ_i, x) + w_j d⁺_ε(μ_j, x) as (x*, 1 − x*), in
    closed form (no iteration), and the breakpoints (g_j, h_i): d⁺_ε(μ_j, x) is on kl for
    x ≤ g_j, d⁻_ε(μ_i, x) for x ≥ h_i. μ_i ≥ μ_j and w_i + w_j > 0.

    g_j and h_i split [μ_j, μ_i] into at most three segments, each with one pair of branches:
    [μ_j, b₁] (j kl, i beyond), [b₁, b₂] (both beyond if g_j ≤ h_i, else both kl) and [b₂, μ_i]
    (j beyond, i kl), b₁ ≤ b₂ the two points clipped into [μ_j, μ_i]. On each pair the
    first-order condition is linear (kl/kl: the weighted mean; beyond/beyond:
    (w_i − w_j e^{−ε}) / ((1 − e^{−ε})(w_i + w_j))) or a quadratic (`_kl_root`, the other mixed
    pair by the mirror x ↦ 1 − x), and the slope changes sign once; that root clipped into its
    segment minimises the objective there. The objective is convex and C¹, so x* is in the
    first segment at whose right end the slope is non-negative. The slope at a breakpoint is
    taken on the branch that does not read the breakpoint's offset from its mean (beyond, for
    the arm whose breakpoint it is: equal there, by C¹), so a breakpoint rounded to float32
    cannot flip the test where that matters; comparing a root with a segment's end instead can
    (tiny ε: a long, almost flat segment follows). Breakpoints and roots are offsets from the
    nearest mean or end of [0, 1] (`_kl_edge`, `_kl_root`).
    """
    c, e = _contraction(eps)
    private = jnp.isfinite(eps)
    mu_i_bar, mu_j_bar = 1.0 - mu_i, 1.0 - mu_j
    reach_j, far_j = _kl_edge(mu_j, mu_j_bar, c, e)
    reach_i, far_i = _kl_edge(mu_i_bar, mu_i, c, e)
    one, zero = jnp.ones_like(mu_i), jnp.zeros_like(mu_i)
    g_j = _pick(private, (mu_j + reach_j, far_j), (one, zero))
    h_i = _pick(private, (far_i, mu_i_bar + reach_i), (zero, one))
    both_kl = g_j[0] > h_i[0]  # the middle segment's pair
    ends = (mu_j, mu_j_bar), (mu_i, mu_i_bar)
    b_1 = _clip(_pick(both_kl, h_i, g_j), *ends)
    b_2 = _clip(_pick(both_kl, g_j, h_i), *ends)
    gap, total = mu_i - mu_j, w_i + w_j
    kl_kl = _pick(
        w_i <= w_j,
        (mu_j + w_i * gap / total, mu_j_bar - w_i * gap / total),
        (mu_i - w_j * gap / total, mu_i_bar + w_j * gap / total),
    )
    beyond_beyond = ((w_i - w_j) + w_j * c) / (c * total), ((w_j - w_i) + w_i * c) / (c * total)
    x_1 = _clip(_kl_root(mu_j, mu_j_bar, w_j, w_i, c, e), ends[0], b_1)
    x_2 = _clip(_pick(both_kl, kl_kl, beyond_beyond), b_1, b_2)
    x_3 = _clip(_kl_root(mu_i_bar, mu_i, w_i, w_j, c, e)[::-1], b_2, ends[1])

    def pull_up(x: Point) -> jax.Array:  # j's slope on beyond, over c
        return w_j / (e + c * x[1])

    def pull_down(x: Point) -> jax.Array:  # minus i's slope on beyond, over c
        return w_i / (e + c * x[0])

    # both beyond at b₁ = g_j and b₂ = h_i; else b₁ = h_i (j on kl) and b₂ = g_j (i on kl)
    j_kl_1 = w_j * _rise(*b_1, mu_j, mu_j_bar) / (b_1[0] * b_1[1])
    i_kl_2 = -w_i * _rise(*b_2, mu_i, mu_i_bar) / (b_2[0] * b_2[1])
    at_1 = jnp.where(both_kl, j_kl_1, c * pull_up(b_1)) - c * pull_down(b_1)
    at_2 = c * pull_up(b_2) - jnp.where(both_kl, i_kl_2, c * pull_down(b_2))
    first = (b_1[0] > mu_j) & (at_1 >= 0)
    second = (b_2[0] >= mu_i) | (at_2 >= 0)
    return _pick(first, x_1, _pick(second, x_2, x_3)), g_j[0], h_i[0]


def _private_objective(
    mu_i: jax.Array,
    mu_j: jax.Array,
    w_i: jax.Array,
    w_j: jax.Array,
    eps: jax.Array,
    x: Point,
    i_kl: jax.Array,
    j_kl: jax.Array,
) -> jax.Array:
    """w_i d⁻_ε(μ_i, x) + w_j d⁺_ε(μ_j, x) on the given branches (kl, or beyond:
    −log(1 − c (1 − x)) − ε (1 − μ_i) for i and −log(1 − c x) − ε μ_j for j)."""
    c, e = _contraction(eps)
    x, x_bar = x
    mu_i_bar, mu_j_bar = 1.0 - mu_i, 1.0 - mu_j
    down = jnp.where(
        i_kl, _kl(mu_i, mu_i_bar, x, x_bar), -_log_one_minus(x_bar, x, c, e) - eps * mu_i_bar
    )
    up = jnp.where(
        j_kl, _kl(mu_j, mu_j_bar, x, x_bar), -_log_one_minus(x, x_bar, c, e) - eps * mu_j
    )
    # each side is 0 at its own mean and for a zero weight (0 · inf would be NaN where the
    # point reaches 0 or 1 on kl)
    down = jnp.where((w_i > 0) & (x < mu_i), w_i * down, 0.0)
    return down + jnp.where((w_j > 0) & (x > mu_j), w_j * up, 0.0)


def private_cost(
    mu_i: ArrayLike, mu_j: ArrayLike, w_i: ArrayLike, w_j: ArrayLike, epsilon: ArrayLike
) -> jax.Array:
    """Private transportation cost C*_ε(i, j, μ, w) = inf_x w_i d⁻_ε(μ_i, x) + w_j d⁺_ε(μ_j, x).

    Jourdan & Azize (2025), arXiv 2510.17348, private transportation cost: the cheapest way,
    for weights w, to make arm j at least as good as arm i. It is 0 where μ_i ≤ μ_j. The infimum
    over x ∈ [0, 1] is attained in [μ_j, μ_i], where the objective is convex; its minimiser is in
    closed form (the first-order condition is at most a quadratic on each pair of branches, no
    iteration), and the cost is the objective there, each arm on the branch its breakpoint
    gives x* (either, within float32's resolution of it: the two agree there). At
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
    mu_i, mu_j, w_i, w_j, eps = jnp.broadcast_arrays(*_as_floats(mu_i, mu_j, w_i, w_j, epsilon))
    above = mu_i > mu_j
    mu_i = jnp.where(above, mu_i, mu_j)  # a cost of 0: any point of the interval will do
    empty = (w_i + w_j) <= 0  # a cost of 0 too
    args = (mu_i, mu_j, jnp.where(empty, 1.0, w_i), jnp.where(empty, 1.0, w_j), eps)
    x, g_j, h_i = _private_argmin(*args)
    cost = _private_objective(mu_i, mu_j, w_i, w_j, eps, x, x[0] >= h_i, x[0] <= g_j)
    return jnp.where(above, cost, 0.0)
