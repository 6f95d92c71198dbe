"""Arm distributions as pytrees, and the paper's Bernoulli instances (Appendix I).

An instance is a `NamedTuple` of arrays, so it can be passed through `jit` and `vmap` (e.g. a
batch of instances with the same number of arms). Each exposes

* ``means``: the arms' means, shape ``(K,)``;
* ``sample(key, arm)``: one reward of ``arm``;
* ``draw(u, key, arm, index)``: the reward of ``arm`` at sample ``index`` (the number of
  samples drawn before it) from a uniform u ∈ (0, 1) by inversion where the inverse CDF is cheap
  (Bernoulli, Gaussian), else from ``key`` (Beta); i.i.d. arms ignore ``index``;
* ``sample_sum(key, counts, index)``: for every arm ``a``, the sum of ``counts[a]`` rewards,
  pulled round-robin from sample ``index`` on (used by batched algorithms such as DP-SE, exact in
  distribution).

`reward_table` is the one instance whose rewards depend on the sample index: row t of a (T, K)
table holds participant t's potential rewards, and the t-th pull of any arm reads row t
(docs/semantics.md §21). It is what `jaxbai.audit.audit_algorithm` runs on neighbouring tables.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxbai import checks
from jaxbai.arrays import one_hot, pick
from jaxbai.mechanisms import gaussian_from_uniform, open_uniform

__all__ = [
    "PAPER_INSTANCES",
    "Bernoulli",
    "Beta",
    "Gaussian",
    "RewardTable",
    "bernoulli",
    "beta",
    "gaussian",
    "reward_table",
]

PAPER_INSTANCES: dict[str, tuple[float, ...]] = {
    "mu1": (0.95, 0.9, 0.9, 0.9, 0.5),
    "mu2": (0.75, 0.7, 0.7, 0.7, 0.7),
    "mu3": (0.0, 0.25, 0.5, 0.75, 1.0),
    "mu4": (0.75, 0.625, 0.5, 0.375, 0.25),
    "mu5": (0.75, 0.53125, 0.375, 0.28125, 0.25),
    "mu6": (0.75, 0.71875, 0.625, 0.46875, 0.25),
}
"""Means of the six Bernoulli instances of Appendix I (Sajed & Sheffet 2019), as printed."""

_BETA_CHUNK = 256


class Bernoulli(NamedTuple):
    """Bernoulli arms, rewards in {0, 1}; `jaxbai.base.ArmSums` (a sum is one Binomial draw)."""

    means: jax.Array
    unit_interval = True
    """Rewards lie in [0, 1] (a class attribute, not a pytree leaf)."""

    def sample(self, key: jax.Array, arm: ArrayLike) -> jax.Array:
        """One reward of ``arm``: 1 with probability ``means[arm]``."""
        return self.draw(open_uniform(key), key, arm)

    def draw(
        self, u: jax.Array, key: jax.Array, arm: ArrayLike, index: ArrayLike | None = None
    ) -> jax.Array:
        """1{u < means[arm]}: exact for means 0 and 1 since u ∈ (0, 1); i.i.d., so ``index`` is
        unused."""
        del key, index
        return (u < pick(self.means, one_hot(arm, self.means.shape[0]))).astype(jnp.float32)

    def sample_sum(
        self, key: jax.Array, counts: ArrayLike, index: ArrayLike | None = None
    ) -> jax.Array:
        """Per-arm sums of ``counts`` rewards: one Binomial(counts[a], means[a]) draw per arm
        (``index`` unused)."""
        del index
        counts = jnp.asarray(counts, jnp.float32)
        return jax.random.binomial(key, counts, self.means).astype(jnp.float32)

    def sample_arm_sum(self, key: jax.Array, arm: ArrayLike, count: ArrayLike) -> jax.Array:
        """The sum of ``count`` rewards of ``arm``: one Binomial(count, means[arm]) draw."""
        mean = pick(self.means, one_hot(arm, self.means.shape[0]))
        count = jnp.asarray(count, jnp.float32)
        return jax.random.binomial(key, count, mean).astype(jnp.float32)


class Gaussian(NamedTuple):
    """Gaussian arms N(means[a], sigma²); `jaxbai.base.ArmSums` (a sum is one Normal draw)."""

    means: jax.Array
    sigma: jax.Array
    unit_interval = False
    """Rewards are unbounded (a class attribute, not a pytree leaf)."""

    def sample(self, key: jax.Array, arm: ArrayLike) -> jax.Array:
        """One reward of ``arm``."""
        return self.draw(open_uniform(key), key, arm)

    def draw(
        self, u: jax.Array, key: jax.Array, arm: ArrayLike, index: ArrayLike | None = None
    ) -> jax.Array:
        """μ_arm + σ Φ⁻¹(u) (``index`` unused)."""
        del key, index
        mean = pick(self.means, one_hot(arm, self.means.shape[0]))
        return mean + self.sigma * gaussian_from_uniform(u)

    def sample_sum(
        self, key: jax.Array, counts: ArrayLike, index: ArrayLike | None = None
    ) -> jax.Array:
        """Per-arm sums of ``counts`` rewards: N(c·μ, c·σ²), exact (``index`` unused)."""
        del index
        counts = jnp.asarray(counts, jnp.float32)
        noise = jax.random.normal(key, self.means.shape)
        return counts * self.means + jnp.sqrt(counts) * self.sigma * noise

    def sample_arm_sum(self, key: jax.Array, arm: ArrayLike, count: ArrayLike) -> jax.Array:
        """The sum of ``count`` rewards of ``arm``: N(c·μ_arm, c·σ²), exact."""
        mean = pick(self.means, one_hot(arm, self.means.shape[0]))
        count = jnp.asarray(count, jnp.float32)
        return count * mean + jnp.sqrt(count) * self.sigma * jax.random.normal(key)


class Beta(NamedTuple):
    """Beta(a, b) arms on [0, 1], mean a / (a + b)."""

    a: jax.Array
    b: jax.Array
    unit_interval = True
    """Rewards lie in [0, 1] (a class attribute, not a pytree leaf)."""

    @property
    def means(self) -> jax.Array:
        """Arm means a / (a + b)."""
        return self.a / (self.a + self.b)

    def sample(self, key: jax.Array, arm: ArrayLike) -> jax.Array:
        """One reward of ``arm``."""
        return jax.random.beta(key, self.a[arm], self.b[arm])

    def draw(
        self, u: jax.Array, key: jax.Array, arm: ArrayLike, index: ArrayLike | None = None
    ) -> jax.Array:
        """One reward of ``arm`` from ``key`` (no cheap inverse CDF; ``u``, ``index`` unused)."""
        del u, index
        return self.sample(jax.random.fold_in(key, 1), arm)

    def sample_sum(
        self, key: jax.Array, counts: ArrayLike, index: ArrayLike | None = None
    ) -> jax.Array:
        """Per-arm sums of ``counts`` rewards, drawn in chunks of 256 (no closed form exists;
        ``index`` unused)."""
        del index
        counts = jnp.asarray(counts, jnp.float32)
        shape = (_BETA_CHUNK, *self.a.shape)

        def body(carry):
            done, total, key = carry
            key, sub = jax.random.split(key)
            draws = jax.random.beta(sub, self.a, self.b, shape)
            offsets = done + jnp.arange(_BETA_CHUNK, dtype=jnp.float32)[:, None]
            total = total + jnp.sum(jnp.where(offsets < counts, draws, 0.0), axis=0)
            return done + _BETA_CHUNK, total, key

        start = (jnp.float32(0.0), jnp.zeros_like(counts), key)
        _, total, _ = jax.lax.while_loop(lambda c: c[0] < jnp.max(counts), body, start)
        return total


class RewardTable(NamedTuple):
    """Participants' potential rewards: row t of the (T, K) ``table`` is participant t's reward
    for each arm, and the pull at sample index t (the t-th pull, from 0) reads row t.

    The one instance that is not i.i.d. (docs/semantics.md §21): an algorithm run on it answers
    the t-th pull with participant t's reward for the arm it pulls, the setting of global DP
    (Definition 8), where neighbouring tables differ in one row. Build it with `reward_table`.
    A pull past the last row reads NaN: a run must draw at most T samples.
    """

    table: jax.Array
    unit_interval = True
    """Rewards lie in [0, 1] (checked by `reward_table`; a class attribute, not a leaf)."""

    @property
    def means(self) -> jax.Array:
        """Column means: the mean reward of each arm over the participants (a grid's stacked
        tables ``(..., T, K)`` give ``(..., K)``)."""
        return jnp.mean(self.table, axis=-2)

    def sample(self, key: jax.Array, arm: ArrayLike) -> jax.Array:
        """The reward of ``arm`` of a participant drawn uniformly at random (a row)."""
        row = jax.random.randint(key, (), 0, self.table.shape[0])
        return self.draw(jnp.float32(0.5), key, arm, row)

    def draw(self, u: jax.Array, key: jax.Array, arm: ArrayLike, index: ArrayLike) -> jax.Array:
        """``table[index, arm]`` (NaN past the last row); ``u`` and ``key`` are unused."""
        del u, key
        index = jnp.asarray(index, jnp.int32)
        row = jax.lax.dynamic_index_in_dim(self.table, index, keepdims=False)
        value = pick(row, one_hot(arm, self.table.shape[1]))
        return jnp.where(index < self.table.shape[0], value, jnp.nan)

    def sample_sum(self, key: jax.Array, counts: ArrayLike, index: ArrayLike) -> jax.Array:
        """Per-arm sums of the rows read by ``counts[a]`` pulls of each arm, round-robin.

        The arms with a positive count are pulled in turn, in index order, from sample
        ``index`` on (DP-SE's epoch, docs/semantics.md §12): pull ``index + j`` goes to the
        (j mod m)-th of the m such arms. Their counts must be equal (as in an epoch), and the
        pulls must stay within the table; otherwise every sum is NaN. ``key`` is unused.
        """
        del key
        counts = jnp.asarray(counts, jnp.float32)
        pulled = counts > 0
        num_pulled = jnp.sum(pulled)
        per_arm = jnp.max(counts)
        rank = jnp.cumsum(pulled) - 1
        offset = jnp.arange(self.table.shape[0]) - jnp.asarray(index, jnp.int32)
        inside = (offset >= 0) & (offset.astype(jnp.float32) < num_pulled * per_arm)
        turn = offset % jnp.maximum(num_pulled, 1)
        read = inside[:, None] & (turn[:, None] == rank) & pulled
        sums = jnp.sum(jnp.where(read, self.table, 0.0), axis=0)
        equal = jnp.all(jnp.where(pulled, counts == per_arm, True))
        end = jnp.asarray(index, jnp.float32) + num_pulled * per_arm
        return jnp.where(equal & (end <= self.table.shape[0]), sums, jnp.nan)


def _means_vector(means: ArrayLike) -> np.ndarray:
    arr = checks.as_float_array("means", means)
    if arr.ndim != 1:
        raise ValueError(f"means must be a 1-D sequence, got shape {arr.shape}")
    checks.check_num_arms(arr.shape[0])
    if not np.isfinite(arr).all():
        raise ValueError(f"means must be finite, got {arr.tolist()}")
    return arr


def bernoulli(means: ArrayLike) -> Bernoulli:
    """Bernoulli instance with the given means in [0, 1].

    Examples:
        >>> inst = bernoulli([0.95, 0.9, 0.9, 0.9, 0.5])
        >>> inst.means.shape
        (5,)
    """
    arr = _means_vector(means)
    if (arr < 0).any() or (arr > 1).any():
        raise ValueError(f"Bernoulli means must lie in [0, 1], got {arr.tolist()}")
    return Bernoulli(jnp.asarray(arr, jnp.float32))


def gaussian(means: ArrayLike, sigma: float = 1.0) -> Gaussian:
    """Gaussian instance N(means[a], sigma²) (rewards unbounded: not for CTB/DAF/DP-SE).

    Examples:
        >>> gaussian([1.0, 0.5], sigma=0.5).sigma
        Array(0.5, dtype=float32)
    """
    arr = _means_vector(means)
    sig = checks.check_positive("sigma", sigma)
    if sig.ndim != 0:
        raise ValueError("sigma must be a scalar")
    return Gaussian(jnp.asarray(arr, jnp.float32), jnp.float32(sig))


def beta(a: ArrayLike, b: ArrayLike) -> Beta:
    """Beta(a, b) instance on [0, 1] (continuous rewards: no ties between arms).

    Examples:
        >>> beta([2.0, 1.0], [1.0, 1.0]).means
        Array([0.6666667, 0.5      ], dtype=float32)
    """
    a_arr = checks.check_positive("a", a)
    b_arr = checks.check_positive("b", b)
    if a_arr.shape != b_arr.shape or a_arr.ndim != 1:
        raise ValueError(f"a and b must be 1-D of equal length, got {a_arr.shape}, {b_arr.shape}")
    checks.check_num_arms(a_arr.shape[0])
    return Beta(jnp.asarray(a_arr, jnp.float32), jnp.asarray(b_arr, jnp.float32))


def reward_table(table: ArrayLike) -> RewardTable:
    """A reward-table instance: row t holds participant t's rewards in [0, 1] for the K arms.

    Raises:
        ValueError: ``table`` is not 2-D with at least one row and two columns, or (unless
            traced under `jit`) holds a value that is not a finite number in [0, 1].

    Examples:
        >>> inst = reward_table([[0.0, 1.0], [1.0, 0.5]])
        >>> float(inst.draw(0.5, None, arm=1, index=1)), inst.means.tolist()
        (0.5, [0.5, 0.75])
    """
    shape = np.shape(table)
    if len(shape) != 2 or shape[0] < 1:
        raise ValueError(f"table must be 2-D (T, K) with T >= 1, got shape {shape}")
    checks.check_num_arms(shape[1])
    if checks.is_concrete(table):  # a traced table (under jit) passes unchecked
        arr = checks.as_float_array("table", table)
        if not np.isfinite(arr).all() or (arr < 0).any() or (arr > 1).any():
            raise ValueError("every reward of the table must be a finite number in [0, 1]")
    return RewardTable(jnp.asarray(table, jnp.float32))
