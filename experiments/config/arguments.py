"""What the experiments' command lines share: a parser whose errors are one line, and the
argument types of counts and privacy budgets."""

from __future__ import annotations

import argparse

__all__ = ["EXIT_USAGE", "OneLineParser", "non_negative_int", "positive_epsilon", "positive_int"]

EXIT_USAGE = 2
"""The exit status of a command line that is refused."""


class OneLineParser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump), exit status `EXIT_USAGE`; its
    subcommands' parsers are of this class too."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def positive_int(text: str) -> int:
    """An argparse type: a positive integer (a count of runs, a budget)."""
    return _at_least(text, 1, "a positive integer")


def non_negative_int(text: str) -> int:
    """An argparse type: an integer ≥ 0 (a count where 0 means none)."""
    return _at_least(text, 0, "an integer ≥ 0")


def _at_least(text: str, low: int, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be {what}, got {value}")
    return value


def positive_epsilon(text: str) -> float:
    """An argparse type: a privacy budget ε > 0 (``inf``: no privacy)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"ε must be > 0, got {text}")
    return value
