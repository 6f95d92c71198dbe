"""The Top Two driver (Alg. 1): one algorithm object assembled from components."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxbai import _validate, mechanisms
from jaxbai._arrays import argmax_random_ties, one_hot, pick, tree_where, uniforms_from_key
from jaxbai.base import (
    Bonus,
    Challenger,
    Cost,
    Estimator,
    Instance,
    Release,
    Threshold,
    TrackingBeta,
)
from jaxbai.toptwo.components import fixed_beta, transportation_cost_challenger
from jaxbai.toptwo.episodes import PULLS_PER_STEP, PerEpisode
from jaxbai.toptwo.state import TopTwoParams, TopTwoState

__all__ = ["TopTwo"]


@dataclasses.dataclass(frozen=True)
class TopTwo:
    """Top Two meta-algorithm (Alg. 1), configured statically; numbers live in `TopTwoParams`.

    Build one with a factory (`ttucb`, `ctb_tt`, `gauss_ldp_tt`, `adap_tt`, `adap_tt_star`) or
    assemble your own from components. Instances are hashable, so they can be static arguments
    of `jax.jit`.
    """

    name: str
    estimator: Estimator
    cost: Cost
    bonus: Bonus
    threshold: Threshold
    challenger: Challenger = transportation_cost_challenger
    tracking_beta: TrackingBeta = fixed_beta
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

    @property
    def local_mechanism(self) -> str | None:
        """The participant-side mechanism (local DP), else None."""
        return self.estimator.local_mechanism

    @property
    def mechanism_gamma(self) -> float | None:
        """γ of the participant-side mechanism if it takes one, else None."""
        return self.gamma if self.estimator.takes_gamma else None

    @property
    def episodic(self) -> bool:
        """Whether the means change only at episode ends (Appendix H)."""
        return self.estimator.episodic

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
        sigma2 = self.sigma**2 + self.estimator.added_variance(eps, gma)  # Remark 13
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
        """(leader, arm to pull) by β-tracking (Alg. 1, lines 8–10; docs/semantics.md §4).

        Arm a, were it the leader B, would be pulled if N^a_a ≤ β (L_a + 1), else the
        challenger C; the pull is that choice read at B (arm n during the first K pulls).
        Reading it with one pick gives the arm as a single value, which the per-arm updates of
        `step` then share instead of each recomputing the tracking test.
        """
        leader = self.leader(state, params)
        challenger = self.challenger(self, state, leader, params)
        beta = self.tracking_beta(self, state, leader, challenger, params)
        num_arms = state.counts.shape[0]
        tracked = state.leader_pulls <= beta * (state.leader_counts + 1)
        choice = jnp.where(tracked, leader, challenger)
        choice = jnp.where(state.n < num_arms, state.n, choice).astype(jnp.int32)
        return leader, pick(choice, one_hot(leader, num_arms))

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

    @staticmethod
    def _count(state: TopTwoState, leader: jax.Array, arm: jax.Array) -> TopTwoState:
        """n, N and the tracking counters after pulling ``arm`` (Alg. 1, line 12)."""
        num_arms = state.counts.shape[0]
        pulled, is_leader = one_hot(arm, num_arms), one_hot(leader, num_arms)
        tracked = state.n >= num_arms
        return state._replace(
            n=state.n + 1,
            counts=state.counts + pulled,
            leader_counts=state.leader_counts + (tracked & is_leader),
            leader_pulls=state.leader_pulls + (tracked & is_leader & pulled),
        )

    def _record(self, u, key, state, leader, arm, z, params, release) -> TopTwoState:
        """Counts, tracking counters (Alg. 1, line 12) and the estimator update (line 13)."""
        pulled = one_hot(arm, state.counts.shape[0])
        state = self._count(state, leader, arm)
        z = jnp.asarray(z, jnp.float32)
        return self.estimator.observe(u, key, state, pulled, z, params, release)

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
        u = mechanisms.open_uniform(key)
        return self._record(u, key, state, leader, arm, z, params, release)

    def pending_release(
        self, state: TopTwoState, arm: ArrayLike, z: ArrayLike, params: TopTwoParams
    ) -> Release:
        """What `update(…, arm, z, …)` would release through the Laplace mechanism."""
        pulled = one_hot(jnp.asarray(arm, jnp.int32), state.counts.shape[0])
        return self.estimator.pending_release(state, pulled, jnp.asarray(z, jnp.float32), params)

    def stopping(self, state: TopTwoState, params: TopTwoParams) -> tuple[jax.Array, jax.Array]:
        """GLR stopping rule (Eq. 2): (stop, â). Never True before every arm was pulled once."""
        num_arms = state.counts.shape[0]
        best = argmax_random_ties(state.means, state.priority)
        mu_b, w_b = state.means, state.local_counts
        is_best = one_hot(best, num_arms)
        mu_a, w_a = jnp.max(state.means), pick(state.local_counts, is_best)  # μ̃_â = max μ̃
        cost = self.cost(mu_a, mu_b, w_a, w_b, params)
        threshold = self.threshold(mu_a, mu_b, w_a, w_b, state.n, num_arms, params)
        passed = (cost >= threshold) | is_best
        return jnp.all(passed) & (state.n >= num_arms), best

    def step(
        self, key: jax.Array, state: TopTwoState, inst: Instance, params: TopTwoParams
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
        reward = inst.draw(u_reward, key, arm, state.n)  # index n: docs/semantics.md §21
        z = self.estimator.privatize(u_mechanism, reward, params)
        pulled = self._record(u_mechanism, key, state, leader, arm, z, params, None)
        # One select per field: a run that stops now or has stopped keeps its state.
        halt = state.stopped | stop
        recommendation = jnp.where(state.stopped, state.recommendation, best)
        halted = state._replace(stopped=halt, recommendation=recommendation)
        return tree_where(halt, halted, pulled)

    def rounds(self, state: TopTwoState) -> jax.Array:
        """Rounds of adaptivity (Appendix H), as the estimator counts them; −1 if sequential."""
        return self.estimator.rounds(state)

    def plan(
        self, state: TopTwoState, params: TopTwoParams, max_len: int
    ) -> tuple[jax.Array, jax.Array]:
        """The next pulls up to and including the one that ends the next episode (Appendix H).

        Between episode ends an episodic estimator's means and local counts are frozen, so the
        sampling rule reads only counts: the plan is exactly what `select` returns over those
        pulls, whatever the rewards (docs/semantics.md §19). The stopping test runs before each
        planned pull, as in `step`; a run that stops ends the plan. Jittable and vmappable.

        Args:
            state: the current state (before the next pull).
            params: numeric parameters.
            max_len: static length of the returned array.

        Returns:
            ``(arms, length)``: int32 ``(max_len,)`` arms (−1 past ``length``) and the int32
            number of planned pulls, capped at ``max_len``.

        Raises:
            ValueError: the algorithm is fully sequential (its estimator is not episodic).

        Example:
            >>> import jax, jaxbai
            >>> alg = jaxbai.adap_tt()
            >>> params = alg.params(epsilon=1.0, delta=0.01)
            >>> state = alg.init(jax.random.key(0), params, num_arms=3)
            >>> arms, length = alg.plan(state, params, max_len=4)
            >>> arms.tolist(), int(length)  # the first pull closes arm 0's phase 0
            ([0, -1, -1, -1], 1)
        """
        if not self.episodic:
            raise ValueError(f"{self.name} is fully sequential (not episodic): it has no plan")
        num_arms = state.counts.shape[0]

        def pull(carry, _):
            state, done = carry
            stop, _ = self.stopping(state, params)
            leader, arm = self._sampling_rule(state, params)
            pulled = one_hot(arm, num_arms)
            ends = jnp.any(self.estimator.episode_due(state, state.counts + pulled, pulled))
            live = ~(done | stop)
            state = tree_where(live, self._count(state, leader, arm), state)
            return (state, done | stop | ends), jnp.where(live, arm, -1)

        start = (state, jnp.asarray(state.stopped))
        _, arms = jax.lax.scan(pull, start, None, length=max_len)
        return arms, jnp.sum(arms >= 0).astype(jnp.int32)

    def per_episode(self, pulls: int = PULLS_PER_STEP) -> PerEpisode:
        """This algorithm simulated episode by episode: same law of (τ, â, C), rewards drawn
        as one sum per arm and episode (docs/semantics.md §25). The engine uses it by default
        for episodic algorithms on instances with ``iid_sums`` (``draws="auto"``).

        Raises:
            ValueError: the algorithm is fully sequential (its estimator is not episodic).
        """
        return PerEpisode(self, pulls)
