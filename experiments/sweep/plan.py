"""Cost plan of a sweep: predicted samples and wall time per cell, before running it.

``python -m experiments.sweep --preset paper --plan`` prints, per cell (algorithm, instance, ε,
δ) and in total, the predicted samples and wall time on the devices this process sees, most
expensive cells first, with their cumulative share: the cells that dominate are the first lines.
Nothing of the grid is run beyond a short pilot.

The model. A cell's mean stopping time is predicted as E[τ] ≈ factor × proxy, where

* proxy is the engine's closed-form cost proxy `jaxbai.engine.predicted_cost`
  (log(1/δ) Σ_a w_a, with w_a = 1/Δ_a², plus 1/(εΔ_a) under global DP, times (1 + 2/(e^ε − 1))²
  under local DP): no solver runs, so the plan compiles nothing but the pilot;
* factor = mean τ / proxy, measured by a pilot that runs the cheap cells (`PILOT_GUESS` × proxy
  ≤ `PILOT_TAU`, and the cheapest cell of every (algorithm, instance, δ)) with at least
  `PILOT_RUNS` runs each (more, up to filling the lane pool, while the pilot stays under
  `PILOT_SAMPLES` samples at `PILOT_GUESS` × proxy per run) and at most `PILOT_CAP` samples per
  run; every other cell takes the factor of the piloted cell of the same algorithm, instance
  and δ whose ε is nearest on a log scale (a piloted cell whose runs reached the cap, at least
  its own lower bound). On the default grid mean τ / proxy varies little with ε (TTUCB
  1.4–1.5, AdaP-TT 5–6, DP-SE 10–21) except for AdaP-TT* (3–180: its τ has a hump at
  intermediate ε), whose costly cells the pilot sees only as capped lower bounds.

Samples = runs × min(E[τ], max_samples). Wall time, per algorithm and group of instances (one
engine grid each): the compilation, measured as the pilot's first call (the grid compiles the
same program, and a grid that runs long enough compiles a smaller one each time its tail
compaction quarters the pool, `recompilations`), plus the samples at the pilot's rate: the
pilot runs on the lane pool of the grid (`jaxbai.engine.default_lanes`, no tail compaction),
which measures the seconds per lane-step; the grid needs samples / (samples per lane-step) /
`EFFICIENCY` lane-steps (one sample per step for the Top Two algorithms; DP-SE advances an
epoch per step, which a pilot that does not fill the pool underestimates), shared by the
processes. A cell's time is its share of its grid's. The total is engine time: the sweep adds
its start (importing JAX) and the figures and report, which on a small grid on two CPU cores
take about half as long again.

With ``share_deltas`` (docs/semantics.md §31), the δ of an algorithm whose sampling ignores δ
share one trajectory per (instance, ε, run), which runs until its smallest δ stops: that δ's
cell carries the samples and time, the other δ's cells are marked shared and add none. The
pilot still runs every δ separately (each δ's τ has the same law either way).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from experiments.config import SweepConfig
    from experiments.config.specs import AlgorithmSpec

__all__ = [
    "EFFICIENCY",
    "PILOT_CAP",
    "PILOT_GUESS",
    "PILOT_RUNS",
    "PILOT_SAMPLES",
    "PILOT_TAU",
    "Cell",
    "format_plan",
    "nearest_factor",
    "pilot_cells",
    "plan",
    "predict",
    "recompilations",
    "shared_deltas",
]

PILOT_RUNS = 8
"""Least runs per piloted cell (more when the lane pool has room for them)."""

PILOT_SAMPLES = 2 * 10**7
"""Samples the pilot of one engine grid aims at (at `PILOT_GUESS` × proxy per run)."""

PILOT_TAU = 10**5
"""The pilot runs the cells whose expected τ, `PILOT_GUESS` × proxy, is at most this."""

PILOT_GUESS = 10.0
"""Factor assumed when choosing and sizing the pilot's cells."""

PILOT_CAP = 2 * 10**5
"""Per-run sample budget of the pilot (a capped run gives a lower bound on its factor): a
lane runs one job step by step, so this bounds the pilot's wall time."""

EFFICIENCY = 0.9
"""Busy lanes / lanes over a whole grid with lane refill (W2 of `experiments.bench`)."""


class Cell(NamedTuple):
    """One cell of the plan.

    Attributes:
        algorithm: the algorithm's label.
        instance: the instance's name.
        epsilon: ε (``inf`` without privacy).
        delta: δ.
        proxy: the engine's cost proxy (`jaxbai.engine.predicted_cost`).
        factor: mean τ / proxy.
        basis: where the factor comes from: ``"pilot"`` (measured on this cell),
            ``"nearest"`` (the piloted cell with the nearest ε) or ``"capped"`` (pilot runs
            reached `PILOT_CAP`: a lower bound).
        tau: predicted mean τ, capped at the budget.
        samples: predicted samples of the cell (runs × τ).
        seconds: predicted wall time of the cell (its share of its grid's compilation and
            run).
        shared: its δ is tested on the trajectories of the cell of the smallest δ (shared
            δ), so ``samples`` and ``seconds`` are 0: that cell counts them.
    """

    algorithm: str
    instance: str
    epsilon: float
    delta: float
    proxy: float
    factor: float
    basis: str
    tau: float
    samples: float
    seconds: float
    shared: bool = False


def pilot_cells(proxy: np.ndarray, epsilon: np.ndarray) -> np.ndarray:
    """Which cells of one (algorithm, instance, δ) row the pilot runs: those with
    `PILOT_GUESS` × proxy ≤ `PILOT_TAU`, and in any case the cheapest one (of equal bounds,
    the largest ε: a less private cell is never costlier).

    Examples:
        >>> eps = np.array([0.1, 1.0, 10.0])
        >>> pilot_cells(np.array([1e6, 10.0, 1e3]), eps).tolist()
        [False, True, True]
        >>> pilot_cells(np.array([1e6, 1e5, 1e5]), eps).tolist()
        [False, False, True]
    """
    chosen = PILOT_GUESS * proxy <= PILOT_TAU
    chosen[np.lexsort((-epsilon, proxy))[0]] = True
    return chosen


def nearest_factor(epsilon: np.ndarray, piloted: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """Each cell's factor: its own if piloted, else that of the piloted ε nearest in log ε
    (ties: the smaller ε, the more private one).

    Examples:
        >>> eps = np.array([0.01, 0.1, 1.0, 10.0])
        >>> nearest_factor(eps, np.array([False, False, True, True]),
        ...                np.array([0, 0, 3.0, 2.0])).tolist()
        [3.0, 3.0, 3.0, 2.0]
    """
    log_eps = np.log(epsilon)  # ε = ∞ only in rows without privacy, which are all piloted
    known = np.flatnonzero(piloted)
    out = np.asarray(factor, np.float64).copy()
    for c in np.flatnonzero(~piloted):
        nearest = min(known, key=lambda k: (abs(log_eps[c] - log_eps[k]), log_eps[k]))
        out[c] = factor[nearest]
    return out


def _proxies(spec: AlgorithmSpec, config: SweepConfig, instance, eps: np.ndarray) -> np.ndarray:
    """The engine's cost proxy of every (ε, δ) of one instance, shape (E, D)."""
    from jaxbai import engine

    privacy = spec.build(config.threshold).info.privacy
    jobs = engine.grid_jobs(instance.build(), eps, config.deltas, 1)  # order: ε, then δ
    return engine.predicted_cost(privacy, jobs).reshape(len(eps), len(config.deltas))


def shared_deltas(spec: AlgorithmSpec, config: SweepConfig, instance) -> bool:
    """Whether the sweep runs the δ of ``instance`` on shared trajectories, as the engine
    decides it (`jaxbai.engine.with_shared_deltas` of the algorithm with the sweep's draws)."""
    from jaxbai import engine

    if not config.share_deltas or len(config.deltas) < 2:
        return False
    inst = instance.build()
    alg = engine.with_draws(spec.build(config.threshold), inst, config.draws)
    jobs = engine.grid_jobs(inst, 1.0, config.deltas, 1)
    return isinstance(engine.with_shared_deltas(alg, jobs, True), engine.SharedDeltas)


def _concat(jobs: Sequence) -> Any:
    """One job list from several of the same instance type and K."""
    import jax

    return jax.tree_util.tree_map(lambda *xs: np.concatenate([np.asarray(x) for x in xs]), *jobs)


class _Pilot(NamedTuple):
    """What the pilot of one engine grid measured."""

    factor: np.ndarray  # mean τ / proxy of the piloted cells of the group, NaN elsewhere
    capped: np.ndarray  # a pilot run of the cell reached PILOT_CAP
    compile_s: float  # seconds of the first call (compilation)
    samples_per_s: float  # predicted samples per second of the grid
    lanes: int  # lanes per device of the grid


def _pilot(spec, config, group, eps, proxy, chosen, processes) -> _Pilot:
    """Run the chosen cells of one algorithm on the instances of ``group`` (one engine grid,
    the lane pool of the sweep's grid of the group; see the module docstring)."""
    from jaxbai import engine

    alg = spec.build(config.threshold)
    devices = engine.select_devices(config.device)
    grid_jobs = len(group) * len(eps) * len(config.deltas) * config.runs
    lanes = engine.default_lanes(devices[0].platform, -(-grid_jobs // (len(devices) * processes)))
    cells = [(i, e, d) for i in group for e, d in zip(*np.nonzero(chosen[i]), strict=True)]
    guess = PILOT_GUESS * sum(float(proxy[c]) for c in cells)  # samples of one run per cell
    fill = -(-lanes * len(devices) // len(cells))
    runs = max(PILOT_RUNS, min(fill, int(PILOT_SAMPLES / guess)))
    options = {
        "seed": config.seed,
        "max_samples": min(config.max_samples, PILOT_CAP),
        "draws": config.draws,
        "kernel": config.kernel,
        "device": config.device,
        "lanes_per_device": lanes,
        "shrink_after": np.inf,
        "min_slots": -(-grid_jobs // (len(devices) * processes)),  # the grid's program
    }
    jobs = _concat(
        [
            engine.grid_jobs(config.instances[i].build(), eps[e], config.deltas[d], runs)
            for i, e, d in cells
        ]
    )
    start = time.perf_counter()
    engine.run_grid(alg, jobs, max_chunks=1, chunk_steps=64, **options)  # compiles
    compile_s = time.perf_counter() - start
    res = engine.run_grid(alg, jobs, **options)
    factor, capped = np.full(proxy.shape, np.nan), np.zeros(proxy.shape, bool)
    for (i, e, d), tau in zip(cells, res.tau.reshape(len(cells), runs), strict=True):
        factor[i, e, d] = tau.mean() / proxy[i, e, d]
        capped[i, e, d] = bool((tau >= options["max_samples"]).any())
    per_step = max(1.0, res.samples / res.lane_steps)
    rate = per_step * EFFICIENCY * res.lane_steps / max(res.wall_time, 1e-9)
    return _Pilot(factor, capped, compile_s, rate * processes, lanes)


def predict(spec: AlgorithmSpec, config: SweepConfig, processes: int = 1) -> list[Cell]:
    """The plan of one algorithm: pilot, then every cell (see the module docstring)."""
    from experiments.config.specs import instance_groups

    instances = config.instances
    eps = np.asarray(config.epsilons_for(spec), np.float64)
    proxy = np.stack([_proxies(spec, config, inst, eps) for inst in instances])  # (I, E, D)
    chosen = np.zeros(proxy.shape, bool)
    for i in range(len(instances)):
        for d in range(len(config.deltas)):
            chosen[i, :, d] = pilot_cells(proxy[i, :, d], eps)
    smallest = int(np.argmin(config.deltas))
    cells: list[Cell] = []
    for group in instance_groups(instances):
        pilot = _pilot(spec, config, group, eps, proxy, chosen, processes)
        own = []
        for i in group:
            shared = shared_deltas(spec, config, instances[i])
            for d, delta in enumerate(config.deltas):
                known = chosen[i, :, d] & ~pilot.capped[i, :, d]
                if not known.any():  # every pilot run was capped: lower bounds only
                    known = chosen[i, :, d]
                factor = nearest_factor(eps, known, pilot.factor[i, :, d])
                bound = np.where(pilot.capped[i, :, d], pilot.factor[i, :, d], np.nan)
                factor = np.fmax(factor, bound)  # a capped cell: at least its pilot's
                for e, epsilon in enumerate(eps):
                    basis = "pilot" if known[e] else "nearest"
                    if pilot.capped[i, e, d] or (not known[e] and pilot.capped[i, :, d].all()):
                        basis = "capped"
                    tau = float(min(factor[e] * proxy[i, e, d], config.max_samples))
                    off = shared and d != smallest
                    samples = 0.0 if off else tau * config.runs
                    own.append(
                        Cell(
                            spec.label,
                            instances[i].name,
                            float(epsilon),
                            float(delta),
                            float(proxy[i, e, d]),
                            float(factor[e]),
                            basis,
                            tau,
                            samples,
                            0.0,
                            off,
                        )
                    )
        cells += _timed(own, pilot)
    return cells


def recompilations(lanes: int, seconds: float) -> int:
    """Programs the engine's tail compaction compiles in a grid of ``lanes`` lanes per device
    that runs ``seconds`` (compilations not counted): none before the engine's
    ``shrink_after``, else one per quartering of the pool down to 4 lanes
    (`jaxbai.engine.lane_program.shrink_pool`), the most a grid with a tail of long runs
    compiles.

    Examples:
        >>> recompilations(256, 60.0), recompilations(32, 60.0), recompilations(256, 1.0)
        (3, 1, 0)
    """
    from jaxbai import engine

    return int(math.log(lanes / 4, 4) + 1e-9) if seconds > engine.SHRINK_AFTER_S else 0


def _timed(cells: list[Cell], pilot: _Pilot) -> list[Cell]:
    """The cells of one engine grid with their seconds: the grid's compilations (the first
    and those of its tail, `recompilations`) and run, shared in proportion to their samples."""
    total = sum(c.samples for c in cells)
    running = total / pilot.samples_per_s
    seconds = running + pilot.compile_s * (1 + recompilations(pilot.lanes, running))
    return [c._replace(seconds=seconds * c.samples / total if total else 0.0) for c in cells]


def plan(config: SweepConfig, processes: int = 1) -> list[Cell]:
    """Every cell of a sweep, predicted; most samples first."""
    cells = [c for spec in config.algorithms for c in predict(spec, config, processes)]
    return sorted(cells, key=lambda c: -c.samples)


def _duration(seconds: float) -> str:
    """Seconds in the largest sensible unit.

    >>> _duration(42.0), _duration(5400.0), _duration(3 * 86400.0)
    ('42 s', '1.5 h', '3.0 d')
    """
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= 2 * size if unit == "min" else seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def format_plan(cells: Sequence[Cell], devices: str, processes: int = 1) -> str:
    """The plan as text: one line per cell (most samples first, cumulative share), then the
    total per algorithm and overall."""
    total = sum(c.samples for c in cells)
    any_shared = any(c.shared for c in cells)
    lines = [
        f"{'algorithm':<14}{'instance':<10}{'ε':>8}{'δ':>7}{'proxy':>10}{'factor':>9}"
        f"{'E[τ]':>10}{'samples':>10}{'share':>7}{'cum.':>7}{'time':>9}"
    ]
    cumulative = 0.0
    for c in cells:
        cumulative += c.samples
        mark = {"pilot": "", "nearest": "~", "capped": "≥"}[c.basis]
        lines.append(
            f"{c.algorithm:<14}{c.instance:<10}{c.epsilon:>8g}{c.delta:>7g}{c.proxy:>10.3g}"
            f"{mark + format(c.factor, '.3g'):>9}{c.tau:>10.3g}"
            f"{'shared' if c.shared else format(c.samples, '.3g'):>10}"
            f"{c.samples / total:>7.1%}{cumulative / total:>7.1%}{_duration(c.seconds):>9}"
        )
    lines.append("")
    for name in dict.fromkeys(c.algorithm for c in cells):
        own = [c for c in cells if c.algorithm == name]
        seconds = sum(c.seconds for c in own)
        samples = sum(c.samples for c in own)
        lines.append(f"{name:<14}{samples:>10.3g} samples  {_duration(seconds):>9}")
    seconds = sum(c.seconds for c in cells)
    lines.append(
        f"{'total':<14}{total:>10.3g} samples  {_duration(seconds):>9} of engine time on {devices}"
        + (f" × {processes} processes" if processes > 1 else "")
    )
    lines.append(
        "factor: mean τ / proxy measured by the pilot; ~factor: from the nearest piloted ε; "
        "≥factor: the pilot's "
        f"runs reached {PILOT_CAP:.0e} samples (a lower bound)"
        + ("; shared: tested on the trajectories of the smallest δ" if any_shared else "")
    )
    return "\n".join(lines)


def print_plan(config: SweepConfig, processes: int = 1) -> int:
    """Pilot, predict and print the plan of ``config``; returns the exit code (0)."""
    import jax

    from jaxbai import engine

    devices = engine.select_devices(config.device)
    start = time.perf_counter()
    cells = plan(config, processes)
    kinds = ", ".join(sorted({d.device_kind for d in devices}))
    print(format_plan(cells, f"{len(devices)} {devices[0].platform} devices ({kinds})", processes))
    print(f"plan made in {time.perf_counter() - start:.0f} s with JAX {jax.__version__}")
    return 0
