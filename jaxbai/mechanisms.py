"""Privacy mechanisms: randomised response (Lemma 12), Gaussian (Alg. 8), Laplace (Alg. 5).

Each mechanism comes in two forms: one driven by a uniform u ∈ (0, 1) (``*_from_uniform``),
which the simulation step uses so that one `jax.random.bits` call feeds a whole step, and a
key-driven convenience wrapper. These are the simulation samplers; real trials release with
the exact discrete Laplace of `jaxbai.trial.discrete_noise` and privatise participants' rewards
with the secure samplers of `jaxbai.trial.secure_noise` instead.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.special
from jax.typing import ArrayLike

from jaxbai._arrays import uniform_from_bits

__all__ = [
    "gaussian_from_uniform",
    "gaussian_mechanism",
    "gaussian_mechanism_sigma",
    "laplace",
    "laplace_from_uniform",
    "open_uniform",
    "randomised_response",
    "randomised_response_from_uniform",
    "randomised_response_mean",
    "randomised_response_probability",
]


def open_uniform(key: jax.Array, shape: tuple[int, ...] = ()) -> jax.Array:
    """Uniforms on the open interval (0, 1) from one `jax.random.bits` call.

    Open at both ends (see `jaxbai._arrays.uniform_from_bits`), so inverse-CDF transforms
    (Laplace, Gaussian) stay finite and a Bernoulli(p) draw ``u < p`` is exact for p = 0 and
    p = 1. The 23-bit grid truncates Gaussian noise at ≈ 5.3σ and Laplace noise at ≈ 16.6
    scales: irrelevant to simulation, and real trials use `jaxbai.secure_noise` instead.
    """
    return uniform_from_bits(jax.random.bits(key, shape, jnp.uint32))


def randomised_response_probability(reward: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """P(r̃ = 1 | r) = (r(e^ε − 1) + 1)/(e^ε + 1) of CTB (Alg. 4, line 2).

    Written as r·s(ε) + (1 − r)·s(−ε) with the logistic s(ε) = 1/(1 + e^{−ε}): the same number,
    finite for every ε > 0 including ε = 1000 and ε = ∞ (where it equals r exactly), and
    accurate in relative terms even when e^{−ε} is tiny (unlike 1/2 + (r − 1/2)·tanh(ε/2),
    which cancels).
    """
    reward, epsilon = jnp.asarray(reward), jnp.asarray(epsilon)
    return reward * jax.nn.sigmoid(epsilon) + (1 - reward) * jax.nn.sigmoid(-epsilon)


def randomised_response_from_uniform(
    u: ArrayLike, reward: ArrayLike, epsilon: ArrayLike
) -> jax.Array:
    """r̃ = 1{u < P(r̃ = 1 | r)}: randomised response driven by a uniform u ∈ (0, 1)."""
    return (jnp.asarray(u) < randomised_response_probability(reward, epsilon)).astype(jnp.float32)


def randomised_response(key: jax.Array, reward: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """Convert-To-Bernoulli privatisation of a reward in [0, 1] (Alg. 4; ε-local DP, Lemma 12).

    Example:
        >>> z = randomised_response(jax.random.key(0), 1.0, jnp.inf)
        >>> float(z)
        1.0
    """
    u = open_uniform(key, jnp.shape(jnp.asarray(reward)))
    return randomised_response_from_uniform(u, reward, epsilon)


def randomised_response_mean(means: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """Mean μ_ε = (2μ − 1)(e^ε − 1)/(2(e^ε + 1)) + 1/2 of the privatised rewards (Lemma 12).

    Equal to P(r̃ = 1 | r = μ) by linearity, and computed that way.
    """
    return randomised_response_probability(means, epsilon)


def gaussian_mechanism_sigma(epsilon: ArrayLike, gamma: ArrayLike) -> jax.Array:
    """σ_{ε,γ} = √(2 log(1.25/γ))/ε of the (ε, γ) Gaussian mechanism (Alg. 8, Remark 13)."""
    return jnp.sqrt(2 * jnp.log(1.25 / jnp.asarray(gamma))) / jnp.asarray(epsilon)


def gaussian_from_uniform(u: ArrayLike) -> jax.Array:
    """A standard normal by inversion, Φ⁻¹(u), of a uniform u ∈ (0, 1)."""
    return jax.scipy.special.ndtri(jnp.asarray(u, jnp.float32))


def gaussian_mechanism(key: jax.Array, reward: ArrayLike, sigma: ArrayLike) -> jax.Array:
    """r̃ = r + N(0, σ²) with σ = σ_{ε,γ} (Alg. 8, line 11)."""
    reward = jnp.asarray(reward, jnp.float32)
    return reward + jnp.asarray(sigma) * gaussian_from_uniform(open_uniform(key, reward.shape))


def laplace_from_uniform(u: ArrayLike, scale: ArrayLike) -> jax.Array:
    """Lap(b) by inversion of u ∈ (0, 1): b·log(2u) if u < ½, else −b·log(2(1 − u))."""
    u = jnp.asarray(u, jnp.float32)
    return jnp.asarray(scale) * jnp.where(u < 0.5, jnp.log(2 * u), -jnp.log(2 * (1 - u)))


def laplace(key: jax.Array, scale: ArrayLike) -> jax.Array:
    """Lap(b) noise with density exp(−|y|/b)/(2b): mean 0, variance 2b² (Appendix B)."""
    scale = jnp.asarray(scale, jnp.float32)
    return laplace_from_uniform(open_uniform(key, scale.shape), scale)
