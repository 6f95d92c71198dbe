"""The contracts of algorithms: `Algorithm`, its run state and its capabilities.

Re-exported by `jaxbai.base`, whose docstring describes the contracts.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, runtime_checkable

import jax
from jax.typing import ArrayLike

from jaxbai.base.components import (
    AlgorithmInfo,
    Instance,
    Key,
    Params,
    PerArm,
    Release,
    Scalar,
    State,
)

__all__ = [
    "Algorithm",
    "AlgorithmWrapper",
    "Budgeted",
    "Episodic",
    "Releasing",
    "ReportsSamples",
    "Rounds",
    "RunState",
    "SeparableSettle",
    "SeparableStopping",
]


# ---------------------------------------------------------------------------------- algorithms
class RunState(Protocol):
    """The members of an algorithm's state that the engine and trials read (a pytree).

    Attributes:
        n: int32 samples drawn so far (τ once stopped).
        counts: N_a, the samples drawn of each arm, int32 ``(K,)`` (they sum to ``n``).
        stopped: bool, whether the stopping rule has fired.
        recommendation: int32, â once stopped (−1 before).
    """

    @property
    def n(self) -> Scalar: ...

    @property
    def counts(self) -> PerArm: ...

    @property
    def stopped(self) -> Scalar: ...

    @property
    def recommendation(self) -> Scalar: ...


@runtime_checkable
class Algorithm(Protocol[State, Params]):
    """A fixed-confidence BAI algorithm: static configuration plus pure functions of its state.

    The object itself is static (hashable, usable as a `jax.jit` static argument); numbers that
    vary across a grid (ε, δ, β, …) live in the pytree that `params` returns, and the run's
    state is a pytree with the members of `RunState`. ``name`` and ``info`` are read on the host;
    `params` runs eagerly and traced; `init`, `select`, `privatize`, `update` and `step` run
    traced (under `jax.jit` and `jax.vmap`): pure functions of arrays, with no Python branch on
    a value. A step reads rewards only through ``inst.draw`` (with the state's sample count as
    the index), never ``inst.sample``: on a `jaxbai.instances.RewardTable` the t-th pull must
    read participant t's row (`tests/test_contract.py` checks every registered algorithm).

    Attributes:
        name: registry name (``jaxbai.ALGORITHMS``).
        info: its `AlgorithmInfo` (privacy model, ε, participant mechanism, [0, 1]).
    """

    name: str
    info: AlgorithmInfo

    def params(self, epsilon: ArrayLike | None = None, delta: ArrayLike = 0.01) -> Params:
        """Numeric parameters, a pytree of arrays broadcast together.

        Runs both eagerly and traced: `jaxbai.simulate` and trials call it with concrete values,
        which it must validate (ValueError before anything compiles); the engine calls it under
        `jax.vmap` over a grid's ε and δ (already validated), so it must also accept tracers:
        jnp operations only, and checks only where the values are concrete
        (``jaxbai.checks.is_concrete``, as `jaxbai.toptwo.TopTwo.params` does).
        """
        ...

    def init(self, key: Key, params: Params, num_arms: int) -> State:
        """The empty state for ``num_arms`` arms."""
        ...

    def select(self, state: State, params: Params) -> Scalar:
        """The arm to sample next, int32 scalar; the first K calls return 0, …, K−1."""
        ...

    def privatize(self, key: Key, reward: ArrayLike, params: Params) -> Scalar:
        """The participant-side mechanism (identity for global DP and no privacy)."""
        ...

    def update(self, key: Key, state: State, arm: ArrayLike, z: ArrayLike, params: Params) -> State:
        """Record the (privatised) observation ``z`` of ``arm``."""
        ...

    def stopping(self, state: State, params: Params) -> tuple[Scalar, Scalar]:
        """(stop, recommendation); never True before every arm was pulled once."""
        ...

    def step(self, key: Key, state: State, inst: Instance, params: Params) -> State:
        """Stopping test, then select, sample, privatise, update; a no-op once stopped.
        ``key`` is fresh for every step: the engine passes ``fold_in(stream, state.n)``."""
        ...


@dataclasses.dataclass(frozen=True)
class AlgorithmWrapper:
    """The one way to wrap an algorithm: run ``algorithm`` with some members changed.

    Every member of `Algorithm` that a subclass does not define is the wrapped algorithm's,
    called with the same arguments (as diffrax's wrapped solvers forward to theirs). Only
    `Algorithm`'s members are forwarded, never a capability's (`Rounds`, `Episodic`,
    `Budgeted`, …): a wrapper has a capability only where it defines its members, so it never
    claims one that it does not implement for its own state. A subclass is a frozen dataclass
    (hashable, a `jax.jit` static argument) whose first field is ``algorithm``.

    `step` is forwarded whole: the wrapped algorithm's step calls *its own* `select`,
    `stopping`, `update`, … So a wrapper that changes one of those members must define `step`
    too, or the engine and `jaxbai.simulate` (which run `step`) will not see the change, while a
    trial (which calls the members one by one) will. `jaxbai.toptwo.PerEpisode` and
    `jaxbai.engine.SharedDeltas` define it; a wrapper that only changes `params` or `info`
    need not.

    Examples:
        >>> import dataclasses, jaxbai
        >>> @dataclasses.dataclass(frozen=True)
        ... class Renamed(AlgorithmWrapper):
        ...     @property
        ...     def name(self) -> str:
        ...         return f"renamed_{self.algorithm.name}"
        >>> alg = Renamed(jaxbai.ttucb())
        >>> alg.name, alg.info.privacy, isinstance(alg, Algorithm), isinstance(alg, Rounds)
        ('renamed_ttucb', 'none', True, False)

    Attributes:
        algorithm: the wrapped algorithm.
    """

    algorithm: Any

    @property
    def name(self) -> str:
        return self.algorithm.name

    @property
    def info(self) -> AlgorithmInfo:
        return self.algorithm.info

    def params(self, epsilon: ArrayLike | None = None, delta: ArrayLike = 0.01) -> Any:
        return self.algorithm.params(epsilon, delta)

    def init(self, key: Key, params: Any, num_arms: int) -> Any:
        return self.algorithm.init(key, params, num_arms)

    def select(self, state: Any, params: Any) -> Scalar:
        return self.algorithm.select(state, params)

    def privatize(self, key: Key, reward: ArrayLike, params: Any) -> Scalar:
        return self.algorithm.privatize(key, reward, params)

    def update(self, key: Key, state: Any, arm: ArrayLike, z: ArrayLike, params: Any) -> Any:
        return self.algorithm.update(key, state, arm, z, params)

    def stopping(self, state: Any, params: Any) -> tuple[Scalar, Scalar]:
        return self.algorithm.stopping(state, params)

    def step(self, key: Key, state: Any, inst: Instance, params: Any) -> Any:
        return self.algorithm.step(key, state, inst, params)


@runtime_checkable
class Rounds(Protocol[State]):
    """Capability of an algorithm that counts its rounds of adaptivity (Appendix H); the
    engine reports −1 for an algorithm without it."""

    def rounds(self, state: State) -> Scalar:
        """Rounds of adaptivity C so far, int32 scalar."""
        ...


@runtime_checkable
class ReportsSamples(Protocol):
    """Capability of an algorithm (a published code's variant) that reports a stopping time
    other than τ, the samples drawn (docs/semantics.md §1): results carry it beside τ."""

    def reported_samples(self, counts: ArrayLike) -> jax.Array:
        """The stopping time reported for final counts N ``(..., K)``, int ``(...)``."""
        ...


@runtime_checkable
class Releasing(Protocol[State, Params]):
    """Capability of an algorithm whose global-DP releases a caller can supply: a trial asks
    `pending_release` before each update and passes exact noisy means as ``release``. A
    global-DP trial needs it."""

    def pending_release(
        self, state: State, arm: ArrayLike, z: ArrayLike, params: Params
    ) -> Release:
        """What `update` with ``z`` would release, with `AlgorithmInfo.release_noise`."""
        ...

    def update(
        self,
        key: Key,
        state: State,
        arm: ArrayLike,
        z: ArrayLike,
        params: Params,
        release: ArrayLike | None = None,
    ) -> State:
        """`Algorithm.update`; ``release``, if given, replaces the noisy means it releases."""
        ...


@runtime_checkable
class Budgeted(Protocol[State, Params]):
    """Capability of an algorithm whose engine step makes up to `samples_per_step` pulls at once
    (a per-episode simulation, docs/semantics.md §25). The engine runs `planned_pull`
    `samples_per_step` times over its whole lane pool, then `settle`, instead of `step`; it
    scales its chunks by `samples_per_step`. `budgeted_step` is the same for one run."""

    @property
    def samples_per_step(self) -> int: ...

    def planned_pull(self, state: State, params: Params, max_samples: Scalar) -> State:
        """Count the next pull without drawing its reward; a no-op once stopped, at
        ``max_samples``, or while an ended episode waits for `settle`."""
        ...

    def settle(
        self, stream: Key, state: State, inst: Instance, params: Params, max_samples: Scalar
    ) -> State:
        """Draw the ended episodes' rewards, close them and test stopping, with the key
        ``fold_in(stream, n)``; a no-op if no episode ended."""
        ...

    def budgeted_step(
        self, stream: Key, state: State, inst: Instance, params: Params, max_samples: Scalar
    ) -> State:
        """`samples_per_step` planned pulls, then `settle`."""
        ...


@runtime_checkable
class SeparableStopping(Protocol[State, Params]):
    """Capability of an algorithm whose `Algorithm.step` is its stopping test followed by
    `sample`: one trajectory can then be tested against the thresholds of several δ at once
    (docs/semantics.md §31), if `sample` does not read δ (`jaxbai.engine.shares_deltas`)."""

    def sample(self, key: Key, state: State, inst: Instance, params: Params) -> State:
        """`Algorithm.step` without its stopping test: select, sample, privatise, update."""
        ...


@runtime_checkable
class SeparableSettle(Protocol[State, Params]):
    """The same capability for a `Budgeted` algorithm, whose `Budgeted.settle` is
    `close_episodes` followed by the stopping test."""

    def close_episodes(
        self, stream: Key, state: State, inst: Instance, params: Params
    ) -> tuple[State, Scalar]:
        """`Budgeted.settle` without its stopping test: (state, whether an episode ended)."""
        ...


@runtime_checkable
class Episodic(Rounds[State], Protocol[State, Params]):
    """Capability of an algorithm whose pulls up to the next episode end are fixed without
    observations (Appendix H): trials enrol them as a cohort, and the engine simulates it
    episode by episode.

    Attributes:
        episodes: ``"per_arm"`` (an episode per arm) or ``"global"`` (one for all arms); it
            decides the bound on the rounds of adaptivity (Appendix H).
    """

    episodes: str

    def plan(self, state: State, params: Params, max_len: int) -> tuple[jax.Array, Scalar]:
        """(arms, length): the pulls up to the next episode end, fixed without observations
        (docs/semantics.md §19); int32 ``(max_len,)`` arms (−1 past ``length``)."""
        ...

    def per_episode(self) -> Budgeted[State, Params]:
        """The same algorithm simulated episode by episode, with the same law of (τ, â, C)
        (docs/semantics.md §25); it is an `Algorithm`, `Rounds` and `Budgeted`."""
        ...
