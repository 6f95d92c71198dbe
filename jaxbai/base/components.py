"""The contracts of the components: shapes, `AlgorithmInfo`, instances, mechanisms, estimators.

Re-exported by `jaxbai.base`, whose docstring describes the contracts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Generic, NamedTuple, Protocol, TypeVar, runtime_checkable

import jax
import numpy as np
from jax.typing import ArrayLike

from jaxbai.base.privacy import PrivacyMeasure, claim

__all__ = [
    "PRIVACY_MODELS",
    "AlgorithmInfo",
    "AllocationTarget",
    "ArmSums",
    "AsymptoticBound",
    "EpisodicEstimator",
    "Estimate",
    "Estimator",
    "Instance",
    "Key",
    "Mask",
    "Mechanism",
    "PerArm",
    "Release",
    "ReleasingEstimator",
    "Scalar",
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
"""Trust models: no privacy, local DP (Definition 7), global DP (Definition 8)."""

RELEASE_NOISES = ("laplace", "gaussian")
"""The noise of a global-DP algorithm's releases (`AlgorithmInfo.release_noise`)."""


@dataclasses.dataclass(frozen=True)
class AlgorithmInfo:
    """What an algorithm is, for the engine, trials and reports (static metadata).

    Attributes:
        privacy: one of `PRIVACY_MODELS`, the trust model.
        takes_epsilon: whether ε is a parameter (False: ε is ignored, e.g. TTUCB).
        participant_mechanism: the `Mechanism` participants run on their reward (local DP),
            else ``None``; its own options (γ of the Gaussian mechanism) are its attributes.
        unit_interval: whether privacy needs rewards in [0, 1].
        measure: what ε guarantees (`jaxbai.base.PrivacyMeasure`), ``None`` without privacy;
            under local DP the participant mechanism's.
        release_noise: the noise of a global-DP algorithm's releases, one of `RELEASE_NOISES`
            (Laplace: pure ε-DP; Gaussian: zCDP or (ε, δ)-DP, never pure: its privacy loss is
            unbounded), else ``None``; a trial releases with exact noise of this kind.
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
    measure: PrivacyMeasure | None = None
    release_noise: str | None = None
    allocation_target: AllocationTarget | None = dataclasses.field(
        default=None, repr=False, compare=False
    )
    asymptotic_bound: AsymptoticBound | None = dataclasses.field(
        default=None, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if self.privacy not in PRIVACY_MODELS:
            raise ValueError(f"privacy must be one of {PRIVACY_MODELS}, got {self.privacy!r}")
        if (self.participant_mechanism is not None) != (self.privacy == "local"):
            raise ValueError("a participant mechanism goes with local DP, and only with it")
        if self.privacy != "none" and not self.takes_epsilon:
            raise ValueError(
                f"a {self.privacy}-DP algorithm takes ε (takes_epsilon=True): without it its "
                "mechanism would run at ε = ∞ and publish raw rewards"
            )
        if (self.measure is None) != (self.privacy == "none"):
            raise ValueError(
                "a private algorithm states its privacy measure (jaxbai.base.PrivacyMeasure: "
                "what ε guarantees), and only a private one"
            )
        mechanism = self.participant_mechanism
        if mechanism is not None and self.measure != mechanism.measure:
            raise ValueError(
                f"a local-DP algorithm's measure is its participant mechanism's "
                f"({mechanism.measure}), got {self.measure}"
            )
        _check_release_noise(self.release_noise, self.measure, self.privacy)

    @property
    def claim(self) -> str:
        """The privacy claim in words (`jaxbai.base.PrivacyMeasure.describe`), e.g.
        ``"ε-DP (global, pure)"``; ``"not private"`` without privacy."""
        return claim(self.measure, self.privacy)


def _check_release_noise(noise: str | None, measure: PrivacyMeasure | None, privacy: str) -> None:
    """ValueError unless ``noise`` (`AlgorithmInfo.release_noise`) fits the trust model and the
    measure: only global DP releases; Laplace noise gives pure ε-DP, Gaussian noise zCDP or
    (ε, δ)-DP and never pure ε-DP (its privacy loss is unbounded)."""
    if noise is None:
        return
    if privacy != "global":
        raise ValueError(f"release noise goes with global DP, got {noise!r} under {privacy!r}")
    if noise not in RELEASE_NOISES:
        raise ValueError(f"release noise must be one of {RELEASE_NOISES}, got {noise!r}")
    if noise == "laplace" and measure.kind != "pure":
        raise ValueError(f"Laplace releases give pure ε-DP: state PURE, not {measure}")
    if noise == "gaussian" and measure.kind == "pure":
        raise ValueError(
            "Gaussian releases have unbounded privacy loss: they are not pure ε-DP (state "
            "zcdp() or approximate_dp(δ_p), jaxbai.base.privacy)"
        )


class Release(NamedTuple):
    """What an update would publish (global DP), with the algorithm's `AlgorithmInfo.release_noise`.

    Attributes:
        due: bool scalar, whether this update releases noisy means.
        means: the non-private means that would be released, float32 ``(K,)`` (0 elsewhere).
        counts: number of samples behind each released mean (0 where none), int32 ``(K,)``:
            the mean of arm ``a`` has sensitivity ``1/counts[a]`` for rewards in [0, 1], and
            its noise the scale `release_scale` gives.
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
    (`Algorithm.privatize`, `jaxbai.mechanisms.secure.privatize_locally`) — in two forms:
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
        measure: what ε guarantees (`jaxbai.base.PrivacyMeasure`): pure ε-DP, or (ε, γ)-DP
            for the Gaussian mechanism (Alg. 8, Remark 13), which the audit certifies with
            δ = γ.
    """

    name: str
    outputs: tuple[float, ...] | None
    measure: PrivacyMeasure

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
        CSPRNG's `jaxbai.mechanisms.secure.secure_uniform` in a real trial); the caller
        checks r ∈ [0, 1] and ε (`jaxbai.mechanisms.secure.privatize_locally`)."""
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
        measure: what ε guarantees (`jaxbai.base.PrivacyMeasure`), ``None`` without privacy;
            under local DP its participant mechanism's.
    """

    privacy: str
    participant_mechanism: Mechanism | None
    unit_observations: bool
    measure: PrivacyMeasure | None

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
    release with exact discrete noise from the operating system's CSPRNG).

    Attributes:
        release_noise: the noise its releases carry, one of `RELEASE_NOISES`, at the scale
            `release_scale` gives (`AlgorithmInfo.release_noise`).
    """

    release_noise: str

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


def protocol_members(protocol: type) -> frozenset[str]:
    """The public members a protocol declares, with those of the protocols it extends.

    Examples:
        >>> sorted(protocol_members(ArmSums))
        ['sample_arm_sum']
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
