"""Paper-figure sweeps, figures and claims reports for jaxbai.

Entry points (each also exposes ``main(argv)``)::

    python -m experiments.sweep [--preset quick|fig1|...|paper]   # run a grid, write everything
    python -m experiments.plot RESULTS.csv                        # redraw figures from a CSV
    python -m experiments.report RESULTS.csv                      # claims of Section 5

Importing this package does not import JAX, so ``sweep`` can configure the host devices first.
"""
