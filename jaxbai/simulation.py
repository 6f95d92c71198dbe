"""Monte-Carlo simulation of one instance over an (ε × δ × runs) grid, through the engine.

`simulate` is the convenience entry point; it runs the grid with `jaxbai.engine.run_grid`, so
results are identical to the engine's for the same seed (job keys depend only on the seed, the
run index, ε and δ).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from jax.typing import ArrayLike

from jaxbai import checks
from jaxbai.base import Algorithm, Instance
from jaxbai.engine import grid_jobs, run_grid

__all__ = [
    "SimulationResult",
    "simulate",
]


class SimulationResult(NamedTuple):
    """Per-run outcomes, numpy arrays of shape ``epsilon.shape + delta.shape + (runs,)``.

    Attributes:
        tau: samples drawn when the run stopped (the K initial samples included). For a
            censored run, the samples drawn when it was cut (a lower bound on τ).
        recommendation: recommended arm (−1 if censored).
        correct: recommendation is the best arm (False if censored).
        censored: the run did not stop within ``max_samples`` samples.
        rounds: rounds of adaptivity (DAF: Σ_a k_a; DP-SE: epochs; −1 otherwise).
        counts: final counts N_a, shape ``epsilon.shape + delta.shape + (runs, K)``; they sum
            to ``tau`` (a censored run's: when it was cut).
        epsilon: ε of each run.
        delta: δ of each run.
    """

    tau: np.ndarray
    recommendation: np.ndarray
    correct: np.ndarray
    censored: np.ndarray
    rounds: np.ndarray
    counts: np.ndarray
    epsilon: np.ndarray
    delta: np.ndarray


def simulate(
    alg: Algorithm,
    inst: Instance,
    epsilon: ArrayLike | None = None,
    delta: ArrayLike = 0.01,
    runs: int = 1000,
    seed: int = 0,
    max_samples: int = 10**9,
    **engine_options: Any,
) -> SimulationResult:
    """Run ``runs`` independent trajectories of ``alg`` on ``inst`` for every (ε, δ).

    Everything runs as one compiled program (lane refill over all runs and cells); a new ε or
    δ value reuses it. Runs that do not stop within ``max_samples`` are reported as censored.

    Args:
        alg: an algorithm (`jaxbai.ttucb`, …, `jaxbai.dp_se`).
        inst: an instance (`jaxbai.bernoulli`, …) with a unique best arm.
        epsilon: scalar or 1-D sequence of privacy budgets (ignored by TTUCB).
        delta: scalar or 1-D sequence of risks.
        runs: runs per (ε, δ) cell.
        seed: master seed.
        max_samples: per-run sample budget (≤ 2³¹ − 1).
        **engine_options: passed to `jaxbai.engine.run_grid` (``device``, ``draws``,
            ``lanes_per_device``, ``progress``, …).

    Example:
        >>> import jaxbai
        >>> res = jaxbai.simulate(jaxbai.ttucb(), jaxbai.bernoulli([0.6, 0.2]), runs=4)
        >>> res.tau.shape
        (4,)
    """
    checks.check_algorithm(alg)
    if epsilon is None and alg.info.takes_epsilon:
        raise ValueError(f"{alg.name} needs epsilon")
    eps_in = checks.real_values("epsilon", np.inf if epsilon is None else epsilon)
    dlt_in = checks.real_values("delta", delta)
    jobs = grid_jobs(inst, eps_in, dlt_in, runs)
    res = run_grid(alg, jobs, seed=seed, max_samples=max_samples, **engine_options)
    shape = eps_in.shape + dlt_in.shape + (runs,)
    return SimulationResult(
        tau=res.tau.reshape(shape),
        recommendation=res.recommendation.reshape(shape),
        correct=res.correct.reshape(shape),
        censored=res.censored.reshape(shape),
        rounds=res.rounds.reshape(shape),
        counts=res.counts.reshape(shape + res.counts.shape[-1:]),
        epsilon=jobs.epsilon.reshape(shape),
        delta=jobs.delta.reshape(shape),
    )
