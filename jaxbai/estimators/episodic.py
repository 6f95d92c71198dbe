"""Episodic estimators: doubling and forgetting (DAF, Alg. 5) and DPA (Alg. 11)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from jaxbai import mechanisms
from jaxbai.arrays import compensated, every, kahan_add, uniform_from_bits
from jaxbai.base import PURE, Key, Mask, Mechanism, PerArm, PrivacyMeasure, Release, Scalar
from jaxbai.estimators.mle import zeros

__all__ = ["DAF", "DPA", "EPISODE_MODES", "EpisodeEstimate", "Episodic", "check_episodes"]


class EpisodeEstimate(NamedTuple):
    """State of an episodic estimator (DAF, DPA; docs/semantics.md §11, §17–20).

    Attributes:
        sums: running (Kahan) sum of the estimator's window: the current phase (DAF) or all
            observations (DPA).
        sums_error: Kahan compensation of ``sums``.
        means: μ̃_a, refreshed at episode ends (noisy for DAF).
        local_counts: Ñ_a, the samples behind μ̃_a.
        phase_start: N_a at the start of arm a's current episode (0 before its first pull).
        phases: k_a, the episodes arm a has completed.
    """

    sums: PerArm
    sums_error: PerArm
    means: PerArm
    local_counts: PerArm
    phase_start: PerArm
    phases: PerArm


EPISODE_MODES = ("per_arm", "global")
"""One episode per arm (Alg. 5, Alg. 11) or one global episode (Appendix H)."""


def check_episodes(episodes: str) -> str:
    """``episodes`` if it is one of `EPISODE_MODES`, else ValueError."""
    if episodes not in EPISODE_MODES:
        raise ValueError(f"episodes must be one of {EPISODE_MODES}, got {episodes!r}")
    return episodes


@dataclasses.dataclass(frozen=True)
class Episodic:
    """Episode bookkeeping shared by DAF, DPA and `jaxbai.estimators.CumulativeLaplace`
    (docs/semantics.md §11, §17–20, §34)."""

    episodes: str = "per_arm"

    def init(self, num_arms: int) -> EpisodeEstimate:
        """No observation yet: every arm before its phase 0."""
        zeros_f, zeros_i = zeros(num_arms)
        return EpisodeEstimate(zeros_f, zeros_f, zeros_f, zeros_i, zeros_i, zeros_i)

    def ended(self, estimate: EpisodeEstimate, counts: PerArm) -> Mask:
        """The arms whose episode has ended by ``counts`` and is not yet closed.

        Per arm: N_a > N_a(start) and N_a ≥ 2·N_a(start) (an arm's first pull closes phase 0).
        Global: phase 0 closes per arm; afterwards every arm at once, once N_a ≥ 2·N_a(start)
        holds for every arm (Appendix H). Right after the pull that ends an episode this is the
        set of arms it closes, and empty at any other time.
        """
        grown = counts > estimate.phase_start
        doubled = counts >= 2 * estimate.phase_start
        if self.episodes == "per_arm":
            return grown & doubled
        first = grown & (estimate.phase_start == 0)
        return first | (every(estimate.phase_start > 0) & every(doubled))

    def episode_pulls(self, estimate: EpisodeEstimate, counts: PerArm) -> PerArm:
        """Pulls of each arm since its current episode started."""
        return counts - estimate.phase_start

    def rounds(self, estimate: EpisodeEstimate) -> Scalar:
        """Rounds of adaptivity (Appendix H, docs/semantics.md §20): Σ_a k_a per arm; with one
        global episode, the completed global episodes plus one for the phase-0 closures."""
        if self.episodes == "per_arm":
            return jnp.sum(estimate.phases)
        return jnp.max(estimate.phases)

    def _closed(
        self, estimate: EpisodeEstimate, counts: PerArm, due: Mask, **fields: PerArm
    ) -> EpisodeEstimate:
        """The estimate with the ``due`` arms' episodes closed at ``counts`` and ``fields``."""
        return estimate._replace(
            phase_start=jnp.where(due, counts, estimate.phase_start),
            phases=estimate.phases + due,
            **fields,
        )


class _PhaseEnd(NamedTuple):
    sums: PerArm
    sums_error: PerArm
    due: Mask
    local_counts: PerArm
    means: PerArm


@dataclasses.dataclass(frozen=True)
class DAF(Episodic):
    """Doubling-And-Forgetting (Alg. 5): phases, last phase only, Laplace; ε-global DP.

    Phase k of arm a starts at count N_{T_k(a),a} (``phase_start``) and ends when
    N_a ≥ 2·N_{T_k(a),a}; then Ñ_a = N_a − N_{T_k(a),a} and μ̃_a = μ̂_a + Lap(1/(ε Ñ_a)), where μ̂_a
    averages only this phase's rewards (forgetting). With ``phase_start = 0`` before the first
    pull, the first pull closes "phase 0" and yields exactly the initialisation of Alg. 9:
    μ̃ = r + Lap(1/ε), Ñ = 1, k = 1, T_1 = K + 1 (docs/semantics.md §11). With
    ``episodes="global"`` all arms switch phase together (docs/semantics.md §18).
    """

    privacy: str = "global"
    participant_mechanism: Mechanism | None = None
    """None: the trusted curator sees raw rewards (global DP); its Laplace noise is accounted
    for by the private thresholds, not by σ²."""
    unit_observations: bool = True
    measure: ClassVar[PrivacyMeasure | None] = PURE
    release_noise: ClassVar[str] = "laplace"

    def _phase_end(
        self, estimate: EpisodeEstimate, counts: PerArm, pulled: Mask, z: Scalar
    ) -> _PhaseEnd:
        """Add z to the pulled arm's phase sum; which arms' phases end, with what Ñ and μ̂."""
        sums, error = kahan_add(estimate.sums, estimate.sums_error, pulled, z)
        return self._end(estimate, counts, self.ended(estimate, counts), sums, error)

    def _end(self, estimate, counts, due, sums, error) -> _PhaseEnd:
        local = self.episode_pulls(estimate, counts)
        means = compensated(sums, error) / jnp.maximum(local, 1)
        return _PhaseEnd(sums, error, due, local, means)

    def _noise(self, u: Scalar, key: Key, scale: PerArm) -> PerArm:
        """Lap(scale) per arm: from ``u`` (one arm ends its phase at a time) or, with one
        global episode, from K fresh uniforms of ``key``."""
        if self.episodes == "global":
            u = uniform_from_bits(jax.random.bits(jax.random.fold_in(key, 2), scale.shape))
        return mechanisms.laplace_from_uniform(u, scale)

    def pending_release(
        self, estimate: EpisodeEstimate, counts: PerArm, pulled: Mask, z: Scalar, params: Any
    ) -> Release:
        """Whether observing ``z`` ends phases, and the phase means it releases (``counts``
        before the pull)."""
        del params
        end = self._phase_end(estimate, counts + pulled, pulled, z)
        means = jnp.where(end.due, end.means, 0.0)
        return Release(jnp.any(end.due), means, jnp.where(end.due, end.local_counts, 0))

    def observe(
        self,
        u: Scalar,
        key: Key,
        estimate: EpisodeEstimate,
        counts: PerArm,
        pulled: Mask,
        z: Scalar,
        params: Any,
        release: PerArm | None = None,
    ) -> EpisodeEstimate:
        """Add z to the phase sum; at a phase switch release μ̃_a and forget (Alg. 5, lines 3–8)."""
        end = self._phase_end(estimate, counts, pulled, z)
        return self._close(u, key, estimate, counts, end, params, release)

    def observe_sums(
        self,
        u: Scalar,
        key: Key,
        estimate: EpisodeEstimate,
        counts: PerArm,
        due: Mask,
        sums: PerArm,
        params: Any,
    ) -> EpisodeEstimate:
        """End the ``due`` arms' phases given ``sums``, the sums of their rewards since their
        phases started (per-episode simulation, docs/semantics.md §25): the update `observe`
        makes at the phase's last reward, had it seen those rewards one by one."""
        total, error = kahan_add(estimate.sums, estimate.sums_error, due, sums)
        end = self._end(estimate, counts, due, total, error)
        return self._close(u, key, estimate, counts, end, params, None)

    def _close(self, u, key, estimate, counts, end: _PhaseEnd, params, release) -> EpisodeEstimate:
        """Release μ̃_a = μ̂_a + Lap(1/(ε Ñ_a)) for the arms whose phase ends, and forget."""
        if release is None:
            scale = 1.0 / (params.epsilon * jnp.maximum(end.local_counts, 1))
            noisy = end.means + self._noise(u, key, scale)
        else:
            noisy = jnp.asarray(release, jnp.float32)
        return self._closed(
            estimate,
            counts,
            end.due,
            sums=jnp.where(end.due, 0.0, end.sums),
            sums_error=jnp.where(end.due, 0.0, end.sums_error),
            means=jnp.where(end.due, noisy, estimate.means),
            local_counts=jnp.where(end.due, end.local_counts, estimate.local_counts),
        )


@dataclasses.dataclass(frozen=True)
class DPA(Episodic):
    """Doubling-Per-Arm (Alg. 11): means of all rewards, refreshed only at episode ends; no privacy.

    Arm a's episode ends after the update at which N_a ≥ 2·N_a(start of its episode) (its first
    pull closes phase 0); its mean becomes the mean of all its rewards so far and its local
    count Ñ_a becomes N_a, the count that mean is based on — Alg. 11 returns N_{n,a}, which
    would overstate the evidence behind a stale mean (deliberate deviation,
    docs/semantics.md §17). With ``episodes="global"`` all arms refresh together (§18).
    """

    privacy: str = "none"
    participant_mechanism: Mechanism | None = None
    unit_observations: bool = False
    measure: ClassVar[PrivacyMeasure | None] = None

    def observe(
        self,
        u: Scalar,
        key: Key,
        estimate: EpisodeEstimate,
        counts: PerArm,
        pulled: Mask,
        z: Scalar,
        params: Any,
    ) -> EpisodeEstimate:
        """Add z to the arm's running sum; at an episode end refresh μ̃_a and Ñ_a = N_a."""
        del u, key, params
        sums, error = kahan_add(estimate.sums, estimate.sums_error, pulled, z)
        return self._refresh(estimate, counts, sums, error, self.ended(estimate, counts))

    def observe_sums(
        self,
        u: Scalar,
        key: Key,
        estimate: EpisodeEstimate,
        counts: PerArm,
        due: Mask,
        sums: PerArm,
        params: Any,
    ) -> EpisodeEstimate:
        """End the ``due`` arms' episodes given ``sums``, the sums of their rewards since their
        episodes started (per-episode simulation, docs/semantics.md §25)."""
        del u, key, params
        total, error = kahan_add(estimate.sums, estimate.sums_error, due, sums)
        return self._refresh(estimate, counts, total, error, due)

    def _refresh(self, estimate, counts, sums, error, due) -> EpisodeEstimate:
        """The running sums; μ̃_a = mean of all rewards and Ñ_a = N_a for the ``due`` arms."""
        means = compensated(sums, error) / jnp.maximum(counts, 1)
        return self._closed(
            estimate,
            counts,
            due,
            sums=sums,
            sums_error=error,
            means=jnp.where(due, means, estimate.means),
            local_counts=jnp.where(due, counts, estimate.local_counts),
        )
