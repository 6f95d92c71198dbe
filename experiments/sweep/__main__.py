"""``python -m experiments.sweep``: the sweep's command line (`experiments.sweep.cli`).

Ctrl-C ends it with one line on stderr, the command that resumes it, and exit status 130 (the
engine writes its checkpoints first, so the resumed sweep restores what had finished).
"""

import sys

from experiments.sweep.cli import command

sys.exit(command())
