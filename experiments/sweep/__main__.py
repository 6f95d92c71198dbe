"""``python -m experiments.sweep``: the sweep's command line (`experiments.sweep.cli`)."""

import sys

from experiments.sweep.cli import main

sys.exit(main(supervised=True))
