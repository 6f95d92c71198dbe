"""DP-SE (Sajed & Sheffet 2019), made fixed-confidence by stopping when one arm is left.

Epochs e = 1, 2, …; Δ_e = 2^{−e}; with S the active set at the start of the epoch,

    R_e = ⌊max(32 log(8|S|e²/δ)/Δ_e², 8 log(4|S|e²/δ)/(Δ_e ε)) + 1⌋

pulls of every active arm; the epoch's means (this epoch only) are privatised with
Lap(1/(ε R_e)), and arm a is eliminated if max_b μ̃_b − μ̃_a > 2(h_e + c_e) with
h_e = √(log(8|S|e²/δ)/(2R_e)) and c_e = log(4|S|e²/δ)/(R_e ε). ε-global DP on [0, 1].

Within an epoch, ask/tell pulls the active arms round-robin in index order (so the first K
selections are 0..K−1). `step` advances a whole epoch at once, drawing each arm's epoch sum with
`instance.sample_sum` (one Binomial per arm for Bernoulli arms), exact in distribution.

`dp_se_published` is DP-SE as the paper's published code runs it (docs/published-code.md): each
epoch's sum divided by the arm's cumulative count, eliminated arms kept in the maximum (and the
recommendation) with a mean of 0 plus Laplace noise, and h_e, c_e computed from R_e before it
is floored.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxbai import checks, mechanisms
from jaxbai.arrays import argmax_random_ties, compensated, kahan_add, one_hot, tree_where
from jaxbai.base import PURE, AlgorithmInfo, Instance, Release

__all__ = [
    "DPSE",
    "DPSEParams",
    "DPSEState",
    "EpochConstants",
    "dp_se",
    "dp_se_published",
    "epoch_constants",
]


class DPSEState(NamedTuple):
    """State of one DP-SE run.

    Attributes:
        n: samples drawn so far.
        epoch: current epoch e (from 1).
        active: active set S, bool ``(K,)``.
        pulls: samples drawn in the current epoch.
        counts: N_a, samples of each arm so far, int32 ``(K,)``.
        sums: per-arm (Kahan) sums of the current epoch.
        sums_error: Kahan compensation.
        means: private means μ̃ of the last completed epoch.
        priority: per-run random arm priority for tie-breaking.
        stopped: one arm left.
        recommendation: the last arm (−1 before).
        exhausted: the next epoch would overflow the int32 sample count (run censored).
    """

    n: jax.Array
    epoch: jax.Array
    active: jax.Array
    pulls: jax.Array
    counts: jax.Array
    sums: jax.Array
    sums_error: jax.Array
    means: jax.Array
    priority: jax.Array
    stopped: jax.Array
    recommendation: jax.Array
    exhausted: jax.Array


class DPSEParams(NamedTuple):
    """Numeric parameters of DP-SE: ε and δ."""

    epsilon: jax.Array
    delta: jax.Array


class EpochConstants(NamedTuple):
    """R_e (as float), h_e and c_e of the current epoch."""

    pulls_per_arm: jax.Array
    h: jax.Array
    c: jax.Array


def epoch_constants(
    num_active: ArrayLike,
    epoch: ArrayLike,
    delta: ArrayLike,
    epsilon: ArrayLike,
    floored: bool = True,
) -> EpochConstants:
    """R_e, h_e, c_e of DP-SE for |S| active arms at epoch e (see module docstring).

    ``floored=False``: h_e and c_e from R_e before flooring (the published code's), the pulls
    still ⌊R_e⌋.
    """
    num_active = jnp.asarray(num_active, jnp.float32)
    e = jnp.asarray(epoch, jnp.float32)
    gap = 2.0 ** (-e)
    log8 = jnp.log(8 * num_active * e**2 / delta)
    log4 = jnp.log(4 * num_active * e**2 / delta)
    real = jnp.maximum(32 * log8 / gap**2, 8 * log4 / (gap * epsilon)) + 1
    pulls = jnp.floor(real)
    r = pulls if floored else real
    return EpochConstants(pulls, jnp.sqrt(log8 / (2 * r)), log4 / (r * epsilon))


@dataclasses.dataclass(frozen=True)
class DPSE:
    """DP-SE baseline; satisfies `jaxbai.base.Algorithm`, `jaxbai.base.Rounds` (its epochs) and
    `jaxbai.base.Releasing` (see there for the attributes).

    Attributes:
        epoch_means: ``"epoch"`` (the epoch's sum over its R_e pulls) or ``"cumulative"`` (the
            epoch's sum over the arm's cumulative count, as published).
        eliminated: ``"excluded"`` (only active arms enter the maximum) or ``"noise"``
            (eliminated arms enter it, and the recommendation argmax μ̃, with mean 0 plus the
            epoch's Laplace noise, as published).
        floored: whether h_e and c_e use ⌊R_e⌋ (False: R_e before flooring, as published).
    """

    name: str = "dp_se"
    epoch_means: str = "epoch"
    eliminated: str = "excluded"
    floored: bool = True
    info: ClassVar[AlgorithmInfo] = AlgorithmInfo(
        privacy="global",
        takes_epsilon=True,
        unit_interval=True,
        measure=PURE,
        release_noise="laplace",
    )

    def __post_init__(self) -> None:
        if self.epoch_means not in ("epoch", "cumulative"):
            raise ValueError(
                f"epoch_means must be 'epoch' or 'cumulative', got {self.epoch_means!r}"
            )
        if self.eliminated not in ("excluded", "noise"):
            raise ValueError(f"eliminated must be 'excluded' or 'noise', got {self.eliminated!r}")

    def params(self, epsilon: ArrayLike | None = None, delta: ArrayLike = 0.01) -> DPSEParams:
        """Validated (ε, δ), broadcast together."""
        if epsilon is None:
            raise ValueError("dp_se needs epsilon")
        if checks.is_concrete((epsilon, delta)):
            checks.check_epsilon(epsilon)
            checks.check_open_unit("delta", delta)
        eps, dlt = jnp.broadcast_arrays(
            jnp.asarray(epsilon, jnp.float32), jnp.asarray(delta, jnp.float32)
        )
        return DPSEParams(eps, dlt)

    def init(self, key: jax.Array, params: DPSEParams, num_arms: int) -> DPSEState:
        """All arms active, epoch 1."""
        del params
        num_arms = checks.check_num_arms(num_arms)
        zeros = jnp.zeros(num_arms, jnp.float32)
        return DPSEState(
            n=jnp.int32(0),
            epoch=jnp.int32(1),
            active=jnp.ones(num_arms, bool),
            pulls=jnp.int32(0),
            counts=jnp.zeros(num_arms, jnp.int32),
            sums=zeros,
            sums_error=zeros,
            means=zeros,
            priority=jax.random.uniform(key, (num_arms,)),
            stopped=jnp.bool_(False),
            recommendation=jnp.int32(-1),
            exhausted=jnp.bool_(False),
        )

    def _constants(self, state: DPSEState, params: DPSEParams) -> EpochConstants:
        return epoch_constants(
            jnp.sum(state.active), state.epoch, params.delta, params.epsilon, self.floored
        )

    def _epoch_means(self, state: DPSEState, sums: jax.Array, constants: EpochConstants):
        """The non-private epoch means from the epoch's ``sums``, ``state.counts`` including
        the epoch's pulls: over R_e, or over the cumulative counts (`epoch_means`)."""
        if self.epoch_means == "epoch":
            return sums / constants.pulls_per_arm
        return sums / jnp.maximum(state.counts, 1)

    def _released(self, state: DPSEState) -> jax.Array:
        """The arms whose noisy means are released at an epoch end (`eliminated`)."""
        return state.active if self.eliminated == "excluded" else jnp.ones_like(state.active)

    def select(self, state: DPSEState, params: DPSEParams) -> jax.Array:
        """Round-robin over the active arms, in index order."""
        del params
        slot = state.pulls % jnp.sum(state.active)
        rank = jnp.cumsum(state.active) - 1
        return jnp.argmax(state.active & (rank == slot)).astype(jnp.int32)

    def privatize(self, key: jax.Array, reward: ArrayLike, params: DPSEParams) -> jax.Array:
        """Identity (global DP: the curator sees raw rewards).

        Raises:
            ValueError: (eagerly) a reward outside [0, 1] or not finite.
        """
        del key, params
        checks.check_unit_rewards("reward", reward)
        return jnp.asarray(reward, jnp.float32)

    def _close_epoch(self, key, state, sums, constants, params, release) -> DPSEState:
        """Privatise the epoch means, eliminate, start the next epoch; ``state.counts``
        includes the epoch's pulls."""
        pulls = constants.pulls_per_arm
        if release is None:
            means = self._epoch_means(state, sums, constants) + mechanisms.laplace(
                key, jnp.full_like(sums, 1 / (params.epsilon * pulls))
            )
        else:
            means = jnp.asarray(release, jnp.float32)
        means = jnp.where(self._released(state), means, -jnp.inf)
        best = jnp.max(means)
        keep = state.active & (best - means <= 2 * (constants.h + constants.c))
        zeros = jnp.zeros_like(sums)
        return state._replace(
            epoch=state.epoch + 1,
            active=keep,
            pulls=jnp.int32(0),
            sums=zeros,
            sums_error=zeros,
            means=means,
        )

    def _epoch_done(self, state: DPSEState, constants: EpochConstants) -> jax.Array:
        return state.pulls >= jnp.sum(state.active) * constants.pulls_per_arm

    def _add(self, state: DPSEState, arm: ArrayLike, z: ArrayLike) -> DPSEState:
        """The state with sample ``z`` of ``arm`` counted (epoch pulls, N_a) and added to the
        epoch's Kahan sums; ``n`` is left to the caller."""
        pulled = one_hot(jnp.asarray(arm, jnp.int32), state.sums.shape[0])
        sums, error = kahan_add(state.sums, state.sums_error, pulled, jnp.float32(z))
        return state._replace(
            pulls=state.pulls + 1, counts=state.counts + pulled, sums=sums, sums_error=error
        )

    def pending_release(
        self, state: DPSEState, arm: ArrayLike, z: ArrayLike, params: DPSEParams
    ) -> Release:
        """Whether recording ``z`` ends the epoch, and the epoch means it would release."""
        constants = self._constants(state, params)
        after = self._add(state, arm, z)
        due = self._epoch_done(after, constants)
        released = self._released(state) & due
        means = self._epoch_means(after, compensated(after.sums, after.sums_error), constants)
        counts = jnp.where(released, constants.pulls_per_arm, 0).astype(jnp.int32)
        return Release(due, jnp.where(released, means, 0.0), counts)

    def update(
        self,
        key: jax.Array,
        state: DPSEState,
        arm: ArrayLike,
        z: ArrayLike,
        params: DPSEParams,
        release: ArrayLike | None = None,
    ) -> DPSEState:
        """Record reward ``z`` ∈ [0, 1] of ``arm``; the last pull of an epoch closes it.

        Raises:
            ValueError: (eagerly) ``z`` outside [0, 1]. Under `jit` no check can run.
        """
        checks.check_unit_rewards("z", z)
        constants = self._constants(state, params)
        state = self._add(state, arm, z)._replace(n=state.n + 1)
        sums = compensated(state.sums, state.sums_error)
        closed = self._close_epoch(key, state, sums, constants, params, release)
        return tree_where(self._epoch_done(state, constants), closed, state)

    def stopping(self, state: DPSEState, params: DPSEParams) -> tuple[jax.Array, jax.Array]:
        """(one arm left, that arm; with ``eliminated="noise"`` argmax μ̃ over all arms, as
        published)."""
        del params
        if self.eliminated == "noise":
            best = jnp.argmax(state.means).astype(jnp.int32)
        else:
            best = argmax_random_ties(state.active.astype(jnp.float32), state.priority)
        return jnp.sum(state.active) <= 1, best

    def step(
        self, key: jax.Array, state: DPSEState, inst: Instance, params: DPSEParams
    ) -> DPSEState:
        """Stop if one arm is left; else run a whole epoch (one `sample_sum` draw per arm)."""
        key_reward, key_noise = jax.random.split(key)
        stop, best = self.stopping(state, params)
        constants = self._constants(state, params)
        epoch_size = jnp.sum(state.active) * constants.pulls_per_arm
        exhausted = state.n.astype(jnp.float32) + epoch_size > checks.COUNT_MAX
        counts = jnp.where(state.active, constants.pulls_per_arm, 0.0)
        # round-robin from sample n, as ask/tell pulls (docs/semantics.md §21)
        sums = inst.sample_sum(key_reward, jnp.where(exhausted, 0.0, counts), state.n)
        pulled = state._replace(counts=state.counts + counts.astype(jnp.int32))
        ran = self._close_epoch(key_noise, pulled, sums, constants, params, None)
        ran = ran._replace(n=state.n + jnp.where(exhausted, 0, epoch_size).astype(jnp.int32))
        out_of_budget = state._replace(n=jnp.int32(checks.COUNT_MAX), exhausted=jnp.bool_(True))
        halted = state._replace(stopped=jnp.bool_(True), recommendation=best)
        new = tree_where(stop, halted, tree_where(exhausted, out_of_budget, ran))
        return tree_where(state.stopped | state.exhausted, state, new)

    def rounds(self, state: DPSEState) -> jax.Array:
        """Rounds of adaptivity: completed epochs."""
        return state.epoch - 1


def dp_se() -> DPSE:
    """DP-SE baseline (Sajed & Sheffet 2019), ε-global DP, stopping at one active arm.

    Examples:
        >>> alg = dp_se()
        >>> params = alg.params(epsilon=1.0, delta=0.01)
    """
    return DPSE()


def dp_se_published() -> DPSE:
    """DP-SE as the paper's published code runs it (docs/published-code.md), ε-global DP.

    Each epoch's sum divided by the arm's cumulative count (the published code resets the means
    but not the counts), eliminated arms in the maximum and the recommendation with mean 0 plus
    Laplace noise, h_e and c_e from R_e before flooring.
    """
    return DPSE("dp_se_published", epoch_means="cumulative", eliminated="noise", floored=False)
