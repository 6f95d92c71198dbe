"""DP-TT's estimator: a geometric grid with cumulative Laplace increments (Jourdan & Azize 2025)."""

from __future__ import annotations

import dataclasses
import numbers
from typing import Any, ClassVar, NamedTuple

import jax.numpy as jnp

from jaxbai import mechanisms
from jaxbai.arrays import compensated, kahan_add
from jaxbai.base import PURE, Key, Mask, Mechanism, PerArm, PrivacyMeasure, Release, Scalar
from jaxbai.estimators.episodic import Episodic
from jaxbai.estimators.mle import zeros

__all__ = ["CumulativeEstimate", "CumulativeLaplace"]


class CumulativeEstimate(NamedTuple):
    """State of `CumulativeLaplace` (DP-TT's estimator): the fields of
    `jaxbai.estimators.EpisodeEstimate` and the noisy cumulative sum.

    Attributes:
        sums: running (Kahan) sum of the rewards since the arm's last phase change.
        sums_error: Kahan compensation of ``sums``.
        means: μ̃_a = S̃_a / Ñ_a.
        local_counts: Ñ_a, N_a at the arm's last phase change.
        phase_start: N_a at the start of arm a's current phase (= Ñ_a; 0 before its first pull).
        phases: k_a, the phases arm a has completed.
        noisy_sums: S̃_a, the sum of every noisy increment released so far (Kahan).
        noisy_sums_error: Kahan compensation of ``noisy_sums``.
    """

    sums: PerArm
    sums_error: PerArm
    means: PerArm
    local_counts: PerArm
    phase_start: PerArm
    phases: PerArm
    noisy_sums: PerArm
    noisy_sums_error: PerArm


@dataclasses.dataclass(frozen=True)
class CumulativeLaplace(Episodic):
    """Geometric grid with cumulative Laplace increments (DP-TT's estimator); ε-global DP.

    Jourdan & Azize (2025), arXiv 2510.17348. Arm a's phase ends when N_a ≥ (1 + η) Ñ_a, Ñ_a
    its count at the previous phase change; then S̃_a ← S̃_a + (the rewards since that change)
    + Lap(1/ε), Ñ_a ← N_a and μ̃_a = S̃_a / Ñ_a. Nothing is forgotten: S̃_a adds up every noisy
    increment, and each reward enters exactly one of them, so each release has sensitivity 1
    (rewards in [0, 1]) and the estimator is ε-DP (unlike re-noising the running mean of all
    rewards at each phase end). The first pull closes phase 0: S̃ = r + Lap(1/ε), Ñ = 1, k = 1.

    The grid is relative to Ñ_a, N_a ≥ (1 + η)·Ñ_a in float32 (a correctly rounded product):
    it is the specification's N_a ≥ (1 + η)^{k_a} whenever 1 + η is an integer (η = 1: phases
    end at N = 1, 2, 4, 8, …), and for any η it never ends a phase without a new reward
    (docs/semantics.md §34).

    Attributes:
        eta: the grid's ratio η > 0 (default 1: doubling).
    """

    eta: float = 1.0
    privacy: str = "global"
    participant_mechanism: Mechanism | None = None
    unit_observations: bool = True
    measure: ClassVar[PrivacyMeasure | None] = PURE
    release_noise: ClassVar[str] = "laplace"

    def __post_init__(self) -> None:
        if self.episodes != "per_arm":
            raise ValueError(f"CumulativeLaplace has per-arm phases only, got {self.episodes!r}")
        real = isinstance(self.eta, numbers.Real) and not isinstance(self.eta, bool)
        if not (real and 0 < self.eta < float("inf")):
            raise ValueError(f"eta must be a positive finite number, got {self.eta!r}")

    def init(self, num_arms: int) -> CumulativeEstimate:
        """No observation yet: every arm before its phase 0."""
        zeros_f, zeros_i = zeros(num_arms)
        return CumulativeEstimate(*(zeros_f, zeros_f, zeros_f), *(zeros_i,) * 3, zeros_f, zeros_f)

    def ended(self, estimate: CumulativeEstimate, counts: PerArm) -> Mask:
        """The arms with N_a > N_a(start) and N_a ≥ (1 + η) Ñ_a (the first pull ends phase 0)."""
        grown = counts > estimate.phase_start
        ratio = jnp.float32(1.0 + self.eta)
        grid = counts.astype(jnp.float32) >= ratio * estimate.phase_start.astype(jnp.float32)
        return grown & grid

    def increment_noise(self, u: Scalar, epsilon: Scalar) -> Scalar:
        """The noise of one increment (a sum of rewards in [0, 1], sensitivity 1) from a
        uniform ``u`` ∈ (0, 1): Lap(1/ε), ε-DP. A variant with other noise overrides this and
        states its `measure` and `release_noise` (docs/algorithms.md has a zCDP one)."""
        return mechanisms.laplace_from_uniform(u, 1.0 / epsilon)

    def pending_release(
        self, estimate: CumulativeEstimate, counts: PerArm, pulled: Mask, z: Scalar, params: Any
    ) -> Release:
        """Whether observing ``z`` ends a phase, and what it releases (``counts`` before the
        pull): the mean of the phase's rewards, from its count of them; Lap(1/(ε·count)) on that
        mean is Lap(1/ε) on the increment (`jaxbai.base.Release`). The released noisy mean,
        times the count, is the increment added to S̃."""
        del params
        counts = counts + pulled
        sums, error = kahan_add(estimate.sums, estimate.sums_error, pulled, z)
        due = self.ended(estimate, counts)
        window = self.episode_pulls(estimate, counts)
        means = compensated(sums, error) / jnp.maximum(window, 1)
        return Release(jnp.any(due), jnp.where(due, means, 0.0), jnp.where(due, window, 0))

    def observe(
        self,
        u: Scalar,
        key: Key,
        estimate: CumulativeEstimate,
        counts: PerArm,
        pulled: Mask,
        z: Scalar,
        params: Any,
        release: PerArm | None = None,
    ) -> CumulativeEstimate:
        """Add z to the phase sum; at a phase change add the noisy increment to S̃_a."""
        del key
        sums, error = kahan_add(estimate.sums, estimate.sums_error, pulled, z)
        due = self.ended(estimate, counts)
        return self._close(u, estimate, counts, due, sums, error, params, release)

    def observe_sums(
        self,
        u: Scalar,
        key: Key,
        estimate: CumulativeEstimate,
        counts: PerArm,
        due: Mask,
        sums: PerArm,
        params: Any,
    ) -> CumulativeEstimate:
        """Close the ``due`` arms' phases given the sums of their rewards since the phases
        started (per-episode simulation, docs/semantics.md §25)."""
        del key
        total, error = kahan_add(estimate.sums, estimate.sums_error, due, sums)
        return self._close(u, estimate, counts, due, total, error, params, None)

    def _close(self, u, estimate, counts, due, sums, error, params, release) -> CumulativeEstimate:
        """S̃_a ← S̃_a + (the phase's rewards + Lap(1/ε), or ``release`` times the phase's count:
        a released noisy mean of the phase), Ñ_a ← N_a, μ̃_a = S̃_a/Ñ_a for the ``due`` arms;
        their phase sums restart."""
        if release is None:
            increment = compensated(sums, error) + self.increment_noise(u, params.epsilon)
        else:
            window = self.episode_pulls(estimate, counts).astype(jnp.float32)
            increment = jnp.asarray(release, jnp.float32) * window
        noisy, noisy_error = kahan_add(
            estimate.noisy_sums, estimate.noisy_sums_error, due, increment
        )
        means = compensated(noisy, noisy_error) / jnp.maximum(counts, 1)
        return self._closed(
            estimate,
            counts,
            due,
            sums=jnp.where(due, 0.0, sums),
            sums_error=jnp.where(due, 0.0, error),
            means=jnp.where(due, means, estimate.means),
            local_counts=jnp.where(due, counts, estimate.local_counts),
            noisy_sums=noisy,
            noisy_sums_error=noisy_error,
        )
