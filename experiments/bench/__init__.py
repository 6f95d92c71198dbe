"""Benchmarks of the engine (`python -m experiments.bench`), as ratios within one process.

W1: ``ttucb``, heuristic threshold, mu1, δ = 0.01, 4096 runs. Engine samples/s against the
    plain-Python transcription of the tests (a few runs), a numba scalar loop on all cores
    and a hand-vectorised numba loop (`experiments.bench.lanes`: SIMD over blocks of lanes)
    (``pip install -e ".[bench]"``; both skipped without numba).
W2: ``adap_tt``, mu1, ε ∈ {0.01, 0.1, 1, 10, 100}, 200 runs each, one grid: wall time and
    efficiency Σ τ / executed lane-steps, against a plain vmap-until-all-stop.
W4: ``adap_tt`` and ``adap_tt_star``, mu1, ε ∈ {0.01, 0.1, 1}, 200 runs each, one grid per
    algorithm: samples/s with rewards drawn per sample and per episode (``draws``), the ratio,
    and the two paths' mean τ and C (the same law, different draws).
W5: ``ttucb`` and ``adap_tt`` (ε = 1, per-episode draws), mu1, δ ∈ {10⁻¹, …, 10⁻⁶}: wall time
    of the six δ on shared trajectories (``share_deltas``) and run separately, each against
    the smallest δ alone, beside Σ_δ E[τ(δ)] / E[τ(δ_min)], what separate runs should cost.
W3: W1 at 10⁵ runs on a GPU (``--device gpu``; ``bash experiments/gpu.sh`` runs W1–W3 and
    the paper preset's cost plan on a CUDA machine in one command).

``python -m experiments.bench trial`` runs the load benchmark of real trials instead
(`experiments.bench.trial`: time per record at 10³, 10⁵ and 10⁶ participants, one by one and in
cohorts).

The engine runs as a library user gets it: ``import jaxbai`` exposes every available core as a
CPU device (`jaxbai.use_cpu_cores`), no flag is set here. Machines here are shared and noisy:
compare the ratios, measured in the same process, rather than absolute rates. Compilation is
excluded (each program is warmed up on a small grid).

``--kernel fused`` runs W1–W3 with the fused lane kernel (`jaxbai.engine.KERNELS`; on a CPU in
Pallas' interpret mode, a check that it runs rather than a speed; a grid it refuses is reported
with the reason) and skips W4–W6, whose per-episode draws and shared δ only the XLA program
runs. ``python -m experiments.bench kernels`` (`experiments.bench.kernels`) measures both lane
programs' cost per step and the paper grid's tail; ``python -m experiments.bench ablation``
(`experiments.bench.ablation`) what each part of the Top Two step costs in the XLA lane program
on a CPU (docs/benchmarks.md).

Usage:
    python -m experiments.bench [workloads] [--device cpu|gpu] [--out bench.json]
        [--preset quick|full] [--kernel xla|fused|auto]
    python -m experiments.bench trial [--participants N] [--window W] [--delta-runs R]
    python -m experiments.bench kernels [--device cpu|gpu] [--preset quick|full]
    python -m experiments.bench ablation [--lanes 256] [--preset quick|full]

The workloads and their rates are in `experiments.bench.workloads`; the command line, and the
parser and report writer every benchmark shares, in `experiments.bench.cli`.
"""

from __future__ import annotations

from experiments.bench.cli import main, parser_for, table, write_report
from experiments.bench.workloads import (
    DELTAS_W5,
    W5_REPEATS,
    engine_rate,
    numba_lanes_rate,
    numba_rate,
    python_rate,
    w1,
    w2,
    w4,
    w5,
)

__all__ = [
    "DELTAS_W5",
    "W5_REPEATS",
    "engine_rate",
    "main",
    "numba_lanes_rate",
    "numba_rate",
    "parser_for",
    "python_rate",
    "table",
    "w1",
    "w2",
    "w4",
    "w5",
    "write_report",
]
