"""Characteristic times, lower bounds, regime switches and asymptotic upper bounds.

Every characteristic time of the paper is the value of a zero-sum game (Eq. 1)

    T*(ν)⁻¹ = sup_{ω ∈ Σ_K} inf_{λ ∈ Alt(ν)} Σ_a ω_a d(ν_a, λ_a),

with d = KL (Lemma 5), TV or TV² (Corollaries 11 and 18), min{KL, c(ε)·TV²} (Theorem 10) or the
instance-level min{Σ ω KL, ε Σ ω TV} (Theorem 17). Because Alt(ν) = ∪_{a ≠ a*} {λ_a ≥ λ_{a*}},
each alternative only moves the pair (a*, a) to a common mean x ∈ [μ_a, μ_{a*}], so the game is

    T*⁻¹ = sup_ω min_{a ≠ a*} inf_x ω_{a*} A_a(x) + ω_a B_a(x),

with A_a(x) = d(μ_{a*}, x) and B_a(x) = d(μ_a, x).

How it is solved (one compiled program, batched over instances and ε):

* **Primal (optax).** Adam on the logits of ω maximises a soft-min (temperature annealed) of the
  per-alternative costs; the inner infimum is exact: closed form (weighted mean) for Bernoulli
  KL, Gaussian KL and TV², both endpoints for TV, a dense grid refined by golden-section search
  at its two best local minima for the non-convex local-DP cost.
* **Dual certificate.** For any finite set of alternatives (a dense grid of x per challenger plus
  the exact minimisers at the current ω), the restricted game is a lower bound on T* and, since
  every alternative only involves (a*, a), it reduces to a one-dimensional convex problem in
  w = ω_{a*}: T_rows = min_w w + Σ_a max_x (1 − w A_a(x))_+ / B_a(x), solved by bisection. Its
  minimiser also gives a primal allocation (polishing step).
* **Stopping.** The loop stops when the certified relative gap T_upper / T_lower − 1 is at most
  ``tol`` (default 1e-5), where T_upper = 1 / (exact game value of the returned allocation).
  The gap is returned in :class:`SolverInfo`; it is exact up to float rounding and up to the
  accuracy of the one-dimensional inner minimisations (golden section, ~1e-8 relative).

All functions accept means of shape (..., K) and broadcast ε (and β) against the batch shape.
Input checks run on concrete values only (a ValueError before anything is compiled); under
``jit``/``vmap`` traced values pass unchecked.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.scipy.special import logsumexp
from jax.typing import ArrayLike

from jaxbai import _validate

__all__ = [
    "DIVERGENCES",
    "SolverInfo",
    "adap_tt_bound",
    "adap_tt_star_bound",
    "c_local",
    "ctb_tt_bound",
    "g1",
    "g2",
    "hardness",
    "kl_bernoulli",
    "lower_bound_samples",
    "regime_switch",
    "t_star",
    "t_star_global",
    "t_star_global_proxy",
    "t_star_global_relaxed",
    "t_star_local",
    "t_star_local_relaxed",
    "t_star_tv_closed_form",
]

DIVERGENCES = ("kl_bernoulli", "kl_gaussian", "tv", "tv2")
"""Divergences d accepted by :func:`t_star` (Eq. 1)."""

_GRID = 32  # grid points of x per challenger in the certificate's restricted game
_GRID_LOCAL = 128  # finer grid for the non-convex local-DP inner problem
_CHUNK = 50  # optax steps between two certificates
_MIN_BUCKET = 32  # smallest padded batch of a concrete call
_GOLDEN = 40  # golden-section iterations (bracket shrinks by 0.618**40 ≈ 4e-9)
_BISECT = 64  # bisection iterations of the one-dimensional dual problem
_COMB = tuple(sign * 10.0 ** (-k / 4) for k in range(2, 21) for sign in (-1.0, 1.0))


class SolverInfo(NamedTuple):
    """Accuracy report of a characteristic-time computation.

    Attributes:
        rel_gap: certified relative gap T_upper / T_lower − 1 (target ≤ ``tol``).
        time_lower: certified lower bound T_lower on the characteristic time (dual side).
        steps: number of optax steps taken.
    """

    rel_gap: jax.Array
    time_lower: jax.Array
    steps: jax.Array


# --------------------------------------------------------------------------------------------
# Divergences between arm distributions
# --------------------------------------------------------------------------------------------


def kl_bernoulli(p: ArrayLike, q: ArrayLike) -> jax.Array:
    """KL(Ber(p) ‖ Ber(q)) = p log(p/q) + (1−p) log((1−p)/(1−q)) (Lemma 5).

    ``q`` is clipped to [eps, 1 − eps] (machine epsilon) so the result stays finite.

    Example:
        >>> float(kl_bernoulli(0.5, 0.5))
        0.0
    """
    p, q = _float(p), _float(q)
    dtype = jnp.result_type(p, q)
    p, q = p.astype(dtype), q.astype(dtype)
    tiny = jnp.finfo(dtype).eps
    q = jnp.clip(q, tiny, 1.0 - tiny)
    # log1p of exact differences: absolute error ~ eps·|p − q| instead of ~eps (no cancellation
    # of O(1) terms), so KL values ~1e-3 keep ~6 significant digits in float32.
    up = jnp.where(p > 0, p * jnp.log1p((p - q) / q), 0.0)
    down = jnp.where(p < 1, (1.0 - p) * jnp.log1p((q - p) / (1.0 - q)), 0.0)
    return up + down


_C_LOCAL_CAP = 1e30
"""c(ε) beyond which min{KL, c·TV²} = KL for every alternative of interest."""


def c_local(epsilon: ArrayLike) -> jax.Array:
    """Local-DP contraction c(ε) = min{4, e^{2ε}} (e^ε − 1)² (Theorem 10, Eq. 7).

    Example:
        >>> round(float(c_local(1.0)), 2)  # 4 (e − 1)²
        11.81
    """
    eps = _float(epsilon)
    return jnp.minimum(4.0, jnp.exp(2.0 * eps)) * jnp.expm1(eps) ** 2


# --------------------------------------------------------------------------------------------
# Input checks (concrete inputs only)
# --------------------------------------------------------------------------------------------


def _check_means(means: ArrayLike, bernoulli: bool) -> None:
    if not _validate.is_concrete(means):
        return
    arr = np.asarray(means, dtype=np.float64)
    if arr.ndim < 1 or arr.shape[-1] < 2:
        raise ValueError(f"means must have shape (..., K) with K >= 2, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError("means must be finite")
    if bernoulli and ((arr < 0).any() or (arr > 1).any()):
        raise ValueError("Bernoulli means must lie in [0, 1]")
    _validate.check_unique_best(arr)


def _check_positive(name: str, value: ArrayLike) -> None:
    if _validate.is_concrete(value):
        arr = np.asarray(value, dtype=np.float64)
        if np.isnan(arr).any() or (arr <= 0).any():
            raise ValueError(f"{name} must be > 0, got {value!r}")


def _check_open_unit(name: str, value: ArrayLike) -> None:
    if _validate.is_concrete(value):
        arr = np.asarray(value, dtype=np.float64)
        if np.isnan(arr).any() or (arr <= 0).any() or (arr >= 1).any():
            raise ValueError(f"{name} must lie in (0, 1), got {value!r}")


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; expected one of {choices}")


# --------------------------------------------------------------------------------------------
# Gaps and closed forms
# --------------------------------------------------------------------------------------------


def _gaps(means: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(best index, is_best mask, gaps Δ with Δ_{a*} = Δ_min) along the last axis."""
    best = jnp.argmax(means, axis=-1)
    is_best = jnp.arange(means.shape[-1]) == best[..., None]
    raw = jnp.max(means, axis=-1, keepdims=True) - means
    dmin = jnp.min(jnp.where(is_best, jnp.inf, raw), axis=-1, keepdims=True)
    return best, is_best, jnp.where(is_best, dmin, raw)


def _float(x: ArrayLike) -> jax.Array:
    """As a JAX array of the default floating dtype (or wider, if ``x`` already is)."""
    x = jnp.asarray(x)
    return x.astype(jnp.result_type(x, float))


def _as_means(means: ArrayLike) -> jax.Array:
    return _float(means)


def t_star_tv_closed_form(means: ArrayLike) -> jax.Array:
    """TV characteristic time of a Bernoulli instance, T*_TV = 1/Δ_min + Σ_{a≠a*} 1/Δ_a.

    Corollary 18 / Proposition 30 (Appendix D.3.5), i.e. Σ_{a ∈ [K]} Δ_a⁻¹ with Δ_{a*} = Δ_min.

    Example:
        >>> round(float(t_star_tv_closed_form([0.9, 0.8, 0.5])), 4)
        22.5
    """
    _check_means(means, bernoulli=True)
    _, _, gaps = _gaps(_as_means(means))
    return jnp.sum(1.0 / gaps, axis=-1)


def hardness(means: ArrayLike, sigma: ArrayLike = 1.0) -> jax.Array:
    """H(ν) = 2σ² Σ_{a ∈ [K]} Δ_a⁻² with Δ_{a*} = Δ_min (Section 2.2.3, after Eq. 5).

    For Gaussian instances H(ν) ≤ T*_KL(ν) ≤ 2 H(ν).

    Example:
        >>> round(float(hardness([1.0, 0.0])), 4)
        4.0
    """
    _check_means(means, bernoulli=False)
    _check_positive("sigma", sigma)
    _, _, gaps = _gaps(_as_means(means))
    return 2.0 * jnp.asarray(sigma) ** 2 * jnp.sum(gaps**-2.0, axis=-1)


# --------------------------------------------------------------------------------------------
# The game solver
# --------------------------------------------------------------------------------------------


class _Params(NamedTuple):
    means: jax.Array  # (K,)
    epsilon: jax.Array  # ()
    sigma: jax.Array  # ()
    beta: jax.Array  # ()


def _pair_cost(kind: str, p: jax.Array, x: jax.Array, prm: _Params) -> jax.Array:
    """d(ν_p, λ_x) for the per-arm divergence of ``kind`` (mean p, alternative mean x)."""
    if kind in ("kl_bernoulli", "global"):
        return kl_bernoulli(p, x)
    if kind == "kl_gaussian":
        return (p - x) ** 2 / (2.0 * prm.sigma**2)
    if kind == "tv":
        return jnp.abs(p - x)
    if kind == "tv2":
        return (p - x) ** 2
    if kind == "local":  # Theorem 10: min{KL, c(ε) TV²}
        # c(ε) overflows float32 for ε ≳ 44; capped, the min is KL there, as it should be.
        c = jnp.minimum(c_local(prm.epsilon), _C_LOCAL_CAP)
        return jnp.minimum(kl_bernoulli(p, x), c * (p - x) ** 2)
    raise ValueError(kind)


def _golden_min(f, lo: jax.Array, hi: jax.Array) -> jax.Array:
    """Golden-section search for a minimiser of f on [lo, hi] (elementwise)."""
    r = (math.sqrt(5.0) - 1.0) / 2.0

    def body(_, carry):
        a, b = carry
        c = b - r * (b - a)
        d = a + r * (b - a)
        left = f(c) < f(d)
        return jnp.where(left, a, c), jnp.where(left, d, b)

    a, b = jax.lax.fori_loop(0, _GOLDEN, body, (lo, hi))
    return 0.5 * (a + b)


def _rows(
    kind: str, omega: jax.Array, prm: _Params, refine: bool = True
) -> tuple[jax.Array, jax.Array]:
    """Coefficients (A, B), shape (K, R), of a finite set of alternatives per challenger.

    Row r of challenger a is the alternative moving (a*, a) to a common mean x_r; it costs
    ω_{a*} A[a, r] + ω_a B[a, r]. Rows: a uniform grid of x over [μ_a, μ_{a*}] and the exact
    minimisers of the inner infimum at ``omega`` (so min over rows is the exact infimum).
    """
    mu = prm.means
    best = jnp.argmax(mu)
    mb = mu[best]
    wb = omega[best]
    n_grid = _GRID_LOCAL if kind == "local" else _GRID
    u = jnp.linspace(0.0, 1.0, n_grid, dtype=mu.dtype)
    xg = mu[:, None] + (mb - mu)[:, None] * u[None, :]  # (K, G)
    if kind == "local":
        f = wb * _pair_cost(kind, mb, xg, prm) + omega[:, None] * _pair_cost(
            kind, mu[:, None], xg, prm
        )
        idx = jnp.arange(n_grid)
        left = jnp.concatenate([f[:, :1], f[:, :-1]], axis=1)
        right = jnp.concatenate([f[:, 1:], f[:, -1:]], axis=1)
        local_min = (f <= left) & (f <= right)
        fm = jnp.where(local_min, f, jnp.inf)
        i1 = jnp.argmin(fm, axis=1)
        fm2 = jnp.where(idx[None, :] == i1[:, None], jnp.inf, fm)
        i2 = jnp.where(jnp.isfinite(jnp.min(fm2, axis=1)), jnp.argmin(fm2, axis=1), i1)
        refined = []
        for i in (i1, i2):
            lo = jnp.take_along_axis(xg, jnp.maximum(i - 1, 0)[:, None], 1)[:, 0]
            hi = jnp.take_along_axis(xg, jnp.minimum(i + 1, n_grid - 1)[:, None], 1)[:, 0]

            def obj(x):
                return wb * _pair_cost(kind, mb, x, prm) + omega * _pair_cost(kind, mu, x, prm)

            if refine:
                refined.append(_golden_min(obj, jnp.minimum(lo, hi), jnp.maximum(lo, hi)))
            else:  # the optax steps only need a good soft-min gradient: grid minima suffice
                refined.append(jnp.take_along_axis(xg, i[:, None], 1)[:, 0])
        xr = jnp.stack(refined, axis=1)
    elif kind == "tv":
        xr = jnp.stack([mu, jnp.broadcast_to(mb, mu.shape)], axis=1)
    else:  # closed form: the weighted mean minimises KL (exp. family), Gaussian KL and TV²
        xr = ((wb * mb + omega * mu) / jnp.maximum(wb + omega, jnp.finfo(mu.dtype).tiny))[:, None]
    # a fine geometric comb around each exact minimiser, so that the restricted game of the
    # certificate (see `_dual`) resolves the curvature of the inner infimum near the optimum
    steps = jnp.asarray(_COMB, mu.dtype) * (mb - mu)[:, None, None]  # (K, 1, C)
    comb = jnp.clip(xr[:, :, None] + steps, jnp.minimum(mu, mb)[:, None, None], mb)
    x = jnp.concatenate([xg, xr, comb.reshape(mu.shape[0], -1)], axis=1)
    x = jax.lax.stop_gradient(x)
    a_cost = _pair_cost(kind, mb, x, prm)
    b_cost = _pair_cost(kind, mu[:, None], x, prm)
    if kind == "global":  # Theorem 17: the ε·TV alternatives, i.e. both endpoints
        gap = (mb - mu)[:, None]
        zero = jnp.zeros_like(gap)
        a_cost = jnp.concatenate([a_cost, prm.epsilon * gap, zero], axis=1)
        b_cost = jnp.concatenate([b_cost, zero, prm.epsilon * gap], axis=1)
    return a_cost, b_cost


def _costs(
    kind: str,
    omega: jax.Array,
    prm: _Params,
    weights: jax.Array | None = None,
    refine: bool = True,
):
    """Cost ω_{a*} A + ω_a B of every alternative row at ``omega``, +inf on the best arm's rows.

    ``weights`` (default ``omega``) is the allocation the costs are linear in; the rows are
    chosen at ``omega`` (Danskin: the gradient in ``weights`` is the row's coefficients).
    """
    a_cost, b_cost = _rows(kind, omega, prm, refine)
    w = omega if weights is None else weights
    best = jnp.argmax(prm.means)
    big = jnp.asarray(1e30, a_cost.dtype)  # finite stand-in for +inf (boundary alternatives)
    cost = w[best] * jnp.minimum(a_cost, big) + w[:, None] * jnp.minimum(b_cost, big)
    is_best = (jnp.arange(w.shape[0]) == best)[:, None]
    return jnp.where(is_best, jnp.inf, cost)


def _value(kind: str, omega: jax.Array, prm: _Params) -> jax.Array:
    """Exact game value inf_λ Σ ω_a d(ν_a, λ_a) of an allocation (the primal lower bound)."""
    return jnp.min(_costs(kind, omega, prm))


def _dual(kind: str, omega: jax.Array, prm: _Params, use_beta: bool):
    """Value of the game restricted to the rows at ``omega`` (a lower bound T_rows on T*).

    One-dimensional reduction: T_rows = min_w S(w), S(w) = w + Σ_a H_a(w) with
    H_a(w) = max_r (1 − w A[a, r])_+ / B[a, r], over w ≥ w_min = max_{B = 0} 1 / A (rows with
    B = 0 force w A ≥ 1). S is convex, so bisection on the sign of its subgradient converges.
    With β, ω_{a*} = β is fixed: T_rows = w / β at the root of S(w) = w / β (decreasing).

    Returns:
        (T_rows, allocation attaining it on the rows).
    """
    a_cost, b_cost = _rows(kind, omega, prm)
    k = omega.shape[0]
    best = jnp.argmax(prm.means)
    valid = (jnp.arange(k) != best)[:, None]
    tiny = jnp.finfo(a_cost.dtype).tiny
    pos_b = valid & (b_cost > tiny) & jnp.isfinite(b_cost)
    zero_b = valid & ~(b_cost > tiny) & (a_cost > 0)
    w_min = jnp.max(jnp.where(zero_b, 1.0 / jnp.where(zero_b, a_cost, 1.0), 0.0))
    w_min = jnp.maximum(w_min, tiny)
    safe_b = jnp.where(pos_b, b_cost, 1.0)
    safe_a = jnp.where(jnp.isfinite(a_cost), a_cost, 0.0)

    def h_and_slope(w):
        ratio = jnp.where(pos_b, (1.0 - w * safe_a) / safe_b, -jnp.inf)
        r_star = jnp.argmax(ratio, axis=1)
        h = jnp.maximum(jnp.max(ratio, axis=1), 0.0)
        h = jnp.where(valid[:, 0], h, 0.0)
        a_r = jnp.take_along_axis(safe_a, r_star[:, None], 1)[:, 0]
        b_r = jnp.take_along_axis(safe_b, r_star[:, None], 1)[:, 0]
        dh = jnp.where(h > 0, -a_r / b_r, 0.0)
        return h, jnp.sum(dh)

    def total(w):
        h, slope = h_and_slope(w)
        return w + jnp.sum(h), 1.0 + slope, h

    s_min, _, _ = total(w_min)
    if use_beta:
        beta = prm.beta
        lo, hi = w_min, w_min + s_min / (1.0 / beta - 1.0)

        def body(_, carry):
            lo, hi = carry
            mid = 0.5 * (lo + hi)
            s, _, _ = total(mid)
            above = s > mid / beta
            return jnp.where(above, mid, lo), jnp.where(above, hi, mid)

        s_lo, _, _ = total(w_min)
        lo, hi = jax.lax.fori_loop(0, _BISECT, body, (lo, hi))
        w = jnp.where(s_lo <= w_min / beta, w_min, hi)
        _, _, h = total(w)
        others = (1.0 - beta) * h / jnp.maximum(jnp.sum(h), tiny)
        alloc = jnp.where(jnp.arange(k) == best, beta, others)
        return w / beta, alloc

    lo, hi = w_min, jnp.maximum(s_min, w_min)

    def body(_, carry):
        lo, hi = carry
        mid = 0.5 * (lo + hi)
        _, slope, _ = total(mid)
        up = slope > 0
        return jnp.where(up, lo, mid), jnp.where(up, mid, hi)

    lo, hi = jax.lax.fori_loop(0, _BISECT, body, (lo, hi))
    s_lo, _, h_lo = total(lo)
    s_hi, _, h_hi = total(hi)
    use_lo = s_lo <= s_hi
    w = jnp.where(use_lo, lo, hi)
    s = jnp.where(use_lo, s_lo, s_hi)
    h = jnp.where(use_lo, h_lo, h_hi)
    alloc = jnp.where(jnp.arange(k) == best, w, h) / s
    return s, alloc


def _omega_from_logits(theta: jax.Array, prm: _Params, use_beta: bool) -> jax.Array:
    if not use_beta:
        return jax.nn.softmax(theta)
    best = jnp.argmax(prm.means)
    is_best = jnp.arange(theta.shape[0]) == best
    rest = jax.nn.softmax(jnp.where(is_best, -jnp.inf, theta))
    return jnp.where(is_best, prm.beta, (1.0 - prm.beta) * rest)


class _Carry(NamedTuple):
    theta: jax.Array
    opt_state: optax.OptState
    step: jax.Array
    best_value: jax.Array  # best primal value (lower bound on T*⁻¹)
    best_omega: jax.Array
    t_lower: jax.Array  # best dual bound (lower bound on T*)


def _solve_one(kind: str, use_beta: bool, tol: float, max_steps: int, prm: _Params):
    """Solve one game; returns (T, ω, rel_gap, T_lower, steps)."""
    _, _, gaps = _gaps(prm.means)
    theta0 = -2.0 * jnp.log(gaps)
    anneal = 1000.0
    schedule = optax.exponential_decay(0.1, transition_steps=int(anneal), decay_rate=0.01)
    opt = optax.adam(lambda n: jnp.maximum(schedule(n), 1e-3))

    def loss(theta, tau):
        omega = _omega_from_logits(theta, prm, use_beta)
        cost = _costs(kind, jax.lax.stop_gradient(omega), prm, omega, refine=False)
        scale = jax.lax.stop_gradient(jnp.maximum(jnp.min(cost), 1e-30))
        soft = -tau * scale * logsumexp(-cost / (tau * scale))  # soft-min, relative temperature
        return -jnp.log(jnp.maximum(soft, 1e-30 * scale))

    grad_fn = jax.grad(loss)

    def adam_step(carry, _):
        theta, opt_state, step = carry
        frac = jnp.minimum(step / anneal, 1.0)
        tau = 0.1 * (1e-3 / 0.1) ** frac  # relative soft-min temperature, annealed
        g = grad_fn(theta, tau)
        g = jnp.where(jnp.isfinite(g), g, 0.0)
        upd, opt_state = opt.update(g, opt_state)
        return (optax.apply_updates(theta, upd), opt_state, step + 1), None

    def certify(c: _Carry, omega: jax.Array) -> _Carry:
        val = _value(kind, omega, prm)
        better = val > c.best_value
        best_value = jnp.where(better, val, c.best_value)
        best_omega = jnp.where(better, omega, c.best_omega)
        t_rows, alloc = _dual(kind, best_omega, prm, use_beta)
        val_r = _value(kind, alloc, prm)
        better = val_r > best_value
        best_value = jnp.where(better, val_r, best_value)
        best_omega = jnp.where(better, alloc, best_omega)
        t_lower = jnp.maximum(c.t_lower, t_rows)
        theta = jnp.log(jnp.maximum(best_omega, 1e-30))
        return c._replace(
            theta=theta, best_value=best_value, best_omega=best_omega, t_lower=t_lower
        )

    def gap(c: _Carry) -> jax.Array:
        return (1.0 / c.best_value) / c.t_lower - 1.0

    def cond(c: _Carry) -> jax.Array:
        return (gap(c) > tol) & (c.step < max_steps)

    def body(c: _Carry) -> _Carry:
        # certify (and polish) the current iterate, then run one chunk of optax steps; the
        # chunk after the final certificate is wasted work but keeps a single copy of the graph
        c = certify(c, _omega_from_logits(c.theta, prm, use_beta))
        done = ~cond(c)
        (theta, opt_state, step), _ = jax.lax.scan(
            adam_step, (c.theta, c.opt_state, c.step), None, length=_CHUNK
        )
        return c._replace(
            theta=jnp.where(done, c.theta, theta),
            opt_state=opt_state,
            step=jnp.where(done, c.step, step),
        )

    dtype = prm.means.dtype
    c0 = _Carry(
        theta=theta0,
        opt_state=opt.init(theta0),
        step=jnp.zeros((), jnp.int32),
        best_value=jnp.zeros((), dtype),
        best_omega=_omega_from_logits(theta0, prm, use_beta),
        t_lower=jnp.zeros((), dtype),
    )
    c = jax.lax.while_loop(cond, body, c0)  # gap(c0) = inf: at least one certificate
    return 1.0 / c.best_value, c.best_omega, jnp.maximum(gap(c), 0.0), c.t_lower, c.step


@functools.partial(jax.jit, static_argnames=("kind", "use_beta", "tol", "max_steps"))
def _solve(kind, use_beta, tol, max_steps, means, epsilon, sigma, beta):
    """Batched entry point: flat batch of games (jitted optax loop)."""
    prm = _Params(means, epsilon, sigma, beta)
    return jax.vmap(functools.partial(_solve_one, kind, use_beta, tol, max_steps))(prm)


def _run(kind, means, epsilon=1.0, sigma=1.0, beta=None, tol=1e-5, max_steps=3000):
    """Broadcast (means (..., K), ε, σ, β), flatten, solve, reshape."""
    means = _as_means(means)
    dtype = means.dtype
    use_beta = beta is not None
    eps = jnp.asarray(epsilon, dtype)
    sig = jnp.asarray(sigma, dtype)
    bet = jnp.asarray(0.5 if beta is None else beta, dtype)
    shape = jnp.broadcast_shapes(means.shape[:-1], eps.shape, sig.shape, bet.shape)
    k = means.shape[-1]
    n = int(np.prod(shape))
    m = jnp.broadcast_to(means, (*shape, k)).reshape((n, k))
    e, s, b = (jnp.broadcast_to(v, shape).reshape(n) for v in (eps, sig, bet))
    # Concrete calls are padded to a bucket size so that a handful of programs serve every
    # batch size; traced calls (under the caller's jit/vmap) are not padded.
    size = n
    if _validate.is_concrete((means, epsilon, sigma, beta)):
        size = max(_MIN_BUCKET, 1 << max(n - 1, 0).bit_length())
    pad = [(0, size - n)]
    m = jnp.pad(m, [*pad, (0, 0)], mode="edge")
    e, s, b = (jnp.pad(v, pad, mode="edge") for v in (e, s, b))
    time, omega, rel_gap, t_lower, steps = _solve(
        kind, use_beta, float(tol), int(max_steps), m, e, s, b
    )
    info = SolverInfo(
        rel_gap[:n].reshape(shape), t_lower[:n].reshape(shape), steps[:n].reshape(shape)
    )
    return time[:n].reshape(shape), omega[:n].reshape((*shape, k)), info


# --------------------------------------------------------------------------------------------
# Public characteristic times
# --------------------------------------------------------------------------------------------


def t_star(
    means: ArrayLike,
    divergence: str = "kl_bernoulli",
    beta: ArrayLike | None = None,
    sigma: ArrayLike = 1.0,
    *,
    tol: float = 1e-5,
    max_steps: int = 3000,
    return_info: bool = False,
):
    """Characteristic time T*_d(ν) and optimal allocation ω*_d(ν) (Eq. 1; Eq. 5 with β).

    Args:
        means: arm means, shape (..., K), with a unique best arm.
        divergence: ``"kl_bernoulli"`` (Lemma 5), ``"kl_gaussian"`` (variance σ²), ``"tv"`` or
            ``"tv2"`` (TV and TV² between Bernoulli arms, Corollaries 11 and 18).
        beta: if given, the β-characteristic time T*_{d,β} with ω_{a*} = β (Eq. 5).
        sigma: Gaussian standard deviation (``"kl_gaussian"`` only).
        tol: certified relative accuracy at which the solver stops.
        max_steps: optax step budget.
        return_info: also return a :class:`SolverInfo` with the certified accuracy.

    Returns:
        ``(T, ω)``, or ``(T, ω, info)`` with ``return_info=True``; T has the batch shape and
        ω shape (..., K). T = 1 / (game value of ω), so T ≥ T* ≥ info.time_lower.

    Example:
        >>> T, w = t_star([0.5, 0.4, 0.3], "kl_gaussian", sigma=1.0)
        >>> round(float(T), 1)
        857.1
    """
    _check_choice("divergence", divergence, DIVERGENCES)
    _check_means(means, bernoulli=divergence != "kl_gaussian")
    _check_positive("sigma", sigma)
    if beta is not None:
        _check_open_unit("beta", beta)
    time, omega, info = _run(
        divergence, means, sigma=sigma, beta=beta, tol=tol, max_steps=max_steps
    )
    return (time, omega, info) if return_info else (time, omega)


def t_star_local(
    means: ArrayLike,
    epsilon: ArrayLike,
    *,
    tol: float = 1e-5,
    max_steps: int = 3000,
    return_info: bool = False,
):
    """Local-DP characteristic time T*_ℓ(ν; ε) of a Bernoulli instance (Theorem 10).

    T*_ℓ⁻¹ = sup_ω inf_{λ ∈ Alt} Σ_a ω_a min{KL(ν_a ‖ λ_a), c(ε) TV(ν_a ‖ λ_a)²}. The inner
    infimum (a non-convex one-dimensional problem per challenger) is solved on a dense grid
    refined by golden-section search at its two best local minima.

    Args:
        means: Bernoulli means, shape (..., K).
        epsilon: privacy budget ε > 0, broadcast against the batch shape.
        tol, max_steps, return_info: as in :func:`t_star`.

    Returns:
        T*_ℓ, or ``(T*_ℓ, ω*, info)`` with ``return_info=True``.

    Example:
        >>> T = t_star_local([0.75, 0.7, 0.7, 0.7, 0.7], 0.5)
        >>> bool(T > t_star_local_relaxed([0.75, 0.7, 0.7, 0.7, 0.7], 0.5) * 0.999)
        True
    """
    _check_means(means, bernoulli=True)
    _check_positive("epsilon", epsilon)
    time, omega, info = _run("local", means, epsilon=epsilon, tol=tol, max_steps=max_steps)
    return (time, omega, info) if return_info else time


def t_star_local_relaxed(means: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """Relaxed local-DP bound max{T*_KL(ν), T*_TV²(ν) / c(ε)} ≤ T*_ℓ(ν; ε) (Corollary 11, Eq. 7).

    Example:
        >>> round(float(t_star_local_relaxed([0.9, 0.5], 10.0)), 2)  # = T*_KL at large ε
        9.78
    """
    _check_means(means, bernoulli=True)
    _check_positive("epsilon", epsilon)
    t_kl, _ = t_star(means, "kl_bernoulli")
    t_tv2, _ = t_star(means, "tv2")
    return jnp.maximum(t_kl, t_tv2 / c_local(epsilon))


def t_star_global(
    means: ArrayLike,
    epsilon: ArrayLike,
    *,
    tol: float = 1e-5,
    max_steps: int = 3000,
    return_info: bool = False,
):
    """Global-DP characteristic time T*_g(ν; ε) of a Bernoulli instance (Theorem 17).

    T*_g⁻¹ = sup_ω inf_{λ ∈ Alt} min{Σ_a ω_a KL(ν_a ‖ λ_a), ε Σ_a ω_a TV(ν_a ‖ λ_a)}; since an
    infimum of a minimum is the minimum of the infima, every alternative is either a KL one
    (exact weighted-mean minimiser) or one of the two ε·TV endpoints.

    Args:
        means: Bernoulli means, shape (..., K).
        epsilon: privacy budget ε > 0, broadcast against the batch shape.
        tol, max_steps, return_info: as in :func:`t_star`.

    Returns:
        T*_g, or ``(T*_g, ω*, info)`` with ``return_info=True``.

    Example:
        >>> T = t_star_global([0.95, 0.9, 0.9, 0.9, 0.5], 1.0)
        >>> bool(T >= t_star_global_relaxed([0.95, 0.9, 0.9, 0.9, 0.5], 1.0) * 0.999)
        True
    """
    _check_means(means, bernoulli=True)
    _check_positive("epsilon", epsilon)
    time, omega, info = _run("global", means, epsilon=epsilon, tol=tol, max_steps=max_steps)
    return (time, omega, info) if return_info else time


def t_star_global_relaxed(means: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """Relaxed global-DP bound max{T*_KL(ν), T*_TV(ν) / ε} ≤ T*_g(ν; ε) (Corollary 18, Eq. 9).

    Example:
        >>> round(float(t_star_global_relaxed([0.9, 0.5], 0.01)), 1)  # = T*_TV / ε
        500.0
    """
    _check_means(means, bernoulli=True)
    _check_positive("epsilon", epsilon)
    t_kl, _ = t_star(means, "kl_bernoulli")
    return jnp.maximum(t_kl, t_star_tv_closed_form(means) / jnp.asarray(epsilon))


def _gaussian_eps_means(means: jax.Array, epsilon: jax.Array) -> jax.Array:
    """Means of ν_{G,ε} (Corollary 18): μ_{a*} − √(εΔ_a/2) where Δ_a > ε/2, else μ_a."""
    _, is_best, gaps = _gaps(means)
    top = jnp.max(means, axis=-1, keepdims=True)
    eps = jnp.asarray(epsilon)[..., None]
    clipped = top - jnp.sqrt(eps * gaps / 2.0)
    return jnp.where(is_best | (gaps <= eps / 2.0), means, clipped)


def t_star_global_proxy(
    means: ArrayLike,
    epsilon: ArrayLike,
    beta: ArrayLike | None = None,
    *,
    sigma: ArrayLike = 0.5,
    return_info: bool = False,
):
    """Upper proxy T*_KL(ν_{G,ε}) ≥ T*_g(ν; ε) (Eq. 10), or T*_{KL,β}(ν_{G,ε}) (Eq. 15).

    ν_{G,ε} is Gaussian with σ = 1/2 and means μ_{a*} − √(εΔ_a/2) for the arms with
    Δ_a > ε/2 (unchanged otherwise), so the cost of challenger a is
    2Δ_a min{ε/2, Δ_a} / (1/ω_{a*} + 1/ω_a).

    Args:
        means: Bernoulli means, shape (..., K).
        epsilon: privacy budget ε > 0.
        beta: if given, the β-version of Eq. (15).
        sigma: Gaussian standard deviation (the paper's σ = 1/2).
        return_info: also return ``(ω, info)``.

    Example:
        >>> T = t_star_global_proxy([0.9, 0.5], 10.0)  # ε large: T*_KL of N(μ, 1/4)
        >>> round(float(T), 4)
        12.5
    """
    _check_means(means, bernoulli=True)
    _check_positive("epsilon", epsilon)
    _check_positive("sigma", sigma)
    if beta is not None:
        _check_open_unit("beta", beta)
    m = _as_means(means)
    eps = jnp.asarray(epsilon, m.dtype)
    shape = jnp.broadcast_shapes(m.shape[:-1], eps.shape)
    m = jnp.broadcast_to(m, (*shape, m.shape[-1]))
    time, omega, info = _run(
        "kl_gaussian", _gaussian_eps_means(m, jnp.broadcast_to(eps, shape)), sigma=sigma, beta=beta
    )
    return (time, omega, info) if return_info else time


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

    Example:
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

    Example:
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


# --------------------------------------------------------------------------------------------
# Asymptotic upper bounds of the algorithms
# --------------------------------------------------------------------------------------------


def g1(y: ArrayLike) -> jax.Array:
    """g₁(y) = sup{x | x² < x + y√(2x) + y²/4} (Theorem 24).

    The set is an interval (x² − x − y√(2x) − y²/4 is convex and ≤ 0 at x = 1), so g₁(y) is
    its largest root, found by bisection on [1, (1 + y)² + 1]. g₁(0) = 1, g₁(12) ≤ 10.

    Example:
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

    Example:
        >>> round(float(g2(1.0)), 4)
        5.8284
    """
    y = _float(y)
    return 1.0 + 2.0 * y + 2.0 * jnp.sqrt(y * (1.0 + y))


def ctb_tt_bound(means: ArrayLike, epsilon: ArrayLike, beta: ArrayLike = 0.5) -> jax.Array:
    """CTB-TT asymptotic bound (1 + 2/(e^ε − 1))² T*_{KL,β}(ν), Eq. (5) with σ = 1/2 (Sec. 3.2).

    1 + 2/(e^ε − 1) = coth(ε/2), computed as 1 / tanh(ε/2).

    Example:
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

    Example:
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

    Example:
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
