"""Mean estimators of the Top Two driver.

MLE (Alg. 2), CTB (Alg. 4), Gaussian mechanism (Alg. 8), DAF (Alg. 5) and DPA (Alg. 11).
Each satisfies `jaxbai.base.Estimator`.

An estimator owns the privacy of an algorithm: `privatize` is the user-side (local) mechanism,
applied to a raw reward before the algorithm sees it; `observe` folds an (already privatised)
observation into the estimator fields of the driver's state, after the driver has incremented
the pulled arm's count. Arms are addressed by a one-hot mask ``pulled`` (see `jaxbai._arrays`).
Both are driven by a uniform u ∈ (0, 1) rather than a key, so one hash feeds a whole simulation
step; `observe` also receives the step's key, for the rare update that needs more than one
uniform (one global episode ending for every arm at once). Global-DP estimators (DAF) add their
noise inside `observe`, when an arm's phase ends;
the noisy value may instead be supplied by the caller through ``release`` (a real trial
releases with exact discrete Laplace noise from the operating system's CSPRNG).

Running sums use Kahan compensation, so float32 means stay accurate at 10⁹ samples.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxbai import mechanisms
from jaxbai._arrays import uniform_from_bits
from jaxbai.base import Release

__all__ = [
    "CTB",
    "DAF",
    "DPA",
    "EPISODE_MODES",
    "MLE",
    "GaussianMechanism",
    "check_episodes",
    "compensated",
    "kahan_add",
]


def kahan_add(
    total: jax.Array, error: jax.Array, mask: jax.Array, value: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Add ``value`` to the entries of ``total`` selected by ``mask``, with Kahan compensation.

    The compensated sum is ``total − error``.
    """
    y = value - error
    t = total + y
    new_error = (t - total) - y
    return jnp.where(mask, t, total), jnp.where(mask, new_error, error)


def compensated(total: jax.Array, error: jax.Array) -> jax.Array:
    """The compensated value of a Kahan sum."""
    return total - error


@dataclasses.dataclass(frozen=True)
class MLE:
    """Empirical means of all observations (Alg. 2); no privacy.

    Satisfies `jaxbai.base.Estimator`; see there for the attributes.
    """

    privacy: str = "none"
    unit_rewards: bool = False
    """Whether rewards passed to `privatize` must lie in [0, 1]."""
    unit_observations: bool = False
    """Whether observations passed to `observe` must lie in [0, 1]."""
    local_mechanism: str | None = None
    """The participant-side mechanism (local DP), else None."""
    takes_gamma: bool = False
    """Whether the mechanism uses γ of an (ε, γ)-DP guarantee."""
    episodic: bool = False
    """Whether the means change only at episode ends (Appendix H)."""

    def added_variance(self, epsilon: jax.Array, gamma: jax.Array) -> jax.Array:
        """No mechanism, no added variance."""
        del gamma
        return jnp.zeros_like(epsilon)

    def rounds(self, state: Any) -> jax.Array:
        """Fully sequential: −1 (no episodes)."""
        del state
        return jnp.int32(-1)

    def privatize(self, u: jax.Array, reward: jax.Array, params: Any) -> jax.Array:
        """Identity: the algorithm sees the raw reward."""
        del u, params
        return jnp.asarray(reward, jnp.float32)

    def observe(
        self,
        u: jax.Array,
        key: jax.Array,
        state: Any,
        pulled: jax.Array,
        z: jax.Array,
        params: Any,
        release: jax.Array | None,
    ) -> Any:
        """μ̂_a = N_a⁻¹ Σ_t z_t 1{a_t = a}, Ñ = N (Alg. 2 / Alg. 6 line 13)."""
        del u, key, params, release
        sums, error = kahan_add(state.sums, state.sums_error, pulled, z)
        means = jnp.where(pulled, compensated(sums, error) / state.counts, state.means)
        return state._replace(sums=sums, sums_error=error, means=means, local_counts=state.counts)

    def pending_release(self, state: Any, pulled: jax.Array, z: jax.Array, params: Any) -> Release:
        """The MLE publishes nothing."""
        del pulled, z, params
        zeros = jnp.zeros_like(state.means)
        return Release(jnp.bool_(False), zeros, jnp.zeros_like(state.counts))


@dataclasses.dataclass(frozen=True)
class CTB(MLE):
    """Convert-To-Bernoulli (Alg. 4): MLE of randomised-response bits; ε-local DP (Lemma 12)."""

    privacy: str = "local"
    unit_rewards: bool = True
    local_mechanism: str | None = "randomised_response"

    def privatize(self, u: jax.Array, reward: jax.Array, params: Any) -> jax.Array:
        """r̃ ~ Ber((r(e^ε − 1) + 1)/(e^ε + 1)), computed stably via tanh(ε/2)."""
        return mechanisms.randomized_response_from_uniform(u, reward, params.epsilon)


@dataclasses.dataclass(frozen=True)
class GaussianMechanism(MLE):
    """MLE of rewards perturbed by the (ε, γ) Gaussian mechanism (Alg. 8, Remark 13)."""

    privacy: str = "local"
    unit_rewards: bool = True
    local_mechanism: str | None = "gaussian"
    takes_gamma: bool = True

    def added_variance(self, epsilon: jax.Array, gamma: jax.Array) -> jax.Array:
        """σ²_{ε,γ} of the Gaussian mechanism, added to the reward's σ² (Remark 13)."""
        return mechanisms.gaussian_mechanism_sigma(epsilon, gamma) ** 2

    def privatize(self, u: jax.Array, reward: jax.Array, params: Any) -> jax.Array:
        """r̃ = r + N(0, σ²_{ε,γ})."""
        sigma = mechanisms.gaussian_mechanism_sigma(params.epsilon, params.gamma)
        return reward + sigma * mechanisms.gaussian_from_uniform(u)


EPISODE_MODES = ("per_arm", "global")
"""One episode per arm (Alg. 5, Alg. 11) or one global episode (Appendix H)."""


def check_episodes(episodes: str) -> str:
    """``episodes`` if it is one of `EPISODE_MODES`, else ValueError."""
    if episodes not in EPISODE_MODES:
        raise ValueError(f"episodes must be one of {EPISODE_MODES}, got {episodes!r}")
    return episodes


@dataclasses.dataclass(frozen=True)
class _Episodic:
    """Episode bookkeeping shared by DAF and DPA (docs/semantics.md §11, §17–20).

    ``phase_start`` holds N_a at the start of arm a's current episode (0 before its first
    pull), ``phases`` the number k_a of episodes arm a has completed.
    """

    episodes: str = "per_arm"
    episodic: bool = True

    def episode_due(self, state: Any, counts: jax.Array, pulled: jax.Array) -> jax.Array:
        """Which arms' episodes end with the pull of ``pulled``, given the counts after it.

        Per arm: N_a ≥ 2·N_a(start) for the pulled arm (its first pull closes phase 0).
        Global: phase 0 closes per arm; afterwards every arm at once, after the update at
        which N_a ≥ 2·N_a(start) holds for every arm (Appendix H).
        """
        doubled = counts >= 2 * state.phase_start
        if self.episodes == "per_arm":
            return pulled & doubled
        first = pulled & (state.phase_start == 0)
        return first | (jnp.all(state.phase_start > 0) & jnp.all(doubled))

    def pending(self, state: Any) -> jax.Array:
        """Arms whose episode has ended by the counts but whose rewards are not yet folded in.

        For the per-episode simulation (docs/semantics.md §25), which counts planned pulls
        without observing them: after the pull that ends an episode this is exactly the set
        `episode_due` returned for that pull; at any other time it is empty.
        """
        grown = state.counts > state.phase_start
        doubled = state.counts >= 2 * state.phase_start
        if self.episodes == "per_arm":
            return grown & doubled
        first = grown & (state.phase_start == 0)
        return first | (jnp.all(state.phase_start > 0) & jnp.all(doubled))

    def rounds(self, state: Any) -> jax.Array:
        """Rounds of adaptivity (Appendix H, docs/semantics.md §20): Σ_a k_a per arm; with one
        global episode, the completed global episodes plus one for the phase-0 closures."""
        if self.episodes == "per_arm":
            return jnp.sum(state.phases)
        return jnp.max(state.phases)


class _PhaseEnd(NamedTuple):
    sums: jax.Array
    sums_error: jax.Array
    due: jax.Array
    local_counts: jax.Array
    means: jax.Array


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
    unit_rewards: bool = False
    unit_observations: bool = True
    local_mechanism: str | None = None
    takes_gamma: bool = False

    privatize = MLE.privatize
    """Identity: the trusted curator sees raw rewards (global DP)."""
    added_variance = MLE.added_variance
    """The Laplace noise of DAF is accounted for by the private thresholds, not by σ²."""

    def _phase_end(
        self, state: Any, counts: jax.Array, pulled: jax.Array, z: jax.Array
    ) -> _PhaseEnd:
        """Add z to the pulled arm's phase sum; which arms' phases end, with what Ñ and μ̂."""
        sums, error = kahan_add(state.sums, state.sums_error, pulled, z)
        due = self.episode_due(state, counts, pulled)
        local = counts - state.phase_start
        means = compensated(sums, error) / jnp.maximum(local, 1)
        return _PhaseEnd(sums, error, due, local, means)

    def _noise(self, u: jax.Array, key: jax.Array, scale: jax.Array) -> jax.Array:
        """Lap(scale) per arm: from ``u`` (one arm ends its phase at a time) or, with one
        global episode, from K fresh uniforms of ``key``."""
        if self.episodes == "global":
            u = uniform_from_bits(jax.random.bits(jax.random.fold_in(key, 2), scale.shape))
        return mechanisms.laplace_from_uniform(u, scale)

    def pending_release(self, state: Any, pulled: jax.Array, z: jax.Array, params: Any) -> Release:
        """Whether observing ``z`` ends phases, and the phase means it releases.

        Call before `observe`, with ``state.counts`` not yet incremented.
        """
        del params
        end = self._phase_end(state, state.counts + pulled, pulled, z)
        means = jnp.where(end.due, end.means, 0.0)
        return Release(jnp.any(end.due), means, jnp.where(end.due, end.local_counts, 0))

    def observe(
        self,
        u: jax.Array,
        key: jax.Array,
        state: Any,
        pulled: jax.Array,
        z: jax.Array,
        params: Any,
        release: jax.Array | None,
    ) -> Any:
        """Add z to the phase sum; at a phase switch release μ̃_a and forget (Alg. 5, lines 3–8)."""
        end = self._phase_end(state, state.counts, pulled, z)
        return self._close(u, key, state, end, params, release)

    def observe_sums(
        self, u: jax.Array, key: jax.Array, state: Any, due: jax.Array, sums: jax.Array, params: Any
    ) -> Any:
        """End the ``due`` arms' phases given ``sums``, the sums of their rewards since their
        phases started (per-episode simulation, docs/semantics.md §25): the update `observe`
        makes at the phase's last reward, had it seen those rewards one by one."""
        total, error = kahan_add(state.sums, state.sums_error, due, sums)
        local = state.counts - state.phase_start
        means = compensated(total, error) / jnp.maximum(local, 1)
        return self._close(u, key, state, _PhaseEnd(total, error, due, local, means), params, None)

    def _close(
        self,
        u: jax.Array,
        key: jax.Array,
        state: Any,
        end: _PhaseEnd,
        params: Any,
        release: jax.Array | None,
    ) -> Any:
        """Release μ̃_a = μ̂_a + Lap(1/(ε Ñ_a)) for the arms whose phase ends, and forget."""
        if release is None:
            scale = 1.0 / (params.epsilon * jnp.maximum(end.local_counts, 1))
            noisy = end.means + self._noise(u, key, scale)
        else:
            noisy = jnp.asarray(release, jnp.float32)
        return state._replace(
            sums=jnp.where(end.due, 0.0, end.sums),
            sums_error=jnp.where(end.due, 0.0, end.sums_error),
            means=jnp.where(end.due, noisy, state.means),
            local_counts=jnp.where(end.due, end.local_counts, state.local_counts),
            phase_start=jnp.where(end.due, state.counts, state.phase_start),
            phases=state.phases + end.due,
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
    unit_rewards: bool = False
    unit_observations: bool = False
    local_mechanism: str | None = None
    takes_gamma: bool = False

    privatize = MLE.privatize
    added_variance = MLE.added_variance
    pending_release = MLE.pending_release

    def observe(
        self,
        u: jax.Array,
        key: jax.Array,
        state: Any,
        pulled: jax.Array,
        z: jax.Array,
        params: Any,
        release: jax.Array | None,
    ) -> Any:
        """Add z to the arm's running sum; at an episode end refresh μ̃_a and Ñ_a = N_a."""
        del u, key, params, release
        sums, error = kahan_add(state.sums, state.sums_error, pulled, z)
        return self._refresh(state, sums, error, self.episode_due(state, state.counts, pulled))

    def observe_sums(
        self, u: jax.Array, key: jax.Array, state: Any, due: jax.Array, sums: jax.Array, params: Any
    ) -> Any:
        """End the ``due`` arms' episodes given ``sums``, the sums of their rewards since their
        episodes started (per-episode simulation, docs/semantics.md §25)."""
        del u, key, params
        total, error = kahan_add(state.sums, state.sums_error, due, sums)
        return self._refresh(state, total, error, due)

    @staticmethod
    def _refresh(state: Any, sums: jax.Array, error: jax.Array, due: jax.Array) -> Any:
        """The running sums; μ̃_a = mean of all rewards and Ñ_a = N_a for the ``due`` arms."""
        means = compensated(sums, error) / jnp.maximum(state.counts, 1)
        return state._replace(
            sums=sums,
            sums_error=error,
            means=jnp.where(due, means, state.means),
            local_counts=jnp.where(due, state.counts, state.local_counts),
            phase_start=jnp.where(due, state.counts, state.phase_start),
            phases=state.phases + due,
        )
