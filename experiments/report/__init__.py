"""``python -m experiments.report RESULTS.csv [--out FILE]``: the claims report of a sweep's CSV.

The command line is `experiments.report.cli`; the report is `experiments.analysis.markdown_report`.
"""

from experiments.report.cli import main

__all__ = ["main"]
