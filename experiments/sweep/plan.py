"""Cost plan of a sweep: predicted samples and wall time per cell, before running it.

``python -m experiments.sweep --preset paper --plan`` prints, per cell (algorithm, instance, ε,
δ) and in total, the predicted samples and wall time on the devices this process sees, most
expensive cells first, with their cumulative share: the cells that dominate are the first lines.
Nothing of the grid is run beyond a short pilot.

The model. A cell's mean stopping time is predicted as E[τ] ≈ factor × bound, where

* bound = T*·log(1/(2.4δ)), the lower bound of `experiments.analysis.overlay.lower_bound` (Lemma 5,
  Theorems 10 and 17), or, for cells where `jaxbai.theory` has none (Beta arms, DP on Gaussian
  arms), the engine's cost proxy `jaxbai.engine.predicted_cost`;
* factor = mean τ / bound, measured by a pilot that runs the cheap cells (`PILOT_GUESS` × bound
  ≤ `PILOT_TAU`, and the cheapest cell of every instance) with at least `PILOT_RUNS` runs each;
  every other cell takes the factor of the piloted cell of the same algorithm, instance and δ
  whose ε is nearest on a log scale.

Samples = runs × min(E[τ], max_samples). Wall time: the pilot runs with the lane pool the
whole grid will have (`jaxbai.engine.default_lanes`, no tail compaction; the pilot's runs fill
it), which measures the seconds per lane-step; the grid needs samples / (samples per busy
lane-step) / `EFFICIENCY` lane-steps (one sample per step for the Top Two algorithms; DP-SE
advances an epoch per step, which the pilot's samples per lane-step underestimates), shared by
the processes.

With ``share_deltas`` (docs/semantics.md §31), the δ of an algorithm whose sampling ignores δ
share one trajectory per (instance, ε, run), which runs until its smallest δ stops: that δ's
cell carries the samples and time, the other δ's cells are marked shared and add none. The
pilot still runs every δ separately (each δ's τ has the same law either way).
"""

from __future__ import annotations

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
    "PILOT_TAU",
    "Cell",
    "format_plan",
    "nearest_factor",
    "pilot_cells",
    "plan",
    "predict",
    "shared_deltas",
]

PILOT_RUNS = 8
"""Least runs per piloted cell (more when the lane pool has room for them)."""

PILOT_TAU = 10**5
"""The pilot runs the cells whose expected τ, `PILOT_GUESS` × bound, is at most this."""

PILOT_GUESS = 10.0
"""Factor assumed when choosing the pilot's cells."""

PILOT_CAP = 10**6
"""Per-run sample budget of the pilot (a capped run gives a lower bound on its factor)."""

EFFICIENCY = 0.9
"""Busy lanes / lanes over a whole grid with lane refill (W2 of `experiments.bench`)."""


class Cell(NamedTuple):
    """One cell of the plan.

    Attributes:
        algorithm: the algorithm's label.
        instance: the instance's name.
        epsilon: ε (``inf`` without privacy).
        delta: δ.
        bound: the lower bound T*·log(1/(2.4δ)) (or the engine's cost proxy).
        factor: mean τ / bound.
        basis: where the factor comes from: ``"pilot"`` (measured on this cell),
            ``"nearest"`` (the piloted cell with the nearest ε) or ``"capped"`` (pilot runs
            reached `PILOT_CAP`: a lower bound).
        tau: predicted mean τ, capped at the budget.
        samples: predicted samples of the cell (runs × τ).
        seconds: predicted wall time of the cell.
        shared: its δ is tested on the trajectories of the cell of the smallest δ (shared
            δ), so ``samples`` and ``seconds`` are 0: that cell counts them.
    """

    algorithm: str
    instance: str
    epsilon: float
    delta: float
    bound: float
    factor: float
    basis: str
    tau: float
    samples: float
    seconds: float
    shared: bool = False


def pilot_cells(bound: np.ndarray, epsilon: np.ndarray) -> np.ndarray:
    """Which cells of one (algorithm, instance, δ) row the pilot runs: those with
    `PILOT_GUESS` × bound ≤ `PILOT_TAU`, and in any case the cheapest one (of equal bounds,
    the largest ε: a less private cell is never costlier).

    Example:
        >>> eps = np.array([0.1, 1.0, 10.0])
        >>> pilot_cells(np.array([1e6, 10.0, 1e3]), eps).tolist()
        [False, True, True]
        >>> pilot_cells(np.array([1e6, 1e5, 1e5]), eps).tolist()
        [False, False, True]
    """
    chosen = PILOT_GUESS * bound <= PILOT_TAU
    chosen[np.lexsort((-epsilon, bound))[0]] = True
    return chosen


def nearest_factor(epsilon: np.ndarray, piloted: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """Each cell's factor: its own if piloted, else that of the piloted ε nearest in log ε
    (ties: the smaller ε, the more private one).

    Example:
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


def _bounds(spec: AlgorithmSpec, config: SweepConfig, instance, eps: np.ndarray) -> np.ndarray:
    """Bound of every (ε, δ) of one instance, shape (E, D): theory, else the engine's proxy."""
    from experiments.analysis import overlay
    from jaxbai import engine

    privacy = spec.build(config.threshold).info.privacy
    out = np.empty((len(eps), len(config.deltas)))
    for d, delta in enumerate(config.deltas):
        bound = overlay.lower_bound(
            instance.means, privacy, eps, delta, instance.family, instance.sigma
        )
        if np.isnan(bound).any():
            jobs = engine.grid_jobs(instance.build(), eps, delta, 1)
            bound = np.where(np.isnan(bound), engine.predicted_cost(privacy, jobs), bound)
        out[:, d] = bound
    return out


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


def _pilot(spec, config, eps, bound, chosen, processes) -> tuple[np.ndarray, np.ndarray, float]:
    """Run the chosen cells of one algorithm (one engine grid per family and K) on the lane
    pool of the whole grid.

    Returns the measured factor of every cell (NaN where not piloted), whether a pilot run of
    the cell reached `PILOT_CAP` (its factor is then a lower bound), and the predicted samples
    per second of the whole grid (see the module docstring).
    """
    from experiments.config.specs import instance_groups
    from jaxbai import engine

    alg = spec.build(config.threshold)
    devices = engine.select_devices(config.device)
    jobs_per_device = -(-bound.size * config.runs // (len(devices) * processes))
    lanes = engine.default_lanes(devices[0].platform, jobs_per_device)
    options = {
        "seed": config.seed,
        "max_samples": min(config.max_samples, PILOT_CAP),
        "draws": config.draws,
        "kernel": config.kernel,
        "device": config.device,
        "lanes_per_device": lanes,
        "shrink_after": np.inf,
    }
    factor, capped = np.full(bound.shape, np.nan), np.zeros(bound.shape, bool)
    samples = lane_steps = wall = 0.0
    for group in instance_groups(config.instances):
        cells = [(i, e, d) for i in group for e, d in zip(*np.nonzero(chosen[i]), strict=True)]
        runs = max(PILOT_RUNS, -(-lanes * len(devices) // len(cells)))
        jobs = _concat(
            [
                engine.grid_jobs(config.instances[i].build(), eps[e], config.deltas[d], runs)
                for i, e, d in cells
            ]
        )
        engine.run_grid(alg, jobs, max_chunks=1, chunk_steps=64, **options)  # compiles
        res = engine.run_grid(alg, jobs, **options)
        for (i, e, d), tau in zip(cells, res.tau.reshape(len(cells), runs), strict=True):
            factor[i, e, d] = tau.mean() / bound[i, e, d]
            capped[i, e, d] = bool((tau >= options["max_samples"]).any())
        samples += res.samples
        lane_steps += res.lane_steps
        wall += res.wall_time
    per_step = max(1.0, samples / lane_steps)
    return factor, capped, per_step * EFFICIENCY * lane_steps / max(wall, 1e-9)


def predict(spec: AlgorithmSpec, config: SweepConfig, processes: int = 1) -> list[Cell]:
    """The plan of one algorithm: pilot, then every cell (see the module docstring)."""
    instances = config.instances
    eps = np.asarray(config.epsilons_for(spec), np.float64)
    bound = np.stack([_bounds(spec, config, inst, eps) for inst in instances])  # (I, E, D)
    chosen = np.zeros(bound.shape, bool)
    for i in range(len(instances)):
        for d in range(len(config.deltas)):
            chosen[i, :, d] = pilot_cells(bound[i, :, d], eps)
    measured, capped, rate = _pilot(spec, config, eps, bound, chosen, processes)
    cells = []
    smallest = int(np.argmin(config.deltas))
    for i, inst in enumerate(instances):
        shared = shared_deltas(spec, config, inst)
        for d, delta in enumerate(config.deltas):
            known = chosen[i, :, d] & ~capped[i, :, d]
            if not known.any():  # every pilot run was capped: lower bounds only
                known = chosen[i, :, d]
            factor = nearest_factor(eps, known, measured[i, :, d])
            for e, epsilon in enumerate(eps):
                basis = "pilot" if known[e] else "nearest"
                if capped[i, e, d] or (not known[e] and capped[i, :, d].all()):
                    basis = "capped"
                tau = min(factor[e] * bound[i, e, d], config.max_samples)
                counted = 0.0 if shared and d != smallest else 1.0
                cells.append(
                    Cell(
                        spec.label,
                        inst.name,
                        float(epsilon),
                        float(delta),
                        float(bound[i, e, d]),
                        float(factor[e]),
                        basis,
                        float(tau),
                        counted * float(tau * config.runs),
                        counted * float(tau * config.runs / rate / processes),
                        shared and d != smallest,
                    )
                )
    return cells


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
        f"{'algorithm':<14}{'instance':<10}{'ε':>8}{'δ':>7}{'bound':>10}{'factor':>9}"
        f"{'E[τ]':>10}{'samples':>10}{'share':>7}{'cum.':>7}{'time':>9}"
    ]
    cumulative = 0.0
    for c in cells:
        cumulative += c.samples
        mark = {"pilot": "", "nearest": "~", "capped": "≥"}[c.basis]
        lines.append(
            f"{c.algorithm:<14}{c.instance:<10}{c.epsilon:>8g}{c.delta:>7g}{c.bound:>10.3g}"
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
        f"{'total':<14}{total:>10.3g} samples  {_duration(seconds):>9} on {devices}"
        + (f" × {processes} processes" if processes > 1 else "")
    )
    lines.append(
        "factor: measured by the pilot; ~factor: from the nearest piloted ε; ≥factor: the pilot's "
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
