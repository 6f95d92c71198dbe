"""Tests for jaxbai.mechanisms.secure: CSPRNG uniforms, exact log, snapping, local mechanisms
(randomised response, Lemma 12; Gaussian, Alg. 8; Laplace, Theorem 3).

Statistical checks use the Dvoretzky–Kiefer–Wolfowitz inequality, valid for any distribution
(discrete ones included): P(sup_x |F_n(x) − F(x)| > t) ≤ 2 exp(−2 n t²). With n = 20 000 draws
and a false-alarm rate α = 1e-6 the tolerance is t = sqrt(log(2/α) / (2n)) ≈ 0.019.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from jaxbai.mechanisms import GaussianNoise, LaplaceNoise, RandomisedResponse, secure

N = 20_000
ALPHA = 1e-6
DKW = math.sqrt(math.log(2 / ALPHA) / (2 * N))


def uniform_stream(seed: int):
    """Deterministic doubles in (0, 1), for reproducible (not private) tests."""
    rng = np.random.default_rng(seed)
    return lambda: int(rng.integers(1, 2**53)) / 2**53


def sup_distance(samples: np.ndarray, cdf, points: np.ndarray) -> float:
    """sup over ``points`` of |empirical CDF − cdf| (right-continuous CDFs)."""
    empirical = np.searchsorted(np.sort(samples), points, side="right") / samples.size
    return float(np.max(np.abs(empirical - cdf(points))))


def laplace_cdf(x: np.ndarray, scale: float) -> np.ndarray:
    return stats.laplace.cdf(x, scale=scale)


def test_secure_uniform_is_uniform_on_open_interval():
    u = np.array([secure.secure_uniform() for _ in range(N)])
    assert np.all((u > 0) & (u < 1))
    grid = np.linspace(0, 1, 1001)
    assert sup_distance(u, lambda x: x, grid) < DKW
    # Finer than 2^-53: the sampler reaches doubles a plain 53-bit draw cannot (prob ~1 - 1e-9).
    assert np.any(u * 2**53 != np.floor(u * 2**53))


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_log_is_correctly_rounded(seed):
    rng = np.random.default_rng(seed)
    us = np.concatenate([rng.random(500), 1 - rng.random(200) * 1e-12, rng.random(100) * 1e-300])
    mpmath.mp.prec = 300
    for u in us[us > 0]:
        expected = float(mpmath.log(mpmath.mpf(float(u))))
        assert secure.exact_log(float(u)) == expected


def test_snapping_grid_is_smallest_power_of_two_above():
    assert secure.snapping_grid(1.0) == 1.0
    assert secure.snapping_grid(1.0000001) == 2.0
    assert secure.snapping_grid(0.3) == 0.5
    assert secure.snapping_grid(1000.0) == 1024.0


@pytest.mark.parametrize(("value", "scale"), [(3.3, 0.75), (-2.0, 5.0)])
def test_snapping_output_on_grid_with_snapped_laplace_distribution(value, scale):
    bound = 1e6
    grid = secure.snapping_grid(scale)
    out = np.array([secure.snapping_mechanism(value, scale, bound) for _ in range(N)])
    steps = out / grid
    assert np.all(steps == np.round(steps)), "outputs must be multiples of Λ"
    # Target: round_Λ(value + Lap(λ)); P(out ≤ kΛ) = F_Lap(kΛ + Λ/2 − value).
    points = np.arange(-40, 41) * grid + np.round(value / grid) * grid
    distance = sup_distance(out, lambda x: laplace_cdf(x + grid / 2 - value, scale), points)
    assert distance < DKW
    # The snapped distribution is not the unsnapped one: check the test has power there.
    assert abs(np.mean(out) - value) < 10 * math.sqrt(2) * scale / math.sqrt(N) + grid / 2


def test_snapping_clamps_input_and_output():
    bound, scale = 10.0, 1.0
    stream_far, stream_edge = uniform_stream(7), uniform_stream(7)
    far = [secure.snapping_mechanism(1e9, scale, bound, stream_far) for _ in range(2000)]
    edge = [secure.snapping_mechanism(bound, scale, bound, stream_edge) for _ in range(2000)]
    assert far == edge, "an input beyond B is treated exactly as B"
    assert max(far) <= bound and min(far) >= -bound
    # Clamped at B: P(output = B) = P(Lap(1) ≥ −1/2) = 1 − e^{−1/2}/2 ≈ 0.697 (binomial, 5σ).
    share = np.mean(np.array(far) == bound)
    p = 1 - math.exp(-0.5) / 2
    assert abs(share - p) < 5 * math.sqrt(p * (1 - p) / 2000)
    low = [secure.snapping_mechanism(-1e9, scale, bound) for _ in range(200)]
    assert min(low) >= -bound


def test_snapping_scale_meets_target_epsilon():
    for epsilon, bound in [(0.1, 20.0), (1.0, 1e6), (3.0, 2.0**40)]:
        scale = secure.snapping_scale(epsilon, bound)
        effective = secure.snapping_epsilon(scale, bound)
        assert effective <= epsilon
        assert effective > epsilon * (1 - 1e-12)
        assert scale == pytest.approx((1 + 2.0**-49 * bound) / epsilon, rel=1e-15)
    with pytest.raises(ValueError, match="λ < B"):
        secure.snapping_scale(1.0, bound=0.5)
    with pytest.raises(ValueError, match="λ < B"):
        secure.snapping_scale(1.0, bound=2.0**47)
    with pytest.raises(ValueError, match="finite epsilon"):
        secure.snapping_scale(math.inf, bound=10.0)


def test_release_mean_is_snapped_sum_with_accounted_scale():
    from fractions import Fraction

    count, epsilon = 8, 0.5
    bound = max(count, 2 / epsilon)
    scale = secure.snapping_scale(epsilon, bound, 1 + 2.0**-52 * bound)
    assert secure.snapping_epsilon(scale, bound, 1 + 2.0**-52 * bound) <= epsilon
    grid = secure.snapping_grid(scale)
    out = np.array([secure.release_mean(Fraction(5, 2), count, epsilon) for _ in range(4000)])
    sums = out * count
    assert np.all(sums / grid == np.round(sums / grid))
    assert np.all(np.abs(sums) <= bound)
    # Noise on the mean is Lap(λ/count) ≈ Lap(1/(ε count)) (Alg. 5, line 7), plus snapping.
    assert abs(np.median(out) - 2.5 / count) < 2 * grid / count


def test_randomised_response_frequency_and_limits():
    reward, epsilon = 0.3, 1.0
    p = 0.5 + (reward - 0.5) * math.tanh(epsilon / 2)  # = (r(e^ε−1)+1)/(e^ε+1)
    assert p == pytest.approx((reward * (math.e - 1) + 1) / (math.e + 1))
    bits = [secure.secure_randomised_response(reward, epsilon) for _ in range(N)]
    assert set(bits) <= {0, 1}
    # Binomial(N, p) mean: 5 standard deviations (two-sided rate ≈ 6e-7).
    assert abs(np.mean(bits) - p) < 5 * math.sqrt(p * (1 - p) / N)
    # At the largest ε a real mechanism takes (30), a flip has probability 1/(1 + e^30) ≈ 1e-13.
    assert all(secure.secure_randomised_response(1.0, 30.0) == 1 for _ in range(100))
    assert all(secure.secure_randomised_response(0.0, 30.0) == 0 for _ in range(100))
    with pytest.raises(ValueError, match="epsilon must be finite"):
        secure.secure_randomised_response(1.0, math.inf)


def test_gaussian_mechanism_distribution():
    reward, epsilon, gamma = 0.4, 2.0, 0.01
    sigma = secure.gaussian_sigma(epsilon, gamma)
    assert sigma == pytest.approx(math.sqrt(2 * math.log(1.25 / gamma)) / epsilon)
    n = N // 2
    out = np.array([secure.secure_gaussian_mechanism(reward, epsilon, gamma) for _ in range(n)])
    points = reward + sigma * np.linspace(-4, 4, 801)
    cdf = lambda x: stats.norm.cdf(x, loc=reward, scale=sigma)  # noqa: E731
    assert sup_distance(out, cdf, points) < math.sqrt(math.log(2 / ALPHA) / (2 * n))


def test_laplace_mechanism_distribution():
    """reward + Lap(1/ε): the DKW band around the Laplace(r, 1/ε) CDF, which excludes
    Laplace(r, 1.2/ε) (power: the same draws, the same band)."""
    reward, epsilon, stream = 0.3, 0.5, uniform_stream(4)
    out = np.array([secure.secure_laplace_mechanism(reward, epsilon, stream) for _ in range(N)])
    points = reward + np.linspace(-8, 8, 1601) / epsilon
    assert sup_distance(out, lambda x: laplace_cdf(x - reward, 1 / epsilon), points) < DKW
    assert sup_distance(out, lambda x: laplace_cdf(x - reward, 1.2 / epsilon), points) > DKW
    with pytest.raises(ValueError, match="epsilon must be finite"):
        secure.secure_laplace_mechanism(reward, math.inf)


@pytest.mark.parametrize(
    "mechanism", [RandomisedResponse(), GaussianNoise(0.01), LaplaceNoise()], ids=lambda m: m.name
)
def test_privatize_locally_validates_and_runs_the_mechanism(mechanism):
    """The mechanism's own secure sampler on a checked reward: the same draws as calling it
    directly, one of its outputs where it has a finite set."""
    z = secure.privatize_locally(mechanism, 0.7, 1.0, uniform=uniform_stream(5))
    assert z == mechanism.secure_privatize(0.7, 1.0, uniform_stream(5))
    assert isinstance(z, float) and (mechanism.outputs is None or z in mechanism.outputs)
    for bad in (math.nan, math.inf, -math.inf, 1.5, -0.1, "0.5", None):
        with pytest.raises(ValueError):
            secure.privatize_locally(mechanism, bad, 1.0)
    for bad in (math.inf, 0.0, 31.0, "1"):
        with pytest.raises(ValueError, match="epsilon must be"):
            secure.privatize_locally(mechanism, 0.5, bad)
    clipped = secure.privatize_locally(mechanism, 7.0, 1.0, clip=True, uniform=uniform_stream(3))
    at_one = secure.privatize_locally(mechanism, 1.0, 1.0, uniform=uniform_stream(3))
    assert clipped == at_one
    with pytest.raises(ValueError):
        secure.privatize_locally(mechanism, math.nan, 1.0, clip=True)


def test_privatize_locally_refuses_what_is_not_a_mechanism():
    """The mechanism of an algorithm that is not local-DP is None."""
    for bad in (None, "randomised response", 0.01):
        with pytest.raises(ValueError, match="participant-side mechanism"):
            secure.privatize_locally(bad, 0.5, 1.0)
    assert RandomisedResponse().secure_privatize(1.0, 30.0, uniform_stream(0)) == 1.0
