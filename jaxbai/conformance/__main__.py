"""``python -m jaxbai.conformance``: the command line of `jaxbai.conformance.cli`."""

import sys

from jaxbai.conformance.cli import main

if __name__ == "__main__":
    sys.exit(main())
