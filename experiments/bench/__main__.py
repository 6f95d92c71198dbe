"""``python -m experiments.bench``: the benchmarks' command line (`experiments.bench.cli`)."""

import sys

from experiments.bench.cli import main

sys.exit(main())
