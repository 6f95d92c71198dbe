"""``python -m experiments.audit``: the privacy audit's command line (`experiments.audit.cli`)."""

import sys

from experiments.audit.cli import main

sys.exit(main())
