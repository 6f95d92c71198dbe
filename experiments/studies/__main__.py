"""``python -m experiments.studies``: the studies' command line (`experiments.studies.cli`)."""

import sys

from experiments.studies.cli import main

sys.exit(main())
