"""The audit's runs of an algorithm on a reward table, and the events counted on them.

Each run is a `lax.while_loop` over ``alg.step`` until it stops or has drawn more than
``horizon`` samples, vmapped over runs and split over the devices with `jax.shard_map`; one
program is compiled per (algorithm, horizon, K, chunk size) and reused for every table, every ε
and every chunk. Run r of a batch uses ``fold_in(base, r)``, split into the init key and a
stream whose step n uses ``fold_in(stream, n)`` (as the engine does), so results do not depend
on chunking or devices. The record of a run (docs/semantics.md §22) is

* ``a[t]``: the arm the step starting at sample t pulls (``alg.select`` before ``alg.step``),
  for t < horizon; −1 where no step starts (after τ, or inside a DP-SE epoch);
* τ and â if the run stopped at τ ≤ horizon.

Candidate events (`labels`, counted by `Tally`): ``a[t] = k`` for every t and arm; ``τ ≤ t``
and ``τ > t`` (not stopped by t), alone and with ``â = k``, for every t ≤ horizon; and "the
prefix a[0:L] (or the whole record) equals v" for geometric lengths L, with v among the
`PREFIX_VALUES` most frequent prefixes of the first `PILOT_RUNS` selection runs (a 32-bit
polynomial hash of the prefix stands for it; a collision only merges records, and an event on
hashes is still an event on the record).
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec

from jaxbai.base import Algorithm, Instance
from jaxbai.engine import select_devices

__all__ = [
    "PILOT_RUNS",
    "PREFIX_VALUES",
    "Chunk",
    "Runner",
    "Tally",
    "base_key",
    "count",
    "labels",
    "runner",
    "selection",
]

PREFIX_VALUES = 8
"""Candidate values per prefix length: the most frequent ones among the pilot runs."""
PILOT_RUNS = 4096
"""Selection runs (per table) whose prefixes supply the candidate values."""

_CHECKPOINTS = 12
_CELLS_PER_CALL = 1 << 24
_MAX_RUNS_PER_DEVICE = 1 << 16
_HASH = 0x9E3779B1


class Chunk(NamedTuple):
    """One program call's output: counts summed over its valid runs, hashes per run."""

    actions: np.ndarray  # (H, K): runs with a[t] = k
    stops: np.ndarray  # (H + 1, K): runs that stopped at τ = t with â = k
    hashes: np.ndarray  # (runs, C + 1) uint32: prefix hashes, then the whole record's


def _powers(length: int) -> np.ndarray:
    """_HASH^t mod 2³², t = 0 … length − 1, as uint32."""
    out, value = np.empty(length, np.uint32), 1
    for t in range(length):
        out[t], value = value, (value * _HASH) % 2**32
    return out


def _trajectory(alg: Algorithm, horizon: int, num_arms: int, checkpoints, key, inst, params):
    """(a[0:horizon] int8, prefix hashes, stopped, τ, â) of one run (module docstring).

    The hash of a prefix a[0:L] is Σ_{t<L} (a[t] + 2)·_HASH^t mod 2³²; it is accumulated
    step by step from the all-(−1) prefix Σ_{t<L} _HASH^t, a pull at t adding (a[t] + 1)·_HASH^t
    to every prefix longer than t.
    """
    powers = _powers(horizon)
    lengths = jnp.asarray(checkpoints)
    empty = jnp.asarray([np.sum(powers[:length], dtype=np.uint32) for length in checkpoints])
    powers = jnp.asarray(powers)
    init_key, stream = jax.random.split(key)
    state = alg.init(init_key, params, num_arms)

    def running(carry):
        state, _, _, steps = carry
        return ~state.stopped & (state.n <= horizon) & (steps <= horizon)

    def body(carry):
        state, actions, hashes, steps = carry
        arm = alg.select(state, params)
        new = alg.step(jax.random.fold_in(stream, state.n), state, inst, params)
        slot = jnp.minimum(state.n, horizon - 1)
        pulled = (new.n > state.n) & (state.n < horizon)
        actions = actions.at[slot].set(jnp.where(pulled, arm, actions[slot]).astype(jnp.int8))
        term = (arm + 1).astype(jnp.uint32) * powers[slot]
        hashes = hashes + jnp.where(pulled & (lengths > state.n), term, jnp.uint32(0))
        return new, actions, hashes, steps + 1

    start = (state, jnp.full(horizon, -1, jnp.int8), empty, jnp.int32(0))
    state, actions, hashes, _ = jax.lax.while_loop(running, body, start)
    return actions, hashes, state.stopped, state.n, state.recommendation


def _device(alg, horizon, num_arms, checkpoints, base, runs, valid, inst, params):
    """One device's chunk: per-arm action counts, (τ, â) histogram, hashes (inside shard_map).

    The whole record's hash is the hash of a[0:horizon] (the last checkpoint) plus
    (â + 2)·_HASH and τ·_HASH² (â + 2 = 1 and τ = 0 if the run did not stop).
    """
    key = jax.random.wrap_key_data(base)
    actions, hashes, stopped, tau, rec = jax.vmap(
        lambda r: _trajectory(
            alg, horizon, num_arms, checkpoints, jax.random.fold_in(key, r), inst, params
        )
    )(runs)
    counts = jnp.stack([jnp.sum((actions == k) & valid[:, None], 0) for k in range(num_arms)], 1)
    row = jnp.where(stopped & valid, tau, horizon + 1)
    stops = jnp.zeros((horizon + 1, num_arms), jnp.int32)
    stops = stops.at[row, jnp.clip(rec, 0, num_arms - 1)].add(1, mode="drop")
    final = hashes[:, -1] + jnp.where(stopped, rec + 2, 1).astype(jnp.uint32) * jnp.uint32(_HASH)
    final = final + jnp.where(stopped, tau, 0).astype(jnp.uint32) * jnp.uint32(_HASH**2 % 2**32)
    return counts[None], stops[None], jnp.concatenate([hashes, final[:, None]], axis=1)


@partial(jax.jit, static_argnames=("alg", "horizon", "num_arms", "checkpoints", "mesh"))
def _records(alg, horizon, num_arms, checkpoints, mesh, base, runs, valid, inst, params):
    """The chunk program: `_device` on every device of ``mesh``, runs split between them."""
    spec, rep = PartitionSpec("d"), PartitionSpec()
    fn = partial(_device, alg, horizon, num_arms, checkpoints)
    return jax.shard_map(
        fn,
        mesh=mesh,
        in_specs=(rep, spec, spec, rep, rep),
        out_specs=(spec, spec, spec),
        check_vma=False,
    )(base, runs, valid, inst, params)


class Runner(NamedTuple):
    """Everything a chunk call needs but the runs."""

    alg: Algorithm
    horizon: int
    num_arms: int
    checkpoints: tuple[int, ...]
    mesh: Mesh
    size: int
    params: Any

    def chunks(self, base: jax.Array, inst: Instance, start: int, stop: int):
        """`Chunk`s covering runs ``start`` … ``stop − 1``, in order."""
        for first in range(start, stop, self.size):
            runs = np.arange(first, first + self.size, dtype=np.uint32)
            out = _records(
                self.alg,
                self.horizon,
                self.num_arms,
                self.checkpoints,
                self.mesh,
                base,
                runs,
                runs < stop,
                inst,
                self.params,
            )
            actions, stops, hashes = jax.device_get(out)
            valid = min(self.size, stop - first)
            yield Chunk(actions.sum(0), stops.sum(0), hashes[:valid])


class Tally:
    """Counts of every candidate event over a range of runs of one table."""

    def __init__(self, horizon: int, num_arms: int, values: np.ndarray) -> None:
        self.runs = 0
        self.actions = np.zeros((horizon, num_arms), np.int64)
        self.stops = np.zeros((horizon + 1, num_arms), np.int64)
        self.values = values
        self.prefixes = np.zeros(values.shape, np.int64)

    def add(self, chunk: Chunk) -> None:
        self.runs += len(chunk.hashes)
        self.actions += chunk.actions
        self.stops += chunk.stops
        hits = chunk.hashes[:, :, None] == self.values[None]
        self.prefixes += hits.sum(axis=0)

    def profile(self) -> np.ndarray:
        """(horizon + 1, 2K) frequencies by time t: of a[t] = k (0 at t = horizon), then of
        τ ≤ t with â = k (what `jaxbai.audit.neighbouring_tables` compares across tables)."""
        actions = np.vstack([self.actions, np.zeros((1, self.actions.shape[1]), np.int64)])
        return np.hstack([actions, np.cumsum(self.stops, axis=0)]) / max(self.runs, 1)

    def counts(self) -> np.ndarray:
        """Every candidate's count, in the order of `labels`."""
        by_time = np.cumsum(self.stops, axis=0)  # τ ≤ t, â = k
        stopped = by_time.sum(axis=1)
        return np.concatenate(
            [
                self.actions.ravel(),
                by_time.ravel(),
                (by_time[-1] - by_time).ravel(),
                stopped,
                self.runs - stopped,
                self.prefixes.ravel(),
            ]
        )


def labels(horizon: int, num_arms: int, checkpoints, values: np.ndarray) -> list[str]:
    """Descriptions of the candidate events, in the order of `Tally.counts`."""
    times, arms = range(horizon + 1), range(num_arms)
    lengths = [f"a[0:{length}]" for length in checkpoints] + ["record"]
    return (
        [f"a[{t}] = {k}" for t in range(horizon) for k in arms]
        + [f"τ ≤ {t}, â = {k}" for t in times for k in arms]
        + [f"{t} < τ ≤ {horizon}, â = {k}" for t in times for k in arms]
        + [f"τ ≤ {t}" for t in times]
        + [f"τ > {t} (or no stop by {horizon})" for t in times]
        + [
            f"{name} hashes to {int(v):#010x}"
            for name, row in zip(lengths, values, strict=True)
            for v in row
        ]
    )


def _prefix_values(pilots: list[np.ndarray]) -> np.ndarray:
    """Per hash column, the `PREFIX_VALUES` most frequent values of the pilot runs (padded)."""
    pooled = np.concatenate(pilots)
    rows = []
    for column in pooled.T:
        values, counts = np.unique(column, return_counts=True)
        top = values[np.argsort(-counts, kind="stable")[:PREFIX_VALUES]]
        rows.append(np.pad(top, (0, PREFIX_VALUES - top.size), mode="edge"))
    return np.stack(rows)


def selection(runner: Runner, bases, insts, half: int) -> tuple[list[Tally], np.ndarray]:
    """Tallies of the tables over the selection runs, with the pilot runs' prefix values."""
    pilot = min(PILOT_RUNS, half)
    streams = [runner.chunks(b, inst, 0, half) for b, inst in zip(bases, insts, strict=True)]
    buffered: list[list[Chunk]] = [[] for _ in insts]
    for i, stream in enumerate(streams):
        while sum(len(c.hashes) for c in buffered[i]) < pilot:
            buffered[i].append(next(stream))
    pilots = [np.concatenate([c.hashes for c in chunks])[:pilot] for chunks in buffered]
    values = _prefix_values(pilots)
    tallies = [Tally(runner.horizon, runner.num_arms, values) for _ in insts]
    for tally, chunks, stream in zip(tallies, buffered, streams, strict=True):
        for chunk in [*chunks, *stream]:
            tally.add(chunk)
    return tallies, values


def count(runner: Runner, base: jax.Array, inst: Instance, start: int, stop: int, values) -> Tally:
    """The tally of runs ``start`` … ``stop − 1`` of ``base`` on ``inst`` (prefix ``values``)."""
    tally = Tally(runner.horizon, runner.num_arms, values)
    for chunk in runner.chunks(base, inst, start, stop):
        tally.add(chunk)
    return tally


def base_key(seed: int, *path: int) -> jax.Array:
    """The key data of ``fold_in(… fold_in(key(seed), path[0]) …, path[-1])``: a batch of runs
    (run r then uses ``fold_in(base, r)``); distinct paths give independent batches."""
    key = jax.random.key(int(seed))
    for index in path:
        key = jax.random.fold_in(key, index)
    return jax.random.key_data(key)


def _runs_per_device(horizon: int, runs_per_half: int, devices: int) -> int:
    """A power of two: ≤ _CELLS_PER_CALL / horizon, ≤ _MAX_RUNS_PER_DEVICE, ≥ the need."""
    cap = max(1, min(_MAX_RUNS_PER_DEVICE, _CELLS_PER_CALL // horizon))
    need = -(-runs_per_half // devices)
    return 1 << min(cap.bit_length() - 1, max(need - 1, 0).bit_length())


def runner(
    alg: Algorithm, params: Any, horizon: int, num_arms: int, runs_per_half: int, device
) -> Runner:
    """The `Runner` of ``alg`` up to ``horizon``, its chunk sized for ``runs_per_half`` runs."""
    devices = select_devices(device)
    size = _runs_per_device(horizon, runs_per_half, len(devices)) * len(devices)
    lengths = np.geomspace(min(num_arms + 1, horizon), horizon, _CHECKPOINTS)
    checkpoints = tuple(int(c) for c in np.unique(np.round(lengths)))  # the last is horizon
    mesh = Mesh(np.array(devices), ("d",))
    return Runner(alg, horizon, num_arms, checkpoints, mesh, size, params)
