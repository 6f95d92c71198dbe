"""Two-sample tests of the laws of (τ, â, C), shared by the law-equality tests.

Seeds are fixed, so a pass is reproducible; `ALPHA` is the level of every test.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

ALPHA = 1e-3
"""Level of every two-sample test (seeds are fixed: a pass is reproducible)."""


def same_tau(a: np.ndarray, b: np.ndarray, shift: float | None) -> None:
    """Welch's z on E[τ] (with ``shift``: first check it detects that relative shift with
    power 90 % at level `ALPHA`) and Kolmogorov–Smirnov on the whole law."""
    se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    z_alpha = stats.norm.isf(ALPHA / 2)
    if shift is not None:
        detectable = (z_alpha + stats.norm.isf(0.1)) * se / a.mean()
        assert detectable <= shift, f"underpowered: detects a {detectable:.1%} shift"
    assert abs(a.mean() - b.mean()) / se < z_alpha, (a.mean(), b.mean())
    assert stats.ks_2samp(a, b, method="asymp").pvalue > ALPHA


def same_discrete(a: np.ndarray, b: np.ndarray) -> None:
    """χ² homogeneity of a discrete variable (values seen fewer than 10 times pooled)."""
    values = np.union1d(a, b)
    table = np.array([[np.sum(x == v) for v in values] for x in (a, b)])
    keep = table.sum(axis=0) >= 10
    table = np.column_stack([table[:, keep], table[:, ~keep].sum(axis=1)])
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] > 1:
        assert stats.chi2_contingency(table).pvalue > ALPHA
