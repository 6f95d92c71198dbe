"""Arm distributions of `jaxbai.instances` and the paper's six instances (Appendix I).

Sampling checks use fixed seeds and compare empirical means (and variances) with the exact
moments of the distribution, within Z_TOL = 5 standard errors of the estimator: binomial
√(p(1 − p)/n) for Bernoulli rewards, σ/√n for Gaussian ones, √(ab/((a+b)²(a+b+1))/n) for
Beta(a, b); for per-arm sums of c rewards the standard error is √(c·Var/R) over R repetitions.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbai
from jaxbai import instances

Z_TOL = 5.0
NUM_DRAWS = 20_000
"""Draws per arm for `sample` checks (one shape per instance type, so jit compiles once)."""
BERNOULLI_REPEATS = 4000
"""Repetitions of Bernoulli `sample_sum` (shared so the jitted program is reused)."""

# Typed from Appendix I of the paper (Sajed & Sheffet 2019 instances), not from the library.
APPENDIX_I = {
    "mu1": (0.95, 0.9, 0.9, 0.9, 0.5),
    "mu2": (0.75, 0.7, 0.7, 0.7, 0.7),
    "mu3": (0.0, 0.25, 0.5, 0.75, 1.0),
    "mu4": (0.75, 0.625, 0.5, 0.375, 0.25),
    "mu5": (0.75, 0.53125, 0.375, 0.28125, 0.25),
    "mu6": (0.75, 0.71875, 0.625, 0.46875, 0.25),
}


@jax.jit
def _per_arm_samples(inst, keys):
    """rewards[i, a] = inst.sample(keys[i, a], a), jitted and vmapped over keys and arms."""
    arms = jnp.arange(keys.shape[1])
    per_row = jax.vmap(lambda k, a: inst.sample(k, a))
    return jax.vmap(lambda row: per_row(row, arms))(keys)


def per_arm_samples(inst, n: int, seed: int) -> np.ndarray:
    """(n, K) rewards, one fresh key per draw, drawn under jit + vmap over the batch of keys
    (so every sampling test also checks that `sample` composes with both)."""
    num_arms = inst.means.shape[0]
    keys = jax.random.split(jax.random.key(seed), n * num_arms).reshape(n, num_arms)
    out = _per_arm_samples(inst, keys)
    assert out.shape == (n, num_arms)
    assert out.dtype == jnp.float32
    return np.asarray(out, dtype=np.float64)


@jax.jit
def _repeated_sums(inst, keys, counts):
    return jax.vmap(lambda k: inst.sample_sum(k, counts))(keys)


def repeated_sums(inst, counts, repeats: int, seed: int) -> np.ndarray:
    """(repeats, K) `sample_sum` outputs, one key per repetition, under jit + vmap over keys."""
    keys = jax.random.split(jax.random.key(seed), repeats)
    out = _repeated_sums(inst, keys, jnp.asarray(counts, jnp.float32))
    assert out.shape == (repeats, len(counts))
    assert out.dtype == jnp.float32
    return np.asarray(out, dtype=np.float64)


def test_paper_instances_match_appendix_i():
    """PAPER_INSTANCES are exactly the six Bernoulli instances printed in Appendix I."""
    assert instances.PAPER_INSTANCES == APPENDIX_I
    assert jaxbai.PAPER_INSTANCES is instances.PAPER_INSTANCES


@pytest.mark.parametrize("name", sorted(APPENDIX_I))
def test_paper_instances_are_valid_bernoulli_instances(name):
    """Each paper instance builds a 5-arm Bernoulli instance with those means (float32)."""
    inst = jaxbai.bernoulli(APPENDIX_I[name])
    np.testing.assert_array_equal(
        np.asarray(inst.means), np.asarray(APPENDIX_I[name], dtype=np.float32)
    )


def test_bernoulli_sample_means():
    """Bernoulli rewards are 0/1 with frequency μ_a within Z_TOL binomial standard errors
    (n = 20 000 per arm, seed 0; on μ1, whose arms 0.95/0.9/0.5 are 8+ SE apart)."""
    means = np.asarray(APPENDIX_I["mu1"])
    n = NUM_DRAWS
    rewards = per_arm_samples(jaxbai.bernoulli(means), n, seed=0)
    assert set(np.unique(rewards).tolist()) <= {0.0, 1.0}
    se = np.sqrt(means * (1 - means) / n)
    assert np.all(np.abs(rewards.mean(axis=0) - means) <= Z_TOL * se)


def test_mu3_endpoints_are_exact():
    """μ3 contains means 0 and 1: arm 0 always yields exactly 0 and arm 4 exactly 1, both for
    `sample` (20 000 draws) and `sample_sum` (Binomial(c, 0) = 0, Binomial(c, 1) = c)."""
    inst = jaxbai.bernoulli(APPENDIX_I["mu3"])
    rewards = per_arm_samples(inst, NUM_DRAWS, seed=1)
    assert np.all(rewards[:, 0] == 0.0)
    assert np.all(rewards[:, 4] == 1.0)
    counts = np.array([1000, 3, 0, 5, 12345])
    sums = repeated_sums(inst, counts, BERNOULLI_REPEATS, seed=2)
    assert np.all(sums[:, 0] == 0.0)
    assert np.all(sums[:, 4] == 12345.0)
    assert np.all(sums[:, 2] == 0.0)  # zero pulls


def test_bernoulli_sample_sum_is_binomial():
    """`sample_sum` for Bernoulli arms: integers in [0, c_a], mean c_a μ_a within Z_TOL ·
    √(c_a μ_a(1 − μ_a)/R), R = 4000 repetitions (seed 3), on μ4 with unequal counts."""
    means = np.asarray(APPENDIX_I["mu4"])
    counts = np.array([1000, 50, 0, 7, 3000])
    repeats = BERNOULLI_REPEATS
    sums = repeated_sums(jaxbai.bernoulli(means), counts, repeats, seed=3)
    assert np.all(sums == np.round(sums))
    assert np.all((sums >= 0) & (sums <= counts))
    se = np.sqrt(counts * means * (1 - means) / repeats)
    assert np.all(np.abs(sums.mean(axis=0) - counts * means) <= Z_TOL * se)
    # variance c μ(1 − μ) of a binomial, within 10 % (relative SE of a sample variance ≈ √(2/R)
    # = 2.2 %) on the arms with enough pulls
    np.testing.assert_allclose(
        sums.var(axis=0)[[0, 1, 4]], (counts * means * (1 - means))[[0, 1, 4]], rtol=0.1
    )


def test_gaussian_sample_moments():
    """N(μ_a, σ²) rewards: mean within Z_TOL σ/√n, variance within Z_TOL σ²√(2/n)
    (n = 20 000 per arm, seed 4)."""
    means, sigma, n = np.array([1.0, -0.5, 0.25]), 0.7, NUM_DRAWS
    rewards = per_arm_samples(jaxbai.gaussian(means, sigma=sigma), n, seed=4)
    assert np.all(np.abs(rewards.mean(axis=0) - means) <= Z_TOL * sigma / math.sqrt(n))
    assert np.all(np.abs(rewards.var(axis=0) - sigma**2) <= Z_TOL * sigma**2 * math.sqrt(2 / n))


def test_gaussian_sample_sum_moments():
    """Sum of c i.i.d. N(μ, σ²) is N(cμ, cσ²): mean within Z_TOL √(cσ²/R), variance within
    Z_TOL cσ²√(2/R) (R = 4000, seed 5); a zero count sums to exactly 0."""
    means, sigma, repeats = np.array([1.0, -0.5, 0.25]), 0.7, 4000
    counts = np.array([10, 400, 0])
    sums = repeated_sums(jaxbai.gaussian(means, sigma=sigma), counts, repeats, seed=5)
    var = counts * sigma**2
    assert np.all(np.abs(sums.mean(axis=0) - counts * means) <= Z_TOL * np.sqrt(var / repeats))
    assert np.all(np.abs(sums.var(axis=0) - var) <= Z_TOL * var * math.sqrt(2 / repeats))
    assert np.all(sums[:, 2] == 0.0)


BETA_A = np.array([2.0, 1.0, 0.5])
BETA_B = np.array([1.0, 1.0, 3.0])
BETA_MEAN = BETA_A / (BETA_A + BETA_B)
BETA_VAR = BETA_A * BETA_B / ((BETA_A + BETA_B) ** 2 * (BETA_A + BETA_B + 1))


def test_beta_means_property():
    """`means` is a/(a + b): 2/3, 1/2, 0.5/3.5 = 1/7."""
    inst = jaxbai.beta(BETA_A, BETA_B)
    np.testing.assert_allclose(np.asarray(inst.means), [2 / 3, 0.5, 1 / 7], rtol=1e-6)


def test_beta_sample_moments():
    """Beta(a, b) rewards lie in [0, 1] with mean a/(a + b) within Z_TOL √(Var/n),
    Var = ab/((a+b)²(a+b+1)) (n = 20 000 per arm, seed 6)."""
    n = NUM_DRAWS
    rewards = per_arm_samples(jaxbai.beta(BETA_A, BETA_B), n, seed=6)
    assert np.all((rewards >= 0) & (rewards <= 1))
    assert np.all(np.abs(rewards.mean(axis=0) - BETA_MEAN) <= Z_TOL * np.sqrt(BETA_VAR / n))


def test_beta_sample_sum_moments():
    """Beta sums across several 256-draw chunks (c = 300) and within one (c = 10): mean c·m
    within Z_TOL √(c Var/R), values in [0, c] (R = 200, seed 7); zero count gives 0."""
    counts = np.array([300, 10, 0])
    repeats = 200
    sums = repeated_sums(jaxbai.beta(BETA_A, BETA_B), counts, repeats, seed=7)
    assert np.all((sums >= 0) & (sums <= counts))
    se = np.sqrt(counts * BETA_VAR / repeats)
    assert np.all(np.abs(sums.mean(axis=0) - counts * BETA_MEAN) <= Z_TOL * se)
    assert np.all(sums[:, 2] == 0.0)


def test_different_keys_give_different_draws():
    """Under jit + vmap, each key of the batch drives its own draw (no key reuse): the sums of
    50 Bernoulli(1/2) rewards over 4000 keys take many distinct values."""
    sums = repeated_sums(
        jaxbai.bernoulli([0.5, 0.5, 0.5, 0.5, 0.5]), [50] * 5, BERNOULLI_REPEATS, 10
    )
    assert np.unique(sums[:, 0]).size > 10


def test_vmap_over_batch_of_instances():
    """Instances are pytrees: a stacked batch of Bernoulli instances vmaps, each member sampling
    from its own means (the μ = 0 / μ = 1 members are deterministic)."""
    batch = jax.tree_util.tree_map(
        lambda *xs: jnp.stack(xs),
        jaxbai.bernoulli([0.0, 1.0]),
        jaxbai.bernoulli([1.0, 0.0]),
    )
    keys = jax.random.split(jax.random.key(9), 2)
    first_arm = jax.jit(jax.vmap(lambda i, k: i.sample(k, 0)))(batch, keys)
    np.testing.assert_array_equal(np.asarray(first_arm), [0.0, 1.0])
