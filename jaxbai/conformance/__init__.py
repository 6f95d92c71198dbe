"""Whether an algorithm keeps jaxbai's contract: `check` (`jaxbai.conformance.contract`) and its
command line (`jaxbai.conformance.cli`, ``python -m jaxbai.conformance --plugin MODULE``)."""

from jaxbai.conformance.contract import (
    ConformanceError,
    ConformanceReport,
    Finding,
    check,
)

__all__ = ["ConformanceError", "ConformanceReport", "Finding", "check"]
