"""Tests for jaxbai.mechanisms.discrete: exact discrete Laplace samplers and the releases.

Distribution checks are Pearson χ² tests against the exact pmf
P(X = x) = (1 − q)/(1 + q) · q^|x|, q = exp(−1/t), computed here with mpmath at 50 digits. The
bins are the integers |x| < L plus the two tails x ≤ −L and x ≥ L, with L the largest value whose
expected count is still ≥ 5 (so the χ² approximation holds), hence df = 2L − 1 + 2 − 1 = 2L.
A test fails when the upper-tail p-value is below 10⁻⁶. The exact sampler runs on seeded bits
(deterministic); OpenDP's draws from the CSPRNG, so a correct sampler fails with probability
10⁻⁶ per test. Symmetry is tested separately: the number of positive draws among the non-zero
ones is Binomial(n, 1/2); it must lie within 5 standard deviations (two-sided rate ≈ 6·10⁻⁷).
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from jaxbai.mechanisms import discrete

N = 100_000
P_THRESHOLD = 1e-6


def pmf(x: int, scale: Fraction) -> float:
    """Exact discrete Laplace pmf (independent of the code under test)."""
    with mpmath.workdps(50):
        q = mpmath.exp(-mpmath.mpf(scale.denominator) / scale.numerator)
        return float((1 - q) / (1 + q) * q ** abs(x))


def chi_square_p(draws: np.ndarray, scale: Fraction) -> tuple[float, int]:
    """(p-value, df) of the binned χ² test of ``draws`` against DLap(scale)."""
    n = draws.size
    cut = 1
    while n * pmf(cut + 1, scale) >= 5:
        cut += 1
    inner = np.arange(-cut + 1, cut)
    probabilities = np.array([pmf(int(x), scale) for x in inner])
    tail = (1 - probabilities.sum()) / 2
    observed = np.array(
        [np.sum(draws <= -cut), *(np.sum(draws == x) for x in inner), np.sum(draws >= cut)]
    )
    expected = n * np.array([tail, *probabilities, tail])
    statistic = float(np.sum((observed - expected) ** 2 / expected))
    df = observed.size - 1
    return float(stats.chi2.sf(statistic, df)), df


def assert_symmetric(draws: np.ndarray) -> None:
    nonzero = draws[draws != 0]
    positive = int(np.sum(nonzero > 0))
    assert abs(positive - nonzero.size / 2) < 5 * math.sqrt(nonzero.size / 4)


@pytest.mark.parametrize(
    ("epsilon", "sensitivity"), [(0.5, 1), (0.05, 8), (3.0, 1)], ids=["t=2", "t=160", "t=1/3"]
)
def test_exact_sampler_matches_pmf(epsilon, sensitivity):
    noise = discrete.exact_laplace(epsilon, sensitivity, random.Random(7).getrandbits)
    assert noise.scale == Fraction(sensitivity) / Fraction(epsilon)
    assert noise.epsilon == epsilon
    draws = np.array([noise.add(0) for _ in range(N)])
    p, df = chi_square_p(draws, noise.scale)
    assert p > P_THRESHOLD, f"χ² p-value {p:.2e} with df = {df}"
    assert_symmetric(draws)


def test_exact_sampler_detects_a_wrong_scale():
    """Power check: draws at scale 2 are rejected as DLap(2.2) by the same test."""
    noise = discrete.exact_laplace(0.5, 1, random.Random(8).getrandbits)
    draws = np.array([noise.add(0) for _ in range(N)])
    assert chi_square_p(draws, Fraction(11, 5))[0] < P_THRESHOLD


def test_exact_sampler_uses_no_floating_point_transcendental(monkeypatch):
    def forbidden(*args):
        raise AssertionError("floating-point transcendental on the secret path")

    for name in ("exp", "log", "log1p", "expm1", "pow", "sqrt"):
        monkeypatch.setattr(math, name, forbidden)
    noise = discrete.exact_laplace(0.05, 8, random.Random(1).getrandbits)
    mean = discrete.noisy_mean(Fraction(33, 4), 12, 8, noise)
    assert isinstance(mean, Fraction) and 96 % mean.denominator == 0  # m · count = 96


def test_opendp_release_matches_pmf():
    pytest.importorskip("opendp")
    noise = discrete.opendp_laplace(0.5, 1)
    assert noise.epsilon <= 0.5 and noise.scale == 2
    n = 20_000  # OpenDP answers one scalar release in ~0.1 ms
    draws = np.array([noise.add(5) - 5 for _ in range(n)])
    assert chi_square_p(draws, noise.scale)[0] > P_THRESHOLD
    assert_symmetric(draws)


def test_opendp_sampler_at_the_release_scale_matches_pmf():
    """10⁵ draws of OpenDP's integer Laplace at the scale our wrapper chose (vector form)."""
    dp = pytest.importorskip("opendp.prelude")
    noise = discrete.opendp_laplace(0.05, 8)
    assert noise.epsilon <= 0.05 and noise.scale >= Fraction(8) / Fraction(0.05)
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T="i64")), dp.l1_distance(T="i64")
    measurement = dp.m.make_laplace(*space, scale=float(noise.scale))
    draws = np.array(measurement([0] * N))
    p, df = chi_square_p(draws, noise.scale)
    assert p > P_THRESHOLD, f"χ² p-value {p:.2e} with df = {df}"
    assert_symmetric(draws)


@pytest.mark.parametrize(
    ("epsilon", "expected"), [(0.05, 8), (1.0, 128), (1.27, 128), (0.001, 1), (3.0, 512)]
)
def test_release_resolution_is_the_coarsest_grid_within_one_percent(epsilon, expected):
    # 1/8 ≤ 0.01/0.05 = 1/5 < 1/4; 1/128 ≤ 0.01 < 1/64; 1/128 ≤ 0.01/1.27 ≈ 1/127 < 1/64;
    # 1/512 ≤ 0.01/3 = 1/300 < 1/256.
    assert discrete.release_resolution(epsilon) == expected


@pytest.mark.parametrize(("epsilon", "m"), [(1.0, 1), (1.0, 128), (0.05, 8), (3.0, 512)])
def test_tail_factor_bounds_the_lattice_tail_tightly(epsilon, m):
    """P(|X|/m ≥ u) ≤ c · e^(−εu) for X ~ DLap(m/ε), with equality at the lattice points."""
    q = math.exp(-epsilon / m)
    weights = (1 - q) / (1 + q) * q ** np.arange(200_000.0)  # the pmf at x = 0, 1, 2, …
    c = discrete.tail_factor(epsilon, m, binary=True)
    for k in range(1, 60):
        tail = 2 * float(np.sum(weights[k:]))  # P(|X| ≥ k), summed term by term
        for u in (k / m, (k - 0.5) / m):  # a lattice point and a point between two
            assert tail <= c * math.exp(-epsilon * u) * (1 + 1e-9)
        assert tail == pytest.approx(c * math.exp(-epsilon * k / m), rel=1e-6)
    rounding = discrete.tail_factor(epsilon, m, binary=False) / c
    assert rounding == pytest.approx(math.exp(epsilon / (2 * m)))


def test_grid_rounding_has_sensitivity_m():
    m = 8
    sums = [Fraction(k, 24) for k in range(0, 24 * 4 + 1)]  # sums in [0, 4] on a fine grid
    for a in sums:
        for b in sums:
            if abs(a - b) <= 1:
                ra, rb = (discrete.round_to_grid(x, m) for x in (a, b))
                assert abs(ra - rb) <= m
    assert discrete.round_to_grid(Fraction(5, 16), m) == 3  # 2.5 + 0.5 → 3
    assert discrete.round_to_grid(Fraction(9, 32), m) == 2  # 2.25 → 2


def test_discrete_release_is_noisy_grid_sum_over_m_count():
    exact = discrete.IntegerNoise(lambda x: x, 1.0, Fraction(1))
    assert discrete.noisy_mean(Fraction(5, 2), 4, 1, exact) == Fraction(3, 4)
    assert discrete.noisy_mean(Fraction(5, 2), 4, 8, exact) == Fraction(5, 8)
    shifted = discrete.IntegerNoise(lambda x: x - 3, 1.0, Fraction(1))
    assert discrete.noisy_mean(Fraction(2), 4, 1, shifted) == Fraction(-1, 4)
    with pytest.raises(ValueError, match="at least one sample"):
        discrete.noisy_mean(Fraction(0), 0, 1, exact)


def test_invalid_parameters_are_rejected():
    bits = random.Random(0).getrandbits
    for epsilon in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="finite epsilon"):
            discrete.exact_laplace(epsilon, 1, bits)
    for sensitivity in (0, True, 1.5):
        with pytest.raises(ValueError, match="sensitivity"):
            discrete.exact_laplace(1.0, sensitivity, bits)
