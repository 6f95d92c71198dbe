"""The Top Two algorithms of the paper's published code, rebuilt from components.

The code published with the paper (one commit, c8d8be2) runs algorithms that differ from the
paper's pseudocode; docs/published-code.md lists every difference with its measured effect.
This module rebuilds them from jaxbai's Top Two driver, one component per difference, so both
readings can be run side by side:

* `ttucb_published`: empirical-best leader (`no_bonus`), the κ-challenger
  (`challenger_log_kappa`), a β-coin instead of β-tracking (`coin_tracking`), σ = 1 in the
  stopping statistic (`stopping_at_leader`: the leader is argmax μ̂), lowest-index ties;
* `adap_tt_published`: DAF means (Alg. 5) with the completed-phase leader bonus
  (`bonus_completed_phases`), the κ-challenger (`challenger_sqrt_kappa`), a β-coin, the GLR
  test of the UCB leader with an unsigned squared gap (`cost_squared_gap`,
  `stopping_at_leader`), σ = 1 in the cost and in the threshold's privacy term, lowest-index
  ties. τ is the samples drawn (docs/semantics.md §1); its `reported_samples` is the count
  the published code returns (a `jaxbai.base.ReportsSamples` algorithm).

Everything here is a pure function of the state, so the pulls between phase ends can still be
planned: `adap_tt_published` keeps the episodic paths (plans, per-episode draws) of AdaP-TT.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxbai import checks, costs, estimators
from jaxbai.arrays import uniform_from_bits
from jaxbai.base import Scalar
from jaxbai.toptwo.components import (
    glr_pairs_passed,
    leader_side,
    step_key,
    threshold_gaussian_heuristic,
    threshold_private_heuristic,
)
from jaxbai.toptwo.driver import TopTwo
from jaxbai.toptwo.episodic import EpisodicTopTwo
from jaxbai.toptwo.state import TopTwoParams, TopTwoState

__all__ = [
    "PUBLISHED_SIGMA",
    "PublishedAdaPTT",
    "adap_tt_published",
    "bonus_completed_phases",
    "challenger_log_kappa",
    "challenger_sqrt_kappa",
    "coin_tracking",
    "completed_phase_samples",
    "cost_squared_gap",
    "no_bonus",
    "stopping_at_leader",
    "tracking_uniform",
    "ttucb_published",
]

PUBLISHED_SIGMA = 1.0
"""σ of the published code's stopping statistic, 0.5·(μ_a − μ_b)²/(1/n + 1/m), and of its
AdaP-TT threshold; the paper (after Eq. 4; Alg. 9, 10) takes σ = 1/2 for rewards in [0, 1]."""


# ----------------------------------------------------------------------------- costs, bonuses
def cost_squared_gap(mu_a, mu_b, w_a, w_b, params: TopTwoParams) -> jax.Array:
    """(μ_a − μ_b)² / (2σ²(1/w_a + 1/w_b)): W^G of Eq. (3) with the gap unsigned, as the published
    AdaP-TT stopping statistic squares it (positive when μ_b > μ_a)."""
    gap = jnp.asarray(mu_a) - jnp.asarray(mu_b)
    return costs.gaussian_cost(jnp.abs(gap), 0.0, w_a, w_b, params.sigma2)


def no_bonus(state: TopTwoState, params: TopTwoParams) -> jax.Array:
    """No bonus: the leader is the empirical best arm, argmax μ̂ (published TTUCB)."""
    del params
    return jnp.zeros_like(state.means)


def completed_phase_samples(state: TopTwoState) -> Scalar:
    """n_c = Σ_a N_a(start of a's current phase): the samples in completed DAF phases."""
    return jnp.sum(state.estimate.phase_start, axis=-1)


def bonus_completed_phases(state: TopTwoState, params: TopTwoParams) -> jax.Array:
    """log(n_c)/(ε Ñ_a) + √(log(n_c)/(2 Ñ_a)), n_c = `completed_phase_samples` (published
    AdaP-TT's leader; the paper's Eq. 11 is √(k/Ñ_a) + k/(ε Ñ_a), k = log₂ + 2)."""
    log_n = jnp.log(completed_phase_samples(state).astype(jnp.float32))
    local = state.local_counts.astype(jnp.float32)
    return log_n / (params.epsilon * local) + jnp.sqrt(log_n / (2 * local))


# ----------------------------------------------------------------------------- challengers
def _kappa_challenger(alg: Any, state: TopTwoState, leader: jax.Array, kappa: Scalar) -> Scalar:
    """argmin_{b ≠ B} (μ̃_B − μ̃_b + κ)/√(1/N_B + 1/N_b), with the global counts N."""
    is_leader, mu_leader, n_leader = leader_side(state, leader)
    counts = state.counts.astype(jnp.float32)
    score = (mu_leader - state.means + kappa) / jnp.sqrt(1 / n_leader + 1 / counts)
    return alg.argmax(-jnp.where(is_leader, jnp.inf, score), state)


def challenger_log_kappa(
    alg: Any, state: TopTwoState, leader: jax.Array, params: TopTwoParams
) -> Scalar:
    """Published TTUCB's challenger: `_kappa_challenger` with κ = log(1 + n)^(−1/4)."""
    del params
    return _kappa_challenger(alg, state, leader, jnp.log1p(state.n.astype(jnp.float32)) ** -0.25)


def challenger_sqrt_kappa(
    alg: Any, state: TopTwoState, leader: jax.Array, params: TopTwoParams
) -> Scalar:
    """Published AdaP-TT's challenger: `_kappa_challenger` with κ = 1/(1 + √n_c), n_c the
    samples in completed phases."""
    del params
    n_c = completed_phase_samples(state).astype(jnp.float32)
    return _kappa_challenger(alg, state, leader, 1 / (1 + jnp.sqrt(n_c)))


# ----------------------------------------------------------------------------- tracking
def tracking_uniform(state: TopTwoState) -> Scalar:
    """The run's coin at sample n: a uniform on (0, 1) from `jaxbai.toptwo.components.step_key`
    (hashed from (run, n), a function of the state: docs/semantics.md §30), float32."""
    return uniform_from_bits(jax.random.bits(step_key(state)))


def coin_tracking(state: TopTwoState, beta: Scalar) -> jax.Array:
    """A β-coin: pull the leader iff u ≤ β, u = `tracking_uniform` (published code; Russo's
    original Top Two), instead of β-tracking (Alg. 1, line 10)."""
    return tracking_uniform(state) <= beta


# ----------------------------------------------------------------------------- stopping
def stopping_at_leader(
    alg: Any, state: TopTwoState, params: TopTwoParams
) -> tuple[jax.Array, jax.Array]:
    """The published code's stopping rule: the GLR test of the leader B against every b ≠ B,
    recommending argmax μ̃; it first tests after K + 1 samples (the published loops test after
    each pull that follows the K initial ones).

    For published TTUCB the leader is argmax μ̂ (`no_bonus`), so this is the GLR test of
    Eq. (2); for published AdaP-TT it is the UCB leader, not argmax μ̃, and with
    `cost_squared_gap` a pair passes also when μ̃_b > μ̃_B.
    """
    passed = glr_pairs_passed(alg, state, params, alg.leader(state, params))
    return passed & (state.n > alg.num_arms(state)), alg.argmax(state.means, state)


@dataclasses.dataclass(frozen=True)
class PublishedAdaPTT(EpisodicTopTwo):
    """An `EpisodicTopTwo` that also reports the published AdaP-TT's stopping time
    (`jaxbai.base.ReportsSamples`)."""

    def reported_samples(self, counts: ArrayLike) -> jax.Array:
        """n_c = Σ_a 2^⌊log₂ N_a⌋: the samples of completed phases, which the published AdaP-TT
        returns as its stopping time (its unfinished phases' samples are left out).

        With per-arm DAF phases of lengths 1, 1, 2, 4, …, arm a's current phase started at
        N_a(start) = 2^⌊log₂ N_a⌋ (`completed_phase_samples` of the final state), the highest
        power of two ≤ N_a, computed exactly on integers. NumPy in, NumPy out; JAX in, JAX out.

        Examples:
            >>> import numpy as np
            >>> int(adap_tt_published().reported_samples(np.array([1, 2, 3, 9])))  # 1+2+2+8
            13
        """
        xp = jnp if isinstance(counts, jax.Array) else np
        smeared = xp.asarray(counts)
        for shift in (1, 2, 4, 8, 16, 32):  # every bit below the highest one set
            smeared = smeared | (smeared >> shift)
        return xp.sum(smeared - (smeared >> 1), axis=-1)


# ----------------------------------------------------------------------------- factories
def ttucb_published(beta: float = 0.5) -> TopTwo:
    """TTUCB as the published code runs it (not Alg. 6; docs/published-code.md).

    Empirical-best leader, challenger argmin_{b ≠ B} (μ̂_B − μ̂_b + κ)/√(1/N_B + 1/N_b) with
    κ = log(1 + n)^(−1/4), a β-coin between them, the GLR test of argmax μ̂ with σ = 1 and the
    threshold log((1 + log n)/δ), lowest-index ties. Not private.

    Args:
        beta: the coin's probability of pulling the leader.
    """
    checks.check_open_unit("beta", beta)
    return TopTwo(
        "ttucb_published",
        estimators.MLE(),
        cost_squared_gap,
        no_bonus,
        threshold_gaussian_heuristic,
        challenger=challenger_log_kappa,
        tracking=coin_tracking,
        stopping_rule=stopping_at_leader,
        ties="lowest_index",
        beta=beta,
        sigma=PUBLISHED_SIGMA,
        takes_epsilon=False,
    )


def adap_tt_published(beta: float = 0.5) -> PublishedAdaPTT:
    """AdaP-TT as the published code runs it (not Alg. 9; docs/published-code.md); ε-global DP.

    DAF means (Alg. 5, the same phases and Laplace noise); leader argmax μ̃ +
    `bonus_completed_phases`; challenger `challenger_sqrt_kappa`; a β-coin; the GLR test of
    the leader with `cost_squared_gap` and the threshold log(1/δ) + log(1 + log Ñ_a)
    + log(1 + log Ñ_b) + (1/Ñ_a + 1/Ñ_b) log(1/δ)²/ε², both with σ = 1
    (`stopping_at_leader`); lowest-index ties.

    Args:
        beta: the coin's probability of pulling the leader.
    """
    checks.check_open_unit("beta", beta)
    return PublishedAdaPTT(
        "adap_tt_published",
        estimators.DAF(),
        cost_squared_gap,
        bonus_completed_phases,
        threshold_private_heuristic,
        challenger=challenger_sqrt_kappa,
        tracking=coin_tracking,
        stopping_rule=stopping_at_leader,
        ties="lowest_index",
        beta=beta,
        sigma=PUBLISHED_SIGMA,
    )
