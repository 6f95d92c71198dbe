"""Several δ per trajectory (docs/semantics.md §31).

The sampling rule of a Top Two algorithm does not read δ: only the stopping threshold does. So
one trajectory serves every δ of a cell: it runs until its smallest δ stops (or the budget
ends) and records, for every δ, the first n at which the stopping rule with that δ fires, with
the recommendation, counts and rounds at that n. Thresholds decrease in δ, so the largest δ not
yet stopped is the next to stop: a step tests that one only, and a step where it fires records
it and holds the trajectory (no sample), so that the next δ is tested at the same n.
`SharedDeltas` wraps such an algorithm into one that does this; `shares_deltas` decides
whether an algorithm qualifies, from what its sampling step computes rather than from a
declaration that could go stale. The trajectory's
key depends on (run, ε) only (`jaxbai.engine.jobs.SHARED_DELTA`), so each δ's record depends
on (seed, run, ε, δ) only, whatever other δ share the trajectory.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.extend.core as jex
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxbai.arrays import tree_where
from jaxbai.base import (
    Algorithm,
    AlgorithmWrapper,
    Budgeted,
    Instance,
    Key,
    Rounds,
    Scalar,
    SeparableSettle,
    SeparableStopping,
)
from jaxbai.engine.jobs import Jobs

__all__ = [
    "SharedDeltas",
    "SharedDeltasPerEpisode",
    "SharedParams",
    "SharedState",
    "in_lanes",
    "marked_stopped",
    "records",
    "rounds",
    "shared",
    "shares_deltas",
    "trajectories",
]


def _depends_on_input(jaxpr: jex.Jaxpr, index: int) -> bool:
    """Whether any output of ``jaxpr`` depends on its input ``index`` (backward liveness; an
    equation is live if any of its outputs is, and then all its inputs are, so higher-order
    primitives count conservatively)."""
    live = {v for v in jaxpr.outvars if not isinstance(v, jex.Literal)}
    for eqn in reversed(jaxpr.eqns):
        if any(v in live for v in eqn.outvars):
            live.update(v for v in eqn.invars if not isinstance(v, jex.Literal))
    return jaxpr.invars[index] in live


def shares_deltas(alg: Algorithm, inst: Instance) -> bool:
    """Whether one trajectory of ``alg`` can serve several δ (docs/semantics.md §31).

    It can if its step separates into a stopping test and a sampling part
    (`jaxbai.base.SeparableStopping`, or `jaxbai.base.SeparableSettle` for a per-episode
    simulation), its parameters hold δ in a field ``delta`` (a NamedTuple), and the sampling
    part, from `init` on, computes nothing from δ: checked on the traced program, so a
    component that reads δ (a threshold-aware challenger, say) makes the algorithm ineligible
    by itself.

    Examples:
        >>> import jaxbai
        >>> inst = jaxbai.bernoulli([0.9, 0.5])
        >>> shares_deltas(jaxbai.ttucb(), inst), shares_deltas(jaxbai.dp_se(), inst)
        (True, False)
    """
    epsilon = 1.0 if alg.info.takes_epsilon else None
    if "delta" not in getattr(alg.params(epsilon, 0.01), "_fields", ()):
        return False
    num_arms = int(jnp.shape(inst.means)[-1])
    key = jax.random.key(0)
    if isinstance(alg, Budgeted):
        if not isinstance(alg, SeparableSettle):
            return False

        def part(delta: jax.Array) -> Any:
            params = alg.params(epsilon, delta)
            state = alg.planned_pull(alg.init(key, params, num_arms), params, jnp.int32(1))
            return alg.close_episodes(key, state, inst, params)

    elif isinstance(alg, SeparableStopping):

        def part(delta: jax.Array) -> Any:
            params = alg.params(epsilon, delta)
            return alg.sample(key, alg.init(key, params, num_arms), inst, params)

    else:
        return False
    traced = jax.make_jaxpr(part)(jnp.float32(0.01))
    return not _depends_on_input(traced.jaxpr, 0)


def rounds(alg: Algorithm, state: Any) -> jax.Array:
    """Rounds of adaptivity of a `jaxbai.base.Rounds` algorithm, else −1 (int32 scalar)."""
    return alg.rounds(state) if isinstance(alg, Rounds) else jnp.int32(-1)


class SharedParams(NamedTuple):
    """Parameters of a `SharedDeltas` run: the D risks ``deltas`` ``(D,)`` its stopping tests
    use, and the algorithm's parameters at the smallest (its sampling ignores δ)."""

    deltas: jax.Array
    inner: Any


TAU, RECOMMENDATION, ROUNDS, COUNTS = 0, 1, 2, 3
"""Columns of `SharedState.record`: τ, â and rounds, then N_1 … N_K from column `COUNTS` on."""


class SharedState(NamedTuple):
    """A trajectory and its record for each of D risks.

    The D records are one int32 array, so that recording a stop updates one buffer with one
    select. A step that fires only marks the trajectory ``held``; the row is written by
    `SharedDeltas.flush`, which the engine runs over its lane pool between refills, not in
    every step (W5 of `experiments.bench`).

    Attributes:
        inner: the algorithm's state (its ``stopped`` is set once every δ has stopped).
        held: the stopping test of ``next_delta`` fired at this n; the trajectory does not move
            until `SharedDeltas.flush` records it.
        record: ``(D, 3 + K)``: row i holds δ_i's τ, â and rounds at its first stop, then its
            N_a (columns `TAU`, `RECOMMENDATION`, `ROUNDS`, `COUNTS`); â = −1 until it stops.
        next_delta: the largest δ not yet recorded, the one the next stopping test uses.
        best: â of the test that fired (read while held).
    """

    inner: Any
    held: jax.Array
    record: jax.Array
    next_delta: jax.Array
    best: jax.Array

    @property
    def n(self) -> jax.Array:
        """Samples drawn by the trajectory."""
        return self.inner.n

    @property
    def stopped(self) -> jax.Array:
        """Every δ has stopped."""
        return self.inner.stopped

    @property
    def recorded(self) -> jax.Array:
        """``(D,)`` whether δ_i has stopped."""
        return self.record[..., RECOMMENDATION] >= 0

    @property
    def tau(self) -> jax.Array:
        """``(D,)`` n at δ_i's first stop."""
        return self.record[..., TAU]

    @property
    def recommendation(self) -> jax.Array:
        """``(D,)`` â at δ_i's first stop (−1 before)."""
        return self.record[..., RECOMMENDATION]

    @property
    def rounds(self) -> jax.Array:
        """``(D,)`` rounds of adaptivity at δ_i's first stop (−1 without `jaxbai.base.Rounds`)."""
        return self.record[..., ROUNDS]

    @property
    def counts(self) -> jax.Array:
        """``(D, K)`` N_a at δ_i's first stop."""
        return self.record[..., COUNTS:]


def _row(alg: Algorithm, state: Any, best: jax.Array) -> jax.Array:
    """A record row ``(3 + K,)`` of the trajectory's state now, with recommendation ``best``."""
    head = jnp.stack([state.n, best, rounds(alg, state)]).astype(jnp.int32)
    return jnp.concatenate([head, state.counts.astype(jnp.int32)])


@dataclasses.dataclass(frozen=True)
class SharedDeltas(AlgorithmWrapper):
    """``algorithm`` run once for several δ (docs/semantics.md §31): every step tests the
    stopping rule of the largest δ not yet stopped on the trajectory's state; if it fires, the
    trajectory is held (no sample) until `flush` records that δ's first stop, so that the next
    δ is tested at the same n; else it samples (`jaxbai.base.SeparableStopping.sample`), until
    every δ has stopped. Exact for stopping rules that are monotone in δ (a rule that stops at
    δ stops at every larger δ), as every threshold family of jaxbai is.

    Parameters take ``delta`` as a ``(D,)`` vector. An `jaxbai.base.Algorithm` whose state
    reports the trajectory (`jaxbai.base.AlgorithmWrapper`: its name and info are the
    algorithm's); `records` reads each δ's outcome.

    Attributes:
        algorithm: the algorithm whose trajectories are shared.
        deferred: `step` leaves a held trajectory to the caller's `flush` (the engine's lane
            program flushes its pool between refills: a held lane idles until then, its
            results unchanged). False: `step` flushes first, on its own.
    """

    algorithm: Algorithm
    deferred: bool = False

    def params(self, epsilon: ArrayLike | None = None, delta: ArrayLike = 0.01) -> SharedParams:
        """The vector of δ, with the algorithm's parameters at min δ."""
        deltas = jnp.atleast_1d(jnp.asarray(delta, jnp.float32))
        return SharedParams(deltas, self.algorithm.params(epsilon, jnp.min(deltas)))

    def init(self, key: Key, params: SharedParams, num_arms: int) -> SharedState:
        inner = self.algorithm.init(key, params.inner, num_arms)
        record = jnp.zeros((params.deltas.shape[0], COUNTS + num_arms), jnp.int32)
        unstopped = record.at[:, RECOMMENDATION].set(-1).at[:, ROUNDS].set(-1)
        return SharedState(
            inner, jnp.bool_(False), unstopped, jnp.max(params.deltas), jnp.int32(-1)
        )

    def tests(self, state: SharedState, params: SharedParams) -> tuple[jax.Array, jax.Array]:
        """(stop, â) of the stopping rule of every δ on the trajectory's state, ``(D,)`` each.

        Vectorised over the ``delta`` field of the parameters only, so that what the rule
        computes without δ (the GLR statistic) is computed once."""
        alg = self.algorithm

        def test(delta: jax.Array) -> tuple[Scalar, Scalar]:
            return alg.stopping(state.inner, params.inner._replace(delta=delta))

        return jax.vmap(test)(params.deltas)

    def test(self, state: SharedState, params: SharedParams, tested: Scalar) -> SharedState:
        """If ``tested``, the stopping test of ``next_delta``: ``held`` says whether it fired,
        ``best`` keeps its â."""
        inner = state.inner
        stop, best = self.algorithm.stopping(inner, params.inner._replace(delta=state.next_delta))
        fired = stop & tested & ~inner.stopped
        return state._replace(held=fired, best=jnp.where(fired, best, state.best))

    def flush(self, state: SharedState, params: SharedParams) -> SharedState:
        """Record the stop a held trajectory awaits, and release it; the trajectory stops once
        every δ has. A no-op unless held.

        Entries that repeat the fired δ record together, as they would one held step after
        another (the state does not change while held). The next δ to test is a maximum over
        the pending δ (no index, no gather)."""
        inner, smallest = state.inner, jnp.min(params.deltas)
        pending = ~state.recorded
        fresh = state.held & pending & (params.deltas == state.next_delta)
        record = jnp.where(fresh[:, None], _row(self.algorithm, inner, state.best), state.record)
        left = pending & ~fresh
        return state._replace(
            inner=inner._replace(stopped=inner.stopped | (state.held & ~jnp.any(left))),
            held=jnp.bool_(False),
            record=record,
            next_delta=jnp.max(jnp.where(left, params.deltas, smallest)),
        )

    def step(self, key: Key, state: SharedState, inst: Instance, params: SharedParams):
        """`flush` (unless `deferred`), the stopping test of the next δ, then `sample` unless
        it fired; a no-op once every δ has stopped, and while held."""
        if not self.deferred:
            state = self.flush(state, params)
        tested = self.test(state, params, ~state.held)
        held = state.held | tested.held
        sampled = self.algorithm.sample(key, tested.inner, inst, params.inner)
        halt = tested.stopped | held
        return tested._replace(inner=tree_where(halt, tested.inner, sampled), held=held)

    def select(self, state: SharedState, params: SharedParams) -> Scalar:
        return self.algorithm.select(state.inner, params.inner)

    def privatize(self, key: Key, reward: ArrayLike, params: SharedParams) -> Scalar:
        return self.algorithm.privatize(key, reward, params.inner)

    def update(self, key: Key, state: SharedState, arm: ArrayLike, z: ArrayLike, params):
        inner = self.algorithm.update(key, state.inner, arm, z, params.inner)
        return state._replace(inner=inner)

    def stopping(self, state: SharedState, params: SharedParams) -> tuple[Scalar, Scalar]:
        """(every δ stops now or has stopped, â of the smallest δ)."""
        stop, best = self.tests(state, params)
        return jnp.all(stop | state.recorded), best[jnp.argmin(params.deltas)]


@dataclasses.dataclass(frozen=True)
class SharedDeltasPerEpisode(SharedDeltas):
    """`SharedDeltas` of a per-episode simulation (`jaxbai.base.Budgeted`): the stopping test
    runs after each episode end (`jaxbai.base.SeparableSettle.close_episodes`), the only times
    a run can stop, and again at the same n while the trajectory is held."""

    @property
    def samples_per_step(self) -> int:
        return self.algorithm.samples_per_step

    def planned_pull(self, state: SharedState, params: SharedParams, max_samples: Scalar):
        """The algorithm's planned pull; a no-op while held."""
        inner = self.algorithm.planned_pull(state.inner, params.inner, max_samples)
        return state._replace(inner=tree_where(state.held, state.inner, inner))

    def settle(
        self,
        stream: Key,
        state: SharedState,
        inst: Instance,
        params: SharedParams,
        max_samples: Scalar,
    ) -> SharedState:
        """Close the ended episodes, then the stopping test of the next δ (below the budget)
        if one ended or the trajectory is held, recorded at once (this runs once per episode
        end, not per sample); a trajectory that recorded a δ stays held, so that the next δ is
        tested at the same n."""
        closed, ended = self.algorithm.close_episodes(stream, state.inner, inst, params.inner)
        due = (ended | state.held) & (closed.n < max_samples)
        tested = self.test(state._replace(inner=closed), params, due)
        flushed = self.flush(tested, params)
        return flushed._replace(held=tested.held & ~flushed.stopped)

    def budgeted_step(
        self,
        stream: Key,
        state: SharedState,
        inst: Instance,
        params: SharedParams,
        max_samples: Scalar,
    ) -> SharedState:
        def pull(_: int, s: SharedState) -> SharedState:
            return self.planned_pull(s, params, max_samples)

        state = jax.lax.fori_loop(0, self.samples_per_step, pull, state)
        return self.settle(stream, state, inst, params, max_samples)


def shared(alg: Algorithm) -> SharedDeltas:
    """``alg`` run once for several δ (`SharedDeltas`, or `SharedDeltasPerEpisode` for a
    per-episode simulation); check `shares_deltas` first."""
    return SharedDeltasPerEpisode(alg) if isinstance(alg, Budgeted) else SharedDeltas(alg)


def in_lanes(alg: Algorithm) -> Algorithm:
    """``alg`` as the engine's lane program steps it: a per-sample `SharedDeltas` `deferred`
    (the program flushes its pool between refills), anything else as it is."""
    if isinstance(alg, SharedDeltas) and not isinstance(alg, Budgeted):
        return dataclasses.replace(alg, deferred=True)
    return alg


def marked_stopped(state: Any) -> Any:
    """``state`` marked stopped (a `SharedState` through its trajectory's state)."""
    if isinstance(state, SharedState):
        return state._replace(inner=marked_stopped(state.inner))
    return state._replace(stopped=jnp.ones_like(state.stopped))


def records(alg: Algorithm, state: Any) -> tuple[jax.Array, ...]:
    """(τ, stopped, â, rounds, counts) of a run: scalars (counts ``(K,)``) for a run of one δ;
    ``(D,)`` for a `SharedDeltas` run (counts ``(D, K)``), where a δ that has not stopped
    reports the trajectory's current n, counts and rounds, unstopped, â = −1."""
    if not isinstance(alg, SharedDeltas):
        return state.n, state.stopped, state.recommendation, rounds(alg, state), state.counts
    inner, done = state.inner, state.recorded
    return (
        jnp.where(done, state.tau, inner.n),
        done,
        jnp.where(done, state.recommendation, -1),
        jnp.where(done, state.rounds, rounds(alg.algorithm, inner)),
        jnp.where(done[:, None], state.counts, inner.counts),
    )


def trajectories(jobs: Jobs, pending: np.ndarray) -> np.ndarray:
    """The pending jobs grouped into shared trajectories: one row per (instance, ε, run), its
    jobs in increasing δ, ``(T, D)`` with D the largest group (a shorter row repeats its
    smallest δ's job, whose record it then writes twice)."""
    if not len(pending):
        return np.zeros((0, 1), np.int64)
    columns = [
        np.asarray(x)[pending].reshape(len(pending), -1).astype(np.float64)
        for x in jax.tree_util.tree_leaves(jobs.instance)
    ]
    columns += [
        jobs.epsilon[pending, None].astype(np.float32).astype(np.float64),
        jobs.run[pending, None].astype(np.float64),
    ]
    _, group = np.unique(np.concatenate(columns, axis=1), axis=0, return_inverse=True)
    group = group.ravel()
    order = np.lexsort((jobs.delta[pending], group))
    members = np.split(pending[order], np.flatnonzero(np.diff(group[order])) + 1)
    width = max(len(m) for m in members)
    rows = np.empty((len(members), width), np.int64)
    for t, m in enumerate(members):
        rows[t] = np.concatenate([m, np.full(width - len(m), m[0])])
    return rows
