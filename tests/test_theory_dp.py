"""Tests for the DP-TT theory of `jaxbai.theory` (Jourdan & Azize 2025, arXiv 2510.17348).

The signed divergences d±_ε, the private transportation cost C*_ε, the characteristic time T*_ε
and the lower bound T*_ε log(1/(3δ)), against references written here, in float64 and from the
formulas alone (never by calling jaxbai): the branches of d⁺_ε, scipy's bounded scalar minimiser
for C*_ε, and for T*_ε the one-dimensional reduction of the max-min game (fix ω_{a*} = 1; the
least ω_a with C*_ε(1, ω_a) ≥ y, by root finding, for every level y; minimise (1 + Σ ω_a) / y,
a quasi-convex function of y).
"""

from __future__ import annotations

import functools
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq, minimize_scalar

from experiments.studies import reference_dp_tt as ref
from jaxbai import PAPER_INSTANCES, theory

PAPER_MEANS = np.array(list(PAPER_INSTANCES.values()))
EPSILONS = (1e-3, 1e-2, 0.1, 1.0, math.inf)
U32 = float(np.finfo(np.float32).eps)
PROPERTY = settings(max_examples=100, deadline=None, derandomize=True, database=None)

d_plus = jax.jit(theory.d_plus_eps)
d_minus = jax.jit(theory.d_minus_eps)
cost = jax.jit(theory.private_cost)

# ------------------------------------------------------------------------------------------
# Independent references (float64, from the formulas)
# ------------------------------------------------------------------------------------------


def kl(p: float, q: float) -> float:
    out = 0.0
    for a, b in ((p, q), (1.0 - p, 1.0 - q)):
        if a > 0:
            out += a * math.log(a / b) if b > 0 else math.inf
    return out


def ref_g(mu: float, eps: float) -> float:
    """g_ε(μ) = μ e^ε / (μ (e^ε − 1) + 1)."""
    if math.isinf(eps):
        return 1.0 if mu > 0 else 0.0
    return mu * math.exp(eps) / (mu * (math.exp(eps) - 1.0) + 1.0)


def ref_d_plus(mu: float, x: float, eps: float) -> float:
    if x <= mu:
        return 0.0
    if math.isinf(eps) or x <= ref_g(mu, eps):
        return kl(mu, x)
    return -math.log(1.0 - x * (1.0 - math.exp(-eps))) - eps * mu


def ref_d_minus(mu: float, x: float, eps: float) -> float:
    return ref_d_plus(1.0 - mu, 1.0 - x, eps)


def ref_cost(mu_i: float, mu_j: float, w_i: float, w_j: float, eps: float) -> float:
    """inf_x w_i d⁻_ε(μ_i, x) + w_j d⁺_ε(μ_j, x), by scipy's bounded scalar minimiser."""
    if mu_i <= mu_j:
        return 0.0

    def f(x: float) -> float:
        up = w_j * ref_d_plus(mu_j, x, eps) if w_j > 0 else 0.0
        return (w_i * ref_d_minus(mu_i, x, eps) if w_i > 0 else 0.0) + up

    res = minimize_scalar(
        f, bounds=(mu_j, mu_i), method="bounded", options={"xatol": 1e-13 * (mu_i - mu_j)}
    )
    return min(res.fun, f(mu_i), f(mu_j))


@functools.cache
def ref_t_star(mu: tuple[float, ...], eps: float) -> float:
    """T*_ε = min_y (1 + Σ_a ω_a(y)) / y with ω_{a*} = 1 and C*_ε(1, ω_a(y)) = y."""
    best = int(np.argmax(mu))
    others = [a for a in range(len(mu)) if a != best]

    def weight(a: int, y: float) -> float:
        def excess(w: float) -> float:
            return ref_cost(mu[best], mu[a], 1.0, w, eps) - y

        hi = 1.0
        while excess(hi) < 0:
            hi *= 4.0
        return brentq(excess, 0.0, hi, xtol=1e-14, rtol=1e-11)

    top = min(ref_d_minus(mu[best], mu[a], eps) for a in others)  # sup of C*_ε(1, ·)

    def time(y: float) -> float:
        return (1.0 + sum(weight(a, y) for a in others)) / y

    res = minimize_scalar(
        time, bounds=(1e-9 * top, (1 - 1e-9) * top), method="bounded", options={"xatol": 1e-9}
    )
    return float(res.fun)


# ------------------------------------------------------------------------------------------
# Signed divergences
# ------------------------------------------------------------------------------------------

MEANS = st.floats(0.01, 0.99)
EPS = st.floats(1e-3, 30.0)


@pytest.mark.parametrize(
    ("mu", "x", "eps", "expected"),
    [
        # 0.9 > g_1(0.5) = e / (e + 1) ≈ 0.731: the log branch
        (0.5, 0.9, 1.0, -math.log(1 - 0.9 * (1 - math.exp(-1.0))) - 0.5 * 1.0),
        # 0.4 ≤ g_1(0.3) = 0.3e / (0.3(e − 1) + 1) ≈ 0.538: kl
        (0.3, 0.4, 1.0, 0.3 * math.log(0.3 / 0.4) + 0.7 * math.log(0.7 / 0.6)),
        (0.2, 0.1, 0.5, 0.0),  # x ≤ μ
        (0.0, 0.5, 0.1, -math.log(1 - 0.5 * (1 - math.exp(-0.1)))),  # g_ε(0) = 0
        (0.7, 1.0, 2.0, 2.0 * (1 - 0.7)),  # x = 1: ε TV
        # g_0.01(0.5) = 0.5 e^0.01 / (0.5 (e^0.01 − 1) + 1) ≈ 0.5025 < 0.6
        (0.5, 0.6, 0.01, -math.log(1 - 0.6 * (1 - math.exp(-0.01))) - 0.01 * 0.5),
        (0.25, 0.5, math.inf, 0.25 * math.log(0.5) + 0.75 * math.log(0.75 / 0.5)),
    ],
)
def test_d_plus_hand_values(mu, x, eps, expected):
    assert float(d_plus(mu, x, eps)) == pytest.approx(expected, rel=2e-6, abs=1e-7)


@PROPERTY
@given(MEANS, EPS)
def test_branches_meet_at_g(mu, eps):
    """Both branches give log(1 + μ (e^ε − 1)) − εμ at g_ε(μ), and d⁺_ε follows each of them on
    its side (references at the float32 inputs: near x = 1 a rounded x changes kl a lot; kl
    clips x to [eps, 1 − eps], float32's eps, so g_ε(μ) must stay below 1 − eps)."""
    mu = float(np.float32(mu))
    g = ref_g(mu, eps)
    assume(1.0 - g > 1e-5)
    assert float(theory.g_eps(mu, eps)) == pytest.approx(g, rel=1e-6)
    at_g = math.log1p(mu * math.expm1(eps)) - eps * mu
    # rel 1e-6: 1 − g_ε(μ) cancels in float64 too at large ε
    assert kl(mu, g) == pytest.approx(at_g, rel=1e-6, abs=1e-15)
    assert -math.log(1 - g * (1 - math.exp(-eps))) - eps * mu == pytest.approx(at_g, rel=1e-6)
    xs = np.array([g - 1e-3 * (g - mu), g, g + 1e-3 * (1 - g)], np.float32)
    values = np.asarray(d_plus(mu, xs, eps), np.float64)
    want = [ref_d_plus(mu, float(x), eps) for x in xs]
    np.testing.assert_allclose(values, want, rtol=1e-4, atol=1e-7)


@PROPERTY
@given(MEANS, MEANS)
def test_large_epsilon_is_kl(mu, x):
    expected = kl(mu, x) if x > mu else 0.0
    for eps in (1e3, math.inf):
        assert float(d_plus(mu, x, eps)) == pytest.approx(expected, rel=1e-5, abs=1e-7)
        assert float(d_minus(x, mu, eps)) == pytest.approx(
            kl(x, mu) if mu < x else 0.0, rel=1e-5, abs=1e-7
        )


@PROPERTY
@given(MEANS, MEANS, EPS)
def test_d_minus_is_the_mirror_of_d_plus(mu, x, eps):
    one = np.float32(1.0)
    mirrored = d_plus(one - np.float32(mu), one - np.float32(x), eps)
    assert float(d_minus(mu, x, eps)) == float(mirrored)  # the same float32 computation
    assert float(d_minus(mu, x, eps)) == pytest.approx(ref_d_minus(mu, x, eps), rel=1e-4, abs=1e-7)
    if x >= mu:
        assert float(d_minus(mu, x, eps)) == 0.0


@PROPERTY
@given(MEANS, MEANS, EPS)
def test_d_plus_is_at_most_kl_and_eps_tv(mu, x, eps):
    """d_ε ≤ min{KL, ε TV} (φ = ν or φ = κ in its infimum)."""
    value = float(d_plus(mu, x, eps))
    assert value <= min(kl(mu, x), eps * abs(x - mu)) * (1 + 1e-5) + 1e-7


# ------------------------------------------------------------------------------------------
# Private transportation cost
# ------------------------------------------------------------------------------------------


def test_private_cost_against_scipy():
    rng = np.random.default_rng(0)
    n = 300
    mu = rng.uniform(0, 1, (n, 2))
    mu_i, mu_j = mu.max(axis=1), mu.min(axis=1)
    mu_i[:10], mu_j[:10] = 1.0, 0.0  # the boundary means of mu3
    w_i, w_j = rng.uniform(0.01, 1, n), rng.uniform(0.01, 1, n)
    w_i[10:20] = 0.0
    eps = 10.0 ** rng.uniform(-3, 1.5, n)
    eps[20:40] = math.inf
    got = np.asarray(cost(mu_i, mu_j, w_i, w_j, eps), np.float64)
    want = np.array([ref_cost(*args) for args in zip(mu_i, mu_j, w_i, w_j, eps, strict=True)])
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-9)


def test_private_cost_at_infinite_epsilon_is_the_kl_cost():
    mu_i, mu_j, w_i, w_j = 0.8, 0.3, 2.0, 3.0
    x = (w_i * mu_i + w_j * mu_j) / (w_i + w_j)  # count-weighted mean
    expected = w_i * kl(mu_i, x) + w_j * kl(mu_j, x)
    assert float(cost(mu_i, mu_j, w_i, w_j, math.inf)) == pytest.approx(expected, rel=1e-6)
    # privacy is free from ε = logit μ_i − logit μ_j on: the same cost
    free = math.log(mu_i * (1 - mu_j) / (mu_j * (1 - mu_i)))
    assert float(cost(mu_i, mu_j, w_i, w_j, free * 1.001)) == pytest.approx(expected, rel=1e-6)
    assert float(cost(mu_i, mu_j, w_i, w_j, free * 0.5)) < expected * (1 - 1e-3)


def test_private_cost_is_zero_unless_mu_i_is_above_mu_j():
    got = cost(jnp.array([0.3, 0.5, 0.0]), jnp.array([0.6, 0.5, 0.0]), 1.0, 1.0, 0.5)
    assert np.asarray(got).tolist() == [0.0, 0.0, 0.0]


@PROPERTY
@given(MEANS, MEANS, st.floats(0.01, 10.0), st.floats(0.01, 10.0), EPS)
def test_private_cost_mirror_symmetry(a, b, w_i, w_j, eps):
    """C*_ε(μ_i, μ_j, w_i, w_j) = C*_ε(1 − μ_j, 1 − μ_i, w_j, w_i) (d⁻ is d⁺ mirrored), each
    side within the float32 bound of tests/test_private_cost_accuracy.py (1e-5 relative plus 8
    rounding units of the terms' magnitudes S: near ties the terms cancel)."""
    mu_i, mu_j = max(a, b), min(a, b)
    mu_i, mu_j, w_i, w_j, eps = (float(np.float32(v)) for v in (mu_i, mu_j, w_i, w_j, eps))
    direct = float(cost(mu_i, mu_j, w_i, w_j, eps))
    mirrored = float(cost(1 - mu_j, 1 - mu_i, w_j, w_i, eps))
    bound = 1e-5 * abs(direct) + 8 * U32 * ref.objective_scale(mu_i, mu_j, w_i, w_j, eps)
    assert abs(direct - mirrored) <= 2 * bound


def test_private_cost_broadcasts_and_runs_under_jit_and_vmap():
    mu_i, mu_j = jnp.array([0.9, 0.7]), jnp.array([[0.5], [0.6], [0.1]])
    w = jnp.array([1.0, 2.0])
    eps = jnp.array([0.1, 1.0])
    whole = cost(mu_i, mu_j, w, 1.0, eps)
    assert whole.shape == (3, 2)
    mapped = jax.vmap(lambda m: cost(mu_i, m, w, 1.0, eps))(mu_j[:, 0])
    np.testing.assert_allclose(np.asarray(mapped), np.asarray(whole), rtol=1e-6)


# ------------------------------------------------------------------------------------------
# Characteristic time T*_ε and the lower bound
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def paper():
    """T*_ε, ω*_ε on the six paper instances × `EPSILONS` (one batch of 30 games), and T*_KL."""
    time, omega, info = theory.t_star_dp(
        PAPER_MEANS[:, None, :], np.asarray(EPSILONS)[None, :], return_info=True
    )
    t_kl, _ = theory.t_star(PAPER_MEANS, "kl_bernoulli")
    return np.asarray(time), np.asarray(omega), info, np.asarray(t_kl)


@pytest.mark.parametrize("name", list(PAPER_INSTANCES))
def test_t_star_dp_matches_a_float64_solve(paper, name):
    time, _, _, _ = paper
    i = list(PAPER_INSTANCES).index(name)
    want = [ref_t_star(tuple(PAPER_INSTANCES[name]), eps) for eps in EPSILONS]
    np.testing.assert_allclose(time[i], want, rtol=1e-3)


def test_t_star_dp_is_certified_and_its_allocation_attains_it(paper):
    time, omega, info, _ = paper
    assert np.all(np.asarray(info.rel_gap) <= 1e-5)
    assert np.all(np.asarray(info.time_lower) <= time * (1 + 1e-6))
    np.testing.assert_allclose(omega.sum(axis=-1), 1.0, rtol=1e-5)
    best = PAPER_MEANS.argmax(axis=1)
    for i, mu in enumerate(PAPER_MEANS):
        b = best[i]
        others = np.delete(np.arange(mu.size), b)
        w = omega[i][:, others]  # (ε, K − 1)
        costs = cost(mu[b], mu[others], omega[i][:, b : b + 1], w, np.asarray(EPSILONS)[:, None])
        np.testing.assert_allclose(1.0 / np.min(np.asarray(costs), axis=1), time[i], rtol=1e-5)


def test_t_star_dp_decreases_in_epsilon_to_t_star_kl(paper):
    time, _, _, t_kl = paper
    assert np.all(np.diff(time, axis=1) <= 1e-5 * time[:, 1:])
    assert np.all(time >= t_kl[:, None] * (1 - 1e-5))
    np.testing.assert_allclose(time[:, -1], t_kl, rtol=1e-5)  # ε = ∞


def test_privacy_is_free_from_the_threshold_on(paper):
    _, _, _, t_kl = paper
    free = np.asarray(theory.free_privacy_epsilon(PAPER_MEANS))
    assert np.isinf(free[2])  # mu3: μ_{a*} = 1 (and an arm at 0)
    at_free, _ = theory.t_star_dp(PAPER_MEANS, np.where(np.isinf(free), 1.0, free))
    finite = np.isfinite(free)
    np.testing.assert_allclose(np.asarray(at_free)[finite], t_kl[finite], rtol=1e-5)
    assert np.asarray(at_free)[2] > t_kl[2] * 1.01  # mu3 at ε = 1: privacy still costs


def test_free_privacy_epsilon_hand_values():
    # mu1: max over a of log(0.95 (1 − μ_a) / (μ_a 0.05)) is at μ_a = 0.5: log 19
    assert float(theory.free_privacy_epsilon(PAPER_INSTANCES["mu1"])) == pytest.approx(
        math.log(19.0), rel=1e-6
    )
    # mu2: log(0.75 · 0.3 / (0.7 · 0.25))
    assert float(theory.free_privacy_epsilon(PAPER_INSTANCES["mu2"])) == pytest.approx(
        math.log(0.75 * 0.3 / (0.7 * 0.25)), rel=1e-5
    )


def test_t_star_dp_shapes_and_lower_bound():
    mu = PAPER_INSTANCES["mu4"]
    time, omega = theory.t_star_dp(mu, jnp.array([0.1, 1.0]))
    assert time.shape == (2,) and omega.shape == (2, 5)
    one, _ = theory.t_star_dp(mu, 1.0)
    assert one.shape == ()
    bound = theory.lower_bound_dp(mu, 1.0, 0.01)
    assert float(bound) == pytest.approx(float(one) * math.log(1 / 0.03), rel=1e-6)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: theory.t_star_dp([0.5, 1.2], 1.0), "lie in"),
        (lambda: theory.t_star_dp([0.5], 1.0), "K >= 2"),
        (lambda: theory.t_star_dp([0.5, 0.5, 0.1], 1.0), "unique best"),
        (lambda: theory.t_star_dp([0.5, 0.4], 0.0), "epsilon"),
        (lambda: theory.t_star_dp([0.5, 0.4], -1.0), "epsilon"),
        (lambda: theory.t_star_dp([0.5, 0.4], math.nan), "epsilon"),
        (lambda: theory.free_privacy_epsilon([0.5, float("nan")]), "finite"),
        (lambda: theory.lower_bound_dp([0.5, 0.4], 1.0, 1.0), "delta"),
        (lambda: theory.lower_bound_dp([0.5, 0.4], 1.0, 0.0), "delta"),
    ],
)
def test_invalid_inputs_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.integration
def test_study_table(tmp_path, capsys):
    """The docs table's script: T*_ε ≥ T*_g (d_ε ≤ min{KL, ε TV}) and consistent flags."""
    from experiments import studies

    assert studies.main(["dp-tt-theory", "--out", str(tmp_path), "--instances", "mu1", "mu3",
                         "--epsilons", "0.1", "1", "inf"]) == 0  # fmt: skip
    rows = json.loads((tmp_path / "dp_tt_theory.json").read_text())
    assert len(rows) == 6
    for row in rows:
        assert row["t_star_dp"] >= row["t_star_global"] * (1 - 1e-5)
        assert row["bound_dp"] == pytest.approx(row["t_star_dp"] * math.log(1 / 0.03), rel=1e-6)
        assert row["dp_above"] == (row["bound_dp"] > row["bound_global"])
    assert [r["dp_above"] for r in rows] == [True, False, False, False, True, False]
    assert capsys.readouterr().out.count("**no**") == 4
