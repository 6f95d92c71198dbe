"""Transportation costs and leader bonuses of `jaxbai.costs` against the paper's formulas.

W^G and b^G: Eq. (3); W^{G,ε}: Eq. (13); b^{G,ε} and k(x) = log₂ x + 2: Eq. (11).
Expected values are worked out by hand (arithmetic in the comments) or recomputed in float64
with the standard library; the library computes in float32, hence the relative tolerance 1e-6
(float32 epsilon is 1.2e-7, and each formula chains only a handful of roundings).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from jaxbai import costs

RTOL = 1e-6


@pytest.mark.parametrize(
    ("mu_a", "mu_b", "w_a", "w_b", "sigma2", "expected"),
    [
        # gap 0.4: 0.16 / (2 · 0.25 · (1/10 + 1/10)) = 0.16 / 0.1 = 1.6
        (0.9, 0.5, 10, 10, 0.25, 1.6),
        # gap 0.5: 0.25 / (2 · 1 · (1/4 + 1/16)) = 0.25 / 0.625 = 0.4
        (0.7, 0.2, 4, 16, 1.0, 0.4),
        # gap 0.25: 0.0625 / (2 · 0.25 · (1/1 + 1/3)) = 0.0625 / (2/3) = 0.09375
        (0.75, 0.5, 1, 3, 0.25, 0.09375),
        # negative gap is clipped: (0.3 − 0.8)₊ = 0, so the cost is 0 (not 0.25/…)
        (0.3, 0.8, 5, 5, 0.25, 0.0),
        # equal means
        (0.5, 0.5, 7, 2, 0.25, 0.0),
    ],
)
def test_gaussian_cost_matches_eq3(mu_a, mu_b, w_a, w_b, sigma2, expected):
    """W^G_{a,b} = (μ_a − μ_b)₊² / (2σ²(1/ω_a + 1/ω_b)) (Eq. 3), hand-computed values."""
    got = float(costs.gaussian_cost(mu_a, mu_b, w_a, w_b, sigma2))
    assert got == pytest.approx(expected, rel=RTOL, abs=1e-12)


@pytest.mark.parametrize(
    ("mu_a", "mu_b", "w_a", "w_b", "sigma2", "epsilon", "expected"),
    [
        # gap 0.4 > ε/2 = 0.1: 0.4 · 0.1 / (2 · 0.25 · 0.2) = 0.04 / 0.1 = 0.4
        (0.9, 0.5, 10, 10, 0.25, 0.2, 0.4),
        # gap 0.4 < ε/2 = 1: min = gap, so W^{G,ε} = W^G = 0.16 / 0.1 = 1.6
        (0.9, 0.5, 10, 10, 0.25, 2.0, 1.6),
        # gap 0.1 > ε/2 = 0.05: 0.1 · 0.05 / (2 · 0.25 · (1/2 + 1/2)) = 0.005 / 0.5 = 0.01
        (0.6, 0.5, 2, 2, 0.25, 0.1, 0.01),
        # gap exactly ε/2 = 0.25 (both branches agree): 0.0625 / (2 · 1 · (1/4 + 1/4)) = 0.0625
        (0.75, 0.5, 4, 4, 1.0, 0.5, 0.0625),
        # ε = ∞ (no privacy): min{∞, gap} = gap, the Gaussian cost 1.6
        (0.9, 0.5, 10, 10, 0.25, math.inf, 1.6),
        # negative gap is clipped before the product: without (·)₊ the numerator would be
        # (−0.5) · min(0.1, −0.5) = 0.25 > 0; with it, 0.
        (0.3, 0.8, 5, 5, 0.25, 0.2, 0.0),
        (0.3, 0.8, 5, 5, 0.25, 5.0, 0.0),
    ],
)
def test_private_cost_matches_eq13(mu_a, mu_b, w_a, w_b, sigma2, epsilon, expected):
    """W^{G,ε} = (μ_a − μ_b)₊ min{ε/2, (μ_a − μ_b)₊} / (2σ²(1/ω_a + 1/ω_b)) (Eq. 13).

    Covers both sides of the min{ε/2, gap} switch, ε = ∞ and the (·)₊ clipping.
    """
    got = float(costs.private_cost(mu_a, mu_b, w_a, w_b, sigma2, epsilon))
    assert got == pytest.approx(expected, rel=RTOL, abs=1e-12)


def test_costs_vectorised_against_float64_reference():
    """Both costs broadcast one arm against a vector of arms and agree with a float64 NumPy
    transcription of Eq. (3) and Eq. (13) on random inputs (relative tolerance 1e-5: float32)."""
    rng = np.random.default_rng(0)
    mu_a, w_a, sigma2, eps = 0.6, 37.0, 0.25, 0.3
    mu_b = rng.uniform(0, 1, 50)
    w_b = rng.integers(1, 10_000, 50).astype(np.float64)
    gap = np.maximum(mu_a - mu_b, 0.0)
    denom = 2 * sigma2 * (1 / w_a + 1 / w_b)
    np.testing.assert_allclose(
        costs.gaussian_cost(mu_a, mu_b, w_a, w_b, sigma2), gap**2 / denom, rtol=1e-5, atol=1e-12
    )
    np.testing.assert_allclose(
        costs.private_cost(mu_a, mu_b, w_a, w_b, sigma2, eps),
        gap * np.minimum(eps / 2, gap) / denom,
        rtol=1e-5,
        atol=1e-12,
    )


def test_concentration_parameters_are_paper_defaults():
    """s = α = 1.2 (Section 2.2.3 and Alg. 6 input line)."""
    assert costs.S_CONCENTRATION == 1.2
    assert costs.ALPHA_CONCENTRATION == 1.2


@pytest.mark.parametrize(
    ("counts", "total", "sigma2", "expected"),
    [
        # 2 · 0.25 · 1.2 · (1 + 1.2) = 1.32; 1.32 · log(100) / 10 = 0.60788…; √ = 0.7796681759
        (10, 100, 0.25, 0.7796681759251356),
        # 2 · 1 · 1.2 · 2.2 = 5.28; 5.28 · log(1000) / 1 = 36.4729…; √ = 6.039283
        (1, 1000, 1.0, math.sqrt(5.28 * math.log(1000))),
        # ‖ω‖₁ = 1: log 1 = 0, no bonus
        (1, 1, 0.25, 0.0),
        # 1.32 · log(5000) / 2500 = 1.32 · 8.517193 / 2500 = 0.0044971; √ = 0.0670604
        (2500, 5000, 0.25, math.sqrt(1.32 * math.log(5000) / 2500)),
    ],
)
def test_gaussian_bonus_matches_eq3(counts, total, sigma2, expected):
    """b^G_a = √(2σ²α(1+s) log‖ω‖₁ / ω_a) with s = α = 1.2 (Eq. 3), ‖ω‖₁ = samples so far."""
    got = float(costs.gaussian_bonus(counts, total, sigma2))
    assert got == pytest.approx(expected, rel=RTOL, abs=1e-12)


def test_gaussian_bonus_uses_log_of_total_samples():
    """The bonus depends on ‖ω‖₁ through log‖ω‖₁ only: raising the total from 100 to 1000
    at fixed ω_a multiplies it by √(log 1000 / log 100) = √1.5 (and counts enter as 1/√ω_a)."""
    small = float(costs.gaussian_bonus(10, 100, 0.25))
    large = float(costs.gaussian_bonus(10, 1000, 0.25))
    assert large / small == pytest.approx(math.sqrt(1.5), rel=RTOL)
    quarter = float(costs.gaussian_bonus(40, 100, 0.25))
    assert small / quarter == pytest.approx(2.0, rel=RTOL)


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (1, 2.0),  # log₂ 1 + 2
        (2, 3.0),
        (8, 5.0),
        (1024, 12.0),
        (3, 3.584962500721156),  # log₂ 3 = 1.5849625007…
        (2**31 - 1, 33.0),  # log₂(2³¹ − 1) = 31 − 6.7e-10
    ],
)
def test_doubling_index(x, expected):
    """k(x) = log₂ x + 2 (Eq. 11), hand-computed."""
    assert float(costs.doubling_index(x)) == pytest.approx(expected, rel=RTOL)


@pytest.mark.parametrize(
    ("local_counts", "k", "epsilon", "expected"),
    [
        # √(4/4) + 4/(1 · 4) = 1 + 1 = 2
        (4.0, 4.0, 1.0, 2.0),
        # k(8) = 5: √(5/8) + 5/(0.5 · 8) = 0.7905694 + 1.25 = 2.0405694
        (8.0, 5.0, 0.5, 2.040569415042095),
        # √(12/1024) + 12/(0.01 · 1024) = 0.1082532 + 1.171875 = 1.2801282
        (1024.0, 12.0, 0.01, math.sqrt(12 / 1024) + 12 / 10.24),
        # ε = ∞: the Laplace term vanishes, √(3/1) = 1.7320508
        (1.0, 3.0, math.inf, math.sqrt(3.0)),
    ],
)
def test_private_bonus_matches_eq11(local_counts, k, epsilon, expected):
    """b^{G,ε}_a = √(k/Ñ_a) + k/(ε Ñ_a) (Eq. 11), k supplied by the caller."""
    got = float(costs.private_bonus(local_counts, k, epsilon))
    assert got == pytest.approx(expected, rel=RTOL)


def test_private_bonus_with_eq11_index():
    """With k = k(Ñ_a) as Eq. (11) prints: Ñ_a = 16, k = 6, ε = 0.25:
    √(6/16) + 6/(0.25 · 16) = 0.6123724 + 1.5 = 2.1123724."""
    k = costs.doubling_index(16.0)
    got = float(costs.private_bonus(16.0, k, 0.25))
    assert got == pytest.approx(math.sqrt(6 / 16) + 1.5, rel=RTOL)
