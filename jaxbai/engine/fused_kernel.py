"""The fused lane kernel: many steps of a block of lanes per launch (docs/semantics.md §32).

The XLA lane program runs a step as a few dozen fusions, each its own pass over the lane
arrays: on a GPU each is a kernel launch, which caps a step at the launch cost whatever the
number of lanes. `fused_steps` runs the same per-lane step (`step_lane`, with the key words
passed raw) inside one Pallas kernel: each program of the kernel holds a block of
`BLOCK_LANES` lanes (state, parameters, instance and stream) and advances them by up to
``steps`` steps, stopping early once none of its lanes can move. Refill, result writing,
checkpoints and progress stay between kernel calls, where they are for the XLA program.

On a GPU the kernel lowers through Pallas' Triton backend (its shapes must be powers of
two); on a CPU it runs in interpret mode, which executes the same kernel body with XLA: the
verification of the GPU path on machines without one. `unsupported` says which algorithms
and shapes the kernel cannot run, and why, before anything compiles.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.extend.core as jex
import jax.numpy as jnp
from jax.experimental import pallas as pl

from jaxbai.arrays import some
from jaxbai.base import Algorithm, Budgeted
from jaxbai.toptwo import TopTwo

__all__ = [
    "BLOCK_LANES",
    "KERNELS",
    "LOWERED_PRIMITIVES",
    "BlockStep",
    "fused_steps",
    "padded",
    "padded_width",
    "primitives",
    "resolve_kernel",
    "unsupported",
]

KERNELS = ("xla", "fused", "auto")
"""Lane programs of `jaxbai.engine.run_grid`: ``"xla"`` (one vmapped step per iteration),
``"fused"`` (`fused_steps`) or ``"auto"``, which is ``"xla"`` on every platform until a GPU
measurement shows the fused kernel faster (docs/semantics.md §32)."""

BLOCK_LANES = 128
"""Lanes per program of the fused kernel (fewer if the pool is smaller). A power of two, as
Triton blocks must be; a pool of L lanes runs as L / BLOCK_LANES programs."""

LOWERED_PRIMITIVES = frozenset(
    {
        "abs", "add", "and", "argmax", "argmin", "bitcast_convert_type", "broadcast_in_dim",
        "closed_call", "concatenate", "cond", "convert_element_type", "custom_jvp_call", "div",
        "eq", "exp", "expm1", "ge", "gt", "integer_pow", "iota", "jit", "le", "log", "log1p",
        "logistic", "lt", "max", "min", "mul", "ne", "neg", "not", "or", "pow", "reduce_max",
        "reduce_min", "reduce_sum", "rem", "rsqrt", "scan", "select_n", "shift_left",
        "shift_right_logical", "split", "sqrt", "square", "squeeze", "stack", "sub",
        "transpose", "while", "xor",
    }
)  # fmt: skip
"""Primitives the fused kernel's body may use: each has a lowering rule in Pallas' Triton
backend (checked in the tests against the backend and by lowering the kernel for CUDA).
Notably absent: ``gather``, ``scatter``, ``slice``, ``reduce_and``, ``reduce_or`` and the
typed-key primitives (``random_bits``, ``random_fold_in``, ``random_split``, ``random_wrap``)."""


def resolve_kernel(kernel: str) -> str:
    """``"xla"`` or ``"fused"`` for a `KERNELS` option (``"auto"`` is ``"xla"``).

    Raises:
        ValueError: not one of `KERNELS`.
    """
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    return "xla" if kernel == "auto" else kernel


def padded_width(num_arms: int) -> int:
    """The arrays' length for K arms in the fused kernel: the next power of two (Triton).

    Examples:
        >>> [padded_width(k) for k in (2, 3, 5, 8, 13)]
        [2, 4, 8, 8, 16]
    """
    return 1 << (num_arms - 1).bit_length()


def padded(alg: Algorithm, num_arms: int) -> Algorithm | str:
    """``alg`` on per-arm arrays of `padded_width` entries (a `TopTwo` with ``arms=K``), or
    why it cannot be: only a Top Two algorithm masks padded arms, and not with one global
    episode (its episode ends when every arm, padded ones included, has doubled)."""
    if padded_width(num_arms) == num_arms:
        return alg
    if not isinstance(alg, TopTwo):
        kind = type(alg).__name__
        return f"{alg.name} ({kind}) on {num_arms} arms: only a TopTwo's arms can be padded"
    if getattr(alg.estimator, "episodes", "per_arm") == "global":
        return f"{alg.name} on {num_arms} arms: one global episode cannot mask padded arms"
    return dataclasses.replace(alg, arms=num_arms)


def primitives(jaxpr: jex.Jaxpr, found: set[str] | None = None) -> set[str]:
    """Every primitive of ``jaxpr``, those of its sub-jaxprs (loops, conds, calls) included."""
    found = set() if found is None else found
    for eqn in jaxpr.eqns:
        found.add(str(eqn.primitive))
        for value in eqn.params.values():
            for item in value if isinstance(value, (list, tuple)) else [value]:
                inner = getattr(item, "jaxpr", item)
                if isinstance(inner, jex.Jaxpr):
                    primitives(inner, found)
    return found


BlockStep = Callable[[Any, jax.Array], Any]
"""One step of every lane of a pool, ``(lanes, max_samples per lane) -> lanes``, with the key
words passed raw (`jaxbai.engine.lane_program.block_step`): the kernel body's iteration."""


def unsupported(alg: Algorithm, step: BlockStep, lanes: Any, platform: str) -> str | None:
    """Why the fused kernel cannot run ``alg`` (its block ``step``) on ``lanes`` (a pool or
    its shapes) on ``platform``, or None if it can.

    Refused everywhere: per-episode draws (`jaxbai.base.Budgeted`: their Binomial sums need
    ``gather`` and key splitting) and any step whose program uses a primitive outside
    `LOWERED_PRIMITIVES`. Refused on a GPU only: a per-lane array dimension that is not a
    power of two, which Triton blocks require (``lanes`` should have its arms padded,
    `padded`; the δ of a shared trajectory are not). The CPU runs the kernel in interpret
    mode, which has no shape rule.
    """
    if isinstance(alg, Budgeted):
        return (
            f"{alg.name} with per-episode draws: the Binomial sums need gather and key "
            "splitting, which the Triton backend cannot lower; use draws='per_sample'"
        )
    num_lanes = jnp.shape(lanes.job)[0]
    block = min(BLOCK_LANES, num_lanes)
    if num_lanes % block or (platform != "cpu" and block & (block - 1)):
        return f"a pool of {num_lanes} lanes (a power of two or a multiple of {BLOCK_LANES})"
    limit = jax.ShapeDtypeStruct((num_lanes,), jnp.int32)
    traced = jax.make_jaxpr(step)(lanes, limit)
    reasons = []
    missing = primitives(traced.jaxpr) - LOWERED_PRIMITIVES
    if missing:
        reasons.append(f"uses {', '.join(sorted(missing))}, which Triton cannot lower")
    if traced.consts:
        shapes = ", ".join(str(jnp.shape(c)) for c in traced.consts)
        reasons.append(
            f"reads constant arrays of shapes {shapes} (e.g. the coefficient tables of "
            "jax.scipy.special.ndtri), which a Pallas kernel cannot capture"
        )
    if reasons:
        return f"{alg.name}: its step {' and '.join(reasons)}"
    if platform != "cpu":
        for leaf in jax.tree_util.tree_leaves(lanes):
            per_lane = tuple(jnp.shape(leaf)[1:])
            if any(d & (d - 1) for d in per_lane):
                return (
                    f"{alg.name}: an array of shape {per_lane} per lane (δ or a record); "
                    "Triton needs powers of two"
                )
    return None


def _block_spec(block: int, x: jax.ShapeDtypeStruct) -> pl.BlockSpec:
    """``block`` lanes of ``x`` (all of its other dimensions) per program."""
    ndim = len(x.shape)
    return pl.BlockSpec((block, *x.shape[1:]), lambda i: (i,) + (0,) * (ndim - 1))


def fused_steps(
    step: BlockStep,
    max_samples: jax.Array,
    steps: int,
    lanes: Any,
    interpret: bool,
    block: int = BLOCK_LANES,
) -> Any:
    """``steps`` steps of every lane of ``lanes`` (a `jaxbai.engine.lane_program.Lanes` pool) in one
    Pallas kernel: the same numbers as ``steps`` iterations of the XLA lane step, whose block
    form is ``step``.

    Each program holds ``block`` lanes (all of them if fewer) and stops early once every one
    of them has stopped or reached ``max_samples`` (their further steps would be no-ops). Only
    the states change (in place); the jobs, streams, parameters and instances are read.
    ``interpret`` runs the kernel with XLA (CPU); otherwise it is lowered with the Triton
    backend (GPU).
    """
    num_lanes = lanes.job.shape[0]
    block = min(block, num_lanes)
    limit = jnp.broadcast_to(jnp.asarray(max_samples, jnp.int32), (num_lanes,))
    states, state_tree = jax.tree_util.tree_flatten(lanes.state)
    # The states first, each aliased to its output: the kernel updates them in place.
    inputs, in_tree = jax.tree_util.tree_flatten((lanes.state, lanes._replace(state=None), limit))

    def kernel(*refs: Any) -> None:
        values = [r[...] for r in refs[: len(inputs)]]
        start, pool, lim = jax.tree_util.tree_unflatten(in_tree, values)

        def running(carry: tuple[jax.Array, Any]) -> jax.Array:
            i, state = carry
            return (i < steps) & some(~state.stopped & (state.n < lim))

        def body(carry: tuple[jax.Array, Any]) -> tuple[jax.Array, Any]:
            i, state = carry
            return i + 1, step(pool._replace(state=state), lim).state

        _, state = jax.lax.while_loop(running, body, (jnp.int32(0), start))
        for ref, value in zip(refs[len(inputs) :], jax.tree_util.tree_leaves(state), strict=True):
            ref[...] = value

    shapes = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in states]
    params: dict[str, Any] = {"interpret": True} if interpret else _triton_params()
    out = pl.pallas_call(
        kernel,
        out_shape=shapes,
        grid=(num_lanes // block,),
        in_specs=[_block_spec(block, x) for x in inputs],
        out_specs=[_block_spec(block, x) for x in shapes],
        input_output_aliases={i: i for i in range(len(states))},
        **params,
    )(*inputs)
    return lanes._replace(state=jax.tree_util.tree_unflatten(state_tree, out))


def _triton_params() -> dict[str, Any]:
    """The Triton backend of `pallas_call` (GPU); imported only when a kernel is lowered."""
    from jax.experimental.pallas import triton as pl_triton

    return {"compiler_params": pl_triton.CompilerParams()}
