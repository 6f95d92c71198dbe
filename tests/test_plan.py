"""The cost plan (`experiments.sweep.plan`) of a sweep with several δ, shared or not."""

from __future__ import annotations

import math

import pytest

from experiments import config
from experiments.sweep import plan

pytestmark = pytest.mark.integration

GRID = """
runs = 20
seed = 5
deltas = [0.1, 0.01]
max_samples = 1_000_000
instances = ["mu1"]
epsilons = [1.0]
algorithms = ["ttucb", "dp_se"]
share_deltas = {share}
"""


@pytest.fixture(scope="module")
def plans() -> dict[bool, dict[tuple[str, float], plan.Cell]]:
    """The plan of `GRID` without and with shared δ, by (algorithm, δ)."""
    out = {}
    for share in (False, True):
        cfg = config.loads(GRID.format(share=str(share).lower()), name="plan")
        out[share] = {(c.algorithm, c.delta): c for c in plan.plan(cfg)}
    return out


def test_shared_deltas_count_the_trajectory_once(plans):
    """With shared δ, TTUCB's δ = 0.1 cell is marked shared and adds no samples or time (the
    trajectories run until δ = 0.01 stops, and that cell counts them); DP-SE, whose sampling
    reads δ, still runs each δ. Without sharing no cell is shared; the predicted τ of every
    cell and the samples of the smallest δ do not depend on the mode (same pilot seed)."""
    separate, shared = plans[False], plans[True]
    assert not any(c.shared for c in separate.values())
    assert {key for key, c in shared.items() if c.shared} == {("ttucb", 0.1)}
    assert shared["ttucb", 0.1].samples == shared["ttucb", 0.1].seconds == 0.0
    assert separate["ttucb", 0.1].samples > 0
    for key, cell in separate.items():
        assert shared[key].tau == cell.tau
        if key != ("ttucb", 0.1):
            assert shared[key].samples == cell.samples
            assert math.isclose(cell.samples, cell.tau * 20)


def test_shared_cells_are_named_in_the_plan_text(plans):
    """The printed plan shows a shared cell's samples as ``shared`` and says what that means."""
    cells = sorted(plans[True].values(), key=lambda c: -c.samples)
    text = plan.format_plan(cells, "1 cpu device")
    row = next(line for line in text.splitlines() if line.startswith("ttucb") and " 0.1 " in line)
    assert "shared" in row
    assert "shared: tested on the trajectories of the smallest δ" in text
    assert "shared" not in plan.format_plan(list(plans[False].values()), "1 cpu device")


def test_a_grid_takes_its_compilation_and_its_samples_at_the_pilot_rate():
    """The seconds of one engine grid's cells: the compilation the pilot measured plus their
    samples at its rate, shared in proportion to samples (a shared cell takes none)."""
    pilot = plan._Pilot(factor=None, capped=None, compile_s=3.0, samples_per_s=1000.0, lanes=4)
    cells = [
        plan.Cell("a", "i", e, 0.1, 1.0, 1.0, "pilot", 1.0, samples, 0.0, samples == 0)
        for e, samples in ((1.0, 6000.0), (2.0, 2000.0), (3.0, 0.0))
    ]
    seconds = [c.seconds for c in plan._timed(cells, pilot)]
    assert math.isclose(sum(seconds), 3.0 + 8000.0 / 1000.0)
    assert math.isclose(seconds[0], 3 * seconds[1]) and seconds[2] == 0.0
