"""The command line of real trials, ``python -m jaxbai.trial``; the README shows a session.

Subcommands: ``create``, ``next``, ``next-batch``, ``record``, ``status``, ``publish``,
``backup`` (the curator's side) and ``privatize`` (the participant's side, for local-DP
trials: ``--algorithm`` and ``--option`` as the trial's, which choose its mechanism).
``next`` prints one ``participant arm`` line, ``next-batch`` one per assignment of a cohort;
``record --participant P`` records participant P's outcome (in any order within a
cohort): the id is required, so that two operators sharing a trial can never attach an outcome
to the wrong participant. ``status``, ``publish`` and ``backup`` only read (beside a running
trial, and on read-only media). Errors are one line on stderr, with exit status 2. Every
subcommand takes ``--plugin MODULE`` (repeatable): a module that registers the algorithm
(`jaxbai.plugins`); a trial file names the plugin it needs when it is opened without it.

Examples:
  >>> import contextlib, io, os, tempfile
  >>> path = os.path.join(tempfile.mkdtemp(), "dose.trial")
  >>> args = ["create", path, "--algorithm", "ttucb", "--arms", "2", "--delta", "0.1"]
  >>> with contextlib.redirect_stdout(io.StringIO()) as out:
  ...     code = main(args)
  >>> code, json.loads(out.getvalue())["samples"]
  (0, 0)
  >>> main(["next", path])  # prints "participant arm", then returns the exit status
  0 0
  0
  >>> main(["record", path, "0", "1", "--participant", "0"]) == 0  # doctest: +ELLIPSIS
  {...
  True
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sqlite3
import sys
from collections.abc import Sequence
from typing import Any

from jaxbai import compilation, plugins
from jaxbai.mechanisms import secure
from jaxbai.registry import ALGORITHMS
from jaxbai.trial._algorithm import participant_mechanism
from jaxbai.trial._backup import backup
from jaxbai.trial._config import NOISE_MODES, OUTCOMES
from jaxbai.trial._trial import Trial

__all__ = ["COMMANDS", "DESCRIPTION", "main"]

_READERS = ("status", "publish")
"""Subcommands that open the trial read-only."""


def _option(text: str) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def _options(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The ``--option`` pairs as a dict; ValueError for an option given twice (the last one
    used to win silently)."""
    options: dict[str, Any] = {}
    for name, value in pairs:
        if name in options:
            raise ValueError(
                f"--option {name} given twice ({options[name]!r} and {value!r}): give it once"
            )
        options[name] = value
    return options


DESCRIPTION = """\
Run a differentially private best-arm identification trial, one participant at a time, in a
durable trial file. The curator creates the trial, asks for the next participant's arm (or a
cohort's), records each outcome, and reads the status or the public record; a participant of
a local-DP trial privatises their own reward first (privatize). Errors are one line on
stderr, with exit status 2. 'python -m jaxbai.trial COMMAND --help' lists a command's
options."""
"""The command's description in ``--help`` (plain text)."""

COMMANDS = {
    "create": "create a trial file",
    "next": "print 'participant arm' for the next participant",
    "next-batch": "print a cohort: one 'participant arm' line per assignment",
    "record": "record a participant's outcome",
    "status": "print the curator's status (JSON)",
    "publish": "print the public record (JSON)",
    "backup": "copy a trial (open or not) into one self-contained file",
    "privatize": "participant side: privatise a reward for a local-DP trial",
}
"""Subcommand → its help (and description)."""

_PATH = "the trial file"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m jaxbai.trial",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False)
    plugins.add_argument(common)
    compilation.add_argument(common)
    sub = {
        name: commands.add_parser(
            name, parents=[common], help=text, description=text[0].upper() + text[1:] + "."
        )
        for name, text in COMMANDS.items()
    }
    for name in ("create", "next", "next-batch", "record", "status", "publish"):
        sub[name].add_argument("path", help=_PATH)
    create = sub["create"]
    create.add_argument(
        "--algorithm", required=True, choices=sorted(ALGORITHMS), metavar="NAME",
        help="registry name: %(choices)s",
    )  # fmt: skip
    create.add_argument("--arms", type=int, required=True, help="number of arms K")
    create.add_argument("--epsilon", type=float, help="privacy budget ε (omit for ttucb)")
    create.add_argument("--delta", type=float, required=True, help="risk δ")
    create.add_argument("--seed", type=int, help="JAX key seed in [0, 2**32) (default: random)")
    create.add_argument("--clip", action="store_true", help="clip rewards into [0, 1]")
    create.add_argument(
        "--noise", choices=NOISE_MODES, default="secure",
        help="secure: the operating system's CSPRNG (real trials); prng: seeded, "
        "reproducible, not secret (rehearsals) (default: %(default)s)",
    )  # fmt: skip
    create.add_argument(
        "--outcomes", choices=OUTCOMES, default="unit",
        help="unit: rewards in [0, 1]; binary: 0 or 1, released exactly (default: %(default)s)",
    )  # fmt: skip
    create.add_argument(
        "--option", type=_option, action="append", default=[], metavar="KEY=VALUE",
        help="algorithm factory option, e.g. threshold=heuristic (repeatable)",
    )  # fmt: skip
    sub["next-batch"].add_argument("--max-size", type=int, help="at most this many assignments")
    record = sub["record"]
    record.add_argument("arm", type=int, help="the arm the participant was assigned")
    record.add_argument("reward", type=float, help="the participant's outcome")
    record.add_argument(
        "--participant", type=int, required=True,
        help="whose outcome: the id next or next-batch printed",
    )  # fmt: skip
    sub["backup"].add_argument("source", help="the trial to copy")
    sub["backup"].add_argument("target", help="the new file (must not exist)")
    privatize = sub["privatize"]
    privatize.add_argument("reward", type=float, help="the participant's own reward")
    privatize.add_argument(
        "--algorithm", required=True, choices=sorted(ALGORITHMS), metavar="NAME",
        help="the trial's algorithm, whose participant mechanism privatises the reward: "
        "%(choices)s",
    )  # fmt: skip
    privatize.add_argument("--epsilon", type=float, required=True, help="the trial's ε")
    privatize.add_argument(
        "--option", type=_option, action="append", default=[], metavar="KEY=VALUE",
        help="the trial's algorithm option, e.g. gamma=0.01 (repeatable)",
    )  # fmt: skip
    privatize.add_argument("--clip", action="store_true", help="clip the reward into [0, 1]")
    return parser


def _dump(record: dict[str, Any]) -> str:
    """JSON with one top-level field per line (lists such as ``actions`` stay on theirs)."""
    fields = (f" {json.dumps(name)}: {json.dumps(value)}" for name, value in record.items())
    return "{\n" + ",\n".join(fields) + "\n}"


def _run(args: argparse.Namespace) -> str:
    if args.command == "privatize":
        mechanism = participant_mechanism(args.algorithm, _options(args.option))
        z = secure.privatize_locally(mechanism, args.reward, args.epsilon, clip=args.clip)
        return repr(z)
    if args.command == "backup":
        backup(args.source, args.target)
        return f"{args.target}: a self-contained copy of {args.source}"
    if args.command == "create":
        with Trial.create(
            args.path, args.algorithm, args.arms, args.epsilon, args.delta, args.seed,
            clip=args.clip, noise=args.noise, outcomes=args.outcomes, **_options(args.option),
        ) as trial:  # fmt: skip
            return _dump(dataclasses.asdict(trial.status()))
    with Trial.open(args.path, read_only=args.command in _READERS) as trial:
        if args.command == "next":
            return "{} {}".format(*trial.next_assignment())
        if args.command == "next-batch":
            batch = trial.next_batch(args.max_size)
            return "\n".join(f"{participant} {arm}" for participant, arm in batch)
        if args.command == "record":
            trial.record(args.arm, args.reward, participant=args.participant)
            return _dump(dataclasses.asdict(trial.status()))
        if args.command == "status":
            return _dump(dataclasses.asdict(trial.status()))
        return _dump(trial.publish())


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: ``python -m jaxbai.trial {create,next,next-batch,record,…}``.

    Returns:
      The exit status: 0, or 2 after printing the error (one line; argparse's usage errors
      exit with 2 as well).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        plugins.load_from_argv(argv)  # before the parser, which lists their algorithms
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    args = _parser().parse_args(argv)
    compilation.from_arguments(args)
    try:
        print(_run(args))
    except (ValueError, RuntimeError, OSError, sqlite3.Error) as err:
        text = " ".join(str(err).split()) or type(err).__name__
        print(f"error: {text}", file=sys.stderr)
        return 2
    return 0
