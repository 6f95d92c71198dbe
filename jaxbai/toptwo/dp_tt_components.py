"""DP-TT and EB-TCI (Jourdan & Azize 2025, arXiv 2510.17348): their Top Two components.

DP-TT is ε-global DP: the `jaxbai.estimators.CumulativeLaplace` estimator (a geometric grid of
phases with cumulative Laplace increments), the empirical-best (EB) leader, the TCI challenger
(transportation cost plus log N_a, at the true counts N), the private transportation cost C*_ε
(`jaxbai.theory.private_cost`) and a GLR stop on the phase counts Ñ with a threshold split
over the two arms, c(Ñ_ã) + c(Ñ_a). EB-TCI, its non-private reference, is the same sampling
rule at ε = ∞ on every sample (μ̂, N) with the Bernoulli-KL cost and the usual heuristic GLR
threshold log((1 + log n)/δ). The choices the specification leaves open are in
docs/semantics.md §34.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

from jaxbai import costs, thresholds
from jaxbai.arrays import batched_last, one_hot, pick
from jaxbai.base import PerArm, Scalar
from jaxbai.theory import private_cost
from jaxbai.toptwo.components import glr_pairs_passed
from jaxbai.toptwo.state import TopTwoParams, TopTwoState

__all__ = [
    "cost_kl_bernoulli",
    "cost_private_bernoulli",
    "empirical_best_leader",
    "empirical_best_stopping",
    "forced_tci_challenger",
    "no_bonus",
    "phase_tci_challenger",
    "tci_challenger",
    "threshold_dp_heuristic",
    "threshold_dp_theory",
]


def _unit(mu: jax.Array) -> jax.Array:
    """Means clipped to [0, 1], the Bernoulli means the costs are defined for (a noisy μ̃ may
    leave the interval)."""
    return jnp.clip(jnp.asarray(mu, jnp.float32), 0.0, 1.0)


def cost_private_bernoulli(mu_a, mu_b, w_a, w_b, params: TopTwoParams) -> jax.Array:
    """C*_ε(a, b, μ, w) = inf_x w_a d⁻_ε(μ_a, x) + w_b d⁺_ε(μ_b, x) at the clipped means
    (DP-TT's cost; `jaxbai.theory.private_cost`, in closed form)."""
    w_a, w_b = (jnp.asarray(w, jnp.float32) for w in (w_a, w_b))
    return _lanes_last_cost(_unit(mu_a), _unit(mu_b), w_a, w_b, params.epsilon)


_lanes_last_cost = batched_last(private_cost)
"""`jaxbai.theory.private_cost` with the lane axis last under the engine's `vmap`
(`jaxbai.arrays.batched_last`): the same values; 2× DP-TT's samples/s in the engine on CPU
(mu1, 1024 runs, per-episode draws)."""


def cost_kl_bernoulli(mu_a, mu_b, w_a, w_b, params: TopTwoParams) -> jax.Array:
    """Bernoulli-KL transportation cost at the clipped means (`jaxbai.costs.kl_bernoulli_cost`);
    C*_∞."""
    del params
    return costs.kl_bernoulli_cost(_unit(mu_a), _unit(mu_b), w_a, w_b)


def no_bonus(state: TopTwoState, params: TopTwoParams) -> PerArm:
    """No leader bonus (an empirical-best leader reads none)."""
    del params
    return jnp.zeros_like(state.means)


def empirical_best_leader(alg: Any, state: TopTwoState, params: TopTwoParams) -> Scalar:
    """EB leader B = ã = argmax_a clip(μ̃_a, 0, 1), with the algorithm's tie rule."""
    del params
    return alg.argmax(_unit(state.means), state)


def tci_challenger(alg: Any, state: TopTwoState, leader: Scalar, params: TopTwoParams) -> Scalar:
    """TCI challenger C = argmin_{a ≠ B} W_{B,a}(μ̃, N) + log N_a: the algorithm's cost at the
    true counts N, with a log N_a penalty (Jourdan et al. 2022; DP-TT step 5).

    With DP-TT's cost (`cost_private_bernoulli`, elementwise) the values −(W_{B,a} + log N_a)
    are one elementwise function computed lanes-last (`jaxbai.arrays.batched_last`) and their
    argmax is taken lanes-last too (`jaxbai.arrays.argmax_random_ties_lanes_last`): under the
    engine's `vmap` on a CPU every operation is then a vector loop over lanes, 2.5–3× fewer ns
    per planned pull at 256 lanes (`python -m experiments.bench ablation`, docs/benchmarks.md).
    Any other cost (EB-TCI's, a plugin's, which need not be elementwise) takes the plain path,
    which the fused kernel can lower."""
    return _tci_at(alg, state, leader, params, state.counts)


def phase_tci_challenger(
    alg: Any, state: TopTwoState, leader: Scalar, params: TopTwoParams
) -> Scalar:
    """The TCI challenger at the phase counts Ñ: argmin_{a ≠ B} W_{B,a}(μ̃, Ñ) + log Ñ_a. Not
    from the paper: a variant (`dp_tt(challenger="tci_phase")`) whose challenger changes only
    when a phase ends, the counts the stopping rule reads (docs/dp-tt.md measures it)."""
    return _tci_at(alg, state, leader, params, state.local_counts)


def _tci_at(
    alg: Any, state: TopTwoState, leader: Scalar, params: TopTwoParams, counts: jax.Array
) -> Scalar:
    """argmin_{a ≠ B} W_{B,a}(μ̃, counts) + log counts_a (`tci_challenger`)."""
    is_leader = one_hot(leader, state.means.shape[0])
    mu_b, n_b = pick(state.means, is_leader), pick(counts, is_leader)
    if alg.cost is not cost_private_bernoulli:
        w = alg.cost(mu_b, state.means, n_b, counts, params)
        w = w + jnp.log(counts.astype(jnp.float32))
        return alg.argmax(-jnp.where(is_leader, jnp.inf, w), state)
    values = batched_last(functools.partial(_tci_values, alg.cost))
    values = values(mu_b, state.means, n_b, counts, is_leader, *params)
    return alg.argmax(values, state, lanes_last=True)


def _tci_values(cost: Any, mu_b, means, n_b, counts, is_leader, *params: jax.Array) -> jax.Array:
    """−(W_{B,a}(μ̃, N) + log N_a), −∞ at the leader, from ``params`` (`TopTwoParams`'s
    fields)."""
    w = cost(mu_b, means, n_b, counts, TopTwoParams(*params))
    return -jnp.where(is_leader, jnp.inf, w + jnp.log(counts.astype(jnp.float32)))


def forced_tci_challenger(
    alg: Any, state: TopTwoState, leader: Scalar, params: TopTwoParams
) -> Scalar:
    """The TCI challenger with forced exploration: the least-pulled arm a ≠ B while some arm
    a ≠ B has N_a < √n (n the samples so far; float32 √n, exact for n < 1.7·10⁷), else
    `tci_challenger`. Not from the paper: a variant that keeps every arm's
    count at least about √n (docs/dp-tt.md), so an arm whose early noise froze its mean low
    keeps ending phases. It reads counts only, so the pulls stay plannable between phase ends.
    """
    width = state.counts.shape[0]
    is_leader = one_hot(leader, width)
    counts = state.counts.astype(jnp.float32)
    real = jnp.arange(width) < alg.num_arms(state)
    behind = (counts < jnp.sqrt(state.n.astype(jnp.float32))) & ~is_leader & real
    least = alg.argmax(-jnp.where(is_leader, jnp.inf, counts), state)
    return jnp.where(jnp.any(behind), least, tci_challenger(alg, state, leader, params))


def empirical_best_stopping(
    alg: Any, state: TopTwoState, params: TopTwoParams
) -> tuple[Scalar, Scalar]:
    """GLR stop at the EB candidate ã: W_{ã,a}(μ̃, Ñ) ≥ c_{ã,a} for every a ≠ ã (the
    algorithm's cost and threshold at the local counts Ñ); (stop, ã). Never before every arm
    was pulled once."""
    best = alg.leader_rule(alg, state, params)
    passed = glr_pairs_passed(alg, state, params, best)
    return passed & (state.n >= alg.num_arms(state)), best


def threshold_dp_theory(mu_a, mu_b, w_a, w_b, n, num_arms, params) -> jax.Array:
    """c(Ñ_a, ε, δ) + c(Ñ_b, ε, δ), c(m) = log(1/δ) + log m · log(1 + εm / log m)
    (`jaxbai.thresholds.dp_tt_theory_threshold`)."""
    del mu_a, mu_b, n, num_arms
    one = thresholds.dp_tt_theory_threshold
    return one(w_a, params.delta, params.epsilon) + one(w_b, params.delta, params.epsilon)


def threshold_dp_heuristic(mu_a, mu_b, w_a, w_b, n, num_arms, params) -> jax.Array:
    """c(Ñ_a, δ) + c(Ñ_b, δ), c(m) = ½ log((1 + log m)/δ): the heuristic GLR threshold
    split over the two arms (`jaxbai.thresholds.dp_tt_heuristic_threshold`)."""
    del mu_a, mu_b, n, num_arms
    one = thresholds.dp_tt_heuristic_threshold
    return one(w_a, params.delta) + one(w_b, params.delta)
