"""The cookbook's code runs, block after block (docs/cookbook.md), with smaller numbers."""

from __future__ import annotations

import pathlib

import pytest
from test_readme import run_blocks

from experiments.analysis import styles

COOKBOOK = pathlib.Path(__file__).resolve().parents[1] / "docs" / "cookbook.md"
SMALLER = {
    "runs=100": "runs=20",
    "runs=20_000": "runs=4_000",
    '"runs": 20': '"runs": 4',
    '"adap_tt", "adap_tt_tripling", "adap_tt_eb"': '"adap_tt_tripling"',
    '"global_epsilons": [1.0, 10.0]': '"global_epsilons": [1.0]',
    "range(2000)": "range(200)",
}
"""The reductions: fewer runs, one algorithm and one ε in the sweep, a trial cut at 200
participants (the page's blocks, its assertions included, run otherwise unchanged)."""


@pytest.mark.integration
def test_the_cookbook_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(styles, "REGISTERED_STYLES", {})
    run_blocks(COOKBOOK, SMALLER, {})
