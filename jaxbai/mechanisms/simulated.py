"""The simulation samplers of the privacy mechanisms (`jaxbai.mechanisms`): JAX functions of
uniforms from JAX's PRNG, and the participant-side mechanism objects, whose `secure_privatize`
is the CSPRNG sampler of `jaxbai.mechanisms.secure`.

Examples:
    >>> mechanism = GaussianNoise(gamma=0.01)
    >>> z = sample(mechanism, jax.random.key(0), 0.5, 1.0)
    >>> round(float(mechanism.added_variance(jnp.float32(1.0))), 3)  # σ²_{ε,γ}
    9.657
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import ClassVar

import jax
import jax.numpy as jnp
import jax.scipy.special
from jax.typing import ArrayLike

from jaxbai import checks
from jaxbai.arrays import uniform_from_bits
from jaxbai.base import PURE, Mechanism, PrivacyMeasure, approximate_dp
from jaxbai.mechanisms import secure

__all__ = [
    "GaussianNoise",
    "LaplaceNoise",
    "RandomisedResponse",
    "gaussian_from_uniform",
    "gaussian_mechanism_sigma",
    "laplace",
    "laplace_from_uniform",
    "open_uniform",
    "randomised_response",
    "randomised_response_from_uniform",
    "randomised_response_mean",
    "randomised_response_probability",
    "sample",
]


def open_uniform(key: jax.Array, shape: tuple[int, ...] = ()) -> jax.Array:
    """Uniforms on the open interval (0, 1) from one `jax.random.bits` call.

    Open at both ends (see `jaxbai.arrays.uniform_from_bits`), so inverse-CDF transforms
    (Laplace, Gaussian) stay finite and a Bernoulli(p) draw ``u < p`` is exact for p = 0 and
    p = 1. The 23-bit grid truncates Gaussian noise at ≈ 5.3σ and Laplace noise at ≈ 16.6
    scales: irrelevant to simulation, and real trials use `jaxbai.mechanisms.secure` instead.
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
    """Convert-To-Bernoulli privatisation of a reward in [0, 1] (Alg. 4; ε-local DP, Lemma 12):
    `RandomisedResponse` driven by ``key``.

    Examples:
        >>> z = randomised_response(jax.random.key(0), 1.0, jnp.inf)
        >>> float(z)
        1.0
    """
    return sample(RandomisedResponse(), key, reward, epsilon)


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


def laplace_from_uniform(u: ArrayLike, scale: ArrayLike) -> jax.Array:
    """Lap(b) by inversion of u ∈ (0, 1): b·log(2u) if u < ½, else −b·log(2(1 − u))."""
    u = jnp.asarray(u, jnp.float32)
    return jnp.asarray(scale) * jnp.where(u < 0.5, jnp.log(2 * u), -jnp.log(2 * (1 - u)))


def laplace(key: jax.Array, scale: ArrayLike) -> jax.Array:
    """Lap(b) noise with density exp(−|y|/b)/(2b): mean 0, variance 2b² (Appendix B)."""
    scale = jnp.asarray(scale, jnp.float32)
    return laplace_from_uniform(open_uniform(key, scale.shape), scale)


def sample(
    mechanism: Mechanism, key: jax.Array, reward: ArrayLike, epsilon: ArrayLike
) -> jax.Array:
    """``mechanism.privatize`` driven by ``key``: one `open_uniform` per entry of ``reward``."""
    return mechanism.privatize(open_uniform(key, jnp.shape(reward)), reward, epsilon)


# ------------------------------------------------------------------- participant-side mechanisms


@dataclasses.dataclass(frozen=True)
class RandomisedResponse:
    """CTB's randomised response (Alg. 4, line 2): one bit, ε-local DP for r ∈ [0, 1] (Lemma 12).

    r̃ ~ Ber((r(e^ε − 1) + 1)/(e^ε + 1)), with mean μ_ε (Lemma 12). Satisfies
    `jaxbai.base.Mechanism`.
    """

    name: ClassVar[str] = "randomised response"
    outputs: ClassVar[tuple[float, ...] | None] = (0.0, 1.0)
    measure: ClassVar[PrivacyMeasure] = PURE

    def added_variance(self, epsilon: jax.Array) -> jax.Array:
        """0: bits are ½-sub-Gaussian, so CTB-TT's σ = 1/2 covers them (Alg. 7)."""
        return jnp.zeros_like(epsilon)

    def privatize(self, u: ArrayLike, reward: ArrayLike, epsilon: ArrayLike) -> jax.Array:
        """r̃ = 1{u < P(r̃ = 1 | r)} (`randomised_response_from_uniform`)."""
        return randomised_response_from_uniform(u, reward, epsilon)

    def secure_privatize(
        self, reward: float, epsilon: float, uniform: Callable[[], float]
    ) -> float:
        """`jaxbai.mechanisms.secure.secure_randomised_response`, as 0.0 or 1.0."""
        return float(secure.secure_randomised_response(reward, epsilon, uniform))


@dataclasses.dataclass(frozen=True)
class GaussianNoise:
    """The (ε, γ) Gaussian mechanism (Alg. 8): r̃ = r + N(0, σ²_{ε,γ}), (ε, γ)-local DP for
    r ∈ [0, 1], with σ_{ε,γ} = √(2 log(1.25/γ))/ε added to the σ² of the thresholds
    (Remark 13). Satisfies `jaxbai.base.Mechanism`.

    Attributes:
        gamma: γ ∈ (0, 1) of the guarantee (a static option: ε is the numeric parameter).

    Raises:
        ValueError: γ is not a real number in (0, 1).
    """

    name: ClassVar[str] = "Gaussian mechanism"
    outputs: ClassVar[tuple[float, ...] | None] = None
    gamma: float = 1e-3

    def __post_init__(self) -> None:
        object.__setattr__(self, "gamma", checks.check_mechanism_gamma(self.gamma))

    @property
    def measure(self) -> PrivacyMeasure:
        """(ε, γ)-DP (Remark 13)."""
        return approximate_dp(self.gamma)

    def added_variance(self, epsilon: jax.Array) -> jax.Array:
        """σ²_{ε,γ}, added to the reward's σ² (Remark 13)."""
        return gaussian_mechanism_sigma(epsilon, self.gamma) ** 2

    def privatize(self, u: ArrayLike, reward: ArrayLike, epsilon: ArrayLike) -> jax.Array:
        """r̃ = r + σ_{ε,γ} Φ⁻¹(u) (Alg. 8, line 11)."""
        return reward + gaussian_mechanism_sigma(epsilon, self.gamma) * gaussian_from_uniform(u)

    def secure_privatize(
        self, reward: float, epsilon: float, uniform: Callable[[], float]
    ) -> float:
        """`jaxbai.mechanisms.secure.secure_gaussian_mechanism` with this γ."""
        return secure.secure_gaussian_mechanism(reward, epsilon, self.gamma, uniform)


@dataclasses.dataclass(frozen=True)
class LaplaceNoise:
    """The Laplace mechanism on one reward: r̃ = r + Lap(1/ε), ε-local DP for r ∈ [0, 1]
    (sensitivity 1, Theorem 3). Satisfies `jaxbai.base.Mechanism`.

    Its noise is not sub-Gaussian: with σ² = 1/4 + 2/ε² (`added_variance`) the Gaussian
    thresholds are a heuristic for it, not a proven bound.
    """

    name: ClassVar[str] = "Laplace mechanism"
    outputs: ClassVar[tuple[float, ...] | None] = None
    measure: ClassVar[PrivacyMeasure] = PURE

    def added_variance(self, epsilon: jax.Array) -> jax.Array:
        """Var Lap(1/ε) = 2/ε² (Appendix B)."""
        return 2.0 / epsilon**2

    def privatize(self, u: ArrayLike, reward: ArrayLike, epsilon: ArrayLike) -> jax.Array:
        """r̃ = r + Lap(1/ε) by inversion of u (`laplace_from_uniform`)."""
        return reward + laplace_from_uniform(u, 1.0 / epsilon)

    def secure_privatize(
        self, reward: float, epsilon: float, uniform: Callable[[], float]
    ) -> float:
        """`jaxbai.mechanisms.secure.secure_laplace_mechanism`."""
        return secure.secure_laplace_mechanism(reward, epsilon, uniform)
