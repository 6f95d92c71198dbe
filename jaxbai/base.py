"""The contracts every jaxbai algorithm, estimator, instance and Top Two component satisfies.

These are `typing.Protocol`s: structural types, so a user's own class satisfies one by having
the right attributes and methods, without inheriting from anything. The engine
(`jaxbai.engine`), `jaxbai.simulate`, `jaxbai.trial` and the experiments are typed against them,
and ask components about their behaviour (``privacy``, ``unit_interval``, ``rounds``, …) rather
than testing their types or names.

Shapes: K is the number of arms (static: it fixes the compiled program). Every array below is a
`jax.Array`; "scalar" means shape ``()``. Counts are int32, means and rewards float32.
Semantics that the paper leaves open are fixed in the project's ``docs/semantics.md``; sections
are cited as ``docs/semantics.md §N``.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

import jax
from jax.typing import ArrayLike

__all__ = [
    "PRIVACY_MODELS",
    "Algorithm",
    "Bonus",
    "BudgetedAlgorithm",
    "Challenger",
    "Cost",
    "Estimator",
    "Instance",
    "Release",
    "Threshold",
    "TrackingBeta",
]

PRIVACY_MODELS = ("none", "local", "global")
"""Trust models: no privacy, ε-local DP (Definition 7), ε-global DP (Definition 8)."""


class Release(NamedTuple):
    """What an update would publish through the Laplace mechanism (global DP).

    Attributes:
        due: bool scalar, whether this update releases noisy means.
        means: the non-private means that would be released, float32 ``(K,)`` (0 elsewhere).
        counts: number of samples behind each released mean (0 where none), int32 ``(K,)``;
            the Laplace scale for arm ``a`` is ``1/(epsilon * counts[a])``.
    """

    due: jax.Array
    means: jax.Array
    counts: jax.Array


@runtime_checkable
class Instance(Protocol):
    """Arm distributions: a pytree (e.g. a `NamedTuple` of arrays) so it can be vmapped.

    Attributes:
        means: the arms' means, float32 ``(K,)``.
        unit_interval: whether every reward lies in [0, 1] (a static Python bool, a class
            attribute: DP mechanisms with sensitivity 1 need it).
        iid_sums: whether `sample_sum` draws the sum of any pulls of an arm exactly, in O(1),
            whatever their order and index (a static bool; Bernoulli, Gaussian): the
            per-episode simulation needs it, and such an instance also has
            ``sample_arm_sum(key, arm, count)``, one arm's sum as a float32 scalar
            (docs/semantics.md §25). Optional: an instance without it is simulated per sample.
    """

    @property
    def means(self) -> jax.Array: ...

    @property
    def unit_interval(self) -> bool: ...

    @property
    def iid_sums(self) -> bool: ...

    def sample(self, key: jax.Array, arm: ArrayLike) -> jax.Array:
        """One reward of ``arm`` (int32 scalar), a float32 scalar."""
        ...

    def draw(self, u: jax.Array, key: jax.Array, arm: ArrayLike, index: ArrayLike) -> jax.Array:
        """The reward of ``arm`` at sample ``index`` (int32, the samples drawn before it), from a
        uniform ``u`` ∈ (0, 1) where inversion is cheap, else from ``key``; float32 scalar.
        I.i.d. arms ignore ``index``; a reward table reads row ``index`` (docs/semantics.md §21).
        """
        ...

    def sample_sum(self, key: jax.Array, counts: ArrayLike, index: ArrayLike) -> jax.Array:
        """For every arm a, the sum of ``counts[a]`` rewards, float32 ``(K,)``, the arms with a
        positive count pulled round-robin in index order from sample ``index`` on (i.i.d.
        arms ignore the order and ``index``)."""
        ...


@runtime_checkable
class Estimator(Protocol):
    """How a Top Two algorithm turns observations into means (Table 1's "estimator" column).

    An estimator owns the privacy of its algorithm. It reads and writes the estimator fields of
    the driver's state (``sums``, ``sums_error``, ``means``, ``local_counts``, ``phase_start``,
    ``phases``); arms are addressed by a bool one-hot mask ``pulled`` of shape ``(K,)``. Its
    random functions take one uniform ``u`` ∈ (0, 1) (float32 scalar) instead of a key.

    Attributes:
        privacy: one of `PRIVACY_MODELS`.
        unit_rewards: rewards given to `privatize` must lie in [0, 1] (local DP).
        unit_observations: observations given to `observe` must lie in [0, 1] (global DP).
        local_mechanism: the participant-side mechanism (``"randomised_response"``,
            ``"gaussian"``) for local DP, else ``None``.
        takes_gamma: whether the mechanism uses the γ of an (ε, γ)-DP guarantee.
        episodic: whether the means change only at episode ends, so the arms up to the next
            episode end can be planned without observations (Appendix H). An episodic
            estimator also has ``episode_due(state, counts, pulled) -> (K,) bool``: which
            arms' episodes end with this pull, given the counts after it.
    """

    privacy: str
    unit_rewards: bool
    unit_observations: bool
    local_mechanism: str | None
    takes_gamma: bool
    episodic: bool

    def privatize(self, u: jax.Array, reward: jax.Array, params: Any) -> jax.Array:
        """The participant-side mechanism applied to a raw reward (identity if none)."""
        ...

    def observe(
        self,
        u: jax.Array,
        key: jax.Array,
        state: Any,
        pulled: jax.Array,
        z: jax.Array,
        params: Any,
        release: jax.Array | None,
    ) -> Any:
        """Fold observation ``z`` of the ``pulled`` arm into the state (counts already
        incremented). ``u`` is the step's mechanism uniform, ``key`` the step's key (for an
        update that needs more randomness than ``u``); ``release`` optionally replaces the
        mechanism's noisy means."""
        ...


class Cost(Protocol):
    """Transportation cost W_{a,b}(μ_a, μ_b, w_a, w_b): W^G (Eq. 3) or W^{G,ε} (Eq. 13).

    ``mu_*`` float32, ``w_*`` counts (int32 or float32), broadcastable; returns float32.
    """

    def __call__(
        self, mu_a: jax.Array, mu_b: jax.Array, w_a: jax.Array, w_b: jax.Array, params: Any
    ) -> jax.Array: ...


class Bonus(Protocol):
    """Leader bonus b_a of the UCB leader (Eq. 3 or Eq. 11): float32 ``(K,)`` from the state."""

    def __call__(self, state: Any, params: Any) -> jax.Array: ...


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
        n: jax.Array,
        num_arms: int,
        params: Any,
    ) -> jax.Array: ...


class Challenger(Protocol):
    """Challenger rule: the arm C ≠ leader (int32 scalar), e.g. the TC challenger (Alg. 1)."""

    def __call__(self, alg: Any, state: Any, leader: jax.Array, params: Any) -> jax.Array: ...


class TrackingBeta(Protocol):
    """Tracking proportion β ∈ (0, 1) for this iteration (float32 scalar; Alg. 1, line 10)."""

    def __call__(
        self, alg: Any, state: Any, leader: jax.Array, challenger: jax.Array, params: Any
    ) -> jax.Array: ...


@runtime_checkable
class Algorithm(Protocol):
    """A fixed-confidence BAI algorithm: static configuration plus pure functions of its state.

    The object itself is static (hashable, usable as a `jax.jit` static argument); numbers that
    vary across a grid (ε, δ, β, …) live in the pytree that `params` returns, and the run's
    state is a pytree with at least ``n`` (int32 samples so far), ``stopped`` (bool) and
    ``recommendation`` (int32, −1 before stopping).

    Attributes:
        name: registry name (``jaxbai.ALGORITHMS``).
        privacy: one of `PRIVACY_MODELS`.
        private_epsilon: whether ε is a parameter (False: ε is ignored, e.g. TTUCB).
        unit_interval: whether privacy needs rewards in [0, 1].
        local_mechanism: the participant-side mechanism for local DP, else ``None``.
        mechanism_gamma: γ of the participant-side mechanism if it has one, else ``None``.
        episodic: whether `plan` and `per_episode` are available (Appendix H).
    """

    name: str

    @property
    def privacy(self) -> str: ...

    @property
    def private_epsilon(self) -> bool: ...

    @property
    def unit_interval(self) -> bool: ...

    @property
    def local_mechanism(self) -> str | None: ...

    @property
    def mechanism_gamma(self) -> float | None: ...

    @property
    def episodic(self) -> bool: ...

    def params(self, epsilon: ArrayLike | None = None, delta: ArrayLike = 0.01) -> Any:
        """Validated numeric parameters (ValueError before anything compiles)."""
        ...

    def init(self, key: jax.Array, params: Any, num_arms: int) -> Any:
        """The empty state for ``num_arms`` arms."""
        ...

    def select(self, state: Any, params: Any) -> jax.Array:
        """The arm to sample next, int32 scalar; the first K calls return 0, …, K−1."""
        ...

    def privatize(self, key: jax.Array, reward: ArrayLike, params: Any) -> jax.Array:
        """The participant-side mechanism (identity for global DP and no privacy)."""
        ...

    def update(
        self,
        key: jax.Array,
        state: Any,
        arm: ArrayLike,
        z: ArrayLike,
        params: Any,
        release: ArrayLike | None = None,
    ) -> Any:
        """Record the (privatised) observation ``z`` of ``arm``."""
        ...

    def pending_release(self, state: Any, arm: ArrayLike, z: ArrayLike, params: Any) -> Release:
        """What `update` with ``z`` would release through the Laplace mechanism."""
        ...

    def stopping(self, state: Any, params: Any) -> tuple[jax.Array, jax.Array]:
        """(stop, recommendation); never True before every arm was pulled once."""
        ...

    def step(self, key: jax.Array, state: Any, inst: Instance, params: Any) -> Any:
        """Stopping test, then select, sample, privatise, update; a no-op once stopped."""
        ...

    def rounds(self, state: Any) -> jax.Array:
        """Rounds of adaptivity C (Appendix H), int32 scalar; −1 if not episodic."""
        ...

    def plan(self, state: Any, params: Any, max_len: int) -> tuple[jax.Array, jax.Array]:
        """(arms, length): the pulls up to the next episode end, fixed without observations
        (docs/semantics.md §19); ValueError if the algorithm is not episodic."""
        ...

    def per_episode(self) -> BudgetedAlgorithm:
        """The same algorithm simulated episode by episode, with the same law of (τ, â, C)
        (docs/semantics.md §25); ValueError if the algorithm is not episodic."""
        ...


@runtime_checkable
class BudgetedAlgorithm(Algorithm, Protocol):
    """An algorithm whose engine step makes up to `samples_per_step` pulls at once
    (`jaxbai.toptwo.PerEpisode`, docs/semantics.md §25). The engine runs `planned_pull`
    `samples_per_step` times over its whole lane pool, then `settle`, instead of `step`; it
    scales its chunks by `samples_per_step`. `budgeted_step` is the same for one run.
    """

    @property
    def samples_per_step(self) -> int: ...

    def planned_pull(self, state: Any, params: Any, max_samples: jax.Array) -> Any:
        """Count the next pull without drawing its reward; a no-op once stopped, at
        ``max_samples``, or while an ended episode waits for `settle`."""
        ...

    def settle(
        self, stream: jax.Array, state: Any, inst: Instance, params: Any, max_samples: jax.Array
    ) -> Any:
        """Draw the ended episodes' rewards, close them and test stopping, with the key
        ``fold_in(stream, n)``; a no-op if no episode ended."""
        ...

    def budgeted_step(
        self, stream: jax.Array, state: Any, inst: Instance, params: Any, max_samples: jax.Array
    ) -> Any:
        """`samples_per_step` planned pulls, then `settle`."""
        ...
