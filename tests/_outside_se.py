"""A private successive elimination written from scratch against the public protocol
(`jaxbai.base.Algorithm`), as an outside researcher would: the algorithm the audit tests of
tests/test_audit_any.py audit, correct and with its noise scaled down.

Epoch e = 1, 2, … pulls every active arm R_e = ⌈L_e/Δ_e² + L_e/(εΔ_e)⌉ times round-robin
(Δ_e = 2^−e, L_e = log(4|S|e²/δ)), releases each active arm's epoch mean plus
Lap(``noise``/(εR_e)) and eliminates arm a if max_b μ̃_b − μ̃_a > 2(h_e + c_e), h_e =
√(L_e/(2R_e)), c_e = L_e/(εR_e); it stops when one arm is left. A participant's reward enters
one epoch mean, of sensitivity 1/R_e, so ``noise = 1`` is ε-global DP (Definition 8) and
``noise = 1/m`` is mε-DP but claims ε.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from jaxbai.base import PURE, AlgorithmInfo

__all__ = ["Params", "State", "SuccessiveElimination"]


class State(NamedTuple):
    n: jax.Array
    counts: jax.Array
    stopped: jax.Array
    recommendation: jax.Array
    epoch: jax.Array
    active: jax.Array
    pulls: jax.Array
    sums: jax.Array


class Params(NamedTuple):
    epsilon: jax.Array
    delta: jax.Array


@dataclasses.dataclass(frozen=True)
class SuccessiveElimination:
    """Private successive elimination; ``noise`` scales its Laplace noise (1: correct)."""

    name: str = "scratch_se"
    noise: float = 1.0
    info: ClassVar[AlgorithmInfo] = AlgorithmInfo(
        privacy="global", takes_epsilon=True, unit_interval=True, measure=PURE,
        release_noise="laplace",
    )  # fmt: skip

    def params(self, epsilon=None, delta=0.01) -> Params:
        if epsilon is None:
            raise ValueError("scratch_se needs epsilon")
        return Params(jnp.asarray(epsilon, jnp.float32), jnp.asarray(delta, jnp.float32))

    def init(self, key, params, num_arms) -> State:
        del key, params
        zeros = jnp.zeros(num_arms, jnp.int32)
        return State(
            n=jnp.int32(0), counts=zeros, stopped=jnp.bool_(False),
            recommendation=jnp.int32(-1), epoch=jnp.int32(1),
            active=jnp.ones(num_arms, bool), pulls=jnp.int32(0),
            sums=jnp.zeros(num_arms, jnp.float32),
        )  # fmt: skip

    def _epoch(self, state: State, params: Params):
        """R_e, and the elimination threshold 2(h_e + c_e)."""
        e = state.epoch.astype(jnp.float32)
        gap = 2.0**-e
        log_term = jnp.log(4 * jnp.sum(state.active) * e**2 / params.delta)
        pulls = jnp.ceil(log_term / gap**2 + log_term / (params.epsilon * gap))
        h = jnp.sqrt(log_term / (2 * pulls))
        c = log_term / (pulls * params.epsilon)
        return pulls, 2 * (h + c)

    def select(self, state: State, params: Params):
        del params
        rank = jnp.cumsum(state.active) - 1
        slot = state.pulls % jnp.sum(state.active)
        return jnp.argmax(state.active & (rank == slot)).astype(jnp.int32)

    def privatize(self, key, reward, params):
        del key, params
        return jnp.asarray(reward, jnp.float32)

    def update(self, key, state: State, arm, z, params: Params) -> State:
        pulls, threshold = self._epoch(state, params)
        pulled = jnp.arange(state.sums.shape[0]) == arm
        state = state._replace(
            n=state.n + 1,
            counts=state.counts + pulled,
            pulls=state.pulls + 1,
            sums=state.sums + jnp.where(pulled, z, 0.0),
        )
        scale = self.noise / (params.epsilon * pulls)
        noisy = state.sums / pulls + scale * jax.random.laplace(key, state.sums.shape)
        noisy = jnp.where(state.active, noisy, -jnp.inf)
        closed = state._replace(
            epoch=state.epoch + 1,
            active=state.active & (jnp.max(noisy) - noisy <= threshold),
            pulls=jnp.int32(0),
            sums=jnp.zeros_like(state.sums),
        )
        done = state.pulls >= jnp.sum(state.active) * pulls
        return jax.tree.map(lambda a, b: jnp.where(done, a, b), closed, state)

    def stopping(self, state: State, params: Params):
        del params
        return jnp.sum(state.active) <= 1, jnp.argmax(state.active).astype(jnp.int32)

    def step(self, key, state: State, inst, params: Params) -> State:
        stop, best = self.stopping(state, params)
        key_draw, key_noise = jax.random.split(key)
        arm = self.select(state, params)
        z = inst.draw(jax.random.uniform(key_draw), key_draw, arm, state.n)
        ran = self.update(key_noise, state, arm, z, params)
        halted = state._replace(stopped=jnp.bool_(True), recommendation=best)
        new = jax.tree.map(lambda a, b: jnp.where(stop, a, b), halted, ran)
        return jax.tree.map(lambda a, b: jnp.where(state.stopped, a, b), state, new)
