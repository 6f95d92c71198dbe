"""The certified game solver behind every characteristic time (private).

A characteristic time is the value of a zero-sum game (Eq. 1); each alternative only moves the
pair (a*, a) to a common mean x ∈ [μ_a, μ_{a*}], so the game is

    T*⁻¹ = sup_ω min_{a ≠ a*} inf_x ω_{a*} A_a(x) + ω_a B_a(x),

with A_a(x) = d(μ_{a*}, x) and B_a(x) = d(μ_a, x). The ``kind`` of a game names d:
``"kl_bernoulli"``, ``"kl_gaussian"``, ``"tv"``, ``"tv2"``, ``"local"`` (min{KL, c(ε)·TV²},
Theorem 10), ``"global"`` (min{Σ ω KL, ε Σ ω TV}, Theorem 17) or ``"private"`` (the signed
divergences d±_ε of Jourdan & Azize 2025, arXiv 2510.17348: A_a = d⁻_ε, B_a = d⁺_ε).

How it is solved (one compiled program, batched over instances and ε):

* **Primal (optax).** Adam on the logits of ω maximises a soft-min (temperature annealed) of the
  per-alternative costs; the inner infimum is exact: closed form (weighted mean) for Bernoulli
  KL, Gaussian KL and TV², both endpoints for TV, the closed-form minimiser of the convex private
  cost (`jaxbai.theory.private_cost`), a dense grid refined by golden-section search
  at its two best local minima for the non-convex local-DP cost.
* **Dual certificate.** For any finite set of alternatives (a dense grid of x per challenger plus
  the exact minimisers at the current ω), the restricted game is a lower bound on T* and, since
  every alternative only involves (a*, a), it reduces to a one-dimensional convex problem in
  w = ω_{a*}: T_rows = min_w w + Σ_a max_x (1 − w A_a(x))_+ / B_a(x), solved by bisection. Its
  minimiser also gives a primal allocation (polishing step).
* **Stopping.** The loop stops when the certified relative gap T_upper / T_lower − 1 is at most
  ``tol`` (default 1e-5), where T_upper = 1 / (exact game value of the returned allocation).
  The gap is returned in `SolverInfo`; it is exact up to float rounding and up to the
  accuracy of the one-dimensional inner minimisations (golden section, ~1e-8 relative).
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

from jaxbai import checks
from jaxbai.theory._common import _as_means, _gaps
from jaxbai.theory.divergences import _C_LOCAL_CAP, c_local, kl_bernoulli
from jaxbai.theory.private_divergences import _d_eps, _private_argmin

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
    if kind == "private":  # d⁻_ε(p, x) for x < p, d⁺_ε(p, x) for x > p
        return _d_eps(p, x, prm.epsilon)
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

        def obj(x):
            return wb * _pair_cost(kind, mb, x, prm) + omega * _pair_cost(kind, mu, x, prm)

        def refined(i):
            if not refine:  # the optax steps only need a good soft-min gradient: grid minima
                return jnp.take_along_axis(xg, i[:, None], 1)[:, 0]
            lo = jnp.take_along_axis(xg, jnp.maximum(i - 1, 0)[:, None], 1)[:, 0]
            hi = jnp.take_along_axis(xg, jnp.minimum(i + 1, n_grid - 1)[:, None], 1)[:, 0]
            return _golden_min(obj, jnp.minimum(lo, hi), jnp.maximum(lo, hi))

        # both local minima in one search (one copy of the golden-section loop in the program)
        xr = jax.vmap(refined, out_axes=1)(jnp.stack([i1, i2]))
    elif kind == "tv":
        xr = jnp.stack([mu, jnp.broadcast_to(mb, mu.shape)], axis=1)
    elif kind == "private":
        some = (wb + omega) > 0  # the argmin needs a positive total weight; any x costs 0 else
        weights = jnp.where(some, wb, 1.0), jnp.where(some, omega, 1.0)
        xr = _private_argmin(mb, mu, *weights, prm.epsilon)[0][0][:, None]
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
    if checks.is_concrete((means, epsilon, sigma, beta)):
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
