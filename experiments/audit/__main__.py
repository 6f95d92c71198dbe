"""``python -m experiments.audit``: the privacy audit's command line (`experiments.audit.main`)."""

import sys

from experiments.audit import main

sys.exit(main())
