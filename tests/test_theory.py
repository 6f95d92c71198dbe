"""Tests for jaxbai.theory against independent NumPy/SciPy computations.

Every reference number below is computed here, in float64, by a different method than the
library's (Garivier–Kaufmann one-dimensional root finding, linear programming over a fine grid
of alternatives, polynomial roots), never by calling jaxbai.
"""

from __future__ import annotations

import functools
import math

import jax
import numpy as np
import pytest
from scipy.optimize import brentq, linprog

from jaxbai import theory

PAPER = {
    "mu1": (0.95, 0.9, 0.9, 0.9, 0.5),
    "mu2": (0.75, 0.7, 0.7, 0.7, 0.7),
    "mu3": (0.0, 0.25, 0.5, 0.75, 1.0),
    "mu4": (0.75, 0.625, 0.5, 0.375, 0.25),
    "mu5": (0.75, 0.53125, 0.375, 0.28125, 0.25),
    "mu6": (0.75, 0.71875, 0.625, 0.46875, 0.25),
}
PAPER_MEANS = np.array(list(PAPER.values()))
RTOL = 1e-4  # the accuracy the module promises


# ------------------------------------------------------------------------------------------
# Independent references (float64 NumPy/SciPy)
# ------------------------------------------------------------------------------------------


def kl_ber(p: float, q: float) -> float:
    q = min(max(q, 1e-300), 1.0 - 1e-16)
    out = 0.0
    if p > 0:
        out += p * math.log(p / q)
    if p < 1:
        out += (1 - p) * math.log((1 - p) / (1 - q))
    return out


def gaps_of(mu) -> np.ndarray:
    mu = np.asarray(mu, float)
    gaps = mu.max() - mu
    b = int(np.argmax(mu))
    gaps[b] = np.min(np.delete(gaps, b))
    return gaps


def gk_time(mu, d, z) -> float:
    """Garivier–Kaufmann (2016) characterisation of T* for a one-parameter family.

    d(p, q): divergence; z(b, a, x): minimiser of d(μ_b, ·) + x d(μ_a, ·). With
    G_a(x) = d(μ_b, z) + x d(μ_a, z) and x_a(y) = G_a⁻¹(y), the optimal y solves
    Σ_a d(μ_b, z_a)/d(μ_a, z_a) = 1 and T* = (1 + Σ_a x_a(y)) / y.
    """
    mu = np.asarray(mu, float)
    b = int(np.argmax(mu))
    others = [a for a in range(len(mu)) if a != b]

    def G(a, x):
        m = z(mu[b], mu[a], x)
        return d(mu[b], m) + x * d(mu[a], m)

    def x_of(a, y):
        hi = 1.0
        while G(a, hi) < y:
            hi *= 2.0
        return brentq(lambda x: G(a, x) - y, 0.0, hi, xtol=1e-15, rtol=1e-15)

    def F(y):
        total = 0.0
        for a in others:
            m = z(mu[b], mu[a], x_of(a, y))
            total += d(mu[b], m) / d(mu[a], m)
        return total - 1.0

    ymax = min(d(mu[b], mu[a]) for a in others)
    lo, hi = 1e-12 * ymax, ymax * (1 - 1e-12)
    for _ in range(200):  # F is increasing in y
        mid = 0.5 * (lo + hi)
        if F(mid) < 0:
            lo = mid
        else:
            hi = mid
    y = 0.5 * (lo + hi)
    return (1.0 + sum(x_of(a, y) for a in others)) / y


def weighted_mean(mb, ma, x):
    return (mb + x * ma) / (1.0 + x)


def ref_kl_bernoulli(mu) -> float:
    return _ref_kl_bernoulli(tuple(float(m) for m in mu))


@functools.cache
def _ref_kl_bernoulli(mu: tuple) -> float:
    return gk_time(mu, kl_ber, weighted_mean)


def ref_kl_gaussian(mu, sigma=1.0) -> float:
    return _ref_kl_gaussian(tuple(float(m) for m in mu), float(sigma))


@functools.cache
def _ref_kl_gaussian(mu: tuple, sigma: float) -> float:
    return gk_time(mu, lambda p, q: (p - q) ** 2 / (2 * sigma**2), weighted_mean)


def ref_kl_gaussian_beta(mu, beta, sigma=1.0) -> float:
    """Eq. (5): equalise Δ_a²/(2σ²(1/β + 1/ω_a)) = v with Σ_{a≠a*} ω_a = 1 − β."""
    mu = np.asarray(mu, float)
    b = int(np.argmax(mu))
    d = np.delete((mu[b] - mu) ** 2 / (2 * sigma**2), b)

    def excess(v):
        return np.sum(1.0 / (d / v - 1.0 / beta)) - (1.0 - beta)

    v = brentq(excess, 1e-14, beta * d.min() * (1 - 1e-14), xtol=1e-300, rtol=1e-15)
    return 1.0 / v


def ref_tv_lp(mu) -> float:
    """T*_TV from the LP max v s.t. v ≤ ω_{a*}Δ_a, v ≤ ω_aΔ_a, Σω = 1 (no closed form used)."""
    mu = np.asarray(mu, float)
    k = len(mu)
    b = int(np.argmax(mu))
    rows, rhs = [], []
    for a in range(k):
        if a == b:
            continue
        gap = mu[b] - mu[a]
        for j in (a, b):
            row = np.zeros(k + 1)
            row[k] = 1.0
            row[j] = -gap
            rows.append(row)
            rhs.append(0.0)
    c = np.zeros(k + 1)
    c[k] = -1.0
    res = linprog(
        c,
        A_ub=np.array(rows),
        b_ub=np.array(rhs),
        A_eq=np.r_[np.ones(k), 0.0][None, :],
        b_eq=[1.0],
        bounds=[(0, None)] * (k + 1),
        method="highs",
    )
    return 1.0 / -res.fun


def c_eps(eps: float) -> float:
    return min(4.0, math.exp(2 * eps)) * (math.exp(eps) - 1.0) ** 2


def kl_ber_vec(p: float, q: np.ndarray) -> np.ndarray:
    q = np.clip(q, 1e-300, 1.0 - 1e-16)
    out = np.zeros_like(q)
    if p > 0:
        out = out + p * np.log(p / q)
    if p < 1:
        out = out + (1 - p) * np.log((1 - p) / (1 - q))
    return out


def ref_game_lp(mu, pair_costs, extra_rows=None, n_grid=2000) -> float:
    """T* of Eq. (1)-type games by linear programming over a fine grid of alternatives.

    Alternatives move (a*, a) to a common mean x on a grid of [μ_a, μ_{a*}], costing
    ω_{a*} A(x) + ω_a B(x) with (A, B) = pair_costs(μ_{a*}, μ_a, x); ``extra_rows(a)`` adds
    alternatives given directly by their (A, B). LP: max v s.t. v ≤ every cost, Σω = 1.
    A finite set of alternatives gives T ≤ T*, with an O(grid spacing²) error.
    """
    mu = np.asarray(mu, float)
    k = len(mu)
    b = int(np.argmax(mu))
    pairs = []
    for a in range(k):
        if a == b:
            continue
        x = np.linspace(mu[a], mu[b], n_grid)
        coef_a, coef_b = pair_costs(mu[b], mu[a], x)
        extra = [] if extra_rows is None else extra_rows(mu[b] - mu[a])
        coef_a = np.r_[coef_a, [e[0] for e in extra]]
        coef_b = np.r_[coef_b, [e[1] for e in extra]]
        pairs.append((a, coef_a, coef_b))
    # rescale so the LP's absolute tolerances are meaningless next to the costs
    scale = max(np.max(ca[np.isfinite(ca)]) for _, ca, _ in pairs)
    rows = []
    for a, coef_a, coef_b in pairs:
        block = np.zeros((len(coef_a), k + 1))
        block[:, k] = 1.0
        block[:, b] = -np.minimum(coef_a / scale, 1e3)  # rows that large are never active
        block[:, a] = -np.minimum(coef_b / scale, 1e3)
        rows.append(block)
    c = np.zeros(k + 1)
    c[k] = -1.0
    res = linprog(
        c,
        A_ub=np.vstack(rows),
        b_ub=np.zeros(sum(len(r) for r in rows)),
        A_eq=np.r_[np.ones(k), 0.0][None, :],
        b_eq=[1.0],
        bounds=[(0, None)] * (k + 1),
        method="highs",
        options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    )
    return 1.0 / (-res.fun * scale)


def ref_local_lp(mu, eps) -> float:
    """Theorem 10 with d = min{KL, c(ε) TV²}, by LP on a grid (non-convexity is harmless)."""
    c = c_eps(eps)

    def costs(mb, ma, x):
        return (
            np.minimum(kl_ber_vec(mb, x), c * (mb - x) ** 2),
            np.minimum(kl_ber_vec(ma, x), c * (ma - x) ** 2),
        )

    return ref_game_lp(mu, costs)


def ref_global_lp(mu, eps) -> float:
    """Theorem 17: KL alternatives plus the two ε·TV endpoint alternatives, by LP."""
    return ref_game_lp(
        mu,
        lambda mb, ma, x: (kl_ber_vec(mb, x), kl_ber_vec(ma, x)),
        extra_rows=lambda gap: [(eps * gap, 0.0), (0.0, eps * gap)],
    )


def random_bernoulli(rng, n, k, min_gap=0.02):
    out = []
    while len(out) < n:
        mu = rng.uniform(0.05, 0.95, size=k)
        srt = np.sort(mu)
        if srt[-1] - srt[-2] >= min_gap:
            out.append(mu)
    return np.array(out)


# ------------------------------------------------------------------------------------------
# Divergence-level formulas
# ------------------------------------------------------------------------------------------


def test_kl_and_c_local_formulas():
    for p, q in [(0.3, 0.6), (0.0, 0.2), (1.0, 0.7), (0.7, 0.69)]:
        assert float(theory.kl_bernoulli(p, q)) == pytest.approx(kl_ber(p, q), rel=1e-5)
    for eps in [0.01, 0.3, math.log(2), 1.0, 5.0]:
        assert float(theory.c_local(eps)) == pytest.approx(c_eps(eps), rel=1e-5)


@pytest.mark.integration
def test_tv_solver_matches_closed_form_and_lp():
    rng = np.random.default_rng(0)
    mus = random_bernoulli(rng, 12, 5)
    closed = np.array([np.sum(1.0 / gaps_of(m)) for m in mus])  # Proposition 30
    lp = np.array([ref_tv_lp(m) for m in mus])
    np.testing.assert_allclose(lp, closed, rtol=1e-7)  # the paper's closed form is right
    t_solver, w, info = theory.t_star(mus, "tv", return_info=True)
    np.testing.assert_allclose(np.asarray(t_solver), closed, rtol=RTOL)
    np.testing.assert_allclose(np.asarray(theory.t_star_tv_closed_form(mus)), closed, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(w).sum(-1), 1.0, rtol=1e-5)
    assert np.all(np.asarray(info.rel_gap) <= RTOL)


@pytest.mark.integration
def test_gaussian_kl_matches_garivier_kaufmann():
    rng = np.random.default_rng(1)
    mus = rng.normal(size=(6, 4))
    sigmas = rng.uniform(0.3, 2.0, size=6)
    ref = np.array([ref_kl_gaussian(m, s) for m, s in zip(mus, sigmas, strict=True)])
    t, _, info = theory.t_star(mus, "kl_gaussian", sigma=sigmas, return_info=True)
    np.testing.assert_allclose(np.asarray(t), ref, rtol=RTOL)
    assert np.all(np.asarray(info.rel_gap) <= RTOL)
    # the certified lower bound really is below the truth (up to float32 rounding)
    assert np.all(np.asarray(info.time_lower) <= ref * (1 + 1e-5))


def test_bernoulli_kl_matches_garivier_kaufmann():
    ref = np.array([ref_kl_bernoulli(m) for m in PAPER_MEANS])
    t, w, info = theory.t_star(PAPER_MEANS, "kl_bernoulli", return_info=True)
    np.testing.assert_allclose(np.asarray(t), ref, rtol=RTOL)
    assert np.all(np.asarray(info.rel_gap) <= RTOL)
    # optimal allocation equalises the pairwise costs: all arms have positive weight
    assert np.all(np.asarray(w) > 0)


def test_corollary_11_identity_and_pinsker():
    t_tv2, _ = theory.t_star(PAPER_MEANS, "tv2")
    t_tv, _ = theory.t_star(PAPER_MEANS, "tv")
    ref_gauss = np.array([ref_kl_gaussian(m, 1.0) for m in PAPER_MEANS])
    ref_kl = np.array([ref_kl_bernoulli(m) for m in PAPER_MEANS])
    # T*_TV²(ν) = T*_KL(ν_G)/2 for unit-variance ν_G, and T*_TV² ≥ 2 T*_KL (Corollary 11)
    np.testing.assert_allclose(np.asarray(t_tv2), ref_gauss / 2, rtol=RTOL)
    assert np.all(np.asarray(t_tv2) >= 2 * ref_kl * (1 - RTOL))
    # Pinsker (Appendix D.3.6): T*_TV ≥ √(2 T*_KL)
    assert np.all(np.asarray(t_tv) >= np.sqrt(2 * ref_kl) * (1 - RTOL))
    t_kl, _ = theory.t_star(PAPER_MEANS, "kl_bernoulli")
    tv_closed = np.array([np.sum(1.0 / gaps_of(m)) for m in PAPER_MEANS])
    assert np.all(tv_closed >= np.sqrt(2 * np.asarray(t_kl)) * (1 - RTOL))


def test_local_switch_is_0582_when_pinsker_is_tight():
    # Section 3.1: c(ε) = 2 at ε ≈ 0.582 (independent root of c(ε) = 2)
    eps2 = brentq(lambda e: c_eps(e) - 2.0, 1e-6, 5.0, xtol=1e-14)
    assert eps2 == pytest.approx(0.582, abs=5e-4)
    # means near 1/2 with tiny gaps make Pinsker tight: T*_TV² / T*_KL → 2
    mu = 0.5 + 1e-3 * np.array([3.0, 2.0, 1.0, 0.0, -1.0])
    ratio = ref_kl_gaussian(mu, 1.0) / 2 / ref_kl_bernoulli(mu)
    assert ratio == pytest.approx(2.0, rel=1e-4)
    assert float(theory.regime_switch(mu, "local")) == pytest.approx(eps2, abs=1e-3)


def test_regime_switches_on_paper_instances():
    for mu in PAPER_MEANS:
        t_kl = ref_kl_bernoulli(mu)
        ratio = ref_kl_gaussian(mu, 1.0) / 2 / t_kl
        eps_local = brentq(lambda e, r=ratio: c_eps(e) - r, 1e-9, 20.0, xtol=1e-14)
        eps_global = np.sum(1.0 / gaps_of(mu)) / t_kl
        assert float(theory.regime_switch(mu, "local")) == pytest.approx(eps_local, rel=1e-3)
        assert float(theory.regime_switch(mu, "global")) == pytest.approx(eps_global, rel=1e-3)


EPSILONS = np.array([0.01, 0.1, 0.5, 1.0, 3.0])


@pytest.mark.integration
def test_local_sandwich_and_full_game():
    ref_kl = np.array([ref_kl_bernoulli(m) for m in PAPER_MEANS])
    ref_tv2 = np.array([ref_kl_gaussian(m, 1.0) / 2 for m in PAPER_MEANS])
    t, _, info = theory.t_star_local(PAPER_MEANS[:, None, :], EPSILONS, return_info=True)
    t = np.asarray(t)
    assert t.shape == (6, 5)
    assert np.all(np.asarray(info.rel_gap) <= RTOL)
    cs = np.array([c_eps(e) for e in EPSILONS])
    lower = np.maximum(ref_kl[:, None], ref_tv2[:, None] / cs[None, :])  # Corollary 11
    assert np.all(t >= lower * (1 - RTOL))
    relaxed = np.asarray(theory.t_star_local_relaxed(PAPER_MEANS[:, None, :], EPSILONS))
    np.testing.assert_allclose(relaxed, lower, rtol=RTOL)

    # the full game of Theorem 10 against an LP on a fine grid of alternatives
    for i, j in [(0, 3), (1, 2), (2, 3), (3, 0), (4, 2), (5, 3)]:
        ref = ref_local_lp(PAPER_MEANS[i], EPSILONS[j])
        assert t[i, j] == pytest.approx(ref, rel=RTOL)


@pytest.mark.integration
def test_global_sandwich_and_full_game():
    ref_kl = np.array([ref_kl_bernoulli(m) for m in PAPER_MEANS])
    tv = np.array([np.sum(1.0 / gaps_of(m)) for m in PAPER_MEANS])
    t, _, info = theory.t_star_global(PAPER_MEANS[:, None, :], EPSILONS, return_info=True)
    t = np.asarray(t)
    assert np.all(np.asarray(info.rel_gap) <= RTOL)
    lower = np.maximum(ref_kl[:, None], tv[:, None] / EPSILONS[None, :])  # Eq. (9)
    assert np.all(t >= lower * (1 - RTOL))
    np.testing.assert_allclose(
        np.asarray(theory.t_star_global_relaxed(PAPER_MEANS[:, None, :], EPSILONS)),
        lower,
        rtol=RTOL,
    )
    # Eq. (10): T*_g ≤ T*_KL(ν_{G,ε}) ≤ 2H(ν_{G,ε}), references by G–K on the clipped means
    proxy = np.zeros_like(t)
    for i, mu in enumerate(PAPER_MEANS):
        gaps = gaps_of(mu)
        best = int(np.argmax(mu))
        for j, eps in enumerate(EPSILONS):
            clip = np.where(gaps > eps / 2, mu.max() - np.sqrt(eps * gaps / 2), mu)
            clip[best] = mu[best]
            proxy[i, j] = ref_kl_gaussian(clip, 0.5)
            two_h = np.sum(1.0 / (gaps * np.minimum(gaps, eps / 2)))
            assert proxy[i, j] <= two_h * (1 + 1e-9)
    assert np.all(t <= proxy * (1 + RTOL))
    got_proxy = np.asarray(theory.t_star_global_proxy(PAPER_MEANS[:, None, :], EPSILONS))
    np.testing.assert_allclose(got_proxy, proxy, rtol=RTOL)

    # the full game of Theorem 17 against an LP on a fine grid of alternatives
    for i, j in [(0, 1), (1, 2), (2, 3), (3, 1), (4, 2), (5, 3)]:
        ref = ref_global_lp(PAPER_MEANS[i], EPSILONS[j])
        assert t[i, j] == pytest.approx(ref, rel=RTOL)


def test_beta_times_and_gaussian_hardness():
    rng = np.random.default_rng(2)
    mus = rng.uniform(0, 1, size=(5, 5))
    for beta in [0.5, 0.3]:
        ref_b = np.array([ref_kl_gaussian_beta(m, beta) for m in mus])
        t_b, w_b = theory.t_star(mus, "kl_gaussian", beta=beta)
        np.testing.assert_allclose(np.asarray(t_b), ref_b, rtol=RTOL)
        best = np.argmax(mus, axis=1)
        np.testing.assert_allclose(np.asarray(w_b)[np.arange(5), best], beta, rtol=1e-5)
    ref = np.array([ref_kl_gaussian(m) for m in mus])
    ref_half = np.array([ref_kl_gaussian_beta(m, 0.5) for m in mus])
    h = np.array([2 * np.sum(gaps_of(m) ** -2.0) for m in mus])
    assert np.all(ref_half <= 2 * ref)  # Eq. (5), on the references themselves
    assert np.all((h <= ref) & (ref <= 2 * h))  # Section 2.2.3
    np.testing.assert_allclose(np.asarray(theory.hardness(mus)), h, rtol=1e-5)
    t, _ = theory.t_star(mus, "kl_gaussian")
    t_half, _ = theory.t_star(mus, "kl_gaussian", beta=0.5)
    assert np.all(np.asarray(t_half) <= 2 * np.asarray(t) * (1 + RTOL))
    assert np.all(np.asarray(t) >= h * (1 - RTOL)) and np.all(np.asarray(t) <= 2 * h)


def test_g1_g2():
    assert float(theory.g1(0.0)) == pytest.approx(1.0, abs=1e-6)
    assert float(theory.g1(12.0)) <= 10.0
    for y in [0.1, 1.0, 5.0, 12.0]:
        # largest real root of s⁴ − s² − √2 y s − y²/4 (s = √x)
        roots = np.roots([1.0, 0.0, -1.0, -math.sqrt(2) * y, -(y**2) / 4])
        s = max(r.real for r in roots if abs(r.imag) < 1e-9)
        assert float(theory.g1(y)) == pytest.approx(s**2, rel=1e-5)
    ys = np.array([1e-8, 1e-3, 0.5, 2.0, 30.0])
    lit = 1 + 2 / (np.sqrt(1 + 1 / ys) - 1)
    np.testing.assert_allclose(np.asarray(theory.g2(ys)), lit, rtol=1e-5)
    assert float(theory.g2(1e-10)) == pytest.approx(1.0, abs=1e-4)


def test_upper_bounds():
    mu = np.array(PAPER["mu4"])
    # plain Python sequences are accepted like arrays
    assert float(theory.ctb_tt_bound(list(PAPER["mu4"]), 0.5)) == pytest.approx(
        float(theory.ctb_tt_bound(mu, 0.5)), rel=1e-6
    )
    gaps = gaps_of(mu)
    dmax = gaps.max()
    t_half = ref_kl_gaussian_beta(mu, 0.5, sigma=0.5)
    for eps in [0.05, 0.5, 5.0]:
        coth2 = ((math.exp(eps) + 1) / (math.exp(eps) - 1)) ** 2
        assert float(theory.ctb_tt_bound(mu, eps)) == pytest.approx(coth2 * t_half, rel=RTOL)
        ada = 4 * t_half * (1 + math.sqrt(1 + dmax**2 / (2 * 0.5**4 * eps**2)))
        assert float(theory.adap_tt_bound(mu, eps)) == pytest.approx(ada, rel=RTOL)
        if dmax < eps / 2:
            y = dmax / (0.25 * eps)
            roots = np.roots([1.0, 0.0, -1.0, -math.sqrt(2) * y, -(y**2) / 4])
            g1 = max(r.real for r in roots if abs(r.imag) < 1e-9) ** 2
            star = 4 * t_half * g1
        else:
            clip = np.where(gaps > eps / 2, mu.max() - np.sqrt(eps * gaps / 2), mu)
            clip[np.argmax(mu)] = mu.max()
            t_eps = ref_kl_gaussian_beta(clip, 0.5, sigma=0.5)
            y = eps**2 * t_eps * 0.5 / 4
            star = 2 * t_eps * (1 + 2 / (math.sqrt(1 + 1 / y) - 1)) / 0.25
        assert float(theory.adap_tt_star_bound(mu, eps)) == pytest.approx(star, rel=RTOL)


def test_lower_bound_samples():
    assert float(theory.lower_bound_samples(100.0, 0.01)) == pytest.approx(
        100 * math.log(1 / 0.024), rel=1e-6
    )
    d = 0.05
    kl = (1 - d) * math.log((1 - d) / d) + d * math.log(d / (1 - d))
    assert float(theory.lower_bound_samples(7.0, d, kind="kl")) == pytest.approx(7 * kl, rel=1e-6)
    # kl(1 − δ, δ) ≥ log(1/(2.4δ)) (Theorem 10's last step)
    for d in [1e-6, 1e-3, 0.1, 0.3]:
        assert float(theory.lower_bound_samples(1.0, d, kind="kl")) >= float(
            theory.lower_bound_samples(1.0, d)
        )


def test_bad_input_raises():
    good = [0.9, 0.5, 0.3]
    with pytest.raises(ValueError):
        theory.t_star_global(good, 0.0)
    with pytest.raises(ValueError):
        theory.t_star_local(good, -1.0)
    with pytest.raises(ValueError):
        theory.t_star([0.9, 0.9, 0.3], "kl_bernoulli")
    with pytest.raises(ValueError):
        theory.t_star(good, "hellinger")
    with pytest.raises(ValueError):
        theory.t_star(good, "kl_gaussian", beta=1.0)
    with pytest.raises(ValueError):
        theory.t_star([1.2, 0.5], "kl_bernoulli")
    with pytest.raises(ValueError):
        theory.lower_bound_samples(10.0, 1.0)
    with pytest.raises(ValueError):
        theory.lower_bound_samples(10.0, 0.0)
    with pytest.raises(ValueError):
        theory.lower_bound_samples(10.0, 0.1, kind="median")
    with pytest.raises(ValueError):
        theory.regime_switch(good, "central")


@pytest.mark.integration
def test_vmap_instances_by_epsilon_one_compiled_call():
    rng = np.random.default_rng(3)
    mus = random_bernoulli(rng, 100, 5, min_gap=0.05)
    eps = np.logspace(-2, 1, 20)

    def one(mu, e):
        t, _, info = theory.t_star_global(mu, e, return_info=True)
        return t, info.rel_gap

    grid = jax.jit(jax.vmap(jax.vmap(one, in_axes=(None, 0)), in_axes=(0, None)))
    t, gap = grid(mus, eps)
    t, gap = np.asarray(t), np.asarray(gap)
    assert t.shape == (100, 20)
    assert np.all(np.isfinite(t)) and np.all(gap <= RTOL)
    tv = np.array([np.sum(1.0 / gaps_of(m)) for m in mus])
    assert np.all(t * eps[None, :] >= tv[:, None] * (1 - RTOL))  # Eq. (9)
    assert np.all(np.diff(t, axis=1) <= t[:, 1:] * RTOL)  # T*_g is non-increasing in ε
    grid(mus, eps * 1.1)  # new ε values: no recompilation
    assert grid._cache_size() == 1


@pytest.mark.integration
@pytest.mark.parametrize("epsilon", [45.0, 1000.0])
def test_local_game_at_large_epsilon_is_the_non_private_time(epsilon):
    """For ε where c(ε) overflows float32, T*_ℓ(ε) = T*_KL (c(ε)·TV² ≥ KL for every alternative);
    the reference is an independent float64 root-finding of T*_KL."""
    means = (0.75, 0.71875, 0.625, 0.46875, 0.25)
    t_local = float(theory.t_star_local(np.array(means), epsilon))
    assert t_local == pytest.approx(ref_kl_bernoulli(means), rel=1e-4)
