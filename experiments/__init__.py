"""Sweeps, figures and claims reports for jaxbai: the paper's grids and your own.

Entry points (each also exposes ``main(argv)``)::

    python -m experiments.sweep [--preset quick|fig1|...|paper|rounds]   # run a shipped grid
    python -m experiments.sweep --config my_grid.toml                    # run an experiment file
    python -m experiments.plot RESULTS.csv                               # redraw figures from a CSV
    python -m experiments.report RESULTS.csv                             # claims of Section 5

Experiment files (TOML) are described in `experiments.config`; the presets are the files of
``experiments/grids/``. Importing this package does not import JAX, so ``sweep`` can configure
the host devices first.
"""
