"""The workloads of the engine benchmark (W1–W6 of `experiments.bench`) and the rates they
measure.

`engine_rate` times `jaxbai.engine.run_grid` on a second run of a grid (the first compiles);
`python_rate`, `numba_rate` and `numba_lanes_rate` time the plain-Python transcription and the
numba loops (None without numba) on the same instance. `w1`, `w2`, `w4` and `w5` are the
workloads (W3 is `w1` on a GPU), each a dictionary of rates and ratios measured in one
process. `jaxbai`, numpy and numba are imported when first needed, so importing this module
starts no JAX backend.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = [
    "ALGORITHMS_W6",
    "DELTAS_W5",
    "EPSILONS_W6",
    "W5_REPEATS",
    "engine_rate",
    "numba_lanes_rate",
    "numba_rate",
    "python_rate",
    "w1",
    "w2",
    "w4",
    "w5",
    "w6",
]


def _timed(fn: Any) -> tuple[Any, float]:
    """``fn()`` and its wall time in seconds."""
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def engine_rate(
    alg: Any,
    jobs: Any,
    device: str,
    draws: str = "auto",
    share_deltas: bool = False,
    kernel: str = "auto",
    max_samples: int = 10**9,
) -> dict[str, float]:
    """Samples/s of `run_grid`, timed on a second run of the same grid and seed (each job
    censored at ``max_samples``).

    The first run compiles every program the grid needs, the tail's smaller lane pools
    (`jaxbai.engine` compacts them as jobs finish) included; its wall time is
    ``first_wall_s``. Timing after a one-chunk warm-up instead would count the tail pools'
    compilation, which dominates a grid of a few seconds. With ``kernel="fused"``, a grid the
    fused kernel refuses gives ``{"refused": reason}`` (`jaxbai.engine.fused_unsupported`).
    """
    from jaxbai import engine

    if kernel == "fused":
        platform = engine.select_devices(device)[0].platform
        reason = engine.fused_unsupported(
            alg, jobs, platform=platform, draws=draws, share_deltas=share_deltas
        )
        if reason is not None:
            return {"refused": reason}

    options = {
        "device": device,
        "draws": draws,
        "share_deltas": share_deltas,
        "kernel": kernel,
        "max_samples": max_samples,
    }
    _, first = _timed(lambda: engine.run_grid(alg, jobs, seed=0, **options))
    res, wall = _timed(lambda: engine.run_grid(alg, jobs, seed=0, **options))
    return {
        "samples": res.samples,
        "wall_s": wall,
        "first_wall_s": first,
        "samples_per_s": res.samples / wall,
        "efficiency": res.efficiency,
        "mean_tau": float(res.tau.mean()),
        "mean_rounds": float(res.rounds.mean()),
        "censored": int(res.censored.sum()),
    }


def python_rate(means: tuple[float, ...], runs: int, delta: float) -> dict[str, float]:
    """Samples/s of the plain-Python transcription (`experiments.studies.reference`) on Bernoulli
    tables."""
    import numpy as np

    from experiments.studies import reference

    rng = np.random.default_rng(0)
    samples, wall = 0, 0.0
    for _ in range(runs):
        table = [(rng.random(200_000) < m).astype(float).tolist() for m in means]
        priority = rng.random(len(means)).tolist()
        traj, seconds = _timed(lambda: reference.top_two("ttucb", table, priority, delta))  # noqa: B023
        samples, wall = samples + traj.tau, wall + seconds
    return {"samples": samples, "wall_s": wall, "samples_per_s": samples / wall}


def _loop_rate(loop: Any, means: tuple[float, ...], runs: int, delta: float, warm: int) -> dict:
    """Samples/s of ``loop(means, runs, delta, seed) -> τ`` (a numba loop), compiled first on
    ``warm`` runs."""
    import numpy as np

    means_arr = np.asarray(means)
    loop(means_arr, warm, delta, 0)  # compile
    taus, wall = _timed(lambda: loop(means_arr, runs, delta, 1))
    return {
        "samples": int(taus.sum()),
        "wall_s": wall,
        "samples_per_s": taus.sum() / wall,
        "mean_tau": float(taus.mean()),
    }


def numba_rate(means: tuple[float, ...], runs: int, delta: float) -> dict[str, float] | None:
    """Samples/s of a numba TTUCB scalar loop, parallel over runs on all cores."""
    from jaxbai.extras import MissingExtra

    try:
        from experiments.bench import numba_loop
    except MissingExtra:
        return None
    rate = _loop_rate(numba_loop.ttucb_runs, means, runs, delta, 8)
    return rate | {"threads": numba_loop.threads()}


def numba_lanes_rate(means: tuple[float, ...], runs: int, delta: float) -> dict[str, float] | None:
    """Samples/s of a hand-vectorised numba TTUCB (`experiments.bench.lanes`: blocks of lanes,
    SIMD over lanes), parallel over blocks on all cores."""
    from jaxbai.extras import MissingExtra

    try:
        from experiments.bench import lanes
    except MissingExtra:
        return None

    def taus(means, runs, delta, seed):
        return lanes.ttucb_lanes(means, runs, delta, seed)[0]

    return _loop_rate(taus, means, runs, delta, lanes.LANES)


def w1(device: str, runs: int, python_runs: int, kernel: str = "auto") -> dict[str, Any]:
    """W1: TTUCB on mu1, engine (its lane program ``kernel``) vs plain Python vs numba."""
    import jaxbai

    means, delta = jaxbai.PAPER_INSTANCES["mu1"], 0.01
    jobs = jaxbai.grid_jobs(jaxbai.bernoulli(means), float("inf"), delta, runs)
    out: dict[str, Any] = {"engine": engine_rate(jaxbai.ttucb(), jobs, device, kernel=kernel)}
    out["python"] = python_rate(means, python_runs, delta)
    out["numba"] = numba_rate(means, runs, delta)
    out["numba_lanes"] = numba_lanes_rate(means, runs, delta)
    if "refused" in out["engine"]:
        return out
    eng = out["engine"]["samples_per_s"]
    out["engine_over_python"] = eng / out["python"]["samples_per_s"]
    if out["numba"]:
        out["engine_over_numba"] = eng / out["numba"]["samples_per_s"]
    if out["numba_lanes"]:
        out["engine_over_numba_lanes"] = eng / out["numba_lanes"]["samples_per_s"]
    return out


def w2(device: str, runs: int, kernel: str = "auto") -> dict[str, Any]:
    """W2: AdaP-TT grid over ε with lane refill (lane program ``kernel``) vs a plain
    vmap-until-all-stop."""
    import jaxbai
    from jaxbai import engine

    alg = jaxbai.adap_tt()
    jobs = engine.grid_jobs(
        jaxbai.bernoulli(jaxbai.PAPER_INSTANCES["mu1"]), [0.01, 0.1, 1.0, 10.0, 100.0], 0.01, runs
    )
    out: dict[str, Any] = {
        "engine": engine_rate(alg, jobs, device, draws="per_sample", kernel=kernel)
    }
    if "refused" in out["engine"]:
        return out
    # compiles the same program (budget is traced)
    engine.run_vmap(alg, jobs, max_samples=64, draws="per_sample")
    plain, wall = _timed(lambda: engine.run_vmap(alg, jobs, draws="per_sample"))
    out["plain_vmap"] = {
        "wall_s": wall,
        "efficiency": plain.efficiency,
        "samples_per_s": plain.samples / wall,
    }
    out["speedup_over_plain"] = wall / out["engine"]["wall_s"]
    return out


def w4(device: str, runs: int) -> dict[str, Any]:
    """W4: per-episode against per-sample reward draws for AdaP-TT and AdaP-TT*."""
    import jaxbai
    from jaxbai import engine

    inst = jaxbai.bernoulli(jaxbai.PAPER_INSTANCES["mu1"])
    jobs = engine.grid_jobs(inst, [0.01, 0.1, 1.0], 0.01, runs)
    out: dict[str, Any] = {}
    for name in ("adap_tt", "adap_tt_star"):
        alg = jaxbai.ALGORITHMS[name]()
        sample = engine_rate(alg, jobs, device, draws="per_sample")
        episode = engine_rate(alg, jobs, device, draws="per_episode")
        out[f"{name}.per_sample"] = sample
        out[f"{name}.per_episode"] = episode
        out[f"{name}.speedup"] = episode["samples_per_s"] / sample["samples_per_s"]
    return out


DELTAS_W5 = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6)
"""The six δ of W5."""

W5_REPEATS = 5
"""W5 times the smallest δ alone and the shared cell this many times, alternately, and reports
the median of their ratios (a short run's wall time varies by tens of percent on a shared
machine)."""


def w5(device: str, runs: int) -> dict[str, Any]:
    """W5: six δ on shared trajectories and separately, against the smallest δ alone."""
    import numpy as np

    import jaxbai
    from jaxbai import engine

    inst = jaxbai.bernoulli(jaxbai.PAPER_INSTANCES["mu1"])
    out: dict[str, Any] = {}
    for name, eps in (("ttucb", float("inf")), ("adap_tt", 1.0)):
        alg = jaxbai.ALGORITHMS[name]()
        six = engine.grid_jobs(inst, eps, DELTAS_W5, runs)
        smallest = engine.grid_jobs(inst, eps, min(DELTAS_W5), runs)
        pairs = [
            (engine_rate(alg, smallest, device), engine_rate(alg, six, device, share_deltas=True))
            for _ in range(W5_REPEATS)
        ]
        ratios = [shared["wall_s"] / alone["wall_s"] for alone, shared in pairs]
        alone = pairs[int(np.argsort(ratios)[len(ratios) // 2])][0]
        separate = engine_rate(alg, six, device)
        taus = engine.run_grid(alg, six, seed=0, device=device).tau.reshape(len(DELTAS_W5), -1)
        out[name] = {
            "shared_over_alone": float(np.median(ratios)),
            "shared_over_alone_min": min(ratios),
            "shared_over_alone_max": max(ratios),
            "separate_over_alone": separate["wall_s"] / alone["wall_s"],
            "sum_tau_over_tau_min": float(taus.mean(axis=1).sum() / taus[-1].mean()),
            "alone_wall_s": alone["wall_s"],
        }
    return out


ALGORITHMS_W6 = ("dp_tt", "eb_tci", "adap_tt", "adap_tt_star", "dp_se", "ttucb")
"""DP-TT and the algorithms W6 measures it against."""

EPSILONS_W6 = (1e-3, 0.1, 10.0)
"""The ε of W6 (the non-private EB-TCI and TTUCB ignore it)."""


def w6(device: str, runs: int, budget: int) -> dict[str, Any]:
    """W6: samples/s of `ALGORITHMS_W6` on mu1 at each of `EPSILONS_W6`, ``runs`` runs each
    censored at ``budget`` samples, on every path an algorithm has (per-sample draws, and per
    episode for the episodic ones); and DP-TT over AdaP-TT, each on its default path
    (``draws="auto"``: per episode for both), per ε."""
    import jaxbai
    from jaxbai import engine
    from jaxbai.base import Episodic

    inst = jaxbai.bernoulli(jaxbai.PAPER_INSTANCES["mu1"])
    out: dict[str, Any] = {}
    for eps in EPSILONS_W6:
        jobs = engine.grid_jobs(inst, eps, 0.01, runs)
        default: dict[str, float] = {}
        for name in ALGORITHMS_W6:
            alg = jaxbai.ALGORITHMS[name]()
            paths = ("per_sample", "per_episode") if isinstance(alg, Episodic) else ("per_sample",)
            for path in paths:
                rate = engine_rate(alg, jobs, device, draws=path, max_samples=budget)
                out[f"{name}.{path}.eps={eps:g}"] = rate
                default[name] = rate["samples_per_s"]  # the last path: "auto"'s choice
        out[f"dp_tt_over_adap_tt.eps={eps:g}"] = default["dp_tt"] / default["adap_tt"]
    return out
