"""``python -m experiments.report``: the claims report's command line (`experiments.report.cli`)."""

import sys

from experiments.report.cli import main

sys.exit(main())
