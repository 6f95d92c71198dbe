"""The Top Two driver (Alg. 1), built from public pieces.

Pieces: `TopTwo.sampling_rule` (Alg. 1 lines 8–10), `TopTwo.count` (line 12), `TopTwo.observe`
(line 13) and `TopTwo.stopping` (Eq. 2); `TopTwo.step` is one sample. The episodic paths
(`jaxbai.toptwo.episodic`: `EpisodicTopTwo.plan` and `PerEpisode`) build on it.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxbai import checks, mechanisms
from jaxbai.arrays import (
    argmax_random_ties,
    argmax_random_ties_lanes_last,
    one_hot,
    pick,
    tree_where,
    uniforms_from_key,
)
from jaxbai.base import (
    AlgorithmInfo,
    Episodic,
    EpisodicEstimator,
    Estimator,
    Instance,
    Key,
    Mechanism,
    Release,
    ReleasingEstimator,
    Scalar,
    missing_members,
)
from jaxbai.toptwo.components import (
    Bonus,
    Challenger,
    Cost,
    Leader,
    StoppingRule,
    Threshold,
    Tracking,
    TrackingBeta,
    beta_tracking,
    fixed_beta,
    glr_stopping,
    transportation_cost_challenger,
    ucb_leader,
)
from jaxbai.toptwo.guarantees import Guarantee
from jaxbai.toptwo.state import TopTwoParams, TopTwoState

__all__ = ["TIE_RULES", "TopTwo"]

TIE_RULES = ("random", "lowest_index")
"""Tie rules of every argmax/argmin of a Top Two algorithm: the per-run random arm priority
drawn at `TopTwo.init` (the default), or the lowest index (``numpy.argmax``)."""


@dataclasses.dataclass(frozen=True)
class TopTwo:
    """Top Two meta-algorithm (Alg. 1) with a fully sequential estimator; numbers live in
    `TopTwoParams`. An episodic estimator (DAF, DPA) goes in an `EpisodicTopTwo`.

    Build one with a factory (`ttucb`, `ctb_tt`, `gauss_ldp_tt`, `adap_tt`, `adap_tt_star`) or
    assemble your own from components. Instances are hashable, so they can be static arguments
    of `jax.jit`. Satisfies `jaxbai.base.Algorithm` and `jaxbai.base.Releasing`.

    Raises:
        ValueError: the estimator lacks a member of `jaxbai.base.Estimator` (or its
            participant mechanism one of `jaxbai.base.Mechanism`), or is episodic in a
            `TopTwo` (or sequential in an `EpisodicTopTwo`).
    """

    name: str
    estimator: Estimator
    cost: Cost
    bonus: Bonus
    threshold: Threshold
    challenger: Challenger = transportation_cost_challenger
    tracking_beta: TrackingBeta = fixed_beta
    tracking: Tracking = beta_tracking
    stopping_rule: StoppingRule = glr_stopping
    leader_rule: Leader = ucb_leader
    """The leader (Alg. 1, line 8): the UCB leader with `bonus` by default."""
    ties: str = "random"
    """One of `TIE_RULES`."""
    beta: float = 0.5
    sigma: float = 0.5
    takes_epsilon: bool = True
    """Whether ε is a parameter of the algorithm (False: TTUCB ignores it)."""
    arms: int | None = None
    """The real number of arms K when the per-arm arrays are longer (padded to a power of two
    for the fused GPU kernel, docs/semantics.md §32): the padded arms are never pulled, never a
    leader, challenger or recommendation, and never enter the stopping test or a threshold's
    K; `init` draws the state of K arms and pads it. None: every array has K entries."""
    guarantee: Guarantee | None = dataclasses.field(default=None, compare=False)
    """The paper's allocation target and asymptotic bound for these components (set by the
    factories, `jaxbai.toptwo.guarantees`); `info` hands them out, with this β and σ, only
    while the components are those they were proved for. None: none known. Metadata: not
    compared, hashed or fingerprinted (no result depends on it)."""

    def __post_init__(self) -> None:
        if self.ties not in TIE_RULES:
            raise ValueError(f"{self.name}: ties must be one of {TIE_RULES}, got {self.ties!r}")
        # The mechanism first: an estimator's measure may be its mechanism's.
        mechanism = getattr(self.estimator, "participant_mechanism", None)
        missing = [] if mechanism is None else missing_members(mechanism, Mechanism)
        if missing:
            raise ValueError(
                f"{self.name}: the estimator's participant mechanism {mechanism!r} lacks "
                f"{', '.join(missing)} (jaxbai.base.Mechanism)"
            )
        missing = missing_members(self.estimator, Estimator)
        if missing:
            raise ValueError(f"{self.name}: the estimator lacks {', '.join(missing)}")
        episodic = isinstance(self.estimator, EpisodicEstimator)
        if episodic != isinstance(self, Episodic):
            kind = "EpisodicTopTwo" if episodic else "TopTwo"
            raise ValueError(f"{self.name}: {type(self.estimator).__name__} goes in a {kind}")
        # `info` builds the AlgorithmInfo, which refuses a private algorithm that takes no ε.
        if self.info.participant_mechanism is not None and isinstance(self, Episodic):
            raise ValueError(
                f"{self.name}: an episodic algorithm plans pulls and may draw one reward sum per "
                "episode, which a participant-side mechanism cannot privatise (use a TopTwo)"
            )

    @property
    def info(self) -> AlgorithmInfo:
        """Privacy model, ε, participant mechanism, [0, 1]: read from the estimator (a
        participant mechanism needs rewards in [0, 1]); allocation target and asymptotic bound
        from `guarantee`."""
        est = self.estimator
        mechanism = est.participant_mechanism
        return AlgorithmInfo(
            privacy=est.privacy,
            takes_epsilon=self.takes_epsilon,
            participant_mechanism=mechanism,
            unit_interval=mechanism is not None or est.unit_observations,
            measure=est.measure,
            release_noise=est.release_noise if isinstance(est, ReleasingEstimator) else None,
            **self._guaranteed(),
        )

    def _guaranteed(self) -> dict:
        """The allocation target and asymptotic bound of `guarantee`, where it holds."""
        g = self.guarantee
        if g is None or not g.holds_for(self):
            return {}
        return {
            "allocation_target": g.allocation_target(self.beta, self.sigma),
            "asymptotic_bound": g.asymptotic_bound(self.beta, self.sigma),
        }

    # --- parameters ------------------------------------------------------------------------
    def params(
        self,
        epsilon: ArrayLike | None = None,
        delta: ArrayLike = 0.01,
        beta: ArrayLike | None = None,
    ) -> TopTwoParams:
        """Validated numeric parameters (arrays broadcast together, so a grid can be vmapped).

        σ² is the algorithm's σ² plus the variance its participant mechanism adds at ε
        (`jaxbai.base.Mechanism.added_variance`, Remark 13), whose own options (γ) are static.

        Args:
            epsilon: privacy budget ε > 0 (ignored by TTUCB; required otherwise).
            delta: risk δ ∈ (0, 1).
            beta: tracking proportion β ∈ (0, 1); defaults to the algorithm's.

        Raises:
            ValueError: a value out of range, before anything is compiled.
        """
        if epsilon is None:
            if self.takes_epsilon:
                raise ValueError(f"{self.name} needs epsilon")
            epsilon = jnp.inf
        args = (epsilon, delta, self.beta if beta is None else beta)
        if checks.is_concrete(args):
            checks.check_epsilon(args[0])
            checks.check_open_unit("delta", args[1])
            checks.check_open_unit("beta", args[2])
        eps, dlt, bta = jnp.broadcast_arrays(*(jnp.asarray(x, jnp.float32) for x in args))
        mechanism = self.estimator.participant_mechanism
        added = jnp.zeros_like(eps) if mechanism is None else mechanism.added_variance(eps)
        return TopTwoParams(eps, dlt, bta, self.sigma**2 + added)  # Remark 13

    # --- the pieces --------------------------------------------------------------------------
    def init(self, key: Key, params: TopTwoParams, num_arms: int) -> TopTwoState:
        """Empty state; the first K `select` calls return arms 0, 1, …, K−1."""
        del params
        num_arms = checks.check_num_arms(num_arms)
        real = num_arms if self.arms is None else self.arms
        if real > num_arms:
            raise ValueError(f"{self.name}: {num_arms} arrays cannot hold {real} arms")

        def pad(x: jax.Array) -> jax.Array:  # drawn for the real arms, zeros beyond
            return jnp.pad(x, (0, num_arms - real))

        zeros = jnp.zeros(num_arms, jnp.int32)
        return TopTwoState(
            n=jnp.int32(0),
            counts=zeros,
            leader_counts=zeros,
            leader_pulls=zeros,
            priority=pad(jax.random.uniform(key, (real,))),
            stopped=jnp.bool_(False),
            recommendation=jnp.int32(-1),
            estimate=jax.tree_util.tree_map(pad, self.estimator.init(real)),
        )

    def num_arms(self, state: TopTwoState) -> int:
        """K, the real number of arms (static; `arms` when the arrays are padded)."""
        return state.counts.shape[0] if self.arms is None else self.arms

    def argmax(self, values: jax.Array, state: TopTwoState, lanes_last: bool = False) -> Scalar:
        """argmax of ``values`` ``(K,)`` with the algorithm's tie rule (`TIE_RULES`), int32;
        never a padded arm (`arms`). ``lanes_last`` for values computed lanes-last
        (`jaxbai.arrays.argmax_random_ties_lanes_last`: the same index)."""
        if self.arms is not None:
            real = jnp.arange(values.shape[0]) < self.arms
            values = jnp.where(real, values, -jnp.inf)
        if self.ties == "lowest_index":
            return jnp.argmax(values).astype(jnp.int32)
        random_ties = argmax_random_ties_lanes_last if lanes_last else argmax_random_ties
        return random_ties(values, state.priority)

    def leader(self, state: TopTwoState, params: TopTwoParams) -> Scalar:
        """The leader B by `leader_rule` (Alg. 1, line 8): argmax_a μ̃_a + b_a by default."""
        return self.leader_rule(self, state, params)

    def sampling_rule(self, state: TopTwoState, params: TopTwoParams) -> tuple[Scalar, Scalar]:
        """(leader, arm to pull) by the tracking rule (Alg. 1, lines 8–10; docs/semantics.md §4).

        Arm a, were it the leader B, would be pulled if the tracking rule says so (β-tracking:
        N^a_a ≤ β (L_a + 1)), else the challenger C; the pull is that choice read at B with one
        pick (arm n during the first K pulls), a single value the per-arm updates of `step`
        share.
        """
        leader = self.leader(state, params)
        challenger = self.challenger(self, state, leader, params)
        beta = self.tracking_beta(self, state, leader, challenger, params)
        choice = jnp.where(self.tracking(state, beta), leader, challenger)
        choice = jnp.where(state.n < self.num_arms(state), state.n, choice).astype(jnp.int32)
        return leader, pick(choice, one_hot(leader, state.counts.shape[0]))

    def count(self, state: TopTwoState, leader: Scalar, arm: Scalar) -> TopTwoState:
        """n, N and the tracking counters after pulling ``arm`` (Alg. 1, line 12)."""
        width = state.counts.shape[0]
        pulled, is_leader = one_hot(arm, width), one_hot(leader, width)
        tracked = state.n >= self.num_arms(state)
        return state._replace(
            n=state.n + 1,
            counts=state.counts + pulled,
            leader_counts=state.leader_counts + (tracked & is_leader),
            leader_pulls=state.leader_pulls + (tracked & is_leader & pulled),
        )

    def observe(
        self,
        u: Scalar,
        key: Key,
        state: TopTwoState,
        arm: Scalar,
        z: ArrayLike,
        params: TopTwoParams,
        release: ArrayLike | None = None,
    ) -> TopTwoState:
        """The estimator's update with ``z`` of ``arm`` (Alg. 1, line 13) after `count`; a
        ``release`` is ignored by an estimator that releases nothing (§26)."""
        pulled = one_hot(arm, state.counts.shape[0])
        args = (u, key, state.estimate, state.counts, pulled, jnp.asarray(z, jnp.float32), params)
        if release is not None and isinstance(self.estimator, ReleasingEstimator):
            return state._replace(estimate=self.estimator.observe(*args, release))
        if release is not None and self.estimator.privacy == "global":
            raise ValueError(f"{self.name}: its global-DP estimator cannot take a release")
        return state._replace(estimate=self.estimator.observe(*args))

    def stopping(self, state: TopTwoState, params: TopTwoParams) -> tuple[Scalar, Scalar]:
        """(stop, â) by the stopping rule (GLR, Eq. 2, by default); never True before every arm
        was pulled once."""
        return self.stopping_rule(self, state, params)

    # --- ask/tell ----------------------------------------------------------------------------
    def select(self, state: TopTwoState, params: TopTwoParams) -> Scalar:
        """The arm to sample next (int32 scalar)."""
        return self.sampling_rule(state, params)[1]

    def privatize(self, key: Key, reward: ArrayLike, params: TopTwoParams) -> Scalar:
        """The estimator's participant mechanism (`jaxbai.base.Mechanism`) at ε; identity
        without one. ValueError (eagerly) for a reward outside [0, 1] under local DP."""
        if self.estimator.participant_mechanism is not None:
            checks.check_unit_rewards("reward", reward)
        checks.check_finite("reward", reward)
        return self._privatized(mechanisms.open_uniform(key), reward, params)

    def _privatized(self, u: Scalar, reward: ArrayLike, params: TopTwoParams) -> Scalar:
        """``reward`` through the participant mechanism from the uniform ``u`` (float32; the
        reward itself without a mechanism: global DP and no privacy)."""
        mechanism = self.estimator.participant_mechanism
        if mechanism is None:
            return jnp.asarray(reward, jnp.float32)
        return mechanism.privatize(u, reward, params.epsilon)

    def update(
        self,
        key: Key,
        state: TopTwoState,
        arm: ArrayLike,
        z: ArrayLike,
        params: TopTwoParams,
        release: ArrayLike | None = None,
    ) -> TopTwoState:
        """Record observation ``z`` (already privatised) of ``arm``, the arm `select` returned.

        ``key`` is the estimator's randomness (DAF's Laplace noise); ``release``, optional
        ``(K,)`` noisy means to use instead when this update ends a DAF phase
        (`pending_release`).

        Raises:
            ValueError: (eagerly) ``z`` outside [0, 1] for DAF, or not finite. Under `jit` no
                check can run, so validate upstream (as `jaxbai.trial` does).
        """
        if self.estimator.unit_observations:
            checks.check_unit_rewards("z", z)
        checks.check_finite("z", z)
        arm = jnp.asarray(arm, jnp.int32)
        counted = self.count(state, self.leader(state, params), arm)
        return self.observe(mechanisms.open_uniform(key), key, counted, arm, z, params, release)

    def pending_release(
        self, state: TopTwoState, arm: ArrayLike, z: ArrayLike, params: TopTwoParams
    ) -> Release:
        """What `update(…, arm, z, …)` would release, with the estimator's release noise
        (nothing for an estimator that is not global-DP; ValueError for a global-DP one that
        is not a `jaxbai.base.ReleasingEstimator`)."""
        pulled = one_hot(jnp.asarray(arm, jnp.int32), state.counts.shape[0])
        z = jnp.asarray(z, jnp.float32)
        if isinstance(self.estimator, ReleasingEstimator):
            return self.estimator.pending_release(state.estimate, state.counts, pulled, z, params)
        if self.estimator.privacy == "global":
            missing = missing_members(self.estimator, ReleasingEstimator)
            raise ValueError(
                f"{self.name}: its global-DP estimator is no jaxbai.base.ReleasingEstimator "
                f"(it lacks {', '.join(missing) or 'nothing: check its signatures'})"
            )
        return Release(jnp.bool_(False), jnp.zeros_like(state.means), jnp.zeros_like(state.counts))

    def sample(
        self, key: Key, state: TopTwoState, inst: Instance, params: TopTwoParams
    ) -> TopTwoState:
        """Select, sample, privatise, update (Alg. 1, lines 8–13): `step` without its stopping
        test, so one trajectory can be tested against several thresholds
        (`jaxbai.base.SeparableStopping`, docs/semantics.md §31).

        ``key`` must be fresh for every step (``fold_in(stream, n)``): its two words are the
        step's random bits, one uniform for the reward and one for the participant mechanism
        or the estimator's own noise (DAF's Laplace noise).
        """
        u_reward, u_mechanism = uniforms_from_key(key)
        leader, arm = self.sampling_rule(state, params)
        reward = inst.draw(u_reward, key, arm, state.n)  # index n: docs/semantics.md §21
        z = self._privatized(u_mechanism, reward, params)
        return self.observe(u_mechanism, key, self.count(state, leader, arm), arm, z, params)

    def step(
        self, key: Key, state: TopTwoState, inst: Instance, params: TopTwoParams
    ) -> TopTwoState:
        """One iteration: stopping test (Eq. 2), then `sample`. A no-op once stopped."""
        stop, best = self.stopping(state, params)
        # One select per field: a run that stops now or has stopped keeps its state.
        halt = state.stopped | stop
        recommendation = jnp.where(state.stopped, state.recommendation, best)
        halted = state._replace(stopped=halt, recommendation=recommendation)
        return tree_where(halt, halted, self.sample(key, state, inst, params))
