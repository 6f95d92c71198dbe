"""Sweeps, figures and claims reports for jaxbai: the paper's grids and your own.

Subpackages, by concern:

* `experiments.config` — experiment files (TOML), their schema and validation, the instance
  and algorithm specifications (`experiments.config.specs`) and the shipped presets
  (`experiments.config.grids`, the files of ``experiments/config/grids/``);
* `experiments.sweep` — the Python API (`experiments.sweep.run`), the command line
  (`experiments.sweep.cli`), the ``jax.distributed`` launch (`experiments.sweep.distributed`)
  and the cost plan (`experiments.sweep.plan`);
* `experiments.analysis` — the tidy tables, statistics, claims, rounds of adaptivity, theory
  overlays, the Markdown report and the figures;
* `experiments.audit` — the empirical privacy audit and its planted bugs;
* `experiments.bench` — the throughput and trial-load benchmarks;
* `experiments.studies` — the comparisons with the published code and the ablations, and the
  plain-Python transcription of the paper's algorithms (`experiments.studies.reference`);
* `experiments.plot` and `experiments.report` — the command lines that redraw a sweep's figures
  and write its claims report from its per-run CSV.

Command lines: each is a package run with ``python -m``, whose ``__main__`` calls the
``main(argv=None) -> int`` of its ``cli`` module (the sweep's ``command``, which supervises a
``jax.distributed`` run); the same functions are the scripts of ``pyproject.toml``
(``jaxbai-sweep``, ``jaxbai-plot``, …)::

    python -m experiments.sweep [--preset quick|fig1|...|paper|rounds]   # run a shipped grid
    python -m experiments.sweep --config my_grid.toml                    # run an experiment file
    python -m experiments.plot RESULTS.csv                               # redraw figures from a CSV
    python -m experiments.report RESULTS.csv                             # claims of Section 5
    python -m experiments.studies STUDY                                  # a study beside the paper
    python -m experiments.audit                                          # the privacy audit
    python -m experiments.bench [trial|kernels|ablation]                 # the benchmarks

Importing any of these imports `jaxbai` but starts no JAX backend, so the sweep can still set
the host device count or initialise ``jax.distributed`` first.
"""
