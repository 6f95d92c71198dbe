"""Small array helpers for per-arm state under `vmap`.

Per-arm updates use one-hot masks instead of scatters and gathers: with K small, masked
elementwise arithmetic fuses into one loop, where a batched scatter or gather would not.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax import custom_batching
from jax.typing import ArrayLike


def one_hot(index: ArrayLike, num_arms: int) -> jax.Array:
    """Boolean mask of shape ``(num_arms,)``, True at ``index``."""
    return jnp.arange(num_arms) == index


def pick(values: jax.Array, mask: jax.Array) -> jax.Array:
    """``values[i]`` for the single True entry ``i`` of ``mask``."""
    return jnp.sum(jnp.where(mask, values, jnp.zeros_like(values)))


def argmax_random_ties(values: jax.Array, priority: jax.Array) -> jax.Array:
    """argmax of ``values``; among tied maxima, the arm with the highest ``priority``."""
    is_max = values == jnp.max(values)
    return jnp.argmax(jnp.where(is_max, priority, -1.0)).astype(jnp.int32)


@custom_batching.custom_vmap
def argmax_random_ties_lanes_last(values: jax.Array, priority: jax.Array) -> jax.Array:
    """`argmax_random_ties` of ``values`` ``(K,)`` (the same index for values that are not
    NaN; with a NaN, as with `jnp.max` on a CPU, the index is unspecified), which under
    `jax.vmap` moves the lanes last and reduces the arms one at a time: every operation is then
    a vector loop over lanes.

    For values computed lanes-last (`batched_last`): on a CPU a reduction over the arm axis of
    such values fuses their computation into a scalar loop (`python -m experiments.bench
    ablation`: DP-TT's planned pull 2.5–3× faster at 256 lanes with this argmax). On values
    computed in the default layout it is slower (AdaP-TT's pull 3×, two more transposes).
    """
    return argmax_random_ties(values, priority)


@argmax_random_ties_lanes_last.def_vmap
def _argmax_random_ties_lanes(
    axis_size: int, in_batched: list[bool], values: jax.Array, priority: jax.Array
) -> tuple[jax.Array, bool]:
    (values, priority), _ = lanes_last((values, priority), in_batched, axis_size)
    if values.shape[0] > UNROLL_ARMS:
        is_max = values == jnp.max(values, axis=0)
        return jnp.argmax(jnp.where(is_max, priority, -1.0), axis=0).astype(jnp.int32), True
    rows, priorities = _arm_rows(values), _arm_rows(priority)
    top = functools.reduce(jnp.maximum, rows)
    best = jnp.full_like(top, -jnp.inf)
    index = jnp.zeros(top.shape, jnp.int32)
    for arm, (row, row_priority) in enumerate(zip(rows, priorities, strict=True)):
        candidate = jnp.where(row == top, row_priority, -1.0)
        better = candidate > best
        best, index = jnp.where(better, candidate, best), jnp.where(better, arm, index)
    return index, True


def every(mask: jax.Array) -> jax.Array:
    """``jnp.all(mask)`` as a minimum over int32: Pallas' Triton lowering (the fused kernel)
    has no ``reduce_and``."""
    return jnp.min(jnp.asarray(mask).astype(jnp.int32)) > 0


UNROLL_ARMS = 64
"""Up to this many arms `argmax_random_ties_lanes_last` unrolls its reduction over arms."""


def _arm_rows(x: jax.Array) -> list[jax.Array]:
    """The rows ``x[a]`` of a lanes-last ``(K, L)`` array, taken with `jnp.split` (Pallas'
    Triton lowering has no ``slice``)."""
    return [jnp.squeeze(row, 0) for row in jnp.split(x, x.shape[0], axis=0)]


def some(mask: jax.Array) -> jax.Array:
    """``jnp.any(mask)`` as a maximum over int32 (no ``reduce_or`` in Pallas' Triton lowering)."""
    return jnp.max(jnp.asarray(mask).astype(jnp.int32)) > 0


def tree_where(cond: jax.Array, on_true: Any, on_false: Any) -> Any:
    """Elementwise select between two pytrees of the same structure."""
    return jax.tree_util.tree_map(lambda a, b: jnp.where(cond, a, b), on_true, on_false)


def uniform_from_bits(bits: jax.Array) -> jax.Array:
    """Uniforms on the open interval (0, 1) from uint32 bits: (⌊bits/2⁹⌋ + ½)/2²³.

    Every value is exact in float32, the largest being 1 − 2⁻²⁴ < 1 (with 24 bits the top
    value 1 − 2⁻²⁵ would round to 1.0 and make inverse-CDF transforms infinite).
    """
    return ((bits >> 9).astype(jnp.float32) + 0.5) * jnp.float32(2.0**-23)


def uniforms_from_key(key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Two uniforms on (0, 1) from the words of a (freshly folded-in) key, with no extra hash.

    A simulation step receives ``fold_in(stream_key, n)``; its two 32-bit words are already
    threefry output, so they serve directly as the step's random bits (`key_words`).
    """
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.key_data(key)
    words = key.reshape(-1).astype(jnp.uint32)
    if words.shape[0] > 2:
        words = words[:2]
    first, second = key_words(words)
    return uniform_from_bits(first), uniform_from_bits(second)


def key_words(data: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The two uint32 words of threefry-2x32 key data ``(..., 2)``, each ``(...)``.

    Taken with `jnp.split`, not by indexing: Pallas' Triton lowering has no ``slice``.
    """
    first, second = jnp.split(data, 2, axis=-1)
    return jnp.squeeze(first, -1), jnp.squeeze(second, -1)


def kahan_add(
    total: jax.Array, error: jax.Array, mask: jax.Array, value: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """Add ``value`` to the entries of ``total`` selected by ``mask``, with Kahan compensation.

    The compensated sum is ``total − error``; float32 means stay accurate at 10⁹ samples.
    """
    y = value - error
    t = total + y
    new_error = (t - total) - y
    return jnp.where(mask, t, total), jnp.where(mask, new_error, error)


def compensated(total: jax.Array, error: jax.Array) -> jax.Array:
    """The compensated value of a Kahan sum."""
    return total - error


def batched_last(fn: Callable[..., jax.Array]) -> Callable[..., jax.Array]:
    """``fn``, an elementwise function of arrays that broadcast together, computed under
    `jax.vmap` with the mapped axis moved last (its arguments broadcast first).

    The engine lays its lane arrays out with the lane axis innermost in memory
    (`jaxbai.engine.lane_program.lanes_minor`). An elementwise computation vmapped over lanes
    has ``(L, K)`` intermediates whose default layout puts K innermost: with K = 5 XLA on CPU
    runs each of its loops as short scalar loops, and copies between the two layouts. With the
    lane axis moved last, the transposes are free on lane-minor inputs and every intermediate
    is a vector loop over lanes. Values are unchanged (the function is elementwise).
    """

    @custom_batching.custom_vmap
    def mapped(*args: jax.Array) -> jax.Array:
        return fn(*args)

    @mapped.def_vmap
    def rule(axis_size: int, in_batched: list[bool], *args: jax.Array):
        moved, shape = lanes_last(args, in_batched, axis_size)
        out = mapped(*moved)
        return jnp.moveaxis(jnp.broadcast_to(out, (*shape, axis_size)), -1, 0), True

    return mapped


def lanes_last(
    args: Sequence[jax.Array], in_batched: Sequence[bool], axis_size: int
) -> tuple[list[jax.Array], tuple[int, ...]]:
    """The arguments of a `custom_batching.custom_vmap` rule broadcast together with the mapped
    axis (size ``axis_size``) last, each ``(*shape, axis_size)``, and ``shape``, their common
    shape per lane (unmapped arguments are broadcast over the lanes)."""
    pairs = list(zip(args, in_batched, strict=True))
    shape = jnp.broadcast_shapes(*(jnp.shape(a)[1:] if b else jnp.shape(a) for a, b in pairs))

    def last(a: jax.Array, batched: bool) -> jax.Array:
        if not batched:
            return jnp.broadcast_to(jnp.broadcast_to(a, shape)[..., None], (*shape, axis_size))
        a = jnp.reshape(a, (axis_size,) + (1,) * (len(shape) + 1 - a.ndim) + a.shape[1:])
        return jnp.moveaxis(jnp.broadcast_to(a, (axis_size, *shape)), 0, -1)

    return [last(a, b) for a, b in pairs], shape
