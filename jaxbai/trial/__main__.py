"""``python -m jaxbai.trial``: the command line of `jaxbai.trial.cli`."""

import sys

from jaxbai.trial.cli import main

if __name__ == "__main__":
    sys.exit(main())
