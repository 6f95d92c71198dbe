"""Mean estimators of the Top Two driver.

MLE (Alg. 2), CTB (Alg. 4), Gaussian mechanism (Alg. 8) and DAF (Alg. 5).

An estimator owns the privacy of an algorithm: `privatize` is the user-side (local) mechanism,
applied to a raw reward before the algorithm sees it; `observe` folds an (already privatised)
observation into the estimator fields of the driver's state, after the driver has incremented
the pulled arm's count. Arms are addressed by a one-hot mask ``pulled`` (see `jaxbai._arrays`).
Both are driven by a uniform u ∈ (0, 1) rather than a key, so one hash feeds a whole simulation
step. Global-DP estimators (DAF) add their noise inside `observe`, when an arm's phase ends;
the noisy value may instead be supplied by the caller through ``release`` (a real trial uses a
cryptographically secure, snapped Laplace sampler).

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
        means: the non-private means that would be released, shape ``(K,)`` (0 elsewhere).
        counts: number of samples behind each released mean (0 where none), shape ``(K,)``;
            the Laplace scale for arm ``a`` is ``1/(epsilon * counts[a])``.
    """

    due: jax.Array
    means: jax.Array
    counts: jax.Array


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
    """Empirical means of all observations (Alg. 2); no privacy."""

    privacy: str = "none"
    unit_rewards: bool = False
    """Whether rewards passed to `privatize` must lie in [0, 1]."""
    unit_observations: bool = False
    """Whether observations passed to `observe` must lie in [0, 1]."""

    def privatize(self, u: jax.Array, reward: jax.Array, params: Any) -> jax.Array:
        """Identity: the algorithm sees the raw reward."""
        del u, params
        return jnp.asarray(reward, jnp.float32)

    def observe(
        self,
        u: jax.Array,
        state: Any,
        pulled: jax.Array,
        z: jax.Array,
        params: Any,
        release: jax.Array | None,
    ) -> Any:
        """μ̂_a = N_a⁻¹ Σ_t z_t 1{a_t = a}, Ñ = N (Alg. 2 / Alg. 6 line 13)."""
        del u, params, release
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

    def privatize(self, u: jax.Array, reward: jax.Array, params: Any) -> jax.Array:
        """r̃ ~ Ber((r(e^ε − 1) + 1)/(e^ε + 1)), computed stably via tanh(ε/2)."""
        return mechanisms.randomized_response_from_uniform(u, reward, params.epsilon)


@dataclasses.dataclass(frozen=True)
class GaussianMechanism(MLE):
    """MLE of rewards perturbed by the (ε, γ) Gaussian mechanism (Alg. 8, Remark 13)."""

    privacy: str = "local"
    unit_rewards: bool = True

    def privatize(self, u: jax.Array, reward: jax.Array, params: Any) -> jax.Array:
        """r̃ = r + N(0, σ²_{ε,γ})."""
        sigma = mechanisms.gaussian_mechanism_sigma(params.epsilon, params.gamma)
        return reward + sigma * mechanisms.gaussian_from_uniform(u)


class _PhaseEnd(NamedTuple):
    sums: jax.Array
    sums_error: jax.Array
    due: jax.Array
    local_counts: jax.Array
    means: jax.Array


def _phase_end(state: Any, counts: jax.Array, pulled: jax.Array, z: jax.Array) -> _PhaseEnd:
    """Add z to the pulled arm's phase sum; which arm's phase ends, with what Ñ and μ̂ (Alg. 5)."""
    sums, error = kahan_add(state.sums, state.sums_error, pulled, z)
    due = pulled & (counts >= 2 * state.phase_start)
    local = counts - state.phase_start
    means = compensated(sums, error) / jnp.maximum(local, 1)
    return _PhaseEnd(sums, error, due, local, means)


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

    privatize = MLE.privatize
    """Identity: the trusted curator sees raw rewards (global DP)."""

    def pending_release(self, state: Any, pulled: jax.Array, z: jax.Array, params: Any) -> Release:
        """Whether observing ``z`` ends the pulled arm's phase, and the phase mean it releases.

        Call before `observe`, with ``state.counts`` not yet incremented.
        """
        del params
        end = _phase_end(state, state.counts + pulled, pulled, z)
        means = jnp.where(end.due, end.means, 0.0)
        return Release(jnp.any(end.due), means, jnp.where(end.due, end.local_counts, 0))

    def observe(
        self,
        u: jax.Array,
        state: Any,
        pulled: jax.Array,
        z: jax.Array,
        params: Any,
        release: jax.Array | None,
    ) -> Any:
        """Add z to the phase sum; at a phase switch release μ̃_a and forget (Alg. 5, lines 3–8)."""
        end = _phase_end(state, state.counts, pulled, z)
        if release is None:
            scale = 1.0 / (params.epsilon * jnp.maximum(end.local_counts, 1))
            noisy = end.means + mechanisms.laplace_from_uniform(u, scale)
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
