"""``python -m experiments.bench``: the benchmarks' command line (`experiments.bench.main`)."""

import sys

from experiments.bench import main

sys.exit(main())
