"""The JAX side of the trajectory-equality tests, shared by tests/test_reference_trajectories.py
and tests/test_dp_tt.py: the pre-drawn tables, an ask/tell loop on them with injected Laplace
releases, and the comparison with a transcription's `Trajectory`."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from experiments.studies import reference

NUM_ARMS = 4
MEANS = (0.8, 0.55, 0.4, 0.2)
"""Beta(4μ, 4(1 − μ)) arms: continuous rewards on [0, 1], gaps ≥ 0.15."""
DELTA = 0.1
MAX_STEPS = 40_000
TOLERANCE = 1e-5
"""Relative width of a float32-vs-float64 near-tie (float32 ε ≈ 1.2e-7, plus accumulation)."""
MAX_DEFERRED = 3
"""At most this many samples may follow the JAX outcome at a near-tie (see `reference.top_two`)."""
NO_NOISE = 1e9
"""ε at which the Laplace noise is negligible; such runs use the library's own sampler."""
BATCH_STEPS = 20_000
"""Sample cap of the Appendix H cases (a slow one may end censored, but must not starve an arm)."""


@functools.cache
def tables(seed: int, arm_means: tuple[float, ...] = MEANS) -> dict[str, np.ndarray]:
    """Rewards and the randomness of every mechanism, per arm, as float32/float64 tables."""
    rng = np.random.default_rng(seed)
    means = np.asarray(arm_means)[:, None]
    shape = (NUM_ARMS, MAX_STEPS)
    return {
        "reward": rng.beta(4 * means, 4 * (1 - means), shape).astype(np.float32),
        "uniform": rng.uniform(size=shape),
        "normal": rng.standard_normal(shape),
        "laplace": rng.laplace(size=(NUM_ARMS, 64)),
    }


@functools.partial(jax.jit, static_argnames=("alg", "inject", "max_steps"))
def run_jax(alg, inject: bool, state, params, key, table, laplace, max_steps=MAX_STEPS):
    """Ask/tell loop on ``table``; returns (arms, τ, stopped, recommendation, final state).

    With ``inject``, every release (`pending_release`) gets the i-th Laplace draw of the
    released arm, scaled by 1/(ε · count), through ``update(…, release=…)``.
    """
    num_arms = table.shape[0]
    arange = jnp.arange(num_arms)

    def cond(carry):
        state, _, _, _, step = carry
        return ~alg.stopping(state, params)[0] & (step < max_steps)

    def body(carry):
        state, taken, released, arms, step = carry
        arm = alg.select(state, params)
        z = table[arm, taken[arm]]
        due, means, counts = alg.pending_release(state, arm, z, params)
        fresh = due & (counts > 0)
        noise = laplace[arange, released] / (params.epsilon * jnp.maximum(counts, 1))
        release = means + noise if inject else None
        state = alg.update(jax.random.fold_in(key, step), state, arm, z, params, release)
        taken = taken.at[arm].add(1)
        return state, taken, released + fresh, arms.at[step].set(arm), step + 1

    zeros = jnp.zeros(num_arms, jnp.int32)
    arms = jnp.full(max_steps, -1, jnp.int32)
    state, _, _, arms, _ = jax.lax.while_loop(cond, body, (state, zeros, zeros, arms, jnp.int32(0)))
    stop, rec = alg.stopping(state, params)
    return arms, state.n, stop, rec, state


def trajectory_jax(alg, params, table, laplace, inject, seed, batched=False):
    """(JAX trajectory, tie-breaking priority) for one run.

    With ``batched``: at most `BATCH_STEPS` samples, a run that does not stop is returned as
    censored (recommendation −1, docs/semantics.md §14), and ``rounds`` is ``alg.rounds``.
    """
    key = jax.random.key(seed)
    state = alg.init(key, params, NUM_ARMS)
    steps = BATCH_STEPS if batched else MAX_STEPS
    arms, tau, stop, rec, final = run_jax(
        alg,
        inject,
        state,
        params,
        key,
        jnp.asarray(table),
        jnp.asarray(laplace, jnp.float32),
        max_steps=steps,
    )
    assert batched or bool(stop), f"JAX run did not stop within {MAX_STEPS} samples"
    tau = int(tau)
    arms = np.asarray(arms)
    assert (arms[tau:] == -1).all() and (arms[:tau] >= 0).all()
    if not batched:
        got = reference.Trajectory(tuple(arms[:tau].tolist()), tau, int(rec))
    else:
        got = reference.Trajectory(
            tuple(arms[:tau].tolist()),
            tau,
            int(rec) if bool(stop) else -1,
            rounds=int(alg.rounds(final)),
        )
    return got, np.asarray(state.priority, np.float64).tolist()


def assert_same(got: reference.Trajectory, want: reference.Trajectory) -> None:
    """Equal arm sequences, τ and recommendation; points at the first divergence."""
    diverge = next(
        (i for i, (a, b) in enumerate(zip(got.arms, want.arms, strict=False)) if a != b),
        min(len(got.arms), len(want.arms)),
    )
    assert got == want, (
        f"JAX τ={got.tau} rec={got.recommendation}; reference τ={want.tau} "
        f"rec={want.recommendation}; first divergence at sample {diverge}: "
        f"JAX {got.arms[max(diverge - 3, 0) : diverge + 3]} vs reference "
        f"{want.arms[max(diverge - 3, 0) : diverge + 3]}"
    )
