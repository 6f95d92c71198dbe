"""Recorded trajectories: chosen fields of the state of chosen runs of a `jaxbai.simulate` call,
every k steps or episode ends, in a buffer of bounded size.

`record_trajectories` replays runs of a grid: the same job keys (`jaxbai.engine.job_key`: a run
depends only on (seed, run index, ε, δ)), the same initial state (`load_job`) and the same step
(`step_lane`) as the engine's lane program, so a recorded run is the run `jaxbai.simulate` with
those arguments reported, bit for bit, and its law is unchanged (docs/semantics.md §37).

Each run has a buffer of ``points`` slots and one more for its final state. A point is due at
every ``stride``-th tick (a tick: a step, or a step at which the rounds of adaptivity grew); the
stride starts at ``every``. When a point is due and the buffer is full, the buffer keeps every
second point and the stride doubles (`halved`), so the points of a run of any length are, at
any time, the ticks ``stride, 2·stride, …`` up to the current one: at most ``points`` of them,
evenly spaced in ticks.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxbai import checks
from jaxbai.base import Algorithm, Instance, Rounds
from jaxbai.engine._shared import records, rounds
from jaxbai.engine.jobs import Jobs, grid_jobs
from jaxbai.engine.lane_program import Lanes, Table, device_tables, load_job, step_lane
from jaxbai.engine.prepare import _check_grid, with_draws

if TYPE_CHECKING:  # pandas is imported when `TrajectoryRecord.to_frame` is first called
    import pandas

__all__ = [
    "AT",
    "RESERVED",
    "Buffer",
    "TrajectoryRecord",
    "halved",
    "record_trajectories",
    "state_fields",
]

AT = ("steps", "episodes")
RESERVED = ("n", "run", "epsilon", "delta", "point", "final")
"""Column names every recorded point has (`TrajectoryRecord.to_frame`): no field may take them."""
"""When a tick happens: at every engine step, or at every step at which the rounds of
adaptivity (`jaxbai.base.Rounds`) grew: an episode end."""

Field = str | Callable[[Any, Any], jax.Array]
"""A recorded field: an attribute path of the state (``"counts"``, ``"means"``,
``"estimate.phases"``), or a function (state, params) → array of a derived quantity."""


class TrajectoryRecord(NamedTuple):
    """The recorded points of R runs, each with at most ``points`` recorded points (slots
    ``0 … points − 1``) and its final state (slot ``points``). Runs are in the order of
    `jaxbai.simulate`'s results: ε, then δ, then the run indices as given.

    Attributes:
        n: samples drawn at each point, int32 ``(R, points + 1)``; −1 in an unused slot.
        values: each field's value at each point, ``(R, points + 1, …)`` (0 in an unused slot).
        stride: ticks between two recorded points at the end, ``every · 2^j``, ``(R,)``.
        ticks: ticks the run made (steps, or episode ends), ``(R,)``: point i (i < ``points``)
            is tick ``(i + 1) · stride``.
        tau: samples drawn when the run stopped or was cut (`jaxbai.SimulationResult.tau`).
        recommendation: â, −1 if censored.
        censored: the run did not stop within ``max_samples``.
        run: the run index of each recorded run.
        epsilon: its ε.
        delta: its δ.
        at: ``"steps"`` or ``"episodes"`` (`AT`).
    """

    n: np.ndarray
    values: dict[str, np.ndarray]
    stride: np.ndarray
    ticks: np.ndarray
    tau: np.ndarray
    recommendation: np.ndarray
    censored: np.ndarray
    run: np.ndarray
    epsilon: np.ndarray
    delta: np.ndarray
    at: str

    @property
    def nbytes(self) -> int:
        """Bytes of the recorded points: R · (points + 1) · (4 + Σ bytes of one value of each
        field), as on the device while the runs ran."""
        return self.n.nbytes + sum(v.nbytes for v in self.values.values())

    def trajectory(self, i: int) -> dict[str, np.ndarray]:
        """Recorded run ``i``'s points in order, its final state last: ``"n"`` and each field
        (the final state may repeat the last recorded point)."""
        used = self.n[i, :-1] >= 0
        keep = np.append(used, True)
        return {"n": self.n[i, keep], **{k: v[i, keep] for k, v in self.values.items()}}

    def to_frame(self) -> pandas.DataFrame:
        """One row per point of every recorded run: ``run``, ``epsilon``, ``delta``, ``point``
        (its index in the run), ``final`` (the final state), ``n``, then each field, a field
        of several values as ``name_0``, ``name_1``, … (C order)."""
        import pandas

        frames = []
        for i in range(self.n.shape[0]):
            points = self.trajectory(i)
            size = points["n"].shape[0]
            columns: dict[str, Any] = {
                "run": np.full(size, self.run[i]),
                "epsilon": np.full(size, self.epsilon[i]),
                "delta": np.full(size, self.delta[i]),
                "point": np.arange(size),
                "final": np.arange(size) == size - 1,
                "n": points.pop("n"),
            }
            for name, value in points.items():
                flat = value.reshape(size, -1)
                if value.ndim == 1:
                    columns[name] = flat[:, 0]
                else:
                    columns |= {f"{name}_{a}": flat[:, a] for a in range(flat.shape[1])}
            frames.append(pandas.DataFrame(columns))
        return pandas.concat(frames, ignore_index=True)


class Buffer(NamedTuple):
    """One run's points while it runs: ``n`` ``(points + 1,)`` and ``values`` (one array
    ``(points + 1, …)`` per field); slot ``points`` is scratch until the final state is
    written there. ``count``: slots used; ``stride``, ``ticks``: as in `TrajectoryRecord`."""

    n: jax.Array
    values: tuple[jax.Array, ...]
    count: jax.Array
    stride: jax.Array
    ticks: jax.Array


def halved(buffer: Buffer, points: int) -> Buffer:
    """A full buffer with every second point kept (ticks 2·stride, 4·stride, …) and the stride
    doubled: the points are again every stride-th tick.

    Examples:
        >>> full = Buffer(jnp.array([1, 2, 3, 4, 9]), (), jnp.int32(4), jnp.int32(1), 4)
        >>> half = halved(full, 4)
        >>> half.n.tolist(), int(half.count), int(half.stride)
        ([2, 4, -1, -1, 9], 2, 2)
    """
    half = points // 2
    kept = jnp.arange(half) * 2 + 1

    def compact(x: jax.Array, fill: int) -> jax.Array:
        return x.at[:half].set(x[kept]).at[half:points].set(fill)

    return buffer._replace(
        n=compact(buffer.n, -1),
        values=tuple(compact(v, 0) for v in buffer.values),
        count=jnp.int32(half),
        stride=buffer.stride * 2,
    )


def _tick(buffer: Buffer, event: jax.Array, n: jax.Array, values: tuple, points: int) -> Buffer:
    """Count a tick if ``event``; record (n, values) if a point is due, halving a full buffer
    first (the due tick, an odd multiple of the new stride, is then not recorded).

    A step with no point writes into the scratch slot ``points``, so that a step is one
    in-place write whatever happens."""
    ticks = buffer.ticks + event.astype(jnp.int32)
    due = event & (ticks % buffer.stride == 0)
    full = due & (buffer.count == points)
    buffer = jax.lax.cond(full, lambda: halved(buffer, points), lambda: buffer)
    write = due & ~full
    slot = jnp.where(write, buffer.count, points)
    return buffer._replace(
        n=buffer.n.at[slot].set(n),
        values=tuple(b.at[slot].set(v) for b, v in zip(buffer.values, values, strict=True)),
        count=buffer.count + write.astype(jnp.int32),
        ticks=ticks,
    )


def _value(spec: Field, state: Any, params: Any) -> jax.Array:
    """One field's value: the attribute at a dotted path of ``state``, or ``spec(state,
    params)``."""
    if callable(spec):
        return spec(state, params)
    return functools.reduce(getattr, spec.split("."), state)


def state_fields(state: Any) -> list[str]:
    """The attribute paths of a state that a string field may name: the fields of its
    NamedTuple (dotted into a nested NamedTuple) and its public properties.

    Examples:
        >>> import jaxbai
        >>> alg = jaxbai.ttucb()
        >>> state = alg.init(jax.random.key(0), alg.params(), 2)
        >>> state_fields(state)[:3], "means" in state_fields(state)
        (['n', 'counts', 'leader_counts'], True)
    """
    names = []
    for name in getattr(type(state), "_fields", ()):
        value = getattr(state, name)
        nested = state_fields(value) if hasattr(type(value), "_fields") else [None]
        names += [name if sub is None else f"{name}.{sub}" for sub in nested]
    attributes = vars(type(state)).items()
    return names + [k for k, v in attributes if isinstance(v, property) and k[0] != "_"]


@functools.partial(jax.jit, static_argnames=("alg", "num_arms", "fields", "at", "points"))
def _record(
    alg: Algorithm,
    num_arms: int,
    fields: tuple[tuple[str, Field], ...],
    at: str,
    points: int,
    every: jax.Array,
    budget: jax.Array,
    seed: jax.Array,
    table: Table,
) -> tuple[Buffer, tuple]:
    """Every job of ``table``, one after the other (`jax.lax.map`: a run's own program, whose
    halving is a real branch), recorded; returns the buffers and `records` of the final
    states."""
    specs = tuple(spec for _, spec in fields)

    def one(j: jax.Array) -> tuple[Buffer, tuple]:
        lane = Lanes(j, *load_job(alg, num_arms, seed, table, j))

        def sample(state: Any) -> tuple:
            return tuple(_value(spec, state, lane.params) for spec in specs)

        first = sample(lane.state)
        buffer = Buffer(
            n=jnp.full(points + 1, -1, jnp.int32),
            values=tuple(jnp.zeros((points + 1, *jnp.shape(v)), jnp.result_type(v)) for v in first),
            count=jnp.int32(0),
            stride=jnp.asarray(every, jnp.int32),
            ticks=jnp.int32(0),
        )

        def running(carry: tuple[Lanes, Buffer]) -> jax.Array:
            state = carry[0].state
            return ~state.stopped & (state.n < budget)

        def body(carry: tuple[Lanes, Buffer]) -> tuple[Lanes, Buffer]:
            lane, buffer = carry
            stepped = step_lane(alg, budget, lane)
            state = stepped.state
            if at == "steps":
                event = jnp.bool_(True)
            else:  # an episode end: the rounds of adaptivity grew
                event = rounds(alg, state) > rounds(alg, lane.state)
            return stepped, _tick(buffer, event, state.n, sample(state), points)

        lane, buffer = jax.lax.while_loop(running, body, (lane, buffer))
        final = buffer._replace(
            n=buffer.n.at[points].set(lane.state.n),
            values=tuple(
                b.at[points].set(v) for b, v in zip(buffer.values, sample(lane.state), strict=True)
            ),
        )
        return final, records(alg, lane.state)

    return jax.lax.map(one, jnp.arange(table.run.shape[0]))


def _check_options(runs: object, every: object, at: object, points: object) -> np.ndarray:
    """The run indices, int64 ``(R,)``, after checking the options (ValueError)."""
    if at not in AT:
        raise ValueError(f"at must be one of {AT}, got {at!r}")
    for name, value in (("every", every), ("points", points)):
        integer = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
        if not integer or not 1 <= value < checks.COUNT_MAX:
            raise ValueError(
                f"{name} must be a positive integer below {checks.COUNT_MAX}, got {value!r}"
            )
    if points < 2 or points % 2:
        raise ValueError(f"points must be even and at least 2, got {points}")
    if isinstance(runs, (int, np.integer)):  # simulate's runs=16 means 16 runs, not run 16
        raise ValueError(f"runs names run indices (a sequence, e.g. range({runs})), got {runs!r}")
    indices = np.atleast_1d(np.asarray(runs))
    integral = indices.dtype.kind in "iu" and indices.ndim == 1 and indices.size > 0
    if not integral or (indices < 0).any() or (indices > checks.COUNT_MAX).any():
        raise ValueError(f"runs must be run indices in [0, {checks.COUNT_MAX}], got {runs!r}")
    return indices.astype(np.int64)


def _field_specs(fields: Sequence[str] | Mapping[str, Field]) -> tuple[tuple[str, Field], ...]:
    """(name, spec) of each field: a sequence of paths names each by its path."""
    if isinstance(fields, str):
        raise ValueError(f"fields must be a sequence of names or a mapping, not {fields!r}")
    pairs = tuple(fields.items()) if isinstance(fields, Mapping) else tuple((f, f) for f in fields)
    for name, spec in pairs:
        if (
            not isinstance(name, str)
            or name in RESERVED
            or not (callable(spec) or isinstance(spec, str))
        ):
            raise ValueError(
                f"field {name!r}: a name other than {', '.join(RESERVED)} (the columns every "
                f"point has) with an attribute path or a function (state, params) -> array, "
                f"got {spec!r}"
            )
    names = [name for name, _ in pairs]
    clashes = [a for a in names for b in names if a != b and a.startswith(f"{b}_")]
    if clashes:  # a vector field b's columns are b_0, b_1, … (`TrajectoryRecord.to_frame`)
        raise ValueError(f"field names {clashes} clash with the columns of another field")
    if not pairs:
        raise ValueError("fields must name at least one field")
    return pairs


def _check_fields(
    fields: tuple[tuple[str, Field], ...], alg: Algorithm, num_arms: int, seed: int, table: Table
) -> int:
    """Trace each field on the shape of a run's initial state (nothing compiles); ValueError
    for a path the state lacks (listing those it has) or a value that is not one array.
    Returns the bytes of one value of every field."""
    load = functools.partial(load_job, alg, num_arms)
    _, state, params, _ = jax.eval_shape(load, jnp.uint32(seed), table, jnp.int32(0))
    size = 0
    for name, spec in fields:
        try:
            shape = jax.eval_shape(functools.partial(_value, spec), state, params)
        except AttributeError as err:
            available = ", ".join(state_fields(state))
            raise ValueError(f"field {name!r}: the state has no {spec!r} ({available})") from err
        except (TypeError, IndexError) as err:  # a function of another signature or shape
            raise ValueError(f"field {name!r}: {spec!r} fails on the state: {err}") from err
        if not isinstance(shape, jax.ShapeDtypeStruct):
            raise ValueError(f"field {name!r} is not one array: {shape}")
        size += shape.size * shape.dtype.itemsize
    return size


def _check_memory(runs: int, points: int, field_bytes: int, memory: int | None) -> None:
    """ValueError if the buffers, R · (points + 1) · (4 + ``field_bytes``) bytes, exceed
    ``memory`` (None: not known).

    Examples:
        >>> _check_memory(2, 1024, 8, 2**30)
        >>> _check_memory(2, 2**26, 8, 2**30)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: recording 2 runs of 67,108,864 points needs 1.5 GiB, more than this ...
    """
    need = runs * (points + 1) * (4 + field_bytes)
    if memory is not None and need > memory:
        raise ValueError(
            f"recording {runs} runs of {points:,} points needs {need / 2**30:,.1f} GiB, more "
            f"than this machine's {memory / 2**30:,.1f} GiB: fewer points or runs"
        )


def record_trajectories(
    alg: Algorithm,
    inst: Instance,
    epsilon: ArrayLike | None = None,
    delta: ArrayLike = 0.01,
    runs: int | Sequence[int] = (0,),
    seed: int = 0,
    fields: Sequence[str] | Mapping[str, Field] = ("counts",),
    every: int = 1,
    at: str = "steps",
    points: int = 1024,
    max_samples: int = 10**9,
    draws: str = "auto",
) -> TrajectoryRecord:
    """Record chosen fields of the state over time for the runs ``runs`` of every (ε, δ) of
    ``jaxbai.simulate(alg, inst, epsilon, delta, seed=seed, max_samples=max_samples,
    draws=draws)``: the same runs, bit for bit (docs/semantics.md §37).

    A point is due every ``every`` ticks, a tick being an engine step (``at="steps"``: one
    sample per step, or up to `jaxbai.base.Budgeted.samples_per_step` with per-episode draws)
    or an episode end (``at="episodes"``: a step at which the rounds of adaptivity grew; the
    algorithm must count them, `jaxbai.base.Rounds`). Each run keeps at most ``points`` points,
    evenly spaced in ticks (when the buffer fills, every second point is dropped and the
    stride doubles), and its final state. Memory: R · (points + 1) · (4 + Σ bytes of one value
    of each field) on the device and on the host (`TrajectoryRecord.nbytes`), R the recorded
    runs; the runs run one after the other, each at the speed of one lane.

    Args:
        alg: an algorithm, as in `jaxbai.simulate`.
        inst: an instance.
        epsilon: scalar or 1-D sequence of privacy budgets (ignored by TTUCB).
        delta: scalar or 1-D sequence of risks.
        runs: the run indices to record (of each (ε, δ) cell), each ≥ 0.
        seed: the master seed of the `jaxbai.simulate` call.
        fields: attribute paths of the state (``"counts"``, ``"means"`` for μ̃,
            ``"estimate.phases"``), or a mapping name → path or function (state, params) →
            array (a stopping statistic, say).
        every: ticks between two points at the start.
        at: ``"steps"`` or ``"episodes"``.
        points: recorded points per run at most (even, ≥ 2).
        max_samples: per-run sample budget, as in `jaxbai.simulate`.
        draws: as `jaxbai.engine.run_grid`'s (`jaxbai.engine.DRAWS`).

    Raises:
        ValueError: before anything compiles, for what `jaxbai.simulate` refuses, a field the
            state lacks (the message lists those it has), ``points`` odd or below 2,
            ``every`` < 1, a negative run index or a bare count as ``runs``, ``at`` not in
            `AT`, ``at="episodes"`` for an algorithm without rounds, a field name that
            `RESERVED` holds or that clashes with another's columns, or buffers larger than
            the host's memory (they are copied there; a device's memory is not checked).

    Examples:
        >>> import jaxbai
        >>> rec = record_trajectories(
        ...     jaxbai.ttucb(), jaxbai.bernoulli([0.6, 0.2]), runs=[0, 2], points=8
        ... )
        >>> sim = jaxbai.simulate(jaxbai.ttucb(), jaxbai.bernoulli([0.6, 0.2]), runs=4)
        >>> rec.tau.tolist() == sim.tau[[0, 2]].tolist(), rec.n.shape, rec.nbytes
        (True, (2, 9), 216)
        >>> points = rec.trajectory(0)
        >>> bool((points["counts"].sum(axis=1) == points["n"]).all())
        True
    """
    eps_in, dlt_in = checks.cell_values(alg, epsilon, delta)
    indices = _check_options(runs, every, at, points)
    specs = _field_specs(fields)
    cells = grid_jobs(inst, eps_in, dlt_in, runs=len(indices))
    jobs = Jobs(
        cells.instance, cells.epsilon, cells.delta, np.tile(indices, len(cells) // len(indices))
    )
    _check_grid(alg, jobs, max_samples)
    seed = checks.check_seed(seed)
    alg = with_draws(alg, jobs.instance, draws)
    if at == "episodes" and not isinstance(alg, Rounds):
        raise ValueError(f"at='episodes' needs an algorithm with rounds; {alg.name} has none")
    num_arms = int(np.asarray(jobs.instance.means).shape[-1])
    table, order = device_tables(jobs, np.arange(len(jobs)), 1, pad=False)
    field_bytes = _check_fields(specs, alg, num_arms, seed, table)
    _check_memory(len(jobs), points, field_bytes, checks.memory_bytes())
    buffers, final = jax.device_get(
        _record(
            alg,
            num_arms,
            specs,
            at,
            points,
            jnp.int32(every),
            jnp.int32(max_samples),
            jnp.uint32(seed),
            table,
        )
    )
    slot = np.argsort(order[0])  # device_tables orders the jobs by (ε, δ)
    tau, stopped, recommendation = (np.asarray(x)[slot] for x in final[:3])
    censored = ~stopped | (tau > max_samples)
    return TrajectoryRecord(
        n=np.asarray(buffers.n)[slot],
        values={
            name: np.asarray(v)[slot] for (name, _), v in zip(specs, buffers.values, strict=True)
        },
        stride=np.asarray(buffers.stride)[slot],
        ticks=np.asarray(buffers.ticks)[slot],
        tau=tau,
        recommendation=np.where(censored, -1, recommendation),
        censored=censored,
        run=jobs.run,
        epsilon=jobs.epsilon,
        delta=jobs.delta,
        at=at,
    )
