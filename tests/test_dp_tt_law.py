"""DP-TT with C*_ε in closed form has the law of DP-TT with C*_ε by bisection.

The bisection runs are stored (tests/fixtures/dp_tt_law_bisection.json, made by the code before
the closed form); these tests run the current code on independent seeds and compare the laws of
τ (Welch's z on E[τ], with the power to detect a 20 % shift checked first, and Kolmogorov–Smirnov)
and the error counts (Fisher's exact test), each at level `tests._laws.ALPHA` = 1e-3. With 1000
runs a side, KS detects any gap of 0.087 between the two CDFs at that level.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _laws import ALPHA, same_tau
from scipy import stats

import jaxbai

pytestmark = pytest.mark.statistical

STORED = json.loads((Path(__file__).parent / "fixtures" / "dp_tt_law_bisection.json").read_text())


@pytest.mark.parametrize("epsilon", sorted(STORED["cells"]))
def test_closed_form_has_the_law_of_the_bisection(epsilon):
    before = STORED["cells"][epsilon]
    res = jaxbai.simulate(
        jaxbai.dp_tt(),
        jaxbai.bernoulli(STORED["means"]),
        epsilon=float(epsilon),
        delta=STORED["delta"],
        runs=STORED["runs"],
        seed=STORED["seed"] + 1,
        max_samples=10**6,
    )
    assert int(np.asarray(res.censored).sum()) == before["censored"] == 0
    same_tau(np.asarray(before["tau"], float), np.asarray(res.tau, float).ravel(), shift=0.2)
    errors = int((~np.asarray(res.correct)).sum())
    runs = STORED["runs"]
    table = [[before["errors"], runs - before["errors"]], [errors, runs - errors]]
    assert stats.fisher_exact(table).pvalue > ALPHA, (before["errors"], errors)
