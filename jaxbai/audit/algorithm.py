"""Statistical audit of a BAI algorithm under global DP (Definition 8): `audit_algorithm`.

Global DP protects one participant's row of the reward table: the algorithm's published record
(its actions, and τ and â once it stops) must be ε-indistinguishable on two tables that differ
in one row. The auditor runs the algorithm ``runs`` times on each table (`jaxbai.reward_table`:
participant n answers the n-th pull), through nothing but the `jaxbai.base.Algorithm` protocol,
so a user's own algorithm or wrapper is audited the same way as jaxbai's.

Each run is a `lax.while_loop` over ``alg.step`` until it stops or has drawn more than
``horizon`` samples, vmapped over runs and split over the devices with `jax.shard_map`; one
program is compiled per (algorithm, horizon, K, chunk size) and reused for both tables, every ε
and every chunk. Run r of table i uses ``fold_in(fold_in(key(seed), i), r)``, split into the
init key and a stream whose step n uses ``fold_in(stream, n)`` (as the engine does), so results
do not depend on chunking or devices. The record of a run (docs/semantics.md §22) is

* ``a[t]``: the arm the step starting at sample t pulls (``alg.select`` before ``alg.step``),
  for t < horizon; −1 where no step starts (after τ, or inside a DP-SE epoch);
* τ and â if the run stopped at τ ≤ horizon.

Candidate events, counted on the selection half of the runs (`jaxbai.audit._select`):
``a[t] = k`` for every t and arm; ``τ ≤ t`` and ``τ > t`` (not stopped by t), alone and with
``â = k``, for every t ≤ horizon; and "the prefix a[0:L] (or the whole record) equals v" for
geometric lengths L, with v among the `PREFIX_VALUES` most frequent prefixes of the first
`PILOT_RUNS` selection runs (a 32-bit polynomial hash of the prefix stands for it; a
collision only merges records, and an event on hashes is still an event on the record).
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec

from jaxbai import checks
from jaxbai.audit._select import (
    AuditResult,
    certify,
    check_count,
    check_epsilon,
    check_level,
    choose,
)
from jaxbai.base import Algorithm, Instance
from jaxbai.engine import select_devices
from jaxbai.instances import reward_table

__all__ = ["PILOT_RUNS", "PREFIX_VALUES", "audit_algorithm"]

PREFIX_VALUES = 8
"""Candidate values per prefix length: the most frequent ones among the pilot runs."""
PILOT_RUNS = 4096
"""Selection runs (per table) whose prefixes supply the candidate values."""

_CHECKPOINTS = 12
_CELLS_PER_CALL = 1 << 24
_MAX_RUNS_PER_DEVICE = 1 << 16
_HASH = 0x9E3779B1


class _Chunk(NamedTuple):
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


class _Runner(NamedTuple):
    """Everything a chunk call needs but the runs."""

    alg: Algorithm
    horizon: int
    num_arms: int
    checkpoints: tuple[int, ...]
    mesh: Mesh
    size: int
    params: Any

    def chunks(self, base: jax.Array, inst: Instance, start: int, stop: int):
        """`_Chunk`s covering runs ``start`` … ``stop − 1``, in order."""
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
            yield _Chunk(actions.sum(0), stops.sum(0), hashes[:valid])


class _Tally:
    """Counts of every candidate event over a range of runs of one table."""

    def __init__(self, horizon: int, num_arms: int, values: np.ndarray) -> None:
        self.runs = 0
        self.actions = np.zeros((horizon, num_arms), np.int64)
        self.stops = np.zeros((horizon + 1, num_arms), np.int64)
        self.values = values
        self.prefixes = np.zeros(values.shape, np.int64)

    def add(self, chunk: _Chunk) -> None:
        self.runs += len(chunk.hashes)
        self.actions += chunk.actions
        self.stops += chunk.stops
        hits = chunk.hashes[:, :, None] == self.values[None]
        self.prefixes += hits.sum(axis=0)

    def counts(self) -> np.ndarray:
        """Every candidate's count, in the order of `_labels`."""
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


def _labels(horizon: int, num_arms: int, checkpoints, values: np.ndarray) -> list[str]:
    """Descriptions of the candidate events, in the order of `_Tally.counts`."""
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


def _selection(runner: _Runner, bases, insts, half: int) -> tuple[list[_Tally], np.ndarray]:
    """Tallies of both tables over the selection runs, with the pilot runs' prefix values."""
    pilot = min(PILOT_RUNS, half)
    streams = [runner.chunks(b, inst, 0, half) for b, inst in zip(bases, insts, strict=True)]
    buffered: list[list[_Chunk]] = [[], []]
    for i, stream in enumerate(streams):
        while sum(len(c.hashes) for c in buffered[i]) < pilot:
            buffered[i].append(next(stream))
    pilots = [np.concatenate([c.hashes for c in chunks])[:pilot] for chunks in buffered]
    values = _prefix_values(pilots)
    tallies = [_Tally(runner.horizon, runner.num_arms, values) for _ in insts]
    for tally, chunks, stream in zip(tallies, buffered, streams, strict=True):
        for chunk in [*chunks, *stream]:
            tally.add(chunk)
    return tallies, values


def _check_tables(table: Any, table_prime: Any, horizon: object) -> tuple[Any, Any, int]:
    """Reward-table instances of both tables and the validated horizon."""
    inst, inst_prime = reward_table(table), reward_table(table_prime)
    a, b = np.asarray(inst.table), np.asarray(inst_prime.table)
    if a.shape != b.shape:
        raise ValueError(f"the tables must have the same shape, got {a.shape} and {b.shape}")
    rows = np.flatnonzero(np.any(a != b, axis=1))
    if rows.size != 1:
        raise ValueError(f"the tables must differ in exactly one row, they differ in {rows.size}")
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)):
        raise ValueError(f"horizon must be an integer, got {horizon!r}")
    if not 1 <= horizon <= a.shape[0]:
        raise ValueError(f"horizon must lie in [1, T = {a.shape[0]}], got {horizon}")
    if rows[0] >= horizon:
        raise ValueError(
            f"the tables differ in row {rows[0]}, which no pull before the horizon reads"
        )
    return inst, inst_prime, int(horizon)


def _runs_per_device(horizon: int, runs_per_half: int, devices: int) -> int:
    """A power of two: ≤ _CELLS_PER_CALL / horizon, ≤ _MAX_RUNS_PER_DEVICE, ≥ the need."""
    cap = max(1, min(_MAX_RUNS_PER_DEVICE, _CELLS_PER_CALL // horizon))
    need = -(-runs_per_half // devices)
    return 1 << min(cap.bit_length() - 1, max(need - 1, 0).bit_length())


def audit_algorithm(
    alg: Algorithm,
    epsilon: float,
    table: Any,
    table_prime: Any,
    *,
    runs: int,
    seed: int,
    horizon: int,
    confidence: float = 0.95,
    delta: float = 0.0,
    risk: float = 0.01,
    device: str | None = None,
) -> AuditResult:
    """Certified lower bound on the global-DP ε of ``alg`` from its records on two tables.

    Runs ``alg`` ``runs`` times on each (T, K) reward table, with fresh randomness per run,
    up to ``horizon`` samples; ``runs // 2`` runs of each table choose the events, the rest
    certify them (module docstring). With probability ≥ ``confidence``, ε ≥ ``epsilon_lower``
    for any algorithm that is (ε, ``delta``)-DP with respect to changing one row.

    Args:
        alg: any object satisfying `jaxbai.base.Algorithm` (hashable: it is a static argument).
        epsilon: the ε it claims (passed to ``alg.params``), finite and > 0.
        table: (T, K) rewards in [0, 1]; row t is participant t's reward for each arm.
        table_prime: the neighbouring table, equal to ``table`` except in one row < horizon.
        runs: runs per table, ≥ 2.
        seed: seed of the runs' keys.
        horizon: the record covers the first ``horizon`` samples, 1 ≤ horizon ≤ T.
        confidence: confidence of the bound, in (0, 1).
        delta: the δ of an (ε, δ) claim (0 for the ε-DP algorithms of the paper).
        risk: the BAI risk δ passed to ``alg.params``.
        device: ``"cpu"``, ``"gpu"`` or None (JAX's default devices).

    Returns:
        An `AuditResult` (``samples`` counts runs per table).

    Raises:
        ValueError: a bad argument, before anything is compiled.

    Examples:
        >>> import numpy as np, jaxbai
        >>> table = np.zeros((8, 2)); table[1, 1] = 1.0
        >>> table_prime = table.copy(); table_prime[0, 0] = 1.0
        >>> res = audit_algorithm(
        ...     jaxbai.adap_tt(), 1.0, table, table_prime, runs=1000, seed=0, horizon=4
        ... )
        >>> res.epsilon_lower <= 1.0
        True
    """
    eps = check_epsilon(epsilon)
    runs = check_count("runs", runs)
    confidence, delta = check_level(confidence, delta)
    inst, inst_prime, horizon = _check_tables(table, table_prime, horizon)
    checks.check_open_unit("risk", risk)
    params = alg.params(epsilon=eps, delta=risk)
    num_arms = int(inst.table.shape[1])
    devices = select_devices(device)
    half = runs // 2
    size = _runs_per_device(horizon, half, len(devices)) * len(devices)
    lengths = np.geomspace(min(num_arms + 1, horizon), horizon, _CHECKPOINTS)
    checkpoints = tuple(int(c) for c in np.unique(np.round(lengths)))  # the last is horizon
    mesh = Mesh(np.array(devices), ("d",))
    runner = _Runner(alg, horizon, num_arms, checkpoints, mesh, size, params)
    root = jax.random.key(int(seed))
    bases = [jax.random.key_data(jax.random.fold_in(root, i)) for i in range(2)]
    insts = (inst, inst_prime)
    selection, values = _selection(runner, bases, insts, half)
    scores = [tally.counts() for tally in selection]
    choices = choose(scores[0], scores[1], half, half, confidence, delta)
    held_out = []
    for base, instance in zip(bases, insts, strict=True):
        tally = _Tally(horizon, num_arms, values)
        for chunk in runner.chunks(base, instance, half, runs):
            tally.add(chunk)
        held_out.append(tally.counts()[[c.index for c in choices]])
    labels = _labels(horizon, num_arms, checkpoints, values)
    rest = runs - half
    return certify(
        choices, labels, held_out[0], held_out[1], rest, rest, eps, confidence, delta, runs
    )
