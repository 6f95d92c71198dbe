"""`jaxbai.arrays.batched_last`: under vmap (nested too) the values of the plain function;
`jaxbai.arrays.argmax_random_ties_lanes_last`: the index of `argmax_random_ties`.

Compiled programs of different shapes may round a product-sum differently (one contracted to a
fused multiply-add, the other not), so the vmapped values are compared to the jitted function's
within 2 float32 units in the last place."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbai import theory
from jaxbai.arrays import (
    UNROLL_ARMS,
    argmax_random_ties,
    argmax_random_ties_lanes_last,
    batched_last,
)

cost = batched_last(theory.private_cost)
ULPS = 2.5e-7  # 2 float32 units in the last place, relative


def _args(shape: tuple[int, ...], seed: int = 0) -> list[jax.Array]:
    keys = jax.random.split(jax.random.key(seed), 5)
    mu_i = jax.random.uniform(keys[0], shape)
    mu_j = jax.random.uniform(keys[1], shape)
    w_i, w_j = (jax.random.uniform(k, shape, minval=0.5, maxval=50.0) for k in keys[2:4])
    eps = 10.0 ** jax.random.uniform(keys[4], shape, minval=-3, maxval=1)
    return [mu_i, mu_j, w_i, w_j, eps]


def test_unbatched_is_the_function():
    args = _args((7,))
    np.testing.assert_array_equal(np.asarray(cost(*args)), np.asarray(theory.private_cost(*args)))


def test_vmap_with_broadcast_and_unbatched_arguments():
    mu_i, mu_j, w_i, w_j, eps = _args((6, 5))

    def per_lane(plain):  # a scalar leader against K arms, ε shared by every lane
        f = theory.private_cost if plain else cost
        return lambda a, b, wa, wb: f(a, b, wa, wb, eps[0, 0])

    lanes = (mu_i[:, 0], mu_j, w_i[:, 0], w_j)
    want = jax.jit(jax.vmap(per_lane(True)))(*lanes)
    got = jax.jit(jax.vmap(per_lane(False)))(*lanes)
    assert got.shape == (6, 5)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=ULPS, atol=0)


def test_nested_vmap():
    args = _args((3, 4, 5), seed=1)
    want = jax.jit(theory.private_cost)(*args)
    got = jax.jit(jax.vmap(jax.vmap(cost)))(*args)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=ULPS, atol=0)
    inner_only = jax.vmap(
        lambda a, b: jax.vmap(cost, in_axes=(0, 0, None, None, None))(
            a, b, jnp.float32(2.0), jnp.float32(3.0), jnp.float32(0.5)
        )
    )(args[0], args[1])
    np.testing.assert_allclose(
        np.asarray(inner_only),
        np.asarray(jax.jit(theory.private_cost)(args[0], args[1], 2.0, 3.0, 0.5)),
        rtol=ULPS,
        atol=0,
    )


def _ties(num_lanes: int, num_arms: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Values with many ties (a few levels, ±0 and ±inf) and random priorities, some of them
    tied too (NaN is left out: `jnp.max` on a CPU does not always propagate it)."""
    rng = np.random.default_rng(seed)
    values = rng.choice([0.0, -0.0, 1.0, 2.0, np.inf, -np.inf], size=(num_lanes, num_arms))
    priority = rng.choice([0.1, 0.5, 0.9], size=values.shape) * rng.random(values.shape)
    priority[:, : num_arms // 2] = 0.5  # equal priorities: the lowest index wins
    return values.astype(np.float32), priority.astype(np.float32)


@pytest.mark.parametrize("num_arms", [2, 5, 16, UNROLL_ARMS + 3])
def test_argmax_lanes_last_is_argmax_random_ties(num_arms):
    values, priority = _ties(512, num_arms, seed=num_arms)
    want = jax.jit(jax.vmap(argmax_random_ties))(values, priority)
    got = jax.jit(jax.vmap(argmax_random_ties_lanes_last))(values, priority)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # unbatched, one argument unbatched, nested
    np.testing.assert_array_equal(
        int(argmax_random_ties_lanes_last(values[0], priority[0])),
        int(argmax_random_ties(values[0], priority[0])),
    )
    shared = jax.jit(jax.vmap(argmax_random_ties_lanes_last, in_axes=(None, 0)))
    np.testing.assert_array_equal(
        np.asarray(shared(values[0], priority)),
        np.asarray(jax.vmap(argmax_random_ties, in_axes=(None, 0))(values[0], priority)),
    )
    nested = jax.jit(jax.vmap(jax.vmap(argmax_random_ties_lanes_last)))
    np.testing.assert_array_equal(
        np.asarray(nested(values.reshape(8, 64, -1), priority.reshape(8, 64, -1))).ravel(),
        np.asarray(want),
    )
