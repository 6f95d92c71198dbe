"""Stopping thresholds of `jaxbai.thresholds` against independent float64 implementations.

The references below transcribe the paper directly: ζ from mpmath, 𝒞_G (Eq. 20) by a bounded
Brent minimisation (scipy.optimize.minimize_scalar) over λ ∈ (1/2, 1), W̄₋₁ from
mpmath.lambertw / scipy.special.lambertw, then c^G (Eq. 4), c^{G,ε} (Eq. 12), h (Lemma 23),
c̃^{G,ε} (Eq. 14) and the heuristic forms stated in the library docstrings (the δ → 0 forms
after Lemma 21 and Lemma 23). The library evaluates in float32 (and 𝒞_G by interpolation in a
host table), so values are compared with relative tolerance 1e-5 unless stated otherwise.
"""

from __future__ import annotations

import functools
import math

import mpmath
import numpy as np
import pytest
import scipy.special
from scipy.optimize import minimize_scalar

from jaxbai import thresholds

RTOL = 1e-5


# ------------------------------------------------------------------ float64 references
def k_ref(x: float) -> float:
    """k(x) = log₂ x + 2."""
    return math.log2(x) + 2


def g_ref(lam: float) -> float:
    """g_G(λ) = 2λ − 2λ log(4λ) + log ζ(2λ) − ½ log(1 − λ) (Eq. 20), ζ from mpmath."""
    zeta = float(mpmath.zeta(2 * lam))
    return 2 * lam - 2 * lam * math.log(4 * lam) + math.log(zeta) - 0.5 * math.log1p(-lam)


@functools.cache
def cg_ref(x: float) -> float:
    """𝒞_G(x) = min_{λ ∈ (1/2, 1)} (g_G(λ) + x)/λ (Eq. 20).

    Minimised over u = log(1 − λ), so that the optimum λ* → 1 for large x (1 − λ* ≈ 1/(2x))
    stays well resolved; xatol 1e-11 in u is far below the 1e-5 comparison tolerance.
    """

    def objective(u: float) -> float:
        lam = -math.expm1(u)
        return (g_ref(lam) + x) / lam

    res = minimize_scalar(
        objective,
        bounds=(-40.0, math.log(0.5) - 1e-12),
        method="bounded",
        options={"xatol": 1e-11},
    )
    assert res.success
    return float(res.fun)


def wbar_ref(x: float) -> float:
    """W̄₋₁(x) = −W₋₁(−e^{−x}) (Lemma 23), mpmath at 30 digits (e^{−x} underflows in float64
    for x > 745)."""
    with mpmath.workdps(30):
        return float(-mpmath.lambertw(-mpmath.exp(-x), -1).real)


def c_gaussian_ref(w_a, w_b, delta, num_arms):
    """c^G (Eq. 4)."""
    return (
        2 * cg_ref(math.log((num_arms - 1) / delta) / 2)
        + 2 * math.log(4 + math.log(w_a))
        + 2 * math.log(4 + math.log(w_b))
    )


def c_private_ref(w_a, w_b, delta, epsilon, sigma2, num_arms):
    """c^{G,ε} (Eq. 12)."""
    delta_g = delta / (k_ref(w_a) ** 2 * k_ref(w_b) ** 2 * math.pi**4 / 18)
    laplace = sum(
        math.log(math.pi**2 * num_arms * k_ref(w) ** 2 / (3 * delta)) ** 2 / w for w in (w_a, w_b)
    )
    return 2 * c_gaussian_ref(w_a, w_b, delta_g, num_arms) + laplace / (epsilon**2 * sigma2)


def h_ref(x, delta, num_arms):
    """h(x, δ) of Lemma 23."""
    arg = (
        2 * math.log(math.pi**2 * num_arms * k_ref(x) ** 2 / (2 * delta))
        + 4 * math.log(4 + math.log(x))
        + 0.5
    )
    return wbar_ref(arg) / 2


def c_tilde_ref(mu_a, mu_b, w_a, w_b, delta, epsilon, sigma2, num_arms):
    """c̃^{G,ε} (Eq. 14), branch chosen on (μ_a − μ_b)₊ < ε/2."""
    sigma = math.sqrt(sigma2)
    ws = (w_a, w_b)
    if max(mu_a - mu_b, 0.0) < epsilon / 2:
        extra = sum(
            math.sqrt(h_ref(w, delta, num_arms) / w)
            * math.log(math.pi**2 * num_arms * k_ref(w) ** 2 / (2 * delta))
            for w in ws
        )
        return (
            0.5 * c_private_ref(w_a, w_b, 2 * delta / 3, epsilon, sigma2, num_arms)
            + math.sqrt(2) / (epsilon * sigma) * extra
        )
    k_max = max(k_ref(w) for w in ws)
    return math.log(math.pi**2 * num_arms * k_max / (2 * delta)) / (2 * sigma2) + epsilon / (
        2 * math.sqrt(2) * sigma
    ) * sum(math.sqrt(w * h_ref(w, delta, num_arms)) for w in ws)


# ------------------------------------------------------------------ ζ, g_G, 𝒞_G, W̄₋₁
@pytest.mark.parametrize("s", [1.01, 1.2, 1.5, 2.0, 2.4, 3.0, 6.0])
def test_riemann_zeta_matches_mpmath(s):
    """ζ(s) for s > 1 agrees with mpmath.zeta to 1e-12 relative (documented error < 1e-14)."""
    assert float(thresholds.riemann_zeta(s)) == pytest.approx(float(mpmath.zeta(s)), rel=1e-12)


def test_riemann_zeta_is_elementwise():
    """Array input keeps its shape; ζ(2) = π²/6 and ζ(4) = π⁴/90 exactly known."""
    got = thresholds.riemann_zeta(np.array([[2.0, 4.0]]))
    assert got.shape == (1, 2)
    np.testing.assert_allclose(got, [[math.pi**2 / 6, math.pi**4 / 90]], rtol=1e-13)


@pytest.mark.parametrize("lam", [0.55, 0.7, 0.9, 0.999])
def test_g_gaussian_matches_eq20(lam):
    """g_G(λ) (Eq. 20) agrees with the float64/mpmath transcription to 1e-12."""
    assert float(thresholds.g_gaussian(lam)) == pytest.approx(g_ref(lam), rel=1e-12)


@pytest.mark.parametrize("x", [0.0, 0.5, 1.0, 3.7, 10.0, 50.0, 345.0, 1000.0, 9000.0])
def test_c_gaussian_fn_matches_direct_minimisation(x):
    """𝒞_G(x) (Eq. 20) against a direct 1-D minimisation over λ, relative tolerance 1e-5."""
    assert float(thresholds.c_gaussian_fn(x)) == pytest.approx(cg_ref(x), rel=RTOL)


def test_c_gaussian_fn_asymptotics():
    """𝒞_G(x) ≈ x + log x (Section 2.2.3): the ratio tends to 1 as x grows.

    Reference ratios (from `cg_ref`): 0.9838 at x = 100, 0.9971 at 1e3, 0.99960 at 1e4;
    the test asserts the distance to 1 shrinks and is below 1e-3 at x = 1e4.
    """
    xs = [1e2, 1e3, 1e4]
    gaps = [abs(float(thresholds.c_gaussian_fn(x)) / (x + math.log(x)) - 1) for x in xs]
    assert gaps[0] > gaps[1] > gaps[2]
    assert gaps[2] < 1e-3


@pytest.mark.parametrize("x", [1.001, 1.01, 1.1, 1.5, 2.0, 3.0, 10.0, 100.0, 700.0, 1e4])
def test_lambert_w_bar_solves_defining_equation(x):
    """W̄₋₁(x) is the root y ≥ 1 of y − log y = x (Lemma 23), and equals mpmath's
    −W₋₁(−e^{−x}) to 1e-5 relative (float32 Newton iterates)."""
    y = float(thresholds.lambert_w_bar(x))
    assert y >= 1
    assert y - math.log(y) == pytest.approx(x, rel=RTOL)
    assert y == pytest.approx(wbar_ref(x), rel=RTOL)


@pytest.mark.parametrize("x", [1.5, 4.0, 20.0, 300.0])
def test_lambert_w_bar_matches_scipy(x):
    """Same function via scipy.special.lambertw(−e^{−x}, −1), in the range where e^{−x} is a
    normal float64."""
    ref = -float(scipy.special.lambertw(-math.exp(-x), -1).real)
    assert float(thresholds.lambert_w_bar(x)) == pytest.approx(ref, rel=RTOL)


def test_lambert_w_bar_at_domain_edge():
    """W̄₋₁(1) = −W₋₁(−1/e) = 1, the left end of the documented domain x ≥ 1."""
    assert float(thresholds.lambert_w_bar(1.0)) == pytest.approx(1.0, rel=RTOL)


# ------------------------------------------------------------------ theory thresholds
@pytest.mark.parametrize(
    ("w_a", "w_b", "delta", "num_arms"),
    [(10, 25, 0.01, 5), (1, 1, 0.1, 2), (1000, 37, 1e-6, 20), (3, 50_000, 0.5, 3)],
)
def test_c_gaussian_threshold_matches_eq4(w_a, w_b, delta, num_arms):
    """c^G_{a,b}(ω, δ) = 2𝒞_G(log((K−1)/δ)/2) + 2 log(4 + log ω_a) + 2 log(4 + log ω_b)."""
    got = float(thresholds.c_gaussian_threshold(w_a, w_b, delta, num_arms))
    assert got == pytest.approx(c_gaussian_ref(w_a, w_b, delta, num_arms), rel=RTOL)


@pytest.mark.parametrize(
    ("w_a", "w_b", "delta", "epsilon", "sigma2", "num_arms"),
    [
        (10, 25, 0.01, 0.5, 0.25, 5),
        (1, 2, 0.1, 1.0, 0.25, 2),
        (4096, 300, 1e-4, 0.05, 1.3, 10),
    ],
)
def test_c_private_threshold_matches_eq12(w_a, w_b, delta, epsilon, sigma2, num_arms):
    """c^{G,ε} = 2c^G(ω, δ(k_a²k_b²π⁴/18)⁻¹) + (1/(ε²σ²)) Σ_c (1/ω_c) log(π²K k(ω_c)²/(3δ))²."""
    got = float(thresholds.c_private_threshold(w_a, w_b, delta, epsilon, sigma2, num_arms))
    ref = c_private_ref(w_a, w_b, delta, epsilon, sigma2, num_arms)
    assert got == pytest.approx(ref, rel=RTOL)


@pytest.mark.parametrize(
    ("x", "delta", "num_arms"), [(1, 0.01, 5), (10, 0.1, 2), (12345, 1e-6, 30)]
)
def test_h_threshold_matches_lemma23(x, delta, num_arms):
    """h(x, δ) = W̄₋₁(2 log(π²K k(x)²/(2δ)) + 4 log(4 + log x) + 1/2)/2 (Lemma 23)."""
    got = float(thresholds.h_threshold(x, delta, num_arms))
    assert got == pytest.approx(h_ref(x, delta, num_arms), rel=RTOL)


@pytest.mark.parametrize(
    ("mu_a", "mu_b", "w_a", "w_b", "delta", "epsilon", "sigma2", "num_arms"),
    [
        # low-privacy-noise branch: gap 0.05 < ε/2 = 0.25
        (0.55, 0.5, 20, 40, 0.01, 0.5, 0.25, 5),
        # gap clipped to 0 (μ_a < μ_b): also the first branch
        (0.2, 0.7, 8, 3, 0.05, 0.1, 0.25, 3),
        # high-privacy branch: gap 0.4 ≥ ε/2 = 0.05
        (0.9, 0.5, 20, 40, 0.01, 0.1, 0.25, 5),
        # high-privacy branch at the switch itself: gap = ε/2 = 0.25 exactly
        (0.75, 0.5, 100, 7, 1e-3, 0.5, 0.25, 4),
    ],
)
def test_c_tilde_private_threshold_matches_eq14(
    mu_a, mu_b, w_a, w_b, delta, epsilon, sigma2, num_arms
):
    """c̃^{G,ε} (Eq. 14), both branches of the (μ_a − μ_b)₊ < ε/2 switch."""
    got = float(
        thresholds.c_tilde_private_threshold(mu_a, mu_b, w_a, w_b, delta, epsilon, sigma2, num_arms)
    )
    ref = c_tilde_ref(mu_a, mu_b, w_a, w_b, delta, epsilon, sigma2, num_arms)
    assert got == pytest.approx(ref, rel=RTOL)


# ------------------------------------------------------------------ heuristic thresholds
@pytest.mark.parametrize(
    ("total", "delta", "expected"),
    [
        # log((1 + log 100)/0.01) = log(5.6051702 · 100) = log(560.51702) = 6.3288 …
        (100, 0.01, math.log((1 + math.log(100)) / 0.01)),
        # n = 1: log((1 + 0)/0.1) = log 10 = 2.302585
        (1, 0.1, math.log(10.0)),
        (10**6, 1e-5, math.log((1 + math.log(1e6)) / 1e-5)),
    ],
)
def test_heuristic_gaussian_threshold(total, delta, expected):
    """log((1 + log n)/δ), n = samples so far (docstring formula)."""
    got = float(thresholds.heuristic_gaussian_threshold(total, delta))
    assert got == pytest.approx(expected, rel=RTOL)


def _heuristic_private_ref(w_a, w_b, delta, epsilon, sigma2):
    """log(1/δ) + log(1 + log Ñ_a) + log(1 + log Ñ_b) + (1/Ñ_a + 1/Ñ_b) log(1/δ)²/(ε²σ²)."""
    li = math.log(1 / delta)
    return (
        li
        + math.log(1 + math.log(w_a))
        + math.log(1 + math.log(w_b))
        + (1 / w_a + 1 / w_b) * li**2 / (epsilon**2 * sigma2)
    )


@pytest.mark.parametrize(
    ("w_a", "w_b", "delta", "epsilon", "sigma2"),
    [(10, 25, 0.01, 0.5, 0.25), (1, 1, 0.1, 1.0, 0.25), (5000, 64, 1e-4, 0.01, 0.25)],
)
def test_heuristic_private_threshold(w_a, w_b, delta, epsilon, sigma2):
    """AdaP-TT heuristic threshold (docstring formula), e.g. at (10, 25, 0.01, 0.5, 1/4):
    4.60517 + log(1 + 2.302585) + log(1 + 3.218876) + 0.14 · 21.2076/0.0625 = 54.744"""
    got = float(thresholds.heuristic_private_threshold(w_a, w_b, delta, epsilon, sigma2))
    assert got == pytest.approx(_heuristic_private_ref(w_a, w_b, delta, epsilon, sigma2), rel=RTOL)


def _heuristic_tilde_ref(mu_a, mu_b, w_a, w_b, delta, epsilon, sigma2):
    """δ → 0 forms of Eq. (14) stated after Lemma 23 (switch on (μ_a − μ_b)₊ ≥ ε/2)."""
    li = math.log(1 / delta)
    sigma = math.sqrt(sigma2)
    if max(mu_a - mu_b, 0.0) >= epsilon / 2:
        return li / (2 * sigma2) + epsilon / (2 * math.sqrt(2) * sigma) * (
            math.sqrt(w_a) + math.sqrt(w_b)
        ) * math.sqrt(li)
    return (
        li
        + (1 / w_a + 1 / w_b) * li**2 / (2 * epsilon**2 * sigma2)
        + math.sqrt(2) / (epsilon * sigma) * (1 / math.sqrt(w_a) + 1 / math.sqrt(w_b)) * li**1.5
    )


@pytest.mark.parametrize(
    ("mu_a", "mu_b", "w_a", "w_b", "delta", "epsilon", "sigma2"),
    [
        (0.9, 0.5, 16, 64, 0.01, 0.2, 0.25),  # gap 0.4 ≥ 0.1: high branch
        (0.75, 0.5, 100, 9, 0.001, 0.5, 0.25),  # gap 0.25 = ε/2: high branch
        (0.55, 0.5, 16, 64, 0.01, 0.2, 0.25),  # gap 0.05 < 0.1: low branch
        (0.1, 0.5, 3, 2, 0.1, 1.0, 0.25),  # negative gap clipped to 0: low branch
    ],
)
def test_heuristic_tilde_private_threshold(mu_a, mu_b, w_a, w_b, delta, epsilon, sigma2):
    """AdaP-TT* heuristic threshold, both branches. Worked example (first case): log(1/δ) =
    4.60517; 4.60517/(2 · 0.25) + 0.2/(2√2 · 0.5) · (4 + 8) · √4.60517 = 9.21034 + 3.64166."""
    got = float(
        thresholds.heuristic_tilde_private_threshold(mu_a, mu_b, w_a, w_b, delta, epsilon, sigma2)
    )
    ref = _heuristic_tilde_ref(mu_a, mu_b, w_a, w_b, delta, epsilon, sigma2)
    assert got == pytest.approx(ref, rel=RTOL)


def test_heuristic_tilde_worked_example():
    """Hand arithmetic for the high branch above: 9.21034 + 0.1414214 · 12 · 2.1459660 = 12.85200,
    independent of the reference transcription."""
    got = float(thresholds.heuristic_tilde_private_threshold(0.9, 0.5, 16, 64, 0.01, 0.2, 0.25))
    li = math.log(100.0)
    assert got == pytest.approx(2 * li + 0.2 / math.sqrt(2) * 12 * math.sqrt(li), rel=RTOL)
