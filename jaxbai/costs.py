"""Transportation costs W (Eq. 3, Eq. 13, the Bernoulli-KL cost) and leader bonuses b (Eq. 3,
Eq. 11).

All functions are elementwise over arrays, so the driver evaluates them for one arm against
every other arm at once.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxbai.theory.divergences import kl_bernoulli

__all__ = [
    "ALPHA_CONCENTRATION",
    "S_CONCENTRATION",
    "doubling_index",
    "gaussian_bonus",
    "gaussian_cost",
    "kl_bernoulli_cost",
    "private_bonus",
    "private_cost",
]

S_CONCENTRATION = 1.2
"""Concentration parameter s of the TTUCB bonus (Section 2.2.3: s = α = 1.2)."""
ALPHA_CONCENTRATION = 1.2
"""Concentration parameter α of the TTUCB bonus (Section 2.2.3: s = α = 1.2)."""


def _inverse_weight(w_a: ArrayLike, w_b: ArrayLike) -> jax.Array:
    return 1.0 / jnp.asarray(w_a, jnp.float32) + 1.0 / jnp.asarray(w_b, jnp.float32)


def gaussian_cost(
    mu_a: ArrayLike, mu_b: ArrayLike, w_a: ArrayLike, w_b: ArrayLike, sigma2: ArrayLike
) -> jax.Array:
    """W^G_{a,b}(μ, ω) = (μ_a − μ_b)₊² / (2σ²(1/ω_a + 1/ω_b)) (Eq. 3).

    Examples:
        >>> round(float(gaussian_cost(0.9, 0.5, 10, 10, 0.25)), 6)  # 0.16 / (0.5 * 0.2)
        1.6
    """
    gap = jnp.maximum(jnp.asarray(mu_a) - jnp.asarray(mu_b), 0.0)
    return gap**2 / (2 * jnp.asarray(sigma2) * _inverse_weight(w_a, w_b))


def private_cost(
    mu_a: ArrayLike,
    mu_b: ArrayLike,
    w_a: ArrayLike,
    w_b: ArrayLike,
    sigma2: ArrayLike,
    epsilon: ArrayLike,
) -> jax.Array:
    """W^{G,ε}_{a,b}(μ, ω) = (μ_a − μ_b)₊ min{ε/2, (μ_a − μ_b)₊} / (2σ²(1/ω_a + 1/ω_b)) (Eq. 13).

    Examples:
        >>> round(float(private_cost(0.9, 0.5, 10, 10, 0.25, 0.2)), 6)  # 0.4 * 0.1 / 0.1
        0.4
    """
    gap = jnp.maximum(jnp.asarray(mu_a) - jnp.asarray(mu_b), 0.0)
    numerator = gap * jnp.minimum(jnp.asarray(epsilon) / 2, gap)
    return numerator / (2 * jnp.asarray(sigma2) * _inverse_weight(w_a, w_b))


def kl_bernoulli_cost(
    mu_a: ArrayLike, mu_b: ArrayLike, w_a: ArrayLike, w_b: ArrayLike
) -> jax.Array:
    """Bernoulli-KL transportation cost inf_x w_a kl(μ_a, x) + w_b kl(μ_b, x) for μ_a > μ_b
    (0 otherwise), attained at the weighted mean x̄ = (w_a μ_a + w_b μ_b)/(w_a + w_b); means
    in [0, 1]. EB-TCI's cost (Jourdan et al. 2022), the ε = ∞ case of C*_ε.

    Examples:
        >>> import math
        >>> kl = lambda p, q: p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))
        >>> exact = 10 * kl(0.9, 0.7) + 10 * kl(0.5, 0.7)  # x̄ = 0.7
        >>> abs(float(kl_bernoulli_cost(0.9, 0.5, 10, 10)) - exact) < 1e-5
        True
    """
    mu_a, mu_b = jnp.asarray(mu_a, jnp.float32), jnp.asarray(mu_b, jnp.float32)
    w_a, w_b = jnp.asarray(w_a, jnp.float32), jnp.asarray(w_b, jnp.float32)
    mean = jnp.clip((w_a * mu_a + w_b * mu_b) / jnp.maximum(w_a + w_b, 1e-30), mu_b, mu_a)
    cost = w_a * kl_bernoulli(mu_a, mean) + w_b * kl_bernoulli(mu_b, mean)
    return jnp.where(mu_a > mu_b, cost, 0.0)


def gaussian_bonus(counts: ArrayLike, total: ArrayLike, sigma2: ArrayLike) -> jax.Array:
    """b^G_a(ω) = √(2σ²α(1+s) log‖ω‖₁ / ω_a) with s = α = 1.2 (Eq. 3).

    ``total`` is ‖ω‖₁, the number of samples so far (docs/semantics.md §5).
    """
    factor = 2 * jnp.asarray(sigma2) * ALPHA_CONCENTRATION * (1 + S_CONCENTRATION)
    log_total = jnp.log(jnp.asarray(total, jnp.float32))
    return jnp.sqrt(factor * log_total / jnp.asarray(counts, jnp.float32))


def doubling_index(x: ArrayLike) -> jax.Array:
    """k(x) = log₂(x) + 2, the phase-index bound used in Eq. (11), (12) and (14)."""
    return jnp.log2(jnp.asarray(x, jnp.float32)) + 2


def private_bonus(local_counts: ArrayLike, k: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """b^{G,ε}_a = √(k/Ñ_a) + k/(ε Ñ_a) (Eq. 11), with k supplied by the caller.

    Eq. (11) prints k = k(Ñ_a); jaxbai's default evaluates k at the number of samples so far
    (see `jaxbai.adap_tt` for why).

    Examples:
        >>> float(private_bonus(4.0, 4.0, 1.0))  # √1 + 4/4
        2.0
    """
    local_counts = jnp.asarray(local_counts, jnp.float32)
    return jnp.sqrt(k / local_counts) + k / (jnp.asarray(epsilon) * local_counts)
