"""C*_ε in closed form (`jaxbai.theory.private_cost`) against the float64 golden-section
transcription (`experiments.studies.reference_dp_tt.private_cost`) on 10⁴ random points.

The points cover ε from 1e-12 to ∞, weight ratios w_j / w_i from 1e-6 to 1e6, means at 0 and 1
and near ties (μ_i − μ_j down to 1e-6). Both sides see the same float32 inputs, so the only
difference is float32 arithmetic. Its error bound is that of evaluating the objective's terms
in float32: a few units of float32 rounding u times S, the sum of the terms' magnitudes at the
minimiser (w · (|μ log1p((μ − x)/x)| + |(1 − μ) log1p((x − μ)/(1 − x))|) on a kl branch,
w · (|log(1 − x (1 − e^{−ε}))| + εμ) on a beyond branch), plus a relative 1e-5. Where no
cancellation happens S is within a small factor of C*_ε and the bound is a relative ~3e-5 (the
second test checks that on the more than half of the points where S ≤ 30 C*_ε); near ties and at
tiny ε the terms cancel and S ≫ C*_ε, where no float32 evaluation can do better. A minimiser
in the wrong segment misses by the order of C*_ε itself, far outside the bound.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

from experiments.studies import reference_dp_tt as ref
from jaxbai import theory

U32 = float(np.finfo(np.float32).eps)
POINTS = 10_000

cost = jax.jit(theory.private_cost)


def _points(n: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """(μ_i, μ_j, w_i, w_j, ε), float32, μ_i ≥ μ_j."""
    rng = np.random.default_rng(seed)
    mu = rng.uniform(0, 1, (n, 2))
    mu_i, mu_j = mu.max(axis=1), mu.min(axis=1)
    tie = slice(0, n // 4)  # near ties, μ_i − μ_j from 1e-6 to 1e-1
    gap = 10.0 ** rng.uniform(-6, -1, n // 4)
    mu_j[tie] = rng.uniform(0, 1, n // 4) * (1 - gap)
    mu_i[tie] = mu_j[tie] + gap
    edge = n // 4
    mu_i[edge : edge + n // 20] = 1.0  # means at the ends of [0, 1]
    mu_j[edge + n // 20 : edge + n // 10] = 0.0
    mu_i[edge + n // 10 : edge + n // 10 + n // 50] = 1.0
    mu_j[edge + n // 10 : edge + n // 10 + n // 50] = 0.0
    w_i = 10.0 ** rng.uniform(-2, 6, n)
    w_j = w_i * 10.0 ** rng.uniform(-6, 6, n)  # ratios 1e-6 … 1e6
    epsilon = 10.0 ** rng.uniform(-12, 2, n)
    epsilon[rng.random(n) < 0.1] = math.inf
    as32 = (np.asarray(a, np.float32) for a in (mu_i, mu_j, w_i, w_j, epsilon))
    return tuple(as32)


@pytest.fixture(scope="module")
def evaluated():
    points = _points(POINTS)
    got = np.asarray(cost(*points), np.float64)
    args = [tuple(map(float, p)) for p in zip(*points, strict=True)]
    want = np.array([ref.private_cost(*a) for a in args])
    scale = np.array([ref.objective_scale(*a) for a in args])
    return points, got, want, scale


def test_points_cover_the_ranges(evaluated):
    (mu_i, mu_j, w_i, w_j, epsilon), _, _, _ = evaluated
    finite = epsilon[np.isfinite(epsilon)]
    assert finite.min() < 1e-11 and finite.max() > 10 and np.isinf(epsilon).sum() > 500
    ratio = w_j.astype(np.float64) / w_i
    assert ratio.min() < 1e-5 and ratio.max() > 1e5
    assert (mu_i == 1).sum() > 500 and (mu_j == 0).sum() > 500
    gap = mu_i.astype(np.float64) - mu_j
    assert gap[gap > 0].min() < 2e-6


def test_closed_form_is_float32_accurate(evaluated):
    points, got, want, scale = evaluated
    bound = 1e-5 * want + 8 * U32 * scale
    excess = np.abs(got - want) - bound
    worst = int(np.argmax(excess))
    assert np.all(excess <= 0), (
        f"C*_ε{tuple(float(p[worst]) for p in points)} = {got[worst]!r}, "
        f"want {want[worst]!r} ± {bound[worst]:.3g}"
    )
    # where the terms cancel by less than a factor 30, that is a relative bound of ~3e-5
    well_conditioned = (scale <= 30 * want) & (want > 0)
    assert well_conditioned.sum() > POINTS // 2
    rel = np.abs(got - want)[well_conditioned] / want[well_conditioned]
    assert rel.max() < 3e-5


@pytest.mark.parametrize(
    ("mu_i", "mu_j", "w_i", "w_j", "epsilon"),
    [
        # tiny ε: the minimiser sits at μ_i across a long beyond/beyond segment, while the
        # kl/beyond stationary point next to μ_j is within a float32 step of its segment's end
        (0.95803803, 0.42178878, 27.587412, 12.075019, 9.195558e-08),
        # ε near 1e-12: h_i = μ_i − 1e-12 must round to μ_i, not one step below it
        (0.49804345, 0.49761268, 143.60979, 2.623383e06, 4.2986465e-12),
        # e^{−ε} underflows with μ_i = 1
        (1.0, 0.3642252, 14.811321, 0.057563696, 99.11405),
        (0.6850051, 0.3419498, 1695.5854, 1195.9053, 1.7652783e-07),
    ],
)
def test_cases_earlier_designs_got_wrong(mu_i, mu_j, w_i, w_j, epsilon):
    args = tuple(np.float32(a) for a in (mu_i, mu_j, w_i, w_j, epsilon))
    want = ref.private_cost(*map(float, args))
    assert float(cost(*args)) == pytest.approx(want, rel=1e-4)


@pytest.mark.parametrize(
    ("mu_i", "mu_j", "w_i", "w_j", "epsilon"),
    [(1.0, 0.5, 1.0, 0.0, math.inf), (0.5, 0.0, 0.0, 1.0, math.inf), (1.0, 0.5, 1.0, 0.0, 120.0)],
)
def test_a_zero_weight_costs_nothing_on_its_side(mu_i, mu_j, w_i, w_j, epsilon):
    """With one weight 0 the cost is 0 (x at the other arm's mean), and 0 · kl(μ, 1) must not
    make it NaN."""
    args = tuple(np.float32(a) for a in (mu_i, mu_j, w_i, w_j, epsilon))
    assert float(cost(*args)) == 0.0
