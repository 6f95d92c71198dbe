"""``python -m experiments.plot RESULTS.csv [--out DIR]``: redraw a sweep's figures from its CSV.

The command line is `experiments.plot.cli`; the drawing is `experiments.analysis.drawing`.
"""

from experiments.plot.cli import main

__all__ = ["main"]
