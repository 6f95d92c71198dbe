"""Top Two components: transportation costs, leader bonuses, thresholds, challenger, β.

Each is a plain function of arrays satisfying a protocol of `jaxbai.base` (`Cost`, `Bonus`,
`Threshold`, `Challenger`, `TrackingBeta`); swap one into an algorithm with
`dataclasses.replace`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxbai import costs, thresholds
from jaxbai._arrays import argmax_random_ties, one_hot, pick
from jaxbai.base import Algorithm
from jaxbai.toptwo.state import TopTwoParams, TopTwoState

__all__ = [
    "fixed_beta",
    "gaussian_bonus",
    "gaussian_bonus_global_counts",
    "gaussian_cost",
    "private_bonus_eq11",
    "private_bonus_eq11_global_counts",
    "private_bonus_time",
    "private_bonus_time_global_counts",
    "private_cost",
    "threshold_gaussian_heuristic",
    "threshold_gaussian_theory",
    "threshold_private_heuristic",
    "threshold_private_theory",
    "threshold_tilde_heuristic",
    "threshold_tilde_theory",
    "transportation_cost_challenger",
]


def gaussian_cost(mu_a, mu_b, w_a, w_b, params: TopTwoParams) -> jax.Array:
    """W^G (Eq. 3) with the algorithm's σ²."""
    return costs.gaussian_cost(mu_a, mu_b, w_a, w_b, params.sigma2)


def private_cost(mu_a, mu_b, w_a, w_b, params: TopTwoParams) -> jax.Array:
    """W^{G,ε} (Eq. 13) with the algorithm's σ² and ε."""
    return costs.private_cost(mu_a, mu_b, w_a, w_b, params.sigma2, params.epsilon)


def gaussian_bonus(state: TopTwoState, params: TopTwoParams) -> jax.Array:
    """b^G_a(Ñ) of Eq. (3), log of the number of samples so far (docs/semantics.md §5)."""
    return costs.gaussian_bonus(state.local_counts, state.n, params.sigma2)


def gaussian_bonus_global_counts(state: TopTwoState, params: TopTwoParams) -> jax.Array:
    """b^G_a(N) of Eq. (3) at the global counts, for one global episode (docs/semantics.md §18)."""
    return costs.gaussian_bonus(state.counts, state.n, params.sigma2)


def private_bonus_time(state: TopTwoState, params: TopTwoParams) -> jax.Array:
    """b^{G,ε}_a of Eq. (11) with k evaluated at the number of samples so far, k = log₂ n + 2."""
    k = costs.doubling_index(state.n)
    return costs.private_bonus(state.local_counts, k, params.epsilon)


def private_bonus_eq11(state: TopTwoState, params: TopTwoParams) -> jax.Array:
    """b^{G,ε}_a exactly as Eq. (11) prints it: k = log₂ Ñ_a + 2."""
    k = costs.doubling_index(state.local_counts)
    return costs.private_bonus(state.local_counts, k, params.epsilon)


def private_bonus_time_global_counts(state: TopTwoState, params: TopTwoParams) -> jax.Array:
    """`private_bonus_time` at the global counts N, for one global episode (§18)."""
    k = costs.doubling_index(state.n)
    return costs.private_bonus(state.counts, k, params.epsilon)


def private_bonus_eq11_global_counts(state: TopTwoState, params: TopTwoParams) -> jax.Array:
    """`private_bonus_eq11` at the global counts N, for one global episode (§18)."""
    k = costs.doubling_index(state.counts)
    return costs.private_bonus(state.counts, k, params.epsilon)


def threshold_gaussian_theory(mu_a, mu_b, w_a, w_b, n, num_arms, params) -> jax.Array:
    """c^G (Eq. 4)."""
    del mu_a, mu_b, n
    return thresholds.c_gaussian_threshold(w_a, w_b, params.delta, num_arms)


def threshold_gaussian_heuristic(mu_a, mu_b, w_a, w_b, n, num_arms, params) -> jax.Array:
    """log((1 + log n)/δ) (heuristic TTUCB threshold)."""
    del mu_a, mu_b, w_a, w_b, num_arms
    return thresholds.heuristic_gaussian_threshold(n, params.delta)


def threshold_private_theory(mu_a, mu_b, w_a, w_b, n, num_arms, params) -> jax.Array:
    """c^{G,ε} (Eq. 12)."""
    del mu_a, mu_b, n
    return thresholds.c_private_threshold(
        w_a, w_b, params.delta, params.epsilon, params.sigma2, num_arms
    )


def threshold_private_heuristic(mu_a, mu_b, w_a, w_b, n, num_arms, params) -> jax.Array:
    """Heuristic AdaP-TT threshold (δ → 0 form of Eq. 12)."""
    del mu_a, mu_b, n, num_arms
    return thresholds.heuristic_private_threshold(
        w_a, w_b, params.delta, params.epsilon, params.sigma2
    )


def threshold_tilde_theory(mu_a, mu_b, w_a, w_b, n, num_arms, params) -> jax.Array:
    """c̃^{G,ε} (Eq. 14)."""
    del n
    return thresholds.c_tilde_private_threshold(
        mu_a, mu_b, w_a, w_b, params.delta, params.epsilon, params.sigma2, num_arms
    )


def threshold_tilde_heuristic(mu_a, mu_b, w_a, w_b, n, num_arms, params) -> jax.Array:
    """Heuristic AdaP-TT* threshold (δ → 0 forms of Eq. 14)."""
    del n, num_arms
    return thresholds.heuristic_tilde_private_threshold(
        mu_a, mu_b, w_a, w_b, params.delta, params.epsilon, params.sigma2
    )


def transportation_cost_challenger(
    alg: Algorithm, state: TopTwoState, leader: jax.Array, params: TopTwoParams
) -> jax.Array:
    """TC challenger C = argmin_{a ≠ B} W_{B,a}(μ̃, N) with global counts.

    Alg. 1 line 9; Alg. 9/10 line 15 (docs/semantics.md §5).
    """
    is_leader = one_hot(leader, state.means.shape[0])
    mu_b, n_b = pick(state.means, is_leader), pick(state.counts, is_leader)
    w = alg.cost(mu_b, state.means, n_b, state.counts, params)
    w = jnp.where(is_leader, jnp.inf, w)
    return argmax_random_ties(-w, state.priority)


def fixed_beta(
    alg: Algorithm,
    state: TopTwoState,
    leader: jax.Array,
    challenger: jax.Array,
    params: TopTwoParams,
) -> jax.Array:
    """The fixed tracking proportion β of Alg. 1 (``params.beta``)."""
    del alg, state, leader, challenger
    return params.beta
