"""``python -m experiments.plot``: the figures' command line (`experiments.plot.cli`)."""

import sys

from experiments.plot.cli import main

sys.exit(main())
