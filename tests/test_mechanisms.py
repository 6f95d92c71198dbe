"""Privacy mechanisms of `jaxbai.mechanisms`: randomised response (Alg. 4, Lemma 12), the
(ε, γ) Gaussian mechanism (Alg. 8) and Laplace noise (Alg. 5, Appendix B).

Closed forms are recomputed in float64 from the paper's formulas. Statistical checks use fixed
seeds and a tolerance of Z_TOL = 5 standard errors of the estimator (two-sided false-alarm rate
about 6e-7 per check under the null, so a failure means a wrong distribution, not bad luck);
goodness of fit uses scipy.stats.kstest with the p-value threshold 1e-3.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from jaxbai import mechanisms

Z_TOL = 5.0
NUM_DRAWS = 200_000
RR_ATOL = 1e-7
"""Absolute tolerance of randomised-response probabilities: float32 rounding unit at 1/2."""


def rr_probability_ref(r: float, eps: float) -> float:
    """(r(e^ε − 1) + 1)/(e^ε + 1) as printed in Alg. 4, line 2 (float64)."""
    return (r * math.expm1(eps) + 1) / (math.exp(eps) + 1)


@pytest.mark.parametrize("epsilon", [0.01, 0.1, 0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("reward", [0.0, 0.3, 0.5, 1.0])
def test_randomised_response_probability_closed_form(reward, epsilon):
    """P(r̃ = 1 | r) equals (r(e^ε − 1) + 1)/(e^ε + 1) at moderate ε.

    Tolerance: relative 1e-6 or absolute RR_ATOL, since the float32 computation is centred on
    1/2 (its rounding unit there is 6e-8), e.g. 1/(e^10 + 1) = 4.5398e-5 comes out as 4.5419e-5.
    """
    got = float(mechanisms.randomised_response_probability(reward, epsilon))
    assert got == pytest.approx(rr_probability_ref(reward, epsilon), rel=1e-6, abs=RR_ATOL)


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1.0, 5.0])
def test_randomised_response_mean_matches_lemma12(epsilon):
    """μ_ε = (2μ − 1)(e^ε − 1)/(2(e^ε + 1)) + 1/2 (Lemma 12), elementwise over a mean vector.

    Hand check at ε = 1, μ = 0.9: (0.8)(1.7182818)/(2 · 3.7182818) + 0.5 = 0.6848469.
    """
    means = np.array([0.0, 0.25, 0.5, 0.9, 1.0])
    expected = (2 * means - 1) * math.expm1(epsilon) / (2 * (math.exp(epsilon) + 1)) + 0.5
    got = mechanisms.randomised_response_mean(means, epsilon)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=RR_ATOL)
    if epsilon == 1.0:
        assert float(got[3]) == pytest.approx(0.6848469, rel=1e-6)


@pytest.mark.parametrize("epsilon", [1000.0, math.inf])
def test_randomised_response_exact_without_privacy(epsilon):
    """At ε = 1000 and ε = ∞ (e^ε overflows), r ∈ {0, 1} maps to itself exactly: the
    probability is exactly r, no NaN, and every draw returns r; μ_ε = μ exactly."""
    rewards = jnp.array([0.0, 1.0, 0.3])
    p = mechanisms.randomised_response_probability(rewards, epsilon)
    assert not bool(jnp.any(jnp.isnan(p)))
    np.testing.assert_array_equal(np.asarray(p), np.asarray(rewards))
    bits = jnp.tile(jnp.array([0.0, 1.0]), 5000)
    out = mechanisms.randomised_response(jax.random.key(0), bits, epsilon)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(bits))
    means = jnp.array([0.0, 0.25, 1.0])
    np.testing.assert_array_equal(
        np.asarray(mechanisms.randomised_response_mean(means, epsilon)), np.asarray(means)
    )


@pytest.mark.parametrize(("mu", "epsilon"), [(0.9, 0.5), (0.2, 2.0), (0.75, 0.1)])
def test_randomised_response_empirical_mean(mu, epsilon):
    """Bernoulli(μ) rewards through randomised response are Bernoulli(μ_ε) (Lemma 12).

    200 000 draws (seed 1); the empirical frequency must be within Z_TOL binomial standard
    errors √(μ_ε(1 − μ_ε)/n) of μ_ε (≈ 5.6e-3 at μ_ε = 1/2). The null alternative "no
    privatisation" (frequency μ) is excluded by this tolerance for all three cases.
    """
    key_reward, key_rr = jax.random.split(jax.random.key(1))
    rewards = jax.random.bernoulli(key_reward, mu, (NUM_DRAWS,)).astype(jnp.float32)
    z = mechanisms.randomised_response(key_rr, rewards, epsilon)
    assert set(np.unique(np.asarray(z)).tolist()) <= {0.0, 1.0}
    mu_eps = (2 * mu - 1) * math.expm1(epsilon) / (2 * (math.exp(epsilon) + 1)) + 0.5
    se = math.sqrt(mu_eps * (1 - mu_eps) / NUM_DRAWS)
    assert abs(mu - mu_eps) > Z_TOL * se  # the test can tell μ_ε from μ
    assert abs(float(jnp.mean(z)) - mu_eps) <= Z_TOL * se


@pytest.mark.parametrize(("epsilon", "gamma"), [(1.0, 1e-3), (0.5, 0.01), (2.0, 0.5), (0.1, 1e-6)])
def test_gaussian_mechanism_sigma(epsilon, gamma):
    """σ_{ε,γ} = √(2 log(1.25/γ))/ε (Alg. 8, line 2). E.g. ε = 1, γ = 1e-3:
    √(2 · log 1250) = √(2 · 7.1308988) = 3.7764795."""
    expected = math.sqrt(2 * math.log(1.25 / gamma)) / epsilon
    got = float(mechanisms.gaussian_mechanism_sigma(epsilon, gamma))
    assert got == pytest.approx(expected, rel=1e-6)
    if (epsilon, gamma) == (1.0, 1e-3):
        assert got == pytest.approx(3.7764795, rel=1e-6)


@pytest.mark.parametrize(("epsilon", "gamma"), [(5.0, 0.1), (1.0, 1e-3)])
def test_gaussian_mechanism_distribution(epsilon, gamma):
    """r̃ = r + N(0, σ²_{ε,γ}) (Alg. 8, line 11; σ ≈ 0.45 and 3.78): mean within Z_TOL · σ/√n
    of r, variance within Z_TOL · σ²√(2/n) of σ² (the standard error of a normal sample
    variance), and a KS test against N(r, σ²) (p > 1e-3). Seed 2, n = 200 000."""
    reward, sigma = 0.3, math.sqrt(2 * math.log(1.25 / gamma)) / epsilon
    mechanism = mechanisms.GaussianNoise(gamma)
    z = np.asarray(
        mechanisms.sample(mechanism, jax.random.key(2), jnp.full(NUM_DRAWS, reward), epsilon),
        dtype=np.float64,
    )
    assert abs(z.mean() - reward) <= Z_TOL * sigma / math.sqrt(NUM_DRAWS)
    assert abs(z.var() - sigma**2) <= Z_TOL * sigma**2 * math.sqrt(2 / NUM_DRAWS)
    assert scipy.stats.kstest(z, scipy.stats.norm(loc=reward, scale=sigma).cdf).pvalue > 1e-3


@pytest.mark.parametrize("scale", [0.01, 1.0, 4.0])
def test_laplace_distribution(scale):
    """Lap(b) noise: mean 0 within Z_TOL · √2 b/√n; variance 2b² within Z_TOL standard
    errors of the sample variance, √((μ₄ − σ⁴)/n) = √(20/n) b² (Laplace: μ₄ = 24b⁴, σ⁴ = 4b⁴);
    KS goodness of fit against scipy.stats.laplace(scale=b) with p > 1e-3. Seed 3,
    n = 200 000."""
    y = np.asarray(
        mechanisms.laplace(jax.random.key(3), jnp.full(NUM_DRAWS, scale)), dtype=np.float64
    )
    assert abs(y.mean()) <= Z_TOL * math.sqrt(2) * scale / math.sqrt(NUM_DRAWS)
    assert abs(y.var() - 2 * scale**2) <= Z_TOL * math.sqrt(20 / NUM_DRAWS) * scale**2
    assert scipy.stats.kstest(y, scipy.stats.laplace(scale=scale).cdf).pvalue > 1e-3


def test_laplace_rejects_wrong_scale_power():
    """Sanity check that the KS test has power here: the same Lap(1) sample is rejected against
    Lap(1.05) (p < 1e-6), so the goodness-of-fit assertions above are not vacuous."""
    y = np.asarray(mechanisms.laplace(jax.random.key(3), jnp.full(NUM_DRAWS, 1.0)))
    assert scipy.stats.kstest(y, scipy.stats.laplace(scale=1.05).cdf).pvalue < 1e-6


def test_laplace_scale_broadcasts_per_element():
    """A vector of scales gives per-element scales (DAF uses 1/(ε Ñ_a) per arm): the sample
    standard deviation of each column is √2 b within 5 %, n = 20 000 per column (the relative
    standard error of a Laplace sample sd is √(20/n)/4 ≈ 0.8 %, so 5 % is > 6 SE)."""
    scales = jnp.array([0.1, 1.0, 10.0])
    draws = mechanisms.laplace(jax.random.key(4), jnp.broadcast_to(scales, (20_000, 3)))
    np.testing.assert_allclose(draws.std(axis=0), math.sqrt(2) * np.asarray(scales), rtol=0.05)
