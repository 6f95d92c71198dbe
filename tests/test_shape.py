"""The shape of the code: no module over `MAX_LINES` lines, and package ``__init__`` files that
only re-export (no function or class is defined in one)."""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
MAX_LINES = 500
MODULES = sorted(p for package in ("jaxbai", "experiments") for p in (ROOT / package).rglob("*.py"))


def _name(path: pathlib.Path) -> str:
    return str(path.relative_to(ROOT))


def test_there_are_modules_to_check():
    assert len(MODULES) > 50


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_module_is_over_the_line_limit(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{_name(path)} has {lines} lines: split it by concern"


@pytest.mark.parametrize("path", [p for p in MODULES if p.name == "__init__.py"], ids=_name)
def test_package_init_files_only_re_export(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defined = [
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
    assert not defined, f"{_name(path)} defines {defined}: move them into a module of the package"
