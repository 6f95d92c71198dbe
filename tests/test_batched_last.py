"""`jaxbai.arrays.batched_last`: under vmap (nested too) the values of the plain function.

Compiled programs of different shapes may round a product-sum differently (one contracted to a
fused multiply-add, the other not), so the vmapped values are compared to the jitted function's
within 2 float32 units in the last place."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxbai import theory
from jaxbai.arrays import batched_last

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
