"""Per-cell statistics of one algorithm on instances × ε, shared by the measurement scripts.

`cell_rows` runs one compiled grid (`jaxbai.engine.run_grid`) and summarises each (instance, ε)
cell: mean τ ± standard error, errors and censored runs (never dropped: a censored run counts
its budget in τ and is reported apart from the errors).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["cell_rows", "mean_cell", "write_part"]


def cell_rows(
    alg: Any,
    instances: Sequence[str],
    epsilons: Sequence[float],
    delta: float,
    runs: int,
    seed: int,
    max_samples: int,
    **labels: Any,
) -> list[dict[str, Any]]:
    """One row per (instance, ε) of ``alg`` on the paper instances named ``instances``.

    Rows hold ``labels``, the cell, ``runs``, ``mean_tau``, ``se_tau``, ``errors`` (wrong
    recommendations among the stopped runs), ``censored``, the grid's ``wall_s`` and, for a
    `jaxbai.base.ReportsSamples` algorithm, ``mean_reported`` (its reported stopping time).
    """
    import jaxbai
    from jaxbai import engine

    insts = [jaxbai.bernoulli(jaxbai.PAPER_INSTANCES[i]) for i in instances]
    jobs = engine.grid_jobs(insts, np.asarray(epsilons, np.float64), delta, runs)
    start = time.perf_counter()
    res = engine.run_grid(alg, jobs, seed=seed, max_samples=max_samples)
    wall = time.perf_counter() - start
    shape = (len(instances), len(epsilons), runs)
    tau = res.tau.reshape(shape).astype(np.float64)
    errors = (~res.correct & ~res.censored).reshape(shape)
    censored = res.censored.reshape(shape)
    reported = None
    if isinstance(alg, jaxbai.base.ReportsSamples):
        reported = np.asarray(alg.reported_samples(res.counts), np.float64).reshape(shape)
    rows = []
    for i, inst in enumerate(instances):
        for j, eps in enumerate(epsilons):
            row = {
                **labels,
                "instance": inst,
                "epsilon": float(eps),
                "delta": delta,
                "runs": runs,
                "max_samples": max_samples,
                **mean_cell(tau[i, j]),
                "errors": int(errors[i, j].sum()),
                "censored": int(censored[i, j].sum()),
                "wall_s": wall,
            }
            if reported is not None:
                row["mean_reported"] = float(reported[i, j].mean())
            rows.append(row)
    print(f"  {alg.name} {labels or ''}: {wall:.0f} s", file=sys.stderr)
    return rows


def mean_cell(tau: np.ndarray) -> dict[str, float]:
    """``mean_tau`` and its standard error ``se_tau`` of one cell's τ."""
    return {
        "mean_tau": float(tau.mean()),
        "se_tau": float(tau.std(ddof=1) / math.sqrt(tau.size)) if tau.size > 1 else math.nan,
    }


def write_part(out: str, part: str, rows: list[dict[str, Any]], text: str) -> None:
    """Write one measured part's rows to ``out/<part>.json`` and print its Markdown table."""
    with open(os.path.join(out, f"{part}.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(f"\n{part}\n\n{text}\n")
