"""The Top Two meta-algorithm (Alg. 1) and its instances (Table 1, Alg. 6–10).

One driver, `TopTwo`, is assembled from small components, in the style of optax:

* an estimator (`jaxbai.estimators`): MLE, CTB, Gaussian mechanism or DAF;
* a transportation cost ``cost(mu_a, mu_b, w_a, w_b, params)``: W^G (Eq. 3) or W^{G,ε} (Eq. 13);
* a leader bonus ``bonus(state, params) -> (K,)``: b^G (Eq. 3) or b^{G,ε} (Eq. 11);
* a stopping threshold ``threshold(mu_a, mu_b, w_a, w_b, n, num_arms, params)``;
* a challenger rule ``challenger(alg, state, leader, params) -> arm`` (TC challenger by default)
  and a tracking rule ``tracking_beta(alg, state, leader, challenger, params) -> β``
  (fixed β by default), so a user can plug in e.g. an IDS-style adaptive β.

Every component is a plain function of arrays; swap one with `dataclasses.replace`.

Iteration order (DESIGN semantics 2–6): the first K samples pull arms 0..K−1; afterwards each
iteration computes the recommendation â = argmax μ̃, the GLR stopping test of â against every
b ≠ â (Eq. 2), and only then the leader B (UCB), the challenger C (TC, global counts N) and the
tracking decision: L_B ← L_B + 1, pull B iff N^B_B ≤ β·L_B. DAF phase switches happen inside
`update`, right after the observation that triggers them, i.e. before the next iteration's
recommendation. Ties in every argmax/argmin are broken by a per-run random arm priority drawn at
`init`, so results are invariant in distribution to permuting the arms.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxbai import _validate, costs, estimators, mechanisms, thresholds
from jaxbai._arrays import argmax_random_ties, one_hot, pick, tree_where, uniforms_from_key


class TopTwoState(NamedTuple):
    """State of one Top Two run (arrays only; K = number of arms).

    Attributes:
        n: number of samples drawn so far (τ once stopped).
        counts: global counts N_a, int32 ``(K,)``.
        sums: running (Kahan) sum of the estimator's window: all observations (MLE, CTB,
            Gaussian) or the current phase's (DAF).
        sums_error: Kahan compensation of ``sums``.
        means: the estimator's means μ̃_a (noisy for DAF).
        local_counts: local counts Ñ_a (= N_a except for DAF).
        phase_start: N_{T_k(a),a}, the count at the start of arm a's current phase (DAF).
        phases: phase index k_a (DAF); Σ_a k_a = rounds of adaptivity.
        leader_counts: L_a, times arm a was the leader.
        leader_pulls: N^a_a, times arm a was pulled while being the leader.
        priority: per-run random arm priority for tie-breaking.
        stopped: whether the GLR stopping rule has fired.
        recommendation: â at stopping (−1 before).
    """

    n: jax.Array
    counts: jax.Array
    sums: jax.Array
    sums_error: jax.Array
    means: jax.Array
    local_counts: jax.Array
    phase_start: jax.Array
    phases: jax.Array
    leader_counts: jax.Array
    leader_pulls: jax.Array
    priority: jax.Array
    stopped: jax.Array
    recommendation: jax.Array


class TopTwoParams(NamedTuple):
    """Numeric (traced, vmappable) parameters of a Top Two algorithm.

    Attributes:
        epsilon: privacy budget ε (``inf`` for the non-private TTUCB).
        delta: risk δ.
        beta: tracking proportion β.
        sigma2: sub-Gaussian variance proxy σ² of costs, bonuses and thresholds.
        gamma: γ of the (ε, γ) Gaussian mechanism (unused otherwise).
    """

    epsilon: jax.Array
    delta: jax.Array
    beta: jax.Array
    sigma2: jax.Array
    gamma: jax.Array


# ----------------------------------------------------------------------------- components
def gaussian_cost(mu_a, mu_b, w_a, w_b, params: TopTwoParams) -> jax.Array:
    """W^G (Eq. 3) with the algorithm's σ²."""
    return costs.gaussian_cost(mu_a, mu_b, w_a, w_b, params.sigma2)


def private_cost(mu_a, mu_b, w_a, w_b, params: TopTwoParams) -> jax.Array:
    """W^{G,ε} (Eq. 13) with the algorithm's σ² and ε."""
    return costs.private_cost(mu_a, mu_b, w_a, w_b, params.sigma2, params.epsilon)


def gaussian_bonus(state: TopTwoState, params: TopTwoParams) -> jax.Array:
    """b^G_a(N) of Eq. (3), log of the number of samples so far (DESIGN semantics 5)."""
    return costs.gaussian_bonus(state.local_counts, state.n, params.sigma2)


def private_bonus_time(state: TopTwoState, params: TopTwoParams) -> jax.Array:
    """b^{G,ε}_a of Eq. (11) with k evaluated at the number of samples so far, k = log₂ n + 2."""
    k = costs.doubling_index(state.n)
    return costs.private_bonus(state.local_counts, k, params.epsilon)


def private_bonus_eq11(state: TopTwoState, params: TopTwoParams) -> jax.Array:
    """b^{G,ε}_a exactly as Eq. (11) prints it: k = log₂ Ñ_a + 2."""
    k = costs.doubling_index(state.local_counts)
    return costs.private_bonus(state.local_counts, k, params.epsilon)


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
    alg: TopTwo, state: TopTwoState, leader: jax.Array, params: TopTwoParams
) -> jax.Array:
    """TC challenger C = argmin_{a ≠ B} W_{B,a}(μ̃, N) with global counts.

    Alg. 1 line 9; Alg. 9/10 line 15 (DESIGN semantics 5).
    """
    is_leader = one_hot(leader, state.means.shape[0])
    mu_b, n_b = pick(state.means, is_leader), pick(state.counts, is_leader)
    w = alg.cost(mu_b, state.means, n_b, state.counts, params)
    w = jnp.where(is_leader, jnp.inf, w)
    return argmax_random_ties(-w, state.priority)


def fixed_beta(
    alg: TopTwo, state: TopTwoState, leader: jax.Array, challenger: jax.Array, params: TopTwoParams
) -> jax.Array:
    """The fixed tracking proportion β of Alg. 1 (``params.beta``)."""
    del alg, state, leader, challenger
    return params.beta


# ----------------------------------------------------------------------------- driver
@dataclasses.dataclass(frozen=True)
class TopTwo:
    """Top Two meta-algorithm (Alg. 1), configured statically; numbers live in `TopTwoParams`.

    Build one with a factory (`ttucb`, `ctb_tt`, `gauss_ldp_tt`, `adap_tt`, `adap_tt_star`) or
    assemble your own from components. Instances are hashable, so they can be static arguments
    of `jax.jit`.
    """

    name: str
    estimator: Any
    cost: Callable[..., jax.Array]
    bonus: Callable[..., jax.Array]
    threshold: Callable[..., jax.Array]
    challenger: Callable[..., jax.Array] = transportation_cost_challenger
    tracking_beta: Callable[..., jax.Array] = fixed_beta
    beta: float = 0.5
    sigma: float = 0.5
    gamma: float = 1e-3
    private_epsilon: bool = True
    """Whether ε is a parameter of the algorithm (False: TTUCB ignores it)."""

    @property
    def privacy(self) -> str:
        """``"none"``, ``"local"`` or ``"global"``."""
        return self.estimator.privacy

    @property
    def unit_interval(self) -> bool:
        """Whether privacy needs rewards in [0, 1]."""
        return self.estimator.unit_rewards or self.estimator.unit_observations

    # --- parameters ------------------------------------------------------------------------
    def params(
        self,
        epsilon: ArrayLike | None = None,
        delta: ArrayLike = 0.01,
        beta: ArrayLike | None = None,
        gamma: ArrayLike | None = None,
    ) -> TopTwoParams:
        """Validated numeric parameters (arrays broadcast together, so a grid can be vmapped).

        Args:
            epsilon: privacy budget ε > 0 (ignored by TTUCB; required otherwise).
            delta: risk δ ∈ (0, 1).
            beta: tracking proportion β ∈ (0, 1); defaults to the algorithm's.
            gamma: γ ∈ (0, 1) of the Gaussian mechanism; defaults to the algorithm's.

        Raises:
            ValueError: a value out of range, before anything is compiled.
        """
        if epsilon is None:
            if self.private_epsilon:
                raise ValueError(f"{self.name} needs epsilon")
            epsilon = jnp.inf
        args = (
            epsilon,
            delta,
            self.beta if beta is None else beta,
            self.gamma if gamma is None else gamma,
        )
        if _validate.is_concrete(args):
            _validate.check_epsilon(args[0])
            _validate.check_open_unit("delta", args[1])
            _validate.check_open_unit("beta", args[2])
            _validate.check_open_unit("gamma", args[3])
        eps, dlt, bta, gma = (jnp.asarray(x, jnp.float32) for x in args)
        eps, dlt, bta, gma = jnp.broadcast_arrays(eps, dlt, bta, gma)
        sigma2 = jnp.full_like(eps, self.sigma**2)
        if isinstance(self.estimator, estimators.GaussianMechanism):
            sigma2 = sigma2 + mechanisms.gaussian_mechanism_sigma(eps, gma) ** 2  # Remark 13
        return TopTwoParams(eps, dlt, bta, sigma2, gma)

    # --- ask/tell ----------------------------------------------------------------------------
    def init(self, key: jax.Array, params: TopTwoParams, num_arms: int) -> TopTwoState:
        """Empty state; the first K `select` calls return arms 0, 1, …, K−1."""
        del params
        num_arms = _validate.check_num_arms(num_arms)
        zeros_i = jnp.zeros(num_arms, jnp.int32)
        zeros_f = jnp.zeros(num_arms, jnp.float32)
        return TopTwoState(
            n=jnp.int32(0),
            counts=zeros_i,
            sums=zeros_f,
            sums_error=zeros_f,
            means=zeros_f,
            local_counts=zeros_i,
            phase_start=zeros_i,
            phases=zeros_i,
            leader_counts=zeros_i,
            leader_pulls=zeros_i,
            priority=jax.random.uniform(key, (num_arms,)),
            stopped=jnp.bool_(False),
            recommendation=jnp.int32(-1),
        )

    def leader(self, state: TopTwoState, params: TopTwoParams) -> jax.Array:
        """UCB leader B = argmax_a μ̃_a + b_a (Alg. 1, line 8)."""
        return argmax_random_ties(state.means + self.bonus(state, params), state.priority)

    def _sampling_rule(
        self, state: TopTwoState, params: TopTwoParams
    ) -> tuple[jax.Array, jax.Array]:
        """(leader, arm to pull) by β-tracking (Alg. 1, lines 8–10; DESIGN semantics 4)."""
        leader = self.leader(state, params)
        challenger = self.challenger(self, state, leader, params)
        beta = self.tracking_beta(self, state, leader, challenger, params)
        is_leader = one_hot(leader, state.means.shape[0])
        leader_count = pick(state.leader_counts, is_leader) + 1
        pull_leader = pick(state.leader_pulls, is_leader) <= beta * leader_count
        arm = jnp.where(pull_leader, leader, challenger)
        initial = state.n < state.counts.shape[0]
        return leader, jnp.where(initial, state.n, arm).astype(jnp.int32)

    def select(self, state: TopTwoState, params: TopTwoParams) -> jax.Array:
        """The arm to sample next (int32 scalar)."""
        return self._sampling_rule(state, params)[1]

    def privatize(self, key: jax.Array, reward: ArrayLike, params: TopTwoParams) -> jax.Array:
        """The user-side mechanism (randomised response / Gaussian); identity otherwise.

        Raises:
            ValueError: (eagerly) a reward outside [0, 1] for a local-DP algorithm.
        """
        if self.estimator.unit_rewards:
            _validate.check_unit_rewards("reward", reward)
        _validate.check_finite("reward", reward)
        return self.estimator.privatize(mechanisms.open_uniform(key), reward, params)

    def _record(self, u, state, leader, arm, z, params, release) -> TopTwoState:
        """Counts, tracking counters (Alg. 1, line 12) and the estimator update (line 13)."""
        num_arms = state.counts.shape[0]
        pulled, is_leader = one_hot(arm, num_arms), one_hot(leader, num_arms)
        tracked = state.n >= num_arms
        state = state._replace(
            n=state.n + 1,
            counts=state.counts + pulled,
            leader_counts=state.leader_counts + (tracked & is_leader),
            leader_pulls=state.leader_pulls + (tracked & is_leader & pulled),
        )
        z = jnp.asarray(z, jnp.float32)
        return self.estimator.observe(u, state, pulled, z, params, release)

    def update(
        self,
        key: jax.Array,
        state: TopTwoState,
        arm: ArrayLike,
        z: ArrayLike,
        params: TopTwoParams,
        release: ArrayLike | None = None,
    ) -> TopTwoState:
        """Record observation ``z`` (already privatised) of ``arm``, the arm `select` returned.

        Args:
            key: randomness for the estimator (DAF's Laplace noise).
            release: optional ``(K,)`` noisy means to use instead of drawing Laplace noise
                when this update ends a DAF phase (see `pending_release`).

        Raises:
            ValueError: (eagerly) ``z`` outside [0, 1] for DAF, or not finite. Under `jit` no
                check can run: out-of-range values then silently void the privacy guarantee,
                so validate upstream (as `jaxbai.trial` does).
        """
        if self.estimator.unit_observations:
            _validate.check_unit_rewards("z", z)
        _validate.check_finite("z", z)
        leader = self.leader(state, params)
        arm = jnp.asarray(arm, jnp.int32)
        return self._record(mechanisms.open_uniform(key), state, leader, arm, z, params, release)

    def pending_release(
        self, state: TopTwoState, arm: ArrayLike, z: ArrayLike, params: TopTwoParams
    ) -> estimators.Release:
        """What `update(…, arm, z, …)` would release through the Laplace mechanism."""
        pulled = one_hot(jnp.asarray(arm, jnp.int32), state.counts.shape[0])
        return self.estimator.pending_release(state, pulled, jnp.asarray(z, jnp.float32), params)

    def stopping(self, state: TopTwoState, params: TopTwoParams) -> tuple[jax.Array, jax.Array]:
        """GLR stopping rule (Eq. 2): (stop, â). Never True before every arm was pulled once."""
        num_arms = state.counts.shape[0]
        best = argmax_random_ties(state.means, state.priority)
        mu_b, w_b = state.means, state.local_counts
        is_best = one_hot(best, num_arms)
        mu_a, w_a = pick(state.means, is_best), pick(state.local_counts, is_best)
        cost = self.cost(mu_a, mu_b, w_a, w_b, params)
        threshold = self.threshold(mu_a, mu_b, w_a, w_b, state.n, num_arms, params)
        passed = (cost >= threshold) | is_best
        return jnp.all(passed) & (state.n >= num_arms), best

    def step(
        self, key: jax.Array, state: TopTwoState, inst: Any, params: TopTwoParams
    ) -> TopTwoState:
        """One iteration: stopping test, then select, sample, privatise, update.

        A no-op once stopped. ``key`` must be fresh for every step (e.g.
        ``fold_in(stream_key, state.n)``): its two words are used directly as the step's random
        bits, one uniform for the reward and one for the estimator's mechanism (randomised
        response, Gaussian or Laplace noise; no estimator uses two).
        """
        u_reward, u_mechanism = uniforms_from_key(key)
        stop, best = self.stopping(state, params)
        leader, arm = self._sampling_rule(state, params)
        reward = inst.draw(u_reward, key, arm)
        z = self.estimator.privatize(u_mechanism, reward, params)
        pulled = self._record(u_mechanism, state, leader, arm, z, params, None)
        halted = state._replace(stopped=jnp.bool_(True), recommendation=best)
        return tree_where(state.stopped, state, tree_where(stop, halted, pulled))

    def rounds(self, state: TopTwoState) -> jax.Array:
        """Rounds of adaptivity Σ_a k_a (Appendix H) for DAF; −1 for fully sequential estimators."""
        if isinstance(self.estimator, estimators.DAF):
            return jnp.sum(state.phases)
        return jnp.int32(-1)


# ----------------------------------------------------------------------------- factories
_THRESHOLDS = {
    "gaussian": {"theory": threshold_gaussian_theory, "heuristic": threshold_gaussian_heuristic},
    "private": {"theory": threshold_private_theory, "heuristic": threshold_private_heuristic},
    "tilde": {"theory": threshold_tilde_theory, "heuristic": threshold_tilde_heuristic},
}
_LEADER_BONUSES = {"time": private_bonus_time, "eq11": private_bonus_eq11}


def _threshold(kind: str, family: str) -> Callable[..., jax.Array]:
    if family not in thresholds.THRESHOLD_FAMILIES:
        raise ValueError(
            f"threshold must be one of {thresholds.THRESHOLD_FAMILIES}, got {family!r}"
        )
    return _THRESHOLDS[kind][family]


def _leader_bonus(leader_bonus: str) -> Callable[..., jax.Array]:
    if leader_bonus not in _LEADER_BONUSES:
        raise ValueError(
            f"leader_bonus must be one of {tuple(_LEADER_BONUSES)}, got {leader_bonus!r}"
        )
    return _LEADER_BONUSES[leader_bonus]


def _check_beta_sigma(beta: float, sigma: float) -> None:
    _validate.check_open_unit("beta", beta)
    _validate.check_positive("sigma", sigma)


def ttucb(threshold: str = "heuristic", beta: float = 0.5, sigma: float = 0.5) -> TopTwo:
    """TTUCB (Alg. 6; Jourdan & Degenne 2024): MLE, W^G and b^G (Eq. 3), c^G (Eq. 4). Not private.

    Args:
        threshold: ``"heuristic"`` (log((1 + log n)/δ)) or ``"theory"`` (Eq. 4).
        beta: tracking proportion β.
        sigma: sub-Gaussian σ (1/2 for rewards in [0, 1]).

    Example:
        >>> alg = ttucb()
        >>> params = alg.params(delta=0.01)
    """
    _check_beta_sigma(beta, sigma)
    return TopTwo(
        "ttucb",
        estimators.MLE(),
        gaussian_cost,
        gaussian_bonus,
        _threshold("gaussian", threshold),
        beta=beta,
        sigma=sigma,
        private_epsilon=False,
    )


def ctb_tt(threshold: str = "heuristic", beta: float = 0.5) -> TopTwo:
    """CTB-TT (Alg. 7): TTUCB on randomised-response bits (CTB, Alg. 4), σ = 1/2; ε-local DP."""
    _check_beta_sigma(beta, 0.5)
    return TopTwo(
        "ctb_tt",
        estimators.CTB(),
        gaussian_cost,
        gaussian_bonus,
        _threshold("gaussian", threshold),
        beta=beta,
    )


def gauss_ldp_tt(threshold: str = "heuristic", beta: float = 0.5, gamma: float = 1e-3) -> TopTwo:
    """(ε, γ)-local DP TTUCB with the Gaussian mechanism (Alg. 8, Remark 13).

    Costs, bonuses and thresholds use σ² = 1/4 + σ²_{ε,γ} (Remark 13), not the σ = 1/2 printed
    in Alg. 8 (DESIGN semantics 7).
    """
    _check_beta_sigma(beta, 0.5)
    _validate.check_open_unit("gamma", gamma)
    return TopTwo(
        "gauss_ldp_tt",
        estimators.GaussianMechanism(),
        gaussian_cost,
        gaussian_bonus,
        _threshold("gaussian", threshold),
        beta=beta,
        gamma=gamma,
    )


def adap_tt(threshold: str = "heuristic", beta: float = 0.5, leader_bonus: str = "time") -> TopTwo:
    """AdaP-TT (Alg. 9): DAF, W^G (Eq. 3), b^{G,ε} (Eq. 11), c^{G,ε} (Eq. 12); ε-global DP.

    Args:
        threshold: ``"heuristic"`` or ``"theory"`` (Eq. 12).
        beta: tracking proportion β.
        leader_bonus: ``"time"`` (default) evaluates k in b^{G,ε} at the number of samples so
            far, k = log₂ n + 2, so an arm's bonus keeps growing while it is not sampled.
            ``"eq11"`` evaluates k at the arm's local count, as Eq. (11) prints. With ``"eq11"``
            an arm whose early Laplace noise is very negative can be starved forever: its bonus
            never grows, so it is never the leader; its transportation cost is too large for it
            to be the challenger; so its phase never ends and the GLR test never passes. At small
            ε a clear fraction of runs then never stops (reported as censored).
    """
    _check_beta_sigma(beta, 0.5)
    return TopTwo(
        "adap_tt",
        estimators.DAF(),
        gaussian_cost,
        _leader_bonus(leader_bonus),
        _threshold("private", threshold),
        beta=beta,
    )


def adap_tt_star(
    threshold: str = "heuristic", beta: float = 0.5, leader_bonus: str = "time"
) -> TopTwo:
    """AdaP-TT* (Alg. 10): DAF, W^{G,ε} (Eq. 13), c̃^{G,ε} (Eq. 14); ε-global DP.

    W^{G,ε} replaces W^G in both the TC challenger and the GLR stopping rule.

    See `adap_tt` for ``leader_bonus``.

    Example:
        >>> alg = adap_tt_star(threshold="heuristic")
        >>> params = alg.params(epsilon=0.5, delta=0.01)
    """
    _check_beta_sigma(beta, 0.5)
    return TopTwo(
        "adap_tt_star",
        estimators.DAF(),
        private_cost,
        _leader_bonus(leader_bonus),
        _threshold("tilde", threshold),
        beta=beta,
    )
