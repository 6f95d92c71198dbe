"""Mean estimators of the Top Two driver.

MLE (Alg. 2), CTB (Alg. 4), Gaussian mechanism (Alg. 8) and DAF (Alg. 5).

An estimator owns the privacy of an algorithm: `privatize` is the user-side (local) mechanism,
applied to a raw reward before the algorithm sees it; `observe` folds an (already privatised)
observation of ``arm`` into the estimator fields of the driver's state, after the driver has
incremented ``counts[arm]``. Global-DP estimators (DAF) add their noise inside `observe`, when an
arm's phase ends; the noisy value may instead be supplied by the caller through ``release``
(a real trial uses a cryptographically secure, snapped Laplace sampler).

Running sums use Kahan compensation, so float32 means stay accurate at 10⁹ samples.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxbai import mechanisms


class Release(NamedTuple):
    """What an update would publish through the Laplace mechanism (global DP).

    Attributes:
        due: whether this update releases noisy means.
        means: the non-private means that would be released, shape ``(K,)``.
        counts: number of samples behind each released mean (0 where none), shape ``(K,)``;
            the Laplace scale for arm ``a`` is ``1/(epsilon * counts[a])``.
    """

    due: jax.Array
    means: jax.Array
    counts: jax.Array


def kahan_add(
    total: jax.Array, error: jax.Array, index: jax.Array, value: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Add ``value`` to ``total[index]`` with Kahan compensation ``error``.

    The compensated sum is ``total − error``.
    """
    y = value - error[index]
    t = total[index] + y
    new_error = (t - total[index]) - y
    return total.at[index].set(t), error.at[index].set(new_error)


def compensated(total: jax.Array, error: jax.Array) -> jax.Array:
    """The compensated value of a Kahan sum."""
    return total - error


def no_release(state: Any) -> Release:
    """The `Release` of an estimator that never publishes noisy means."""
    zeros = jnp.zeros_like(state.means)
    return Release(jnp.bool_(False), zeros, jnp.zeros_like(state.counts))


@dataclasses.dataclass(frozen=True)
class MLE:
    """Empirical means of all observations (Alg. 2); no privacy."""

    privacy: str = "none"
    unit_rewards: bool = False
    """Whether rewards passed to `privatize` must lie in [0, 1]."""
    unit_observations: bool = False
    """Whether observations passed to `observe` must lie in [0, 1]."""

    def privatize(self, key: jax.Array, reward: jax.Array, params: Any) -> jax.Array:
        """Identity: the algorithm sees the raw reward."""
        del key, params
        return jnp.asarray(reward, jnp.float32)

    def observe(
        self,
        key: jax.Array,
        state: Any,
        arm: jax.Array,
        z: jax.Array,
        params: Any,
        release: jax.Array | None,
    ) -> Any:
        """μ̂_a = N_a⁻¹ Σ_t z_t 1{a_t = a}, Ñ = N (Alg. 2 / Alg. 6 line 13)."""
        del key, params, release
        sums, error = kahan_add(state.sums, state.sums_error, arm, z)
        mean = compensated(sums[arm], error[arm]) / state.counts[arm]
        return state._replace(
            sums=sums,
            sums_error=error,
            means=state.means.at[arm].set(mean),
            local_counts=state.counts,
        )

    def pending_release(self, state: Any, arm: jax.Array, z: jax.Array, params: Any) -> Release:
        """The MLE publishes nothing."""
        del arm, z, params
        return no_release(state)


@dataclasses.dataclass(frozen=True)
class CTB(MLE):
    """Convert-To-Bernoulli (Alg. 4): MLE of randomised-response bits; ε-local DP (Lemma 12)."""

    privacy: str = "local"
    unit_rewards: bool = True

    def privatize(self, key: jax.Array, reward: jax.Array, params: Any) -> jax.Array:
        """r̃ ~ Ber((r(e^ε − 1) + 1)/(e^ε + 1)), computed stably via tanh(ε/2)."""
        return mechanisms.randomized_response(key, reward, params.epsilon)


@dataclasses.dataclass(frozen=True)
class GaussianMechanism(MLE):
    """MLE of rewards perturbed by the (ε, γ) Gaussian mechanism (Alg. 8, Remark 13)."""

    privacy: str = "local"
    unit_rewards: bool = True

    def privatize(self, key: jax.Array, reward: jax.Array, params: Any) -> jax.Array:
        """r̃ = r + N(0, σ²_{ε,γ})."""
        sigma = mechanisms.gaussian_mechanism_sigma(params.epsilon, params.gamma)
        return mechanisms.gaussian_mechanism(key, reward, sigma)


@dataclasses.dataclass(frozen=True)
class DAF:
    """Doubling-And-Forgetting (Alg. 5): per-arm phases, last phase only, Laplace; ε-global DP.

    Phase k of arm a starts at count N_{T_k(a),a} (``phase_start``) and ends when
    N_a ≥ 2·N_{T_k(a),a}; then Ñ_a = N_a − N_{T_k(a),a} and μ̃_a = μ̂_a + Lap(1/(ε Ñ_a)), where μ̂_a
    averages only this phase's rewards (forgetting). With ``phase_start = 0`` before the first
    pull, the first pull closes "phase 0" and yields exactly the initialisation of Alg. 9:
    μ̃ = r + Lap(1/ε), Ñ = 1, k = 1, T_1 = K + 1. ``phases`` counts k_a, so Σ_a k_a is the
    number of rounds of adaptivity (Appendix H).
    """

    privacy: str = "global"
    unit_rewards: bool = False
    unit_observations: bool = True

    def privatize(self, key: jax.Array, reward: jax.Array, params: Any) -> jax.Array:
        """Identity: the trusted curator sees raw rewards (global DP)."""
        del key, params
        return jnp.asarray(reward, jnp.float32)

    def pending_release(self, state: Any, arm: jax.Array, z: jax.Array, params: Any) -> Release:
        """Whether observing ``z`` for ``arm`` ends its phase, and the phase mean it would release.

        Call before `observe`, with ``state.counts`` not yet incremented.
        """
        del params
        count = state.counts[arm] + 1
        due = count >= 2 * state.phase_start[arm]
        local = count - state.phase_start[arm]
        phase_sum = compensated(state.sums[arm], state.sums_error[arm]) + z
        means = jnp.zeros_like(state.means).at[arm].set(phase_sum / local)
        counts = jnp.zeros_like(state.counts).at[arm].set(jnp.where(due, local, 0))
        return Release(due, jnp.where(due, means, 0.0), counts)

    def observe(
        self,
        key: jax.Array,
        state: Any,
        arm: jax.Array,
        z: jax.Array,
        params: Any,
        release: jax.Array | None,
    ) -> Any:
        """Add z to the phase sum; at a phase switch release μ̃_a and forget (Alg. 5, lines 3–8)."""
        sums, error = kahan_add(state.sums, state.sums_error, arm, z)
        count = state.counts[arm]
        due = count >= 2 * state.phase_start[arm]
        local = count - state.phase_start[arm]
        phase_mean = compensated(sums[arm], error[arm]) / local
        if release is None:
            noisy = phase_mean + mechanisms.laplace(key, 1.0 / (params.epsilon * local))
        else:
            noisy = jnp.asarray(release, jnp.float32)[arm]

        def on_switch(x: jax.Array, value: jax.Array) -> jax.Array:
            return jnp.where(due, x.at[arm].set(value), x)

        return state._replace(
            sums=on_switch(sums, 0.0),
            sums_error=on_switch(error, 0.0),
            means=on_switch(state.means, noisy),
            local_counts=on_switch(state.local_counts, local),
            phase_start=on_switch(state.phase_start, count),
            phases=on_switch(state.phases, state.phases[arm] + 1),
        )
