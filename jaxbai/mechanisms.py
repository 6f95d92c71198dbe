"""Privacy mechanisms: randomised response (Lemma 12), Gaussian (Alg. 8), Laplace (Alg. 5).

These are the simulation samplers, driven by JAX keys. Real trials use the cryptographically
secure, snapped samplers of `jaxbai.trial` instead.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike


def randomized_response_probability(reward: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """P(r̃ = 1 | r) = (r(e^ε − 1) + 1)/(e^ε + 1) of CTB (Alg. 4, line 2).

    Written as 1/2 + (r − 1/2)·tanh(ε/2), which is the same number but stays finite for every
    ε > 0, including ε = 1000 and ε = ∞ (where it equals r exactly).
    """
    return 0.5 + (jnp.asarray(reward) - 0.5) * jnp.tanh(jnp.asarray(epsilon) / 2)


def randomized_response(key: jax.Array, reward: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """Convert-To-Bernoulli privatisation of a reward in [0, 1] (Alg. 4; ε-local DP, Lemma 12).

    Example:
        >>> z = randomized_response(jax.random.key(0), 1.0, jnp.inf)
        >>> float(z)
        1.0
    """
    p = randomized_response_probability(reward, epsilon)
    return (jax.random.uniform(key, jnp.shape(p)) < p).astype(jnp.float32)


def randomized_response_mean(means: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """Mean μ_ε = (2μ − 1)(e^ε − 1)/(2(e^ε + 1)) + 1/2 of the privatised rewards (Lemma 12)."""
    return (2 * jnp.asarray(means) - 1) * jnp.tanh(jnp.asarray(epsilon) / 2) / 2 + 0.5


def gaussian_mechanism_sigma(epsilon: ArrayLike, gamma: ArrayLike) -> jax.Array:
    """σ_{ε,γ} = √(2 log(1.25/γ))/ε of the (ε, γ) Gaussian mechanism (Alg. 8, Remark 13)."""
    return jnp.sqrt(2 * jnp.log(1.25 / jnp.asarray(gamma))) / jnp.asarray(epsilon)


def gaussian_mechanism(key: jax.Array, reward: ArrayLike, sigma: ArrayLike) -> jax.Array:
    """r̃ = r + N(0, σ²) with σ = σ_{ε,γ} (Alg. 8, line 11)."""
    reward = jnp.asarray(reward, jnp.float32)
    return reward + jnp.asarray(sigma) * jax.random.normal(key, reward.shape)


def laplace(key: jax.Array, scale: ArrayLike) -> jax.Array:
    """Lap(b) noise with density exp(−|y|/b)/(2b): mean 0, variance 2b² (Appendix B)."""
    scale = jnp.asarray(scale, jnp.float32)
    return scale * jax.random.laplace(key, scale.shape)
