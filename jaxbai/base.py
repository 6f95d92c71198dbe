"""The contracts of jaxbai: a small core per component, and capabilities on top.

`typing.Protocol`s: a class satisfies one by having its members, without inheriting, and no
caller in jaxbai (engine, `jaxbai.simulate`, `jaxbai.trial`, experiments) uses a member that a
protocol does not declare. What is optional is a *capability*, a protocol of its own that
callers test for with ``isinstance(obj, Capability)``:

* `Algorithm` — plus `Rounds` (rounds of adaptivity), `Releasing` (hands its global-DP releases
  to the caller; trials need it), `Episodic` (plans its pulls up to the next episode end,
  Appendix H), `Budgeted` (an engine step draws many samples at once) and `ReportsSamples`
  (reports a stopping time other than the samples drawn, as published code may);
* `Instance` — plus `ArmSums` (one arm's reward sum drawn exactly in O(1));
* `Estimator` (the means of a Top Two algorithm) — plus `ReleasingEstimator` and
  `EpisodicEstimator`;
* `Mechanism` (the participant-side mechanism of a local-DP estimator, for simulations, real
  trials and audits).

They are generic in their state and parameter types (``Algorithm[State, Params]``), pytrees the
component defines: an algorithm's state has the members of `RunState`, an estimator's those of
`Estimate`. K is the number of arms (static); the shape aliases below are `jax.Array`s; counts
are int32, means and rewards float32. ``docs/semantics.md §N`` fixes what the paper leaves open.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Generic, NamedTuple, Protocol, TypeVar, runtime_checkable

import jax
import numpy as np
from jax.typing import ArrayLike

__all__ = [
    "PRIVACY_MODELS",
    "Algorithm",
    "AlgorithmInfo",
    "AllocationTarget",
    "ArmSums",
    "AsymptoticBound",
    "Budgeted",
    "Episodic",
    "EpisodicEstimator",
    "Estimate",
    "Estimator",
    "Instance",
    "Key",
    "Mask",
    "Mechanism",
    "PerArm",
    "Release",
    "Releasing",
    "ReleasingEstimator",
    "ReportsSamples",
    "Rounds",
    "RunState",
    "Scalar",
    "SeparableSettle",
    "SeparableStopping",
    "missing_members",
    "protocol_members",
]

Scalar = jax.Array  # shape ()
PerArm = jax.Array  # shape (K,): one value per arm
Mask = jax.Array  # bool, shape (K,); a one-hot mask addresses one arm
Key = jax.Array  # a typed JAX PRNG key (jax.random.key)

State = TypeVar("State")
Params = TypeVar("Params")
EstimateT = TypeVar("EstimateT")

AllocationTarget = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""ω* of an algorithm: (means (K,), epsilons (E,)) → (E, K), float64 on the host."""
AsymptoticBound = Callable[[np.ndarray, float], float]
"""A bound on lim sup E[τ]/log(1/δ) of an algorithm: (means (K,), ε) → float."""

PRIVACY_MODELS = ("none", "local", "global")
"""Trust models: no privacy, ε-local DP (Definition 7), ε-global DP (Definition 8)."""


@dataclasses.dataclass(frozen=True)
class AlgorithmInfo:
    """What an algorithm is, for the engine, trials and reports (static metadata).

    Attributes:
        privacy: one of `PRIVACY_MODELS`.
        takes_epsilon: whether ε is a parameter (False: ε is ignored, e.g. TTUCB).
        participant_mechanism: the `Mechanism` participants run on their reward (local DP),
            else ``None``; its own options (γ of the Gaussian mechanism) are its attributes.
        unit_interval: whether privacy needs rewards in [0, 1].
        allocation_target: the allocation ω* that the sampling rule is known to converge to,
            ``(means (K,), epsilons (E,)) → (E, K)`` float64 on the host; None where none is
            known (an eliminating algorithm, a target the paper does not state, a component
            replaced after the factory built it).
        asymptotic_bound: the paper's bound on lim sup E[τ]/log(1/δ), ``(means (K,), ε) →
            float``; None where none is known.

    The two functions come from the factory that built the algorithm, with its options (β, σ)
    bound in, so a registered variant carries its own; every consumer (summaries, figures,
    reports) reads them here and nowhere else.
    """

    privacy: str
    takes_epsilon: bool
    participant_mechanism: Mechanism | None = None
    unit_interval: bool = False
    allocation_target: AllocationTarget | None = None
    asymptotic_bound: AsymptoticBound | None = None

    def __post_init__(self) -> None:
        if self.privacy not in PRIVACY_MODELS:
            raise ValueError(f"privacy must be one of {PRIVACY_MODELS}, got {self.privacy!r}")
        if (self.participant_mechanism is not None) != (self.privacy == "local"):
            raise ValueError("a participant mechanism goes with local DP, and only with it")


class Release(NamedTuple):
    """What an update would publish through the Laplace mechanism (global DP).

    Attributes:
        due: bool scalar, whether this update releases noisy means.
        means: the non-private means that would be released, float32 ``(K,)`` (0 elsewhere).
        counts: number of samples behind each released mean (0 where none), int32 ``(K,)``;
            the Laplace scale for arm ``a`` is ``1/(epsilon * counts[a])``.
    """

    due: Scalar
    means: PerArm
    counts: PerArm


# ---------------------------------------------------------------------------------- instances
@runtime_checkable
class Instance(Protocol):
    """Arm distributions: a pytree (e.g. a `NamedTuple` of arrays) so it can be vmapped.

    Attributes:
        means: the arms' means, float32 ``(K,)``.
        unit_interval: whether every reward lies in [0, 1] (a static Python bool, a class
            attribute: DP mechanisms with sensitivity 1 need it).
    """

    @property
    def means(self) -> PerArm: ...

    @property
    def unit_interval(self) -> bool: ...

    def sample(self, key: Key, arm: ArrayLike) -> Scalar:
        """One reward of ``arm`` (int32 scalar), a float32 scalar."""
        ...

    def draw(self, u: Scalar, key: Key, arm: ArrayLike, index: ArrayLike) -> Scalar:
        """The reward of ``arm`` at sample ``index`` (int32, the samples drawn before it), from a
        uniform ``u`` ∈ (0, 1) where inversion is cheap, else from ``key``; float32 scalar.
        I.i.d. arms ignore ``index``; a reward table reads row ``index`` (docs/semantics.md §21).
        """
        ...

    def sample_sum(self, key: Key, counts: ArrayLike, index: ArrayLike) -> PerArm:
        """For every arm a, the sum of ``counts[a]`` rewards, float32 ``(K,)``, the arms with a
        positive count pulled round-robin in index order from sample ``index`` on (i.i.d.
        arms ignore the order and ``index``)."""
        ...


@runtime_checkable
class ArmSums(Protocol):
    """Capability of an `Instance` with i.i.d. arms whose reward sums are drawn exactly in O(1),
    whatever the pulls' order and index (Bernoulli: Binomial; Gaussian: Normal). The per-episode
    simulation needs it (docs/semantics.md §25); an instance without it is simulated per sample.
    `Instance.sample_sum` of such an instance is exact in O(1) as well."""

    def sample_arm_sum(self, key: Key, arm: ArrayLike, count: ArrayLike) -> Scalar:
        """The sum of ``count`` rewards of ``arm``, a float32 scalar."""
        ...


# ---------------------------------------------------------------------------------- mechanisms
@runtime_checkable
class Mechanism(Protocol):
    """A participant-side mechanism of local DP (Definition 7), all of it in one static object.

    A local-DP `Estimator` holds one as its ``participant_mechanism``. It privatises one reward
    r ∈ [0, 1] — the range its privacy proof needs (sensitivity 1), which its callers check
    (`Algorithm.privatize`, `jaxbai.trial.secure_noise.privatize_locally`) — in two forms:
    `privatize`, the simulation sampler (JAX, traceable, from one uniform), and
    `secure_privatize`, the real trials' sampler (on the host, in double precision, from the
    operating system's CSPRNG). Its own options (γ of the Gaussian mechanism) are attributes of
    the object, hashable and static; ε is an argument, a traced array in simulations (vmapped
    over a grid) and a float in trials. jaxbai's are in `jaxbai.mechanisms`: randomised
    response (Alg. 4, Lemma 12), the Gaussian mechanism (Alg. 8, Remark 13) and the Laplace
    mechanism (Theorem 3).

    Attributes:
        name: display name (a trial's status and publication, the audit table).
        outputs: the finite set of values it outputs, ascending (``(0.0, 1.0)`` for randomised
            response), or ``None`` where it outputs any finite real; a trial records nothing
            else.
        gamma: γ of its (ε, γ)-local-DP guarantee (Alg. 8, Remark 13), ``None`` for pure
            ε-local DP; the audit certifies it with δ = γ.
    """

    name: str
    outputs: tuple[float, ...] | None
    gamma: float | None

    def added_variance(self, epsilon: jax.Array) -> jax.Array:
        """Variance it adds to a reward, added to the σ² of costs, bonuses and thresholds
        (Remark 13), float32 of ε's shape; 0 where σ already covers its outputs."""
        ...

    def privatize(self, u: ArrayLike, reward: ArrayLike, epsilon: ArrayLike) -> jax.Array:
        """The privatised reward (float32), from a uniform ``u`` ∈ (0, 1) per reward."""
        ...

    def secure_privatize(
        self, reward: float, epsilon: float, uniform: Callable[[], float]
    ) -> float:
        """The privatised reward on the host, from ``uniform()``, doubles in (0, 1) (the
        CSPRNG's `jaxbai.trial.secure_noise.secure_uniform` in a real trial); the caller
        checks r ∈ [0, 1] and ε (`jaxbai.trial.secure_noise.privatize_locally`)."""
        ...


# ---------------------------------------------------------------------------------- estimators
class Estimate(Protocol):
    """The members of an estimator's state that the Top Two driver reads (a pytree).

    Attributes:
        means: the estimator's means μ̃_a, float32 ``(K,)`` (noisy under global DP).
        local_counts: Ñ_a, the number of samples behind each mean, int32 ``(K,)``.
    """

    @property
    def means(self) -> PerArm: ...

    @property
    def local_counts(self) -> PerArm: ...


@runtime_checkable
class Estimator(Protocol[EstimateT]):
    """How a Top Two algorithm turns observations into means (Table 1's "estimator" column).

    An estimator owns the privacy of its algorithm and its own state (an `Estimate` pytree it
    defines, nested in the driver's state as ``state.estimate``). Arms are addressed by a bool
    one-hot mask ``pulled``; ``counts`` are the global counts N after the pull. Its random
    functions take one uniform ``u`` ∈ (0, 1) (float32 scalar) instead of a key.

    Attributes:
        privacy: one of `PRIVACY_MODELS`.
        participant_mechanism: under local DP, the `Mechanism` participants privatise their
            reward with (the driver applies it before `observe` and adds its
            `Mechanism.added_variance` to σ², Remark 13), else ``None``: observations are the
            raw rewards.
        unit_observations: observations given to `observe` must lie in [0, 1] (global DP).
    """

    privacy: str
    participant_mechanism: Mechanism | None
    unit_observations: bool

    def init(self, num_arms: int) -> EstimateT:
        """The state before any observation (means 0, local counts 0)."""
        ...

    def observe(
        self,
        u: Scalar,
        key: Key,
        estimate: EstimateT,
        counts: PerArm,
        pulled: Mask,
        z: Scalar,
        params: object,
    ) -> EstimateT:
        """Fold observation ``z`` of the ``pulled`` arm into the estimate. ``u`` is the step's
        mechanism uniform, ``key`` the step's key (for an update that needs more randomness
        than ``u``)."""
        ...


@runtime_checkable
class ReleasingEstimator(Protocol[EstimateT]):
    """Capability of a global-DP `Estimator` whose noisy releases a caller can supply (trials
    release with exact discrete noise from the operating system's CSPRNG)."""

    def pending_release(
        self, estimate: EstimateT, counts: PerArm, pulled: Mask, z: Scalar, params: object
    ) -> Release:
        """What observing ``z`` of ``pulled`` would release; ``counts`` before the pull."""
        ...

    def observe(
        self,
        u: Scalar,
        key: Key,
        estimate: EstimateT,
        counts: PerArm,
        pulled: Mask,
        z: Scalar,
        params: object,
        release: PerArm | None = None,
    ) -> EstimateT:
        """`Estimator.observe`; ``release`` (``(K,)``), if given, replaces the mechanism's noisy
        means of the arms that `pending_release` said are due."""
        ...


@runtime_checkable
class EpisodicEstimator(Protocol[EstimateT]):
    """Capability of an `Estimator` whose means change only at episode ends (Appendix H), so
    the pulls up to the next episode end can be planned without observations.

    Attributes:
        episodes: ``"per_arm"`` (an episode per arm) or ``"global"`` (one for all arms).
    """

    episodes: str

    def ended(self, estimate: EstimateT, counts: PerArm) -> Mask:
        """The arms whose episode has ended by ``counts`` but is not yet closed: after the pull
        that ends an episode, the arms it closes; empty at any other time."""
        ...

    def episode_pulls(self, estimate: EstimateT, counts: PerArm) -> PerArm:
        """Each arm's pulls since its current episode started, int32 ``(K,)``."""
        ...

    def observe_sums(
        self,
        u: Scalar,
        key: Key,
        estimate: EstimateT,
        counts: PerArm,
        due: Mask,
        sums: PerArm,
        params: object,
    ) -> EstimateT:
        """Close the ``due`` arms' episodes given ``sums``, their rewards' sums since the
        episodes started: the update `Estimator.observe` makes at an episode's last reward,
        had it seen those rewards one by one (docs/semantics.md §25)."""
        ...

    def rounds(self, estimate: EstimateT) -> Scalar:
        """Rounds of adaptivity C (Appendix H, docs/semantics.md §20), int32 scalar."""
        ...


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
        """What `update` with ``z`` would release through the Laplace mechanism."""
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


def protocol_members(protocol: type) -> frozenset[str]:
    """The public members a protocol declares, with those of the protocols it extends.

    Example:
        >>> sorted(protocol_members(Rounds))
        ['rounds']
    """
    names: set[str] = set()
    for cls in protocol.__mro__:
        if cls in (Protocol, Generic, object) or not getattr(cls, "_is_protocol", False):
            continue
        names.update(vars(cls).get("__annotations__", {}))
        names.update(vars(cls))
    return frozenset(name for name in names if not name.startswith("_"))


def missing_members(obj: object, protocol: type) -> list[str]:
    """The members of ``protocol`` that ``obj`` lacks, sorted (empty: it satisfies it)."""
    return sorted(name for name in protocol_members(protocol) if not hasattr(obj, name))
