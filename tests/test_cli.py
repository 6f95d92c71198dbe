"""Every command line: one convention, plain ``--help``, consistent options, console scripts.

Each command is a package run with ``python -m`` (``experiments.<name>`` or ``jaxbai.trial``);
its ``main(argv)`` runs in-process here with ``--help`` (no JAX program compiles): the text
has a description, help on every argument and no docstring markup. The option names follow
the rules of docs/experiments.md (a list-valued option is plural, ``--preset quick`` instead of
``--quick``, ``--out`` under ``results/``), and ``[project.scripts]`` of pyproject.toml names
every command. The GPU extra that the README and the docs tell to install exists and is JAX
with CUDA.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pathlib
import re
import sys
from collections.abc import Callable

import pytest
from packaging.requirements import Requirement

from experiments.bench.cli import SUITES
from experiments.studies.cli import STUDIES
from jaxbai.trial.cli import COMMANDS as TRIAL_COMMANDS

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

ENTRY_POINTS = {
    "experiments.sweep": "experiments.sweep.cli:command",
    "experiments.plot": "experiments.plot.cli:main",
    "experiments.report": "experiments.report.cli:main",
    "experiments.studies": "experiments.studies.cli:main",
    "experiments.audit": "experiments.audit.cli:main",
    "experiments.bench": "experiments.bench.cli:main",
    "jaxbai.trial": "jaxbai.trial.cli:main",
    "jaxbai.conformance": "jaxbai.conformance.cli:main",
}
"""``python -m`` package → the function its ``__main__`` runs."""

HELPS = [
    *((package, ()) for package in ENTRY_POINTS),
    *(("experiments.bench", (suite,)) for suite in SUITES if suite != "workloads"),
    *(("experiments.studies", (study,)) for study in STUDIES),
    *(("jaxbai.trial", (command,)) for command in TRIAL_COMMANDS),
]
"""(package, subcommand words) of every ``--help`` text."""

SYMBOLS = {"--beta-a", "--beta-b"}
"""List-valued options named after the paper's symbols (the shapes a and b of a Beta law)."""


def resolve(target: str) -> Callable:
    """The function of an entry point ``module:name``."""
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def help_text(function: Callable, words: tuple[str, ...], capsys) -> str:
    """What ``function([*words, "--help"])`` prints; it must exit with status 0."""
    with pytest.raises(SystemExit) as exit_:
        function([*words, "--help"])
    assert exit_.value.code in (0, None)
    return capsys.readouterr().out


def problems(text: str) -> list[str]:
    """What is wrong with a ``--help`` text: docstring markup, no description, an argument
    without help."""
    found = []
    if "`" in text or re.search(r":(func|mod|class|meth|attr|data|obj):", text):
        found.append("docstring markup")
    blocks = [b for b in re.split(r"\n\s*\n", text.strip()) if b.strip()]
    if len(blocks) < 2 or re.fullmatch(r"[\w ]+:", blocks[1].splitlines()[0]):
        found.append("no description")
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not re.match(r"  [^ ]", line):
            continue  # not an argument's line
        if len(re.split(r"\s{2,}", line.strip())) > 1:
            continue  # its help follows on the same line
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if not re.match(r" {3,}\S", following):
            found.append(f"no help: {line.strip()}")
    return found


def list_options(text: str) -> set[str]:
    """The options of a ``--help`` text that take a list (``--x X [X ...]``, ``--x [X ...]``)."""
    found = set(re.findall(r"(--[\w-]+) (\S+) \[\2 \.\.\.\]", text))
    return {name for name, _ in found} | set(re.findall(r"(--[\w-]+) \[\S+ \.\.\.\]", text))


@pytest.mark.parametrize(("package", "words"), HELPS, ids=[" ".join([p, *w]) for p, w in HELPS])
def test_help_is_plain_text_with_help_on_every_argument(package, words, capsys):
    text = help_text(resolve(ENTRY_POINTS[package]), words, capsys)
    assert text.startswith(f"usage: python -m {' '.join([package, *words])}")
    assert not problems(text), f"python -m {package} {' '.join(words)} --help: {problems(text)}"
    assert "--quick" not in text, "sizes are --preset quick|full, never --quick"
    plural = {name for name in list_options(text) if not name.endswith("s")}
    assert plural <= SYMBOLS, f"list-valued options must be plural: {plural - SYMBOLS}"
    for singular in ("--epsilon", "--delta"):
        assert singular not in list_options(text), f"{singular} takes one value"


def test_the_help_check_can_fail(capsys):
    """A parser with markup in its description and an option without help fails the check."""
    parser = argparse.ArgumentParser(prog="x", description="Runs ``x`` (:func:`f`).")
    parser.add_argument("--out")
    parser.add_argument("--runs", type=int, help="runs per cell")
    parser.add_argument("--epsilon", nargs="+", type=float, help="ε grid")
    text = help_text(parser.parse_args, (), capsys)
    assert problems(text) == ["docstring markup", "no help: --out OUT"]
    assert list_options(text) == {"--epsilon"}
    assert problems(argparse.ArgumentParser(prog="x").format_help()) == ["no description"]


@pytest.mark.parametrize("suite", [s for s in SUITES if s not in ("workloads", "trial")])
def test_benchmark_sizes_are_presets(suite, capsys):
    text = help_text(resolve(ENTRY_POINTS["experiments.bench"]), (suite,), capsys)
    assert "--preset {quick,full}" in text


@pytest.mark.parametrize(
    ("argv", "suite", "rest"),
    [
        (["--preset", "quick", "kernels"], "kernels", ["--preset", "quick"]),
        (["trial", "--window", "3"], "trial", ["--window", "3"]),
        (
            ["--out=x.json", "ablation", "--steps", "4"],
            "ablation",
            ["--out=x.json", "--steps", "4"],
        ),
    ],
)
def test_a_benchmark_suite_runs_wherever_its_name_stands(argv, suite, rest, monkeypatch):
    calls = []
    for name in SUITES:
        if name != "workloads":
            module = importlib.import_module(f"experiments.bench.{name}")
            monkeypatch.setattr(module, "main", lambda a, name=name: calls.append((name, a)) or 0)
    assert resolve(ENTRY_POINTS["experiments.bench"])(argv) == 0
    assert calls == [(suite, rest)]


def test_two_benchmark_suites_are_refused(capsys):
    with pytest.raises(SystemExit):
        resolve(ENTRY_POINTS["experiments.bench"])(["workloads", "--preset", "quick", "kernels"])
    assert "one suite at a time" in capsys.readouterr().err


def test_every_study_writes_under_results_by_default():
    from experiments.studies.cli import build_parser

    _, subparsers = build_parser()
    assert set(subparsers) == set(STUDIES)
    for name, parser in subparsers.items():
        assert parser.parse_args([]).out == os.path.join("results", name)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["dp-tt", "--runs", "0"], "argument --runs: must be a positive integer, got 0"),
        (["dp-tt", "--instances", "mu9"], "argument --instances: invalid choice: 'mu9'"),
        (["dp-tt", "--epsilons", "-1"], "argument --epsilons: ε must be > 0, got -1"),
        (["dp-tt", "--tail-epsilons", "nan"], "argument --tail-epsilons: ε must be > 0"),
        (["dp-tt", "--max-samples", "x"], "argument --max-samples: not an integer: 'x'"),
        (["adap-tt-star-ablation", "--runs", "0"], "argument --runs: must be a positive"),
        (["dp-tt-theory", "--epsilons", "0"], "argument --epsilons: ε must be > 0, got 0"),
    ],
)
def test_a_study_refuses_bad_cells_before_computing_in_one_line(argv, says, capsys):
    from experiments.studies.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1, err


def test_every_command_is_a_package_run_by_its_main():
    """One convention: no command module beside the packages, no module runnable but a
    ``__main__``, and each ``__main__`` runs the function its script runs."""
    assert sorted(p.name for p in (ROOT / "experiments").glob("*.py")) == ["__init__.py"]
    sources = [p for d in ("jaxbai", "experiments") for p in (ROOT / d).rglob("*.py")]
    guard = 'if __name__ == "__main__"'
    runnable = [p for p in sources if p.name != "__main__.py" and guard in p.read_text()]
    assert not runnable, f"run commands through a package's __main__.py: {runnable}"
    mains = {
        p.parent.relative_to(ROOT).as_posix().replace("/", "."): p.read_text()
        for p in sources
        if p.name == "__main__.py"
    }
    assert set(mains) == set(ENTRY_POINTS)
    for package, target in ENTRY_POINTS.items():
        module, _, name = target.partition(":")
        assert f"from {module} import {name}\n" in mains[package]


def test_console_scripts_name_every_command():
    scripts = PYPROJECT["scripts"]
    assert sorted(scripts.values()) == sorted(ENTRY_POINTS.values())
    for script, target in scripts.items():
        assert script.startswith("jaxbai-") and callable(resolve(target))


def documented_extras() -> set[str]:
    """The extras of every ``pip install -e ".[...]"`` of the README and the docs."""
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    pattern = r'pip install -e "\.\[([\w,]+)\]"'
    groups = (g for p in texts for g in re.findall(pattern, p.read_text(encoding="utf-8")))
    return {extra for group in groups for extra in group.split(",")}


def test_the_documented_gpu_extra_is_jax_with_cuda():
    extras = PYPROJECT["optional-dependencies"]
    documented = documented_extras()
    assert "gpu" in documented and documented <= set(extras)
    requirements = [Requirement(r) for r in extras["gpu"]]
    assert any(r.name == "jax" and any("cuda" in e for e in r.extras) for r in requirements)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert 'pip install -e ".[gpu]"' in readme and "docs/index.md#gpu" in readme
    assert "\n### GPU\n" in (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
