"""Top Two components: costs, leaders and their bonuses, thresholds, challenger, β, tracking,
stopping.

Each is a plain function of arrays satisfying one of the protocols below (`Cost`, `Bonus`,
`Leader`, `Threshold`, `Challenger`, `TrackingBeta`, `Tracking`, `StoppingRule`); swap one into
an algorithm with `dataclasses.replace`. The components of the paper's published code are in
`jaxbai.toptwo.published`, those of DP-TT and EB-TCI in `jaxbai.toptwo.dp_tt_components`.

Every component runs traced, inside `jaxbai.toptwo.TopTwo.select` and `step`, and is a function
of the state: the pull a trial is told (`select`) must be the pull the engine makes. A
component that randomises (a sampled leader, a randomised challenger, a β-coin) draws from
`step_key`, the run's key for the current sample, folded with a tag of its own.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

import jax
import jax.numpy as jnp

from jaxbai import costs, thresholds
from jaxbai.arrays import every, one_hot, pick
from jaxbai.base import PerArm, Scalar
from jaxbai.toptwo.state import TopTwoParams, TopTwoState

__all__ = [
    "Bonus",
    "Challenger",
    "Cost",
    "Leader",
    "StoppingRule",
    "Threshold",
    "Tracking",
    "TrackingBeta",
    "beta_tracking",
    "bonus_gaussian",
    "bonus_gaussian_global_counts",
    "bonus_private_eq11",
    "bonus_private_eq11_global_counts",
    "bonus_private_time",
    "bonus_private_time_global_counts",
    "cost_gaussian",
    "cost_private",
    "fixed_beta",
    "glr_pair",
    "glr_pairs_passed",
    "glr_stopping",
    "leader_side",
    "step_key",
    "tc_challenger_gaussian_cost",
    "tc_challenger_private_cost",
    "threshold_aware_challenger",
    "threshold_gaussian_heuristic",
    "threshold_gaussian_theory",
    "threshold_private_heuristic",
    "threshold_private_theory",
    "threshold_tilde_heuristic",
    "threshold_tilde_theory",
    "transportation_cost_challenger",
    "ucb_leader",
]


# ----------------------------------------------------------------------------- the protocols
class Cost(Protocol):
    """Transportation cost W_{a,b}(μ_a, μ_b, w_a, w_b): W^G (Eq. 3) or W^{G,ε} (Eq. 13).

    ``mu_*`` float32, ``w_*`` counts (int32 or float32), broadcastable; returns float32.
    """

    def __call__(
        self, mu_a: jax.Array, mu_b: jax.Array, w_a: jax.Array, w_b: jax.Array, params: object
    ) -> jax.Array: ...


class Bonus(Protocol):
    """Leader bonus b_a of the UCB leader B = argmax_a μ̃_a + b_a (Eq. 3 or Eq. 11).

    Args: ``state`` (`jaxbai.toptwo.TopTwoState`), ``params``
    (`jaxbai.toptwo.TopTwoParams`). Returns float32 ``(K,)``.
    """

    def __call__(self, state: TopTwoState, params: TopTwoParams) -> PerArm: ...


class Leader(Protocol):
    """Leader rule: the arm B of Alg. 1, line 8 (`ucb_leader` by default).

    Args: ``alg`` (the `jaxbai.toptwo.TopTwo`, for its bonus and `argmax`), ``state``,
    ``params``. Returns the int32 scalar B.
    """

    def __call__(self, alg: Any, state: TopTwoState, params: TopTwoParams) -> Scalar: ...


class Threshold(Protocol):
    """GLR stopping threshold c(μ_a, μ_b, w_a, w_b, n) (Eq. 4, 12, 14 or a heuristic form).

    ``n`` is the int32 number of samples so far, ``num_arms`` the static K; returns float32.
    """

    def __call__(
        self,
        mu_a: jax.Array,
        mu_b: jax.Array,
        w_a: jax.Array,
        w_b: jax.Array,
        n: Scalar,
        num_arms: int,
        params: object,
    ) -> jax.Array: ...


class Challenger(Protocol):
    """Challenger rule: the arm C ≠ leader, e.g. the TC challenger (Alg. 1, line 9).

    Args: ``alg`` (the `jaxbai.toptwo.TopTwo`, for its cost, tie rule and `argmax`),
    ``state``, ``leader`` (int32 scalar), ``params``. Returns the int32 scalar C.
    """

    def __call__(
        self, alg: Any, state: TopTwoState, leader: Scalar, params: TopTwoParams
    ) -> Scalar: ...


class TrackingBeta(Protocol):
    """Tracking proportion β ∈ (0, 1) for this iteration (Alg. 1, line 10).

    Args: ``alg``, ``state``, ``leader`` and ``challenger`` (int32 scalars), ``params``.
    Returns a float32 scalar.
    """

    def __call__(
        self,
        alg: Any,
        state: TopTwoState,
        leader: Scalar,
        challenger: Scalar,
        params: TopTwoParams,
    ) -> Scalar: ...


class Tracking(Protocol):
    """How β decides between leader and challenger (Alg. 1, line 10): for every arm a, whether
    a, were it the leader, would be pulled (bool ``(K,)``, or one bool for every arm).

    A function of the state only, so the pulls up to an episode end can still be planned
    (docs/semantics.md §19): `beta_tracking` by default, `jaxbai.toptwo.published.coin_tracking`
    for a β-coin.
    """

    def __call__(self, state: TopTwoState, beta: Scalar) -> jax.Array: ...


class StoppingRule(Protocol):
    """(stop, recommendation â) of a state: the GLR test of Eq. (2), `glr_stopping`, by default.

    Args: ``alg``, ``state``, ``params``. Returns (bool scalar, int32 scalar); never stops
    before every arm was pulled once.
    """

    def __call__(
        self, alg: Any, state: TopTwoState, params: TopTwoParams
    ) -> tuple[Scalar, Scalar]: ...


def step_key(state: TopTwoState) -> jax.Array:
    """The run's key for sample n, a function of the state: what a randomising component draws
    from, folded with a tag of its own (``jax.random.fold_in(step_key(state), tag)``).

    The run is identified by the bits of its first two tie priorities (drawn from the run's
    init key, independent of its reward stream), so `select`, `plan` and the per-episode path
    all see the same draw (docs/semantics.md §30); the published code's β-coin
    (`jaxbai.toptwo.published.tracking_uniform`) is its first use.

    Examples:
        >>> import jax, jaxbai
        >>> alg = jaxbai.ttucb()
        >>> state = alg.init(jax.random.key(0), alg.params(delta=0.1), 3)
        >>> u = jax.random.uniform(jax.random.fold_in(step_key(state), 7))  # a leader's coin
        >>> bool(0 < u < 1), bool(u == jax.random.uniform(jax.random.fold_in(step_key(state), 7)))
        (True, True)
    """
    words = jax.lax.bitcast_convert_type(state.priority[:2], jnp.uint32)
    key = jax.random.wrap_key_data(words, impl="threefry2x32")
    return jax.random.fold_in(key, state.n)


# ----------------------------------------------------------------------------- the components
def ucb_leader(alg: Any, state: TopTwoState, params: TopTwoParams) -> Scalar:
    """UCB leader B = argmax_a μ̃_a + b_a with the algorithm's bonus (Alg. 1, line 8)."""
    return alg.argmax(state.means + alg.bonus(state, params), state)


def cost_gaussian(mu_a, mu_b, w_a, w_b, params: TopTwoParams) -> jax.Array:
    """W^G (Eq. 3) with the algorithm's σ²."""
    return costs.gaussian_cost(mu_a, mu_b, w_a, w_b, params.sigma2)


def cost_private(mu_a, mu_b, w_a, w_b, params: TopTwoParams) -> jax.Array:
    """W^{G,ε} (Eq. 13) with the algorithm's σ² and ε."""
    return costs.private_cost(mu_a, mu_b, w_a, w_b, params.sigma2, params.epsilon)


def bonus_gaussian(state: TopTwoState, params: TopTwoParams) -> jax.Array:
    """b^G_a(Ñ) of Eq. (3), log of the number of samples so far (docs/semantics.md §5)."""
    return costs.gaussian_bonus(state.local_counts, state.n, params.sigma2)


def bonus_gaussian_global_counts(state: TopTwoState, params: TopTwoParams) -> jax.Array:
    """b^G_a(N) of Eq. (3) at the global counts, for one global episode (docs/semantics.md §18)."""
    return costs.gaussian_bonus(state.counts, state.n, params.sigma2)


def bonus_private_time(state: TopTwoState, params: TopTwoParams) -> jax.Array:
    """b^{G,ε}_a of Eq. (11) with k evaluated at the number of samples so far, k = log₂ n + 2."""
    k = costs.doubling_index(state.n)
    return costs.private_bonus(state.local_counts, k, params.epsilon)


def bonus_private_eq11(state: TopTwoState, params: TopTwoParams) -> jax.Array:
    """b^{G,ε}_a exactly as Eq. (11) prints it: k = log₂ Ñ_a + 2."""
    k = costs.doubling_index(state.local_counts)
    return costs.private_bonus(state.local_counts, k, params.epsilon)


def bonus_private_time_global_counts(state: TopTwoState, params: TopTwoParams) -> jax.Array:
    """`bonus_private_time` at the global counts N, for one global episode (§18)."""
    k = costs.doubling_index(state.n)
    return costs.private_bonus(state.counts, k, params.epsilon)


def bonus_private_eq11_global_counts(state: TopTwoState, params: TopTwoParams) -> jax.Array:
    """`bonus_private_eq11` at the global counts N, for one global episode (§18)."""
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


def glr_pair(
    alg: Any,
    mu_a: jax.Array,
    mu_b: jax.Array,
    w_a: jax.Array,
    w_b: jax.Array,
    n: Scalar,
    num_arms: int,
    params: TopTwoParams,
) -> tuple[jax.Array, jax.Array]:
    """(W_{a,b}, c_{a,b}): the algorithm's cost and stopping threshold of the pairs (a, b).

    The two sides of the GLR test of Eq. (2), W_{a,b}(μ, ω) ≥ c_{a,b}(μ, ω, n): the stopping rule
    evaluates them at (μ̃, Ñ), `threshold_aware_challenger` at (μ̃, N).
    """
    cost = alg.cost(mu_a, mu_b, w_a, w_b, params)
    return cost, alg.threshold(mu_a, mu_b, w_a, w_b, n, num_arms, params)


def leader_side(state: TopTwoState, leader: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(one-hot of B, μ̃_B, N_B): the leader's side of every pair (B, b)."""
    is_leader = one_hot(leader, state.means.shape[0])
    return is_leader, pick(state.means, is_leader), pick(state.counts, is_leader)


def transportation_cost_challenger(
    alg: Any, state: TopTwoState, leader: jax.Array, params: TopTwoParams
) -> jax.Array:
    """TC challenger C = argmin_{a ≠ B} W_{B,a}(μ̃, N) with global counts.

    Alg. 1 line 9; Alg. 9/10 line 15 (docs/semantics.md §5).
    """
    is_leader, mu_b, n_b = leader_side(state, leader)
    w = alg.cost(mu_b, state.means, n_b, state.counts, params)
    w = jnp.where(is_leader, jnp.inf, w)
    return alg.argmax(-w, state)


def tc_challenger_gaussian_cost(
    alg: Any, state: TopTwoState, leader: jax.Array, params: TopTwoParams
) -> jax.Array:
    """TC challenger argmin_{b ≠ B} W^G_{B,b}(μ̃, N) (Eq. 3), whatever the algorithm's own cost
    (which then enters its stopping statistic only)."""
    signed = dataclasses.replace(alg, cost=cost_gaussian)
    return transportation_cost_challenger(signed, state, leader, params)


def tc_challenger_private_cost(
    alg: Any, state: TopTwoState, leader: jax.Array, params: TopTwoParams
) -> jax.Array:
    """TC challenger argmin_{b ≠ B} W^{G,ε}_{B,b}(μ̃, N) (Eq. 13), whatever the algorithm's own
    cost (which then enters its stopping statistic only)."""
    private = dataclasses.replace(alg, cost=cost_private)
    return transportation_cost_challenger(private, state, leader, params)


def threshold_aware_challenger(
    alg: Any, state: TopTwoState, leader: jax.Array, params: TopTwoParams
) -> jax.Array:
    """Threshold-aware challenger C = argmin_{b ≠ B} W_{B,b}(μ̃, N) / c_{B,b}(μ̃, N, n).

    Not from the paper: a variant of the TC challenger (Alg. 1 line 9; Alg. 10 line 15). The TC
    challenger equalises the costs W_{B,b} across the arms b ≠ B; this one equalises each cost
    relative to the stopping threshold it must pass, W_{B,b}/c_{B,b}, so the pair that is
    furthest from passing the GLR test (Eq. 2) is sampled next. W and c are the algorithm's own
    cost and stopping threshold (`glr_pair`), both at the TC challenger's global counts N and
    the current means μ̃: for AdaP-TT*, W^{G,ε} (Eq. 13) and c̃^{G,ε} (Eq. 14) or its heuristic
    form. For a pair whose gap is at least ε/2, c grows like ε(√N_B + √N_b) (the second branch
    of Eq. 14), so the ratio asks for more samples of that arm than equal costs would.

    Only the sampling rule changes: the stopping rule, and hence δ-correctness, is untouched
    (Lemma 23 bounds the error of the GLR test with c̃^{G,ε} for any sampling rule). The
    asymptotic allocation, and so the paper's optimality statement for AdaP-TT*, need not carry
    over (docs/threshold-aware-challenger.md). c > 0 once every arm has a sample (δ < 1).
    """
    is_leader, mu_b, n_b = leader_side(state, leader)
    num_arms = alg.num_arms(state)
    w, c = glr_pair(alg, mu_b, state.means, n_b, state.counts, state.n, num_arms, params)
    ratio = jnp.where(is_leader, jnp.inf, w / c)
    return alg.argmax(-ratio, state)


def fixed_beta(
    alg: Any,
    state: TopTwoState,
    leader: jax.Array,
    challenger: jax.Array,
    params: TopTwoParams,
) -> jax.Array:
    """The fixed tracking proportion β of Alg. 1 (``params.beta``)."""
    del alg, state, leader, challenger
    return params.beta


def beta_tracking(state: TopTwoState, beta: Scalar) -> jax.Array:
    """β-tracking (Alg. 1, line 10): arm a as the leader is pulled iff N^a_a ≤ β (L_a + 1)."""
    return state.leader_pulls <= beta * (state.leader_counts + 1)


def glr_pairs_passed(
    alg: Any, state: TopTwoState, params: TopTwoParams, tested: Scalar
) -> jax.Array:
    """Whether every pair (``tested``, b), b ≠ ``tested``, passes the GLR test (Eq. 2) at
    (μ̃, Ñ): W_{tested,b} ≥ c_{tested,b}, with the algorithm's cost and threshold."""
    width, num_arms = state.counts.shape[0], alg.num_arms(state)
    is_tested = one_hot(tested, width)
    mu_a, w_a = pick(state.means, is_tested), pick(state.local_counts, is_tested)
    cost, threshold = glr_pair(
        alg, mu_a, state.means, w_a, state.local_counts, state.n, num_arms, params
    )
    passed = (cost >= threshold) | is_tested
    if num_arms < width:  # padded arms (`TopTwo.arms`) pass
        passed = passed | (jnp.arange(width) >= num_arms)
    return every(passed)


def glr_stopping(alg: Any, state: TopTwoState, params: TopTwoParams) -> tuple[jax.Array, jax.Array]:
    """GLR stopping rule (Eq. 2) at â = argmax μ̃ against every b ≠ â; (stop, â).

    Never True before every arm was pulled once.
    """
    best = alg.argmax(state.means, state)
    passed = glr_pairs_passed(alg, state, params, best)
    return passed & (state.n >= alg.num_arms(state)), best
