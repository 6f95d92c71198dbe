"""Run a grid: one engine grid per algorithm (and per K), then CSV, summary, JSON, figures, report.

``python -m experiments.sweep`` (no arguments) runs the ``quick`` preset: global DP on mu1 and
mu2, TTUCB, AdaP-TT, AdaP-TT* and DP-SE at a few ε, 100 runs — about a minute on two CPU cores.
The presets are the experiment files of ``experiments/config/grids/`` (see ``--help``); your own
grid is a file too (``--config my_grid.toml``, schema in `experiments.config`), or inline instances
(``--means 0.31 0.30 0.12``, ``--family gaussian --sigma 0.3``, ``--family beta``). Flags
override the file's values. Output directory (``--out``, default ``results/<name>``):

    runs.csv        one row per run (`experiments.analysis.results.RUN_COLUMNS`), with the
                    means ``mu_0 …`` and its final counts N_a ``count_0 …``, one column per
                    arm up to the largest K (empty beyond a row's K), and ``reported_tau``
                    (the stopping time a `jaxbai.base.ReportsSamples` algorithm reports,
                    e.g. the published AdaP-TT's Σ_a 2^⌊log₂ N_a⌋); what does not apply
                    (that column of other algorithms, ``rounds`` of fully sequential ones,
                    the recommendation of a censored run) is empty, never −1
    summary.csv     one row per cell: mean, std, se, median, error rate + 95% Wilson interval,
                    censored count, rounds of adaptivity (mean, std, max), mean reported
                    stopping time, mean empirical proportions N_a/τ (± std) against the
                    allocation ω* the algorithm targets (`experiments.analysis.stats`)
    sweep.json      the resolved configuration (``--config results/<name>/sweep.json`` reruns
                    it exactly), versions, JAX backend and devices, git commit, wall time,
                    samples/s
    figures/        PNG and PDF (`experiments.analysis.drawing`); ``allocations_<instance>.png``:
                    empirical proportions against ω*
    report.md       claims of Section 5, rounds of adaptivity, allocations against ω*
                    (`experiments.analysis.markdown_report`)
    checkpoints/    engine checkpoints per algorithm (``--resume`` continues from them)

Instances of different families or K run as separate engine grids whose rows are merged in
the configuration's order; a job's result depends only on (seed, run, ε, δ), so they equal the
rows of separate sweeps.

From Python, `run` takes a configuration — a `experiments.config.SweepConfig`, a preset name,
an experiment file's path or a mapping in the experiment-file schema — and returns a
`SweepResult`: the same per-run and per-cell tables as pandas DataFrames, the resolved
configuration, the figures and the claims. It writes the files above only when given ``out``::

    import jaxbai
    from experiments import sweep

    jaxbai.register("my_alg", my_factory, "My algorithm")
    result = sweep.run({"name": "mine", "instances": ["mu1"], "algorithms": ["my_alg", "ttucb"],
                        "global_epsilons": [1.0], "runs": 100})
    result.cells[["algorithm", "epsilon", "mean", "error_rate"]]

A sweep builds its plan once (`SweepGrids`: instance groups, built algorithms, jobs) and hands
it to the engine runs, the run table, the figures and the report. The command line
(`experiments.sweep.cli`) is a thin layer over `run`.
"""

from __future__ import annotations

from experiments.sweep.engine_runs import (
    check_kernel,
    engine_stats,
    make_algorithm,
    reported_tau,
    run_algorithm,
    run_table,
    unfinished,
)
from experiments.sweep.grids import GridPlan, SweepGrids
from experiments.sweep.outputs import prepare_out, write_outputs
from experiments.sweep.runner import Interrupted, SweepResult, resolve, run

__all__ = [
    "GridPlan",
    "Interrupted",
    "SweepGrids",
    "SweepResult",
    "check_kernel",
    "engine_stats",
    "make_algorithm",
    "prepare_out",
    "reported_tau",
    "resolve",
    "run",
    "run_algorithm",
    "run_table",
    "unfinished",
    "write_outputs",
]
