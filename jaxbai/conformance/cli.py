"""``python -m jaxbai.conformance``: `jaxbai.check` on the algorithms plugins register."""

from __future__ import annotations

import argparse

from jaxbai import plugins, registry
from jaxbai.conformance.contract import ConformanceReport, Finding, check

__all__ = ["main"]

DESCRIPTION = (
    "Check the algorithms that plugins register (or those named) against jaxbai's contract: "
    "members, purity under jit and vmap, plans, release noise against the privacy claim, trial "
    "readiness and the law of the two simulation paths. Exit status 1 if one fails."
)


def main(argv: list[str] | None = None) -> int:
    """``python -m jaxbai.conformance --plugin MODULE [--algorithm NAME ...]``: load the plugins,
    check the algorithms they register (or those named) and print the reports; exit status 1
    if one failed."""
    parser = argparse.ArgumentParser(prog="python -m jaxbai.conformance", description=DESCRIPTION)
    parser.add_argument("--plugin", action="append", default=[], help="a plugin module to load")
    parser.add_argument("--algorithm", action="append", default=[], help="a registry name")
    parser.add_argument("--law-runs", type=int, default=200, help="runs per path (0: skip)")
    args = parser.parse_args(argv)
    try:
        loaded = plugins.load(args.plugin)
    except ValueError as err:
        parser.error(str(err))
    entries = registry.ALGORITHMS
    names = args.algorithm or [n for n in entries if entries.get_entry(n).plugin in loaded]
    if not names:
        parser.error("no algorithm to check: pass --plugin MODULE or --algorithm NAME")
    unknown = [n for n in names if n not in entries]
    if unknown:
        parser.error(f"unknown algorithms: {', '.join(unknown)}")
    reports = [_checked(n, args.law_runs) for n in names]
    print("\n\n".join(map(str, reports)))
    return 0 if all(r.ok for r in reports) else 1


def _checked(name: str, law_runs: int) -> ConformanceReport:
    """`check` of the registered ``name``; a factory that raises is a failed report."""
    try:
        alg = registry.ALGORITHMS[name]()
    except Exception as err:  # the plugin's own code failed: report it, check the others
        return ConformanceReport(name, (Finding("members", False, f"building it raised {err!r}"),))
    return check(alg, law_runs=law_runs)
