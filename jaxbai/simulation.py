"""Monte-Carlo simulation of one instance over an (ε × δ × runs) grid, through the engine.

`simulate` is the convenience entry point; it runs the grid with `jaxbai.engine.run_grid`, so
results are identical to the engine's for the same seed (job keys depend only on the seed, the
run index, ε and δ).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from jax.typing import ArrayLike

from jaxbai import checks
from jaxbai.base import Algorithm, Instance
from jaxbai.engine import OUTCOMES, GridResult, grid_jobs, run_grid

if TYPE_CHECKING:  # pandas is imported when `SimulationResult.to_frame` is first called
    import pandas

__all__ = [
    "SimulationResult",
    "frame_ints",
    "optional_ints",
    "simulate",
]


class SimulationResult(NamedTuple):
    """Per-run outcomes, numpy arrays of shape ``epsilon.shape + delta.shape + (runs,)``: the
    fields of `jaxbai.engine.OUTCOMES` of a `jaxbai.engine.GridResult`, in the grid's shape
    (`of`), with each run's ε and δ.

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
        algorithm: the algorithm's name.
        privacy_measure: its privacy claim in words (`jaxbai.base.AlgorithmInfo.claim`).
        means: the instance's (float32) means, float64 ``(K,)``, each the shortest decimal that
            rounds to it (0.6, not 0.6000000238).
    """

    tau: np.ndarray
    recommendation: np.ndarray
    correct: np.ndarray
    censored: np.ndarray
    rounds: np.ndarray
    counts: np.ndarray
    epsilon: np.ndarray
    delta: np.ndarray
    algorithm: str
    privacy_measure: str
    means: np.ndarray

    @classmethod
    def of(
        cls, res: GridResult, shape: tuple[int, ...], alg: Algorithm, means: np.ndarray
    ) -> SimulationResult:
        """The outcomes of a grid result of ``alg`` whose jobs are a `jaxbai.engine.grid_jobs`
        grid of ``shape`` (ε, δ, runs; one instance, of ``means``), in that shape."""
        outcomes = {f: getattr(res, f) for f in OUTCOMES}
        shaped = {f: a.reshape(shape + a.shape[1:]) for f, a in outcomes.items()}
        return cls(
            **shaped,
            epsilon=res.jobs.epsilon.reshape(shape),
            delta=res.jobs.delta.reshape(shape),
            algorithm=alg.name,
            privacy_measure=alg.info.claim,
            means=np.array([float(str(m)) for m in np.asarray(means, np.float32)]),
        )

    def to_frame(self) -> pandas.DataFrame:
        """The runs as a tidy pandas DataFrame, one row per (ε, δ, run) in C order: what ran
        (``algorithm``, ``privacy_measure``, the instance's ``mu_0 … mu_{K−1}``, so that frames
        of several simulations concatenate), then the numeric columns ``epsilon``, ``delta``,
        ``run``, ``tau``, ``recommendation``, ``correct``, ``censored``, ``rounds`` and
        ``count_0 … count_{K−1}`` (as in a sweep's ``runs.csv``). What does not apply is NaN,
        never −1 (the recommendation of a censored run, the rounds of a fully sequential
        algorithm): such a column is float64, else int64.

        Examples:
            >>> import jaxbai
            >>> res = jaxbai.simulate(jaxbai.ttucb(), jaxbai.bernoulli([0.6, 0.2]), runs=4)
            >>> frame = res.to_frame()
            >>> frame.shape, bool(frame["rounds"].isna().all()), list(frame.columns[-2:])
            ((4, 14), True, ['count_0', 'count_1'])
            >>> frame.loc[0, ["algorithm", "privacy_measure"]].tolist(), float(frame.loc[0, "mu_0"])
            (['ttucb', 'not private'], 0.6)
        """
        import pandas

        size = self.tau.size
        columns: dict[str, np.ndarray] = {
            "algorithm": np.full(size, self.algorithm, dtype=object),
            "privacy_measure": np.full(size, self.privacy_measure, dtype=object),
        }
        columns |= {f"mu_{a}": np.full(size, m) for a, m in enumerate(self.means.tolist())}
        columns |= {
            "epsilon": self.epsilon.reshape(size).astype(np.float64),
            "delta": self.delta.reshape(size).astype(np.float64),
            "run": np.broadcast_to(np.arange(self.tau.shape[-1]), self.tau.shape).reshape(size),
            "tau": self.tau.reshape(size).astype(np.int64),
            "recommendation": frame_ints(self.recommendation.reshape(size)),
            "correct": self.correct.reshape(size).astype(bool),
            "censored": self.censored.reshape(size).astype(bool),
            "rounds": frame_ints(self.rounds.reshape(size)),
        }
        counts = self.counts.reshape(size, -1).astype(np.int64)
        columns |= {f"count_{a}": counts[:, a] for a in range(counts.shape[1])}
        return pandas.DataFrame(columns)


def optional_ints(values: ArrayLike) -> np.ndarray:
    """Integers where a negative value (the engine's −1) or NaN means "not applicable", as
    float64 with NaN there.

    Examples:
        >>> optional_ints(np.array([3, -1])).tolist()
        [3.0, nan]
    """
    values = np.asarray(values, np.float64)
    return np.where(values >= 0, values, np.nan)


def frame_ints(values: ArrayLike) -> np.ndarray:
    """An `optional_ints` column as a DataFrame holds it: int64 where no value is missing,
    else float64 with NaN (the dtypes ``pandas.read_csv`` gives such a column).

    Examples:
        >>> frame_ints(np.array([3, 1])).dtype, frame_ints(np.array([3, -1])).dtype
        (dtype('int64'), dtype('float64'))
    """
    values = optional_ints(values)
    return values if np.isnan(values).any() else values.astype(np.int64)


def simulate(
    alg: Algorithm,
    inst: Instance,
    epsilon: ArrayLike | None = None,
    delta: ArrayLike = 0.01,
    runs: int = 1000,
    seed: int = 0,
    max_samples: int = 10**9,
    progress: bool = False,
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
        progress: show a progress bar on stderr (compiling, then runs done, samples/s and
            an estimated ETA; `jaxbai.engine.Progress`). Off by default.
        **engine_options: passed to `jaxbai.engine.run_grid` (``device``, ``draws``,
            ``lanes_per_device``, …).

    Examples:
        >>> import jaxbai
        >>> res = jaxbai.simulate(jaxbai.ttucb(), jaxbai.bernoulli([0.6, 0.2]), runs=4)
        >>> res.tau.shape
        (4,)
    """
    eps_in, dlt_in = checks.cell_values(alg, epsilon, delta)
    jobs = grid_jobs(inst, eps_in, dlt_in, runs)
    res = run_grid(
        alg, jobs, seed=seed, max_samples=max_samples, progress=progress, **engine_options
    )
    return SimulationResult.of(res, eps_in.shape + dlt_in.shape + (runs,), alg, inst.means)
