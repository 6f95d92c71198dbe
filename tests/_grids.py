"""Helpers of the grid-engine tests: per-job results compared bit for bit, the separate runs a
shared-δ trajectory must equal, and grids run in a fresh interpreter with forced devices."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
from _flags import xla_flags

from jaxbai import engine
from jaxbai.base import Budgeted

__all__ = ["FIELDS", "assert_same", "run_with_devices", "separate_runs_on_the_shared_stream"]

FIELDS = ("tau", "recommendation", "censored", "rounds", "counts")
"""The per-job results of a `jaxbai.engine.GridResult`."""


def assert_same(a: engine.GridResult, b: engine.GridResult) -> None:
    """Bitwise-identical per-job results."""
    for field in FIELDS:
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)


def separate_runs_on_the_shared_stream(alg, grid: engine.Jobs, seed: int, max_samples: int):
    """Each job run alone at its own δ, but with its trajectory's stream (key of (run, ε)):
    the step as `jaxbai.engine` runs it (fold_in(stream, n), or per-episode budgeted steps),
    written out here without the engine's lanes, tables or sharing.

    Returns:
      Per job (τ, â, stopped, rounds, N) as NumPy arrays.
    """
    num_arms = np.asarray(grid.instance.means).shape[-1]

    def one(instance, epsilon, delta, run):
        key = engine.job_key(jax.random.key(seed, impl="threefry2x32"), run, epsilon, None)
        init_key, stream = jax.random.split(key)
        params = alg.params(epsilon=epsilon, delta=delta)
        state = alg.init(init_key, params, num_arms)
        cap = jnp.int32(max_samples)

        def step(s):
            if isinstance(alg, Budgeted):
                return alg.budgeted_step(stream, s, instance, params, cap)
            return alg.step(jax.random.fold_in(stream, s.n), s, instance, params)

        final = jax.lax.while_loop(lambda s: ~s.stopped & (s.n < cap), step, state)
        rounds = alg.rounds(final) if hasattr(alg, "rounds") else jnp.int32(-1)
        return final.n, final.recommendation, final.stopped, rounds, final.counts

    args = (jnp.float32(grid.epsilon), jnp.float32(grid.delta), jnp.int32(grid.run))
    return jax.device_get(jax.jit(jax.vmap(one))(grid.instance, *args))


def run_with_devices(script: str, count: int) -> dict:
    """The JSON that ``script`` prints, run in a fresh interpreter on ``count`` forced CPU
    devices (with the suite's compiler flags)."""
    env = dict(os.environ, XLA_FLAGS=xla_flags(count), JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return json.loads(proc.stdout)
