"""Per-episode simulation of episodic Top Two algorithms (Appendix H; docs/semantics.md §25).

Between two episode ends an episodic algorithm (DAF, DPA) keeps its means and local counts
fixed, so its pulls do not depend on the rewards (`TopTwo.plan`) and neither does the GLR
statistic; the rewards of an episode matter only through each arm's sum. `PerEpisode` runs
the same algorithm with the same law of (τ, â, C): it counts the planned pulls without drawing
rewards, and when an episode ends it draws each ending arm's reward sum at once
(``inst.sample_sum``: Binomial for Bernoulli arms, Normal for Gaussian ones), lets the
estimator close the episode (`observe_sums`) and runs the stopping test. The per-sample path
tests stopping before every pull, but between episode ends the statistic is frozen and every
threshold is non-decreasing in n, so a run can only stop right after an episode end.

Only the law is the same: a job's numbers differ from the per-sample path's (the random draws
differ), and are reproducible on their own terms (step keys ``fold_in(stream, n)`` taken at
episode ends).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp

from jaxbai._arrays import tree_where, uniforms_from_key
from jaxbai.base import Instance
from jaxbai.toptwo.state import TopTwoParams, TopTwoState

if TYPE_CHECKING:
    from jaxbai.toptwo.driver import TopTwo

__all__ = ["PULLS_PER_STEP", "PerEpisode"]

PULLS_PER_STEP = 128
"""Planned pulls per engine step: a lane whose episode ends early idles for the rest of the
step, and every step ends with one reward draw and stopping test (docs/semantics.md §25).
Measured on AdaP-TT(*), mu1 (W4 of `experiments.bench`): 64 pulls gave 1.5–1.9 ×, 128 gave
2.4–2.6 × the per-sample path's samples/s."""

_INT32_MAX = 2**31 - 1


@dataclasses.dataclass(frozen=True)
class PerEpisode:
    """An episodic `TopTwo` simulated episode by episode (see the module docstring).

    Every attribute and method but `step` and `budgeted_step` is the wrapped algorithm's, so
    this satisfies `jaxbai.base.Algorithm` with the same name, parameters, state and plan.
    Build one with ``alg.per_episode()`` or let the engine choose (``draws="auto"``).

    Attributes:
        algorithm: the episodic algorithm.
        pulls: planned pulls per `budgeted_step`.
    """

    algorithm: TopTwo
    pulls: int = PULLS_PER_STEP

    def __post_init__(self) -> None:
        if not self.algorithm.episodic:
            raise ValueError(
                f"{self.algorithm.name} is fully sequential (not episodic): it has no "
                "per-episode simulation"
            )
        if not isinstance(self.pulls, int) or self.pulls < 1:
            raise ValueError(f"pulls must be a positive integer, got {self.pulls!r}")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.algorithm, name)

    @property
    def samples_per_step(self) -> int:
        """At most this many samples per `budgeted_step` (the engine scales its chunks)."""
        return self.pulls

    def planned_pull(
        self, state: TopTwoState, params: TopTwoParams, max_samples: jax.Array
    ) -> TopTwoState:
        """Count the next planned pull (Alg. 1, lines 8–12) without drawing its reward; a no-op
        once stopped, at the budget, or while an ended episode waits for its rewards."""
        alg = self.algorithm
        leader, arm = alg._sampling_rule(state, params)
        return tree_where(self.waiting(state, max_samples), state, alg._count(state, leader, arm))

    def waiting(self, state: TopTwoState, max_samples: jax.Array) -> jax.Array:
        """Whether `planned_pull` is a no-op: stopped, at the budget, or an episode ended."""
        pending = jnp.any(self.algorithm.estimator.pending(state))
        return state.stopped | (state.n >= max_samples) | pending

    def settle(
        self,
        stream: jax.Array,
        state: TopTwoState,
        inst: Instance,
        params: TopTwoParams,
        max_samples: jax.Array,
    ) -> TopTwoState:
        """Draw the ended episodes' reward sums, close them, then test stopping (Eq. 2).

        Each ending arm's sum covers its pulls since its episode started; the stopping test
        runs only after an episode end and below the budget, as the per-sample step would.
        Keyed by ``fold_in(stream, n)``, the key the per-sample path gives step n.
        """
        alg = self.algorithm
        key = jax.random.fold_in(stream, state.n)
        due = alg.estimator.pending(state) & ~state.stopped
        ended = jnp.any(due)
        counts = jnp.where(due, state.counts - state.phase_start, 0)
        sums = self._episode_sums(jax.random.fold_in(key, 3), inst, due, counts, state.n)
        u_mechanism = uniforms_from_key(key)[1]
        closed = alg.estimator.observe_sums(u_mechanism, key, state, due, sums, params)
        stop, best = alg.stopping(closed, params)
        stop = stop & (closed.n < max_samples)
        halted = closed._replace(stopped=jnp.bool_(True), recommendation=best)
        return tree_where(ended, tree_where(stop, halted, closed), state)

    def _episode_sums(
        self, key: jax.Array, inst: Instance, due: jax.Array, counts: jax.Array, n: jax.Array
    ) -> jax.Array:
        """Each due arm's reward sum over ``counts`` pulls, float32 ``(K,)`` (0 elsewhere).

        With per-arm episodes at most one arm is due at a time (the pulled one), so one scalar
        draw replaces K: the draw is most of the cost of an episode end.
        """
        if self.algorithm.estimator.episodes == "global":
            return inst.sample_sum(key, counts, n)
        arm = jnp.argmax(due)
        return jnp.where(due, inst.sample_arm_sum(key, arm, jnp.sum(counts)), 0.0)

    def budgeted_step(
        self,
        stream: jax.Array,
        state: TopTwoState,
        inst: Instance,
        params: TopTwoParams,
        max_samples: jax.Array,
    ) -> TopTwoState:
        """Up to `pulls` planned pulls (never past ``max_samples`` or an episode end), then
        `settle`. For one run (`jaxbai.engine.run_vmap`); the grid engine runs the pulls over
        its whole lane pool, which keeps the pool's memory layout."""

        def pull(_: int, s: TopTwoState) -> TopTwoState:
            return self.planned_pull(s, params, max_samples)

        state = jax.lax.fori_loop(0, self.pulls, pull, state)
        return self.settle(stream, state, inst, params, max_samples)

    def step(
        self, key: jax.Array, state: TopTwoState, inst: Instance, params: TopTwoParams
    ) -> TopTwoState:
        """`budgeted_step` without a budget, ``key`` as the stream (a fresh key per call)."""
        return self.budgeted_step(key, state, inst, params, jnp.int32(_INT32_MAX))
