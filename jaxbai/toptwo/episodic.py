"""Episodic Top Two (Appendix H): `EpisodicTopTwo` and `PerEpisode`, its simulation episode by
episode.

`EpisodicTopTwo.plan` (the pulls up to the next episode end) and `PerEpisode` (the engine's
per-episode path, docs/semantics.md §25: between episode ends the pulls do not depend on the
rewards, so each ending arm's reward sum is drawn at once) share `EpisodicTopTwo.planned_pull`
and `EpisodicTopTwo.episode_ended`.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxbai import checks
from jaxbai.arrays import tree_where, uniforms_from_key
from jaxbai.base import AlgorithmWrapper, EpisodicEstimator, Instance, Key, Scalar
from jaxbai.toptwo.driver import TopTwo
from jaxbai.toptwo.state import TopTwoParams, TopTwoState

__all__ = ["PULLS_PER_STEP", "EpisodicTopTwo", "PerEpisode"]

PULLS_PER_STEP = 128
"""Planned pulls per engine step of `PerEpisode` (a lane whose episode ends early idles for the
rest of the step). W4 of `experiments.bench` (AdaP-TT(*), mu1): 64 pulls gave 1.5–1.9 ×, 128
gave 2.4–2.6 × the per-sample path's samples/s."""


@dataclasses.dataclass(frozen=True)
class EpisodicTopTwo(TopTwo):
    """Top Two with an episodic estimator (DAF, DPA; Appendix H): a `TopTwo` that also satisfies
    `jaxbai.base.Episodic` (rounds, plan, per-episode simulation)."""

    estimator: EpisodicEstimator

    @property
    def episodes(self) -> str:
        """The estimator's episode mode, ``"per_arm"`` or ``"global"``."""
        return self.estimator.episodes

    def rounds(self, state: TopTwoState) -> Scalar:
        """Rounds of adaptivity (Appendix H), as the estimator counts them."""
        return self.estimator.rounds(state.estimate)

    def planned_pull(self, state: TopTwoState, params: TopTwoParams) -> tuple[TopTwoState, Scalar]:
        """Select and count the next pull without observing it (Alg. 1, lines 8–12): between
        episode ends the sampling rule reads only counts (docs/semantics.md §19)."""
        leader, arm = self.sampling_rule(state, params)
        return self.count(state, leader, arm), arm

    def episode_ended(self, state: TopTwoState) -> Scalar:
        """Whether an episode has ended by the counts and awaits its observations."""
        return jnp.any(self.estimator.ended(state.estimate, state.counts))

    def plan(
        self, state: TopTwoState, params: TopTwoParams, max_len: int
    ) -> tuple[jax.Array, Scalar]:
        """The next pulls up to and including the one that ends the next episode (Appendix H).

        Between episode ends an episodic estimator's means and local counts are frozen, so the
        plan is exactly what `select` returns over those pulls, whatever the rewards
        (docs/semantics.md §19). The stopping test runs before each planned pull, as in
        `step`; a run that stops ends the plan. Jittable and vmappable.

        Returns ``(arms, length)``: int32 ``(max_len,)`` arms (−1 past ``length``, ``max_len``
        static) and the int32 number of planned pulls, capped at ``max_len``.

        Examples:
            >>> import jax, jaxbai
            >>> alg = jaxbai.adap_tt()
            >>> params = alg.params(epsilon=1.0, delta=0.01)
            >>> state = alg.init(jax.random.key(0), params, num_arms=3)
            >>> arms, length = alg.plan(state, params, max_len=4)
            >>> arms.tolist(), int(length)  # the first pull closes arm 0's phase 0
            ([0, -1, -1, -1], 1)
        """

        def pull(carry, _):
            state, done = carry
            stop, _ = self.stopping(state, params)
            counted, arm = self.planned_pull(state, params)
            live = ~(done | stop)
            state = tree_where(live, counted, state)
            return (state, done | stop | self.episode_ended(counted)), jnp.where(live, arm, -1)

        start = (state, jnp.asarray(state.stopped))
        _, arms = jax.lax.scan(pull, start, None, length=max_len)
        return arms, jnp.sum(arms >= 0).astype(jnp.int32)

    def per_episode(self, pulls: int = PULLS_PER_STEP) -> PerEpisode:
        """This algorithm simulated episode by episode: same law of (τ, â, C), rewards drawn
        as one sum per arm and episode (docs/semantics.md §25). The engine uses it by default
        for episodic algorithms on instances with `jaxbai.base.ArmSums` (``draws="auto"``)."""
        return PerEpisode(self, pulls)


@dataclasses.dataclass(frozen=True)
class PerEpisode(AlgorithmWrapper):
    """An `EpisodicTopTwo` simulated episode by episode (docs/semantics.md §25).

    Between episode ends the means, local counts and so the pulls and the GLR statistic do not
    depend on the rewards. This counts planned pulls without rewards (`planned_pull`); at an
    episode end it draws each ending arm's reward sum at once, closes the episode and tests
    stopping (`settle`): thresholds are non-decreasing in n, so a run can only stop then. The
    law of (τ, â, C) is the per-sample path's; the numbers are not (other draws). It satisfies
    `jaxbai.base.Algorithm` (the algorithm's name, parameters and state), `jaxbai.base.Rounds`
    and `jaxbai.base.Budgeted`; its other members of `jaxbai.base.Algorithm` are the algorithm's
    (`jaxbai.base.AlgorithmWrapper`).

    Attributes:
        algorithm: the episodic algorithm.
        pulls: planned pulls per `budgeted_step`.
    """

    algorithm: EpisodicTopTwo
    pulls: int = PULLS_PER_STEP

    def __post_init__(self) -> None:
        if not isinstance(self.algorithm, EpisodicTopTwo):
            raise ValueError(f"{self.algorithm.name} is not an EpisodicTopTwo")
        if not isinstance(self.pulls, int) or self.pulls < 1:
            raise ValueError(f"pulls must be a positive integer, got {self.pulls!r}")

    @property
    def samples_per_step(self) -> int:
        """At most this many samples per `budgeted_step` (the engine scales its chunks)."""
        return self.pulls

    def rounds(self, state: TopTwoState) -> Scalar:
        return self.algorithm.rounds(state)

    def planned_pull(
        self, state: TopTwoState, params: TopTwoParams, max_samples: Scalar
    ) -> TopTwoState:
        """Count the next planned pull without drawing its reward; a no-op once stopped, at the
        budget, or while an ended episode waits for its rewards."""
        alg = self.algorithm
        waiting = state.stopped | (state.n >= max_samples) | alg.episode_ended(state)
        return tree_where(waiting, state, alg.planned_pull(state, params)[0])

    def settle(
        self,
        stream: Key,
        state: TopTwoState,
        inst: Instance,
        params: TopTwoParams,
        max_samples: Scalar,
    ) -> TopTwoState:
        """`close_episodes`, then test stopping (Eq. 2) if an episode ended.

        The stopping test runs only after an episode end and below the budget, as the
        per-sample step would.
        """
        closed, ended = self.close_episodes(stream, state, inst, params)
        stop, best = self.algorithm.stopping(closed, params)
        stop = ended & stop & (closed.n < max_samples)
        halted = closed._replace(stopped=jnp.bool_(True), recommendation=best)
        return tree_where(stop, halted, closed)

    def close_episodes(
        self, stream: Key, state: TopTwoState, inst: Instance, params: TopTwoParams
    ) -> tuple[TopTwoState, Scalar]:
        """Draw the ended episodes' reward sums and close them: `settle` without its stopping
        test (`jaxbai.base.SeparableSettle`, docs/semantics.md §31).

        Each ending arm's sum covers its pulls since its episode started. Keyed by
        ``fold_in(stream, n)``, the key the per-sample path gives step n. Returns the state
        (unchanged if no episode ended) and whether one ended.
        """
        estimator = self.algorithm.estimator
        key = jax.random.fold_in(stream, state.n)
        due = estimator.ended(state.estimate, state.counts) & ~state.stopped
        pulls = jnp.where(due, estimator.episode_pulls(state.estimate, state.counts), 0)
        sums = self._episode_sums(jax.random.fold_in(key, 3), inst, due, pulls, state.n)
        u_mechanism = uniforms_from_key(key)[1]
        estimate = estimator.observe_sums(
            u_mechanism, key, state.estimate, state.counts, due, sums, params
        )
        ended = jnp.any(due)
        return tree_where(ended, state._replace(estimate=estimate), state), ended

    def _episode_sums(
        self, key: Key, inst: Instance, due: jax.Array, pulls: jax.Array, n: Scalar
    ) -> jax.Array:
        """Each due arm's reward sum over ``pulls`` pulls, float32 ``(K,)`` (0 elsewhere).

        With per-arm episodes at most one arm is due at a time (the pulled one), so one scalar
        draw replaces K: the draw is most of the cost of an episode end.
        """
        if self.algorithm.episodes == "global":
            return inst.sample_sum(key, pulls, n)
        arm = jnp.argmax(due)
        return jnp.where(due, inst.sample_arm_sum(key, arm, jnp.sum(pulls)), 0.0)

    def budgeted_step(
        self,
        stream: Key,
        state: TopTwoState,
        inst: Instance,
        params: TopTwoParams,
        max_samples: Scalar,
    ) -> TopTwoState:
        """Up to `pulls` planned pulls (never past ``max_samples`` or an episode end), then
        `settle`. For one run (`jaxbai.engine.run_vmap`); the grid engine runs the pulls over
        its whole lane pool, which keeps the pool's memory layout."""

        def pull(_: int, s: TopTwoState) -> TopTwoState:
            return self.planned_pull(s, params, max_samples)

        state = jax.lax.fori_loop(0, self.pulls, pull, state)
        return self.settle(stream, state, inst, params, max_samples)

    def step(
        self, key: Key, state: TopTwoState, inst: Instance, params: TopTwoParams
    ) -> TopTwoState:
        """`budgeted_step` without a budget, ``key`` as the stream (a fresh key per call)."""
        return self.budgeted_step(key, state, inst, params, jnp.int32(checks.COUNT_MAX))
