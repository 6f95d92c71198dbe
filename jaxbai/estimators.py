"""Mean estimators of the Top Two driver.

MLE (Alg. 2), CTB (Alg. 4), Gaussian mechanism (Alg. 8), DAF (Alg. 5), DPA (Alg. 11) and
DP-TT's cumulative Laplace estimator (Jourdan & Azize 2025). Each satisfies
`jaxbai.base.Estimator`; DAF, DPA and `CumulativeLaplace` are also
`jaxbai.base.EpisodicEstimator`s, DAF and `CumulativeLaplace` `jaxbai.base.ReleasingEstimator`s.

An estimator owns the privacy of an algorithm and its own state, which the driver nests as
``state.estimate``: `MeanEstimate` for the MLE family, `EpisodeEstimate` (with the episode
bookkeeping) for DAF and DPA. A local-DP estimator holds its user-side mechanism, a
`jaxbai.base.Mechanism` (``participant_mechanism``), which the driver applies to a raw reward
before the algorithm sees it; `observe` folds an (already privatised) observation into the
estimate, given the global counts after the pull. Arms are addressed by a one-hot mask
``pulled`` (see `jaxbai.arrays`). Both are driven by a uniform u ∈ (0, 1) rather than a key,
so one hash feeds a whole simulation step; `observe` also receives the step's key, for the rare
update that needs more than one uniform (one global episode ending for every arm at once).
Global-DP estimators (DAF, `CumulativeLaplace`) add their noise inside `observe`, when an arm's
phase ends; the noisy value may instead be supplied by the caller through ``release`` (a real
trial releases with exact discrete Laplace noise from the operating system's CSPRNG).

Running sums use Kahan compensation, so float32 means stay accurate at 10⁹ samples.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxbai import mechanisms
from jaxbai.arrays import compensated, every, kahan_add, uniform_from_bits
from jaxbai.base import Key, Mask, Mechanism, PerArm, Release, Scalar

__all__ = [
    "CTB",
    "DAF",
    "DPA",
    "EPISODE_MODES",
    "MLE",
    "CumulativeEstimate",
    "CumulativeLaplace",
    "EpisodeEstimate",
    "GaussianMechanism",
    "MeanEstimate",
    "check_episodes",
]


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


def _zeros(num_arms: int) -> tuple[PerArm, PerArm]:
    return jnp.zeros(num_arms, jnp.float32), jnp.zeros(num_arms, jnp.int32)


@dataclasses.dataclass(frozen=True)
class MLE:
    """Empirical means of all observations (Alg. 2); no privacy.

    Satisfies `jaxbai.base.Estimator`; see there for the attributes.
    """

    privacy: str = "none"
    participant_mechanism: Mechanism | None = None
    unit_observations: bool = False

    def init(self, num_arms: int) -> MeanEstimate:
        """No observation yet."""
        zeros_f, zeros_i = _zeros(num_arms)
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


EPISODE_MODES = ("per_arm", "global")
"""One episode per arm (Alg. 5, Alg. 11) or one global episode (Appendix H)."""


def check_episodes(episodes: str) -> str:
    """``episodes`` if it is one of `EPISODE_MODES`, else ValueError."""
    if episodes not in EPISODE_MODES:
        raise ValueError(f"episodes must be one of {EPISODE_MODES}, got {episodes!r}")
    return episodes


@dataclasses.dataclass(frozen=True)
class _Episodic:
    """Episode bookkeeping shared by DAF and DPA (docs/semantics.md §11, §17–20)."""

    episodes: str = "per_arm"

    def init(self, num_arms: int) -> EpisodeEstimate:
        """No observation yet: every arm before its phase 0."""
        zeros_f, zeros_i = _zeros(num_arms)
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
class DAF(_Episodic):
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
class DPA(_Episodic):
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


class CumulativeEstimate(NamedTuple):
    """State of `CumulativeLaplace` (DP-TT's estimator): `EpisodeEstimate`'s fields and the
    noisy cumulative sum.

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
class CumulativeLaplace(_Episodic):
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

    def __post_init__(self) -> None:
        if self.episodes != "per_arm":
            raise ValueError(f"CumulativeLaplace has per-arm phases only, got {self.episodes!r}")
        if not (isinstance(self.eta, (int, float)) and 0 < self.eta < float("inf")):
            raise ValueError(f"eta must be a positive finite number, got {self.eta!r}")

    def init(self, num_arms: int) -> CumulativeEstimate:
        """No observation yet: every arm before its phase 0."""
        zeros_f, zeros_i = _zeros(num_arms)
        return CumulativeEstimate(*(zeros_f, zeros_f, zeros_f), *(zeros_i,) * 3, zeros_f, zeros_f)

    def ended(self, estimate: CumulativeEstimate, counts: PerArm) -> Mask:
        """The arms with N_a > N_a(start) and N_a ≥ (1 + η) Ñ_a (the first pull ends phase 0)."""
        grown = counts > estimate.phase_start
        ratio = jnp.float32(1.0 + self.eta)
        grid = counts.astype(jnp.float32) >= ratio * estimate.phase_start.astype(jnp.float32)
        return grown & grid

    def _before_noise(self, estimate, sums, error) -> PerArm:
        """S̃_a plus the rewards since the last phase change, before this phase's noise."""
        return compensated(estimate.noisy_sums, estimate.noisy_sums_error) + compensated(
            sums, error
        )

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
            noise = mechanisms.laplace_from_uniform(u, 1.0 / params.epsilon)
            increment = compensated(sums, error) + noise
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
