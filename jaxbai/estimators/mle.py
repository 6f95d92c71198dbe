"""The MLE family: empirical means (Alg. 2), CTB (Alg. 4), the Gaussian mechanism (Alg. 8)."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax.numpy as jnp

from jaxbai import mechanisms
from jaxbai.arrays import compensated, kahan_add
from jaxbai.base import Key, Mask, Mechanism, PerArm, PrivacyMeasure, Scalar

__all__ = ["CTB", "MLE", "GaussianMechanism", "MeanEstimate", "zeros"]


class MeanEstimate(NamedTuple):
    """State of the MLE family: means of all observations.

    Attributes:
        sums: running (Kahan) sum of all observations, float32 ``(K,)``.
        sums_error: Kahan compensation of ``sums``.
        means: μ̂_a (0 before the arm's first observation).
        local_counts: Ñ_a = N_a.
    """

    sums: PerArm
    sums_error: PerArm
    means: PerArm
    local_counts: PerArm


def zeros(num_arms: int) -> tuple[PerArm, PerArm]:
    """float32 and int32 zeros of one per arm: the fields of an estimate before any observation."""
    return jnp.zeros(num_arms, jnp.float32), jnp.zeros(num_arms, jnp.int32)


@dataclasses.dataclass(frozen=True)
class MLE:
    """Empirical means of all observations (Alg. 2); no privacy.

    Satisfies `jaxbai.base.Estimator`; see there for the attributes.
    """

    privacy: str = "none"
    participant_mechanism: Mechanism | None = None
    unit_observations: bool = False

    @property
    def measure(self) -> PrivacyMeasure | None:
        """The participant mechanism's measure (local DP), else ``None`` (no privacy)."""
        mechanism = self.participant_mechanism
        return None if mechanism is None else mechanism.measure

    def init(self, num_arms: int) -> MeanEstimate:
        """No observation yet."""
        zeros_f, zeros_i = zeros(num_arms)
        return MeanEstimate(zeros_f, zeros_f, zeros_f, zeros_i)

    def observe(
        self,
        u: Scalar,
        key: Key,
        estimate: MeanEstimate,
        counts: PerArm,
        pulled: Mask,
        z: Scalar,
        params: Any,
    ) -> MeanEstimate:
        """μ̂_a = N_a⁻¹ Σ_t z_t 1{a_t = a}, Ñ = N (Alg. 2 / Alg. 6 line 13)."""
        del u, key, params
        sums, error = kahan_add(estimate.sums, estimate.sums_error, pulled, z)
        means = jnp.where(pulled, compensated(sums, error) / counts, estimate.means)
        return MeanEstimate(sums, error, means, counts)


@dataclasses.dataclass(frozen=True)
class CTB(MLE):
    """Convert-To-Bernoulli (Alg. 4): MLE of randomised-response bits
    (`jaxbai.mechanisms.RandomisedResponse`); ε-local DP (Lemma 12)."""

    privacy: str = "local"
    participant_mechanism: Mechanism | None = dataclasses.field(
        default_factory=mechanisms.RandomisedResponse
    )


@dataclasses.dataclass(frozen=True)
class GaussianMechanism(MLE):
    """MLE of rewards perturbed by the (ε, γ) Gaussian mechanism (Alg. 8, Remark 13), a
    `jaxbai.mechanisms.GaussianNoise` that holds γ."""

    privacy: str = "local"
    participant_mechanism: Mechanism | None = dataclasses.field(
        default_factory=mechanisms.GaussianNoise
    )
