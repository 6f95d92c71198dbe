"""Load benchmark of real trials: time per record as the trial grows, one by one and in cohorts.

A simulated binary trial (AdaP-TT, K = 3, ε = 0.05, δ = 0.01, ``outcomes="binary"``, real
noise from the CSPRNG, every arm Bernoulli(1/2) so that it runs on) is recorded through
`jaxbai.Trial` into a durable store. At each checkpoint (10³, 10⁴, 10⁵, 10⁶ participants, those
within ``--participants``, and ``--participants`` itself) it times ``window`` records one by
one (``next_arm`` + ``record``) and ``window`` records in cohorts (``next_batch``, outcomes
recorded in shuffled order; the time of each ``record``, and of each ``next_batch`` per
assignment it issues), and reports p50 and p99; between windows the trial advances in
cohorts. Every outcome is recorded durably (``synchronous=FULL``) in one trial kept open, as a
server process would. The ratio of the last checkpoint's p50 to the first one's, measured in
the same process, is the figure of merit: ≈ 1 when a record's cost does not grow with the
trial.

A record's cost is dominated by the fsync of the log. On the development machine (a shared
virtual machine) that took anywhere between ~0.2 and ~4 ms from one minute to the next, at any
trial size: compare the figures of one run, measured minutes apart, with care.

``--delta-runs R`` also runs the δ-correctness check of the rehearsal noise: R trials
(``noise="prng"``, seeds 0…R−1, in cohorts) of AdaP-TT and AdaP-TT* per outcome mode, arms of
means (0.9, 0.1) (Bernoulli for binary outcomes, Beta(4μ, 4(1 − μ)) for outcomes in [0, 1]),
ε = 1, δ = 0.1, with the error rate's Wilson 95% interval.

Usage:
    python -m experiments.bench trial [--participants N] [--window W] [--delta-runs R]
        [--out results/bench_trial.json]
"""

from __future__ import annotations

import json
import math
import os
import random
import tempfile
import time
from typing import Any

import numpy as np

__all__ = ["delta_check", "load", "main", "percentiles", "wilson"]

CHECKPOINTS = (10**3, 10**4, 10**5, 10**6)
TRIAL = {"algorithm": "adap_tt", "num_arms": 3, "epsilon": 0.05, "delta": 0.01}


def percentiles(seconds: list[float]) -> dict[str, float]:
    """p50 and p99 in milliseconds, and the count.

    Examples:
      >>> percentiles([0.001, 0.002, 0.003])["p50_ms"]
      2.0
    """
    ms = np.asarray(seconds) * 1e3
    return {"p50_ms": float(np.median(ms)), "p99_ms": float(np.quantile(ms, 0.99)), "n": ms.size}


def wilson(errors: int, runs: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (95% by default).

    Examples:
      >>> [round(x, 3) for x in wilson(0, 100)]
      [0.0, 0.037]
    """
    p = errors / runs
    centre = (p + z * z / (2 * runs)) / (1 + z * z / runs)
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / (1 + z * z / runs)
    return max(0.0, centre - half), min(1.0, centre + half)


def _one_by_one(t: Any, count: int, rng: random.Random) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        t.record(t.next_arm(), float(rng.random() < 0.5))
        times.append(time.perf_counter() - start)
    return times


def _in_cohorts(t: Any, count: int, rng: random.Random) -> tuple[list[float], list[float]]:
    """(seconds per record, seconds per issued assignment of each next_batch)."""
    records, batches = [], []
    end = t.status().samples + count
    while t.status().samples < end:
        start = time.perf_counter()
        batch = t.next_batch(max_size=end - t.status().samples)
        batches.append((time.perf_counter() - start) / len(batch))
        rng.shuffle(batch)
        for p, arm in batch:
            start = time.perf_counter()
            t.record(arm, float(rng.random() < 0.5), participant=p)
            records.append(time.perf_counter() - start)
    return records, batches


def load(participants: int, window: int, directory: str) -> dict[str, Any]:
    """Times records at each checkpoint ≤ ``participants`` (see the module docstring)."""
    from jaxbai.trial import Trial

    rng = random.Random(0)
    warm = os.path.join(directory, "warm.trial")
    with Trial.create(warm, **TRIAL, seed=1, outcomes="binary") as t:  # compiles everything
        _one_by_one(t, 20, rng)
        _in_cohorts(t, 300, rng)
    path = os.path.join(directory, "load.trial")
    checkpoints = sorted({c for c in CHECKPOINTS if c <= participants} | {participants})
    report: dict[str, Any] = {"trial": TRIAL, "window": window}
    with Trial.create(path, **TRIAL, seed=0, outcomes="binary") as t:
        for checkpoint in checkpoints:
            size = min(window, checkpoint // 2)
            start = time.perf_counter()
            advanced = max(checkpoint - 2 * size - t.status().samples, 0)
            _in_cohorts(t, advanced, rng)
            seconds = time.perf_counter() - start
            single = _one_by_one(t, size, rng)
            records, batches = _in_cohorts(t, size, rng)
            report[str(checkpoint)] = {
                "samples": t.status().samples,
                "stopped": t.status().stopped,
                "one_by_one": percentiles(single),
                "cohort_record": percentiles(records),
                "cohort_next_batch_per_assignment": percentiles(batches),
                "advance_records_per_s": advanced / seconds if advanced else None,
                "store_mb": sum(os.path.getsize(f) for f in (path, f"{path}-wal")) / 1e6,
            }
            print(checkpoint, json.dumps(report[str(checkpoint)]), flush=True)
    first, last = report[str(checkpoints[0])], report[str(checkpoints[-1])]
    for kind in ("one_by_one", "cohort_record"):
        report[f"{kind}_p50_growth"] = last[kind]["p50_ms"] / first[kind]["p50_ms"]
    return report


def _reward(rng: np.random.Generator, mean: float, outcomes: str) -> float:
    """Bernoulli(mean) for binary outcomes, else Beta(4 mean, 4 (1 − mean)) (same mean)."""
    if outcomes == "binary":
        return float(rng.random() < mean)
    return float(rng.beta(4 * mean, 4 * (1 - mean)))


def delta_check(runs: int, directory: str) -> dict[str, Any]:
    """Rehearsal δ-correctness: error counts and mean τ per algorithm and outcome mode (its
    throwaway trials skip the fsyncs: `jaxbai.trial.synchronous`)."""
    from jaxbai.trial import Trial, synchronous

    means, delta = (0.9, 0.1), 0.1
    report: dict[str, Any] = {"means": means, "epsilon": 1.0, "delta": delta, "runs": runs}
    for algorithm in ("adap_tt", "adap_tt_star"):
        for outcomes in ("unit", "binary"):
            errors, taus = 0, []
            for seed in range(runs):
                rng = np.random.default_rng(seed)
                path = os.path.join(directory, f"{algorithm}-{outcomes}-{seed}.trial")
                with (
                    synchronous("OFF"),
                    Trial.create(
                        path, algorithm, 2, 1.0, delta, seed, noise="prng", outcomes=outcomes
                    ) as t,
                ):
                    while not t.status().stopped:
                        for p, arm in t.next_batch():
                            t.record(arm, _reward(rng, means[arm], outcomes), participant=p)
                    errors += t.status().recommendation != 0
                    taus.append(t.status().samples)
                os.unlink(path)
            low, high = wilson(errors, runs)
            report[f"{algorithm}/{outcomes}"] = {
                "errors": errors,
                "error_rate_wilson95": [low, high],
                "mean_tau": float(np.mean(taus)),
            }
            print(algorithm, outcomes, json.dumps(report[f"{algorithm}/{outcomes}"]), flush=True)
    return report


def main(argv: list[str] | None = None) -> int:
    """``python -m experiments.bench trial``: run the load benchmark (and the δ check if
    asked); print and write JSON. Returns the exit code (2: bad arguments)."""
    from experiments.bench.cli import suite_parser, write_report
    from jaxbai import compilation

    parser = suite_parser("trial")
    add = parser.add_argument
    add("--participants", type=int, default=1_000_000, help="trial size (default: %(default)s)")
    add("--window", type=int, default=500, help="timed records per path (default: %(default)s)")
    add(
        "--delta-runs",
        type=int,
        default=0,
        help="trials of the δ-correctness check; 0: no check (default: %(default)s)",
    )
    add(
        "--out",
        default=os.path.join("results", "bench_trial.json"),
        help="JSON report (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    compilation.from_arguments(args)
    if args.participants < 2 or args.window < 1 or args.delta_runs < 0:
        parser.error("--participants must be >= 2, --window >= 1 and --delta-runs >= 0")
    results = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(results, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=results) as tmp:
        report = {"load": load(args.participants, args.window, tmp)}
        if args.delta_runs:
            report["delta"] = delta_check(args.delta_runs, tmp)
    return write_report(report, args.out)
