"""Statistical audit of a mechanism on two neighbouring inputs (`audit_mechanism`).

The mechanism runs ``samples`` times on each input, vmapped in chunks under `jax.jit`, sample
j of input i from ``fold_in(fold_in(key(seed), i), j)`` (so the outputs do not depend on the
chunking). The first half of each input's samples chooses the output events, the second half
certifies them (`jaxbai.audit._select`). Events are per output coordinate (the leaves of the
output pytree, flattened): a coordinate with at most `DISCRETE_VALUES` distinct values on the
selection half is discrete, with the events {out = v} for each value and {out > v}, {out ≤ v}
between consecutive values; any other is continuous, with {out > t} and {out ≤ t} for
thresholds t at order statistics of the selection half (four per octave of tail probability,
plus every 64th quantile).

`host_mechanism` turns a host-side sampler driven by a uniform source, such as those of
`jaxbai.mechanisms.secure`, into a JAX mechanism whose uniforms come from a generator seeded
by the sample's key, so the real trial noise is audited by the same code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxbai.audit._select import (
    AuditResult,
    certify,
    check_count,
    check_epsilon,
    check_level,
    choose,
)
from jaxbai.engine import select_devices

__all__ = ["DISCRETE_VALUES", "Mechanism", "audit_mechanism", "host_mechanism"]

Mechanism = Callable[[jax.Array, Any], Any]
"""``mechanism(key, x)``: a JAX function of a PRNG key and an input pytree."""

DISCRETE_VALUES = 32
"""A coordinate with at most this many distinct values on the selection half is discrete."""

_CHUNK = 1 << 15
_PER_OCTAVE = 4
_QUANTILE_STEP = 64


class _Event(NamedTuple):
    """{out[coordinate] op value}, op one of ``">"``, ``"<="``, ``"=="``."""

    coordinate: int
    op: str
    value: float

    @property
    def label(self) -> str:
        op = {">": ">", "<=": "≤", "==": "="}[self.op]
        return f"out[{self.coordinate}] {op} {self.value:.6g}"

    def count(self, outputs: np.ndarray) -> int:
        column = outputs[:, self.coordinate]
        if self.op == ">":
            return int(np.sum(column > self.value))
        if self.op == "<=":
            return int(np.sum(column <= self.value))
        return int(np.sum(column == self.value))


def _sampler(mechanism: Mechanism) -> Callable[..., Any]:
    """Jitted: outputs of ``mechanism`` for sample indices ``j`` of the input ``x``."""

    def draw(key: jax.Array, indices: jax.Array, x: Any) -> Any:
        return jax.vmap(lambda j: mechanism(jax.random.fold_in(key, j), x))(indices)

    return jax.jit(draw)


def _chunks(draw, key: jax.Array, x: Any, start: int, stop: int):
    """The outputs of samples ``start`` … ``stop − 1`` as float64 ``(n, d)`` chunks (calls of
    at most `_CHUNK` samples, a power of two)."""
    call = min(_CHUNK, 1 << (stop - start - 1).bit_length())
    for first in range(start, stop, call):
        indices = jnp.arange(first, first + call, dtype=jnp.uint32)
        leaves = jax.tree_util.tree_leaves(draw(key, indices, x))
        flat = [np.asarray(leaf, np.float64).reshape(call, -1) for leaf in leaves]
        yield np.concatenate(flat, axis=1)[: stop - first]


def _thresholds(pooled: np.ndarray) -> np.ndarray:
    """Order statistics of ``pooled`` (sorted) at tail probabilities 2^(−i/4) and k/64."""
    n = pooled.size
    octaves = int(np.log2(n)) * _PER_OCTAVE
    tails = np.floor(n * 2.0 ** (-np.arange(_PER_OCTAVE, octaves + 1) / _PER_OCTAVE))
    ranks = np.concatenate(
        [tails, n - 1 - tails, np.floor(n * np.arange(1, _QUANTILE_STEP) / _QUANTILE_STEP)]
    )
    return np.unique(pooled[np.clip(ranks.astype(np.int64), 0, n - 1)])


def _candidates(outputs: np.ndarray, outputs_prime: np.ndarray) -> list[_Event]:
    """Candidate events of every coordinate, placed from the selection half (both inputs)."""
    events = []
    for j in range(outputs.shape[1]):
        pooled = np.sort(np.concatenate([outputs[:, j], outputs_prime[:, j]]))
        values = np.unique(pooled)
        if values.size <= DISCRETE_VALUES:
            events += [_Event(j, "==", float(v)) for v in values]
            cuts = values[:-1]
        else:
            cuts = _thresholds(pooled)
        events += [_Event(j, op, float(t)) for t in cuts for op in (">", "<=")]
    return events


def _count_sorted(events: list[_Event], outputs: np.ndarray) -> np.ndarray:
    """Counts of every event on ``outputs``, by binary search in each sorted column."""
    columns = [np.sort(outputs[:, j]) for j in range(outputs.shape[1])]
    counts = np.empty(len(events), np.int64)
    for i, event in enumerate(events):
        column = columns[event.coordinate]
        right = np.searchsorted(column, event.value, side="right")
        if event.op == ">":
            counts[i] = column.size - right
        elif event.op == "<=":
            counts[i] = right
        else:
            counts[i] = right - np.searchsorted(column, event.value, side="left")
    return counts


def audit_mechanism(
    mechanism: Mechanism,
    x: Any,
    x_prime: Any,
    epsilon: float,
    *,
    samples: int,
    seed: int,
    delta: float = 0.0,
    confidence: float = 0.95,
    device: str | None = None,
) -> AuditResult:
    """Certified lower bound on the ε of ``mechanism`` from its outputs on ``x`` and ``x_prime``.

    Draws ``samples`` outputs per input (``samples // 2`` choose the events, the rest certify
    them; see the module docstring). The bound holds with probability ≥ ``confidence`` whatever
    the mechanism: ε ≥ ``epsilon_lower`` if the mechanism is (ε, ``delta``)-DP on this pair.

    Args:
        mechanism: ``mechanism(key, x)``, a JAX function (jittable, vmappable over keys) whose
            output is a pytree of numbers; `host_mechanism` wraps a host-side sampler.
        x: an input pytree (the same for every sample).
        x_prime: a neighbouring input of the same structure.
        epsilon: the ε the mechanism claims, finite and > 0.
        samples: samples per input, ≥ 2.
        seed: seed of the mechanism's keys.
        delta: the δ of an (ε, δ) claim (0 for pure ε-DP).
        confidence: confidence of the bound, in (0, 1).
        device: ``"cpu"``, ``"gpu"`` or None (JAX's default device) to run the mechanism on.

    Returns:
        An `AuditResult`.

    Raises:
        ValueError: a bad argument, before anything is drawn.

    Examples:
        >>> import jaxbai
        >>> laplace = lambda key, x: x + jaxbai.mechanisms.laplace(key, 1.0)
        >>> res = audit_mechanism(laplace, 0.0, 1.0, 1.0, samples=20_000, seed=0)
        >>> 0.5 < res.epsilon_lower <= 1.0
        True
    """
    eps = check_epsilon(epsilon)
    samples = check_count("samples", samples)
    confidence, delta = check_level(confidence, delta)
    with jax.default_device(select_devices(device)[0]):
        return _audit(_sampler(mechanism), (x, x_prime), eps, samples, int(seed), delta, confidence)


def _audit(draw, inputs, eps, samples, seed, delta, confidence) -> AuditResult:
    """`audit_mechanism` on validated arguments."""
    base = jax.random.key(seed)
    keys = (jax.random.fold_in(base, 0), jax.random.fold_in(base, 1))
    half = samples // 2
    selection = [
        np.concatenate(list(_chunks(draw, k, v, 0, half)))
        for k, v in zip(keys, inputs, strict=True)
    ]
    events = _candidates(*selection)
    scores = [_count_sorted(events, s) for s in selection]
    choices = choose(scores[0], scores[1], half, half, confidence, delta)
    chosen = [events[c.index] for c in choices]
    counts = []
    for k, v in zip(keys, inputs, strict=True):
        total = np.zeros(len(chosen), np.int64)
        for out in _chunks(draw, k, v, half, samples):
            total += [event.count(out) for event in chosen]
        counts.append(total)
    labels = [event.label for event in events]
    rest = samples - half
    return certify(
        choices, labels, counts[0], counts[1], rest, rest, eps, confidence, delta, samples
    )


def _seeded_uniform(rng: np.random.Generator) -> Callable[[], float]:
    """Doubles k/2⁵³, k uniform in 1 … 2⁵³ − 1, from ``rng`` (reproducible, not secret)."""
    return lambda: int(rng.integers(1, 2**53)) / 2**53


def host_mechanism(
    sampler: Callable[[np.ndarray, Callable[[], float]], Any], shape: tuple[int, ...] = ()
) -> Mechanism:
    """A JAX mechanism from a host-side ``sampler(x, uniform)`` (e.g. `jaxbai.mechanisms.secure`).

    Each sample's uniforms come from a NumPy generator seeded with its key's words, as doubles
    k/2⁵³ (reproducible and not secret: for audits and tests, never for a real trial). The
    sampler runs on the host through `jax.pure_callback`, one sample after another.

    Args:
        sampler: ``sampler(x, uniform) -> number or array of shape ``shape````; ``x`` arrives as
            a NumPy array, ``uniform()`` returns a double in (0, 1).
        shape: the shape of one output (float32).

    Examples:
        >>> from jaxbai.mechanisms import secure
        >>> respond = secure.secure_randomised_response
        >>> rr = host_mechanism(lambda x, uniform: respond(float(x), 1.0, uniform))
        >>> float(rr(jax.random.key(0), 1.0)) in (0.0, 1.0)
        True
    """
    result = jax.ShapeDtypeStruct(shape, jnp.float32)

    def callback(words: np.ndarray, x: np.ndarray) -> np.ndarray:
        words, x = np.asarray(words), np.asarray(x)
        batch = words.reshape(-1, words.shape[-1])
        xs = np.broadcast_to(x, (len(batch), *x.shape[words.ndim - 1 :]))
        out = np.empty((len(batch), *shape), np.float32)
        for i, row in enumerate(batch):
            rng = np.random.default_rng([int(w) for w in row])
            out[i] = sampler(xs[i], _seeded_uniform(rng))
        return out.reshape(words.shape[:-1] + tuple(shape))

    def mechanism(key: jax.Array, x: Any) -> jax.Array:
        words = jax.random.key_data(key)
        return jax.pure_callback(callback, result, words, x, vmap_method="expand_dims")

    return mechanism
