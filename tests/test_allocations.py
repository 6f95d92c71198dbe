"""Final counts N_a in every result: engine, checkpoints, gather, runs.csv, summary, figures.

Each run's counts sum to its τ, do not depend on lanes, chunks or resume, travel through
checkpoints and the multi-process gather, and reach runs.csv (with the reported stopping time
of a `jaxbai.base.ReportsSamples` algorithm); the summary's proportions and their deviation
from ω* are checked against hand computations, ω* against the closed form on two arms.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import jaxbai
from experiments import sweep
from experiments.analysis import drawing, markdown_report, results, stats
from experiments.sweep import cli
from jaxbai import engine
from jaxbai.engine import _distributed

INST = jaxbai.bernoulli([0.8, 0.4])
JOBS = engine.grid_jobs(INST, [1.0], 0.1, 6)
CASES = [
    ("ttucb", "per_sample"),
    ("adap_tt", "per_sample"),
    ("adap_tt", "per_episode"),
    ("dp_se", "per_sample"),
    ("adap_tt_published", "auto"),
]


@functools.cache
def grid(name: str, draws: str, lanes: int | None = None, chunk_steps: int = 1 << 15):
    """`run_grid` of ``name`` on `JOBS`; the default lanes and chunks are the sweep's (the
    sweep of the ``tables`` fixture then reuses the compiled programs)."""
    alg = jaxbai.ALGORITHMS[name]()
    return engine.run_grid(
        alg, JOBS, seed=1, draws=draws, lanes_per_device=lanes, chunk_steps=chunk_steps
    )


@pytest.mark.integration
@pytest.mark.parametrize(("name", "draws"), CASES)
def test_counts_sum_to_tau(name, draws):
    res = grid(name, draws)
    assert res.counts.shape == (len(JOBS), 2)
    assert not res.censored.any()
    np.testing.assert_array_equal(res.counts.sum(axis=1), res.tau)
    assert (res.counts >= 1).all()  # every arm is pulled once first


@pytest.mark.integration
def test_simulate_has_counts_per_run():
    res = jaxbai.simulate(jaxbai.ttucb(), INST, 1.0, [0.1], runs=6, seed=1)
    assert res.counts.shape == (1, 6, 2)
    np.testing.assert_array_equal(res.counts.sum(axis=-1), res.tau)
    np.testing.assert_array_equal(res.counts[0], grid("ttucb", "per_sample").counts)


@pytest.mark.integration
def test_counts_do_not_depend_on_lanes_chunks_or_resume(tmp_path):
    reference = grid("ttucb", "per_sample")
    other = grid("ttucb", "per_sample", lanes=4, chunk_steps=7)
    np.testing.assert_array_equal(other.counts, reference.counts)
    path = str(tmp_path / "grid.npz")
    options = {"seed": 1, "draws": "per_sample", "checkpoint": path}
    alg = jaxbai.ttucb()
    partial = engine.run_grid(alg, JOBS, chunk_steps=32, max_chunks=1, **options)
    with np.load(path) as data:
        done, stored = data["done"], data["counts"]
    assert 0 < done.sum() < len(JOBS)
    np.testing.assert_array_equal(stored[done], reference.counts[done])
    np.testing.assert_array_equal(partial.counts[~done], 0)  # not finished: no counts yet
    resumed = engine.run_grid(alg, JOBS, resume=True, lanes_per_device=4, **options)
    np.testing.assert_array_equal(resumed.counts, reference.counts)
    np.testing.assert_array_equal(resumed.tau, reference.tau)


def test_a_checkpoint_without_counts_says_to_rerun_without_resuming(tmp_path):
    """A checkpoint of the format before counts (version 1) is refused, whatever its grid."""
    path = str(tmp_path / "grid.npz")
    old = engine.read_checkpoint(path, "f", 4, 2)
    del old["counts"]
    np.savez(path, fingerprint=np.array("f"), **old)
    with pytest.raises(ValueError, match=r"older jaxbai.*rerun without resuming"):
        engine.read_checkpoint(path, "f", 4, 2)
    with pytest.raises(ValueError, match="older jaxbai"):
        engine.run_grid(jaxbai.ttucb(), JOBS, checkpoint=path, resume=True)


def test_a_checkpoint_of_other_k_is_another_grid(tmp_path):
    path = str(tmp_path / "grid.npz")
    engine.write_checkpoint(path, "f", engine.read_checkpoint(path, "f", 4, 3))
    with pytest.raises(ValueError, match=r"different grid \(4 jobs of 3 arms, not 4 of 2"):
        engine.read_checkpoint(path, "f", 4, 2)


def test_the_gather_over_processes_carries_the_counts(monkeypatch):
    """`union` with a stand-in for the all-gather of two processes: each job's counts come
    from the process that finished it."""
    mine = engine.read_checkpoint("absent.npz", "f", 3, 2)
    theirs = {k: v.copy() for k, v in mine.items()}
    mine["done"][0], mine["tau"][0], mine["counts"][0] = True, 7, [5, 2]
    theirs["done"][2], theirs["tau"][2], theirs["counts"][2] = True, 9, [1, 8]
    sent = {}

    def alone(tree):  # one process: what it sends
        sent["theirs"] = tree[0]
        return tree[0][None], tree[1][None]

    monkeypatch.setattr(_distributed.multihost_utils, "process_allgather", alone)
    alone_result, _ = _distributed.union(theirs, 0)
    np.testing.assert_array_equal(alone_result["counts"], theirs["counts"])

    def pair(tree):  # two processes: this one, then the other
        return np.stack([tree[0], sent["theirs"]]), np.stack([tree[1], tree[1]])

    monkeypatch.setattr(_distributed.multihost_utils, "process_allgather", pair)
    merged, _ = _distributed.union(mine, 1)
    np.testing.assert_array_equal(merged["done"], [True, False, True])
    np.testing.assert_array_equal(merged["tau"], [7, 0, 9])
    np.testing.assert_array_equal(merged["counts"], [[5, 2], [0, 0], [1, 8]])
    assert merged["counts"].dtype == mine["counts"].dtype


def _highest_powers(counts: np.ndarray) -> np.ndarray:
    """Σ_a 2^⌊log₂ N_a⌋, by floating point (exact for these sizes)."""
    return (2 ** np.floor(np.log2(counts))).astype(np.int64).sum(axis=-1)


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict[str, results.Table]:
    """The runs.csv rows of a tiny sweep of each algorithm on (0.8, 0.4), ε = 1, δ = 0.1."""
    out = str(tmp_path_factory.mktemp("sweep"))
    found = {}
    for name in ("ttucb", "adap_tt_published"):
        argv = ["--means", "0.8", "0.4", "--algorithms", name, "--epsilons", "1"]
        argv += ["--deltas", "0.1", "--runs", "6", "--seed", "1", "--quiet", "--out", out]
        args = cli.build_parser().parse_args(argv)
        cfg = cli.config_from_args(args)
        sweep.prepare_out(cfg.out)
        grids = sweep.SweepGrids.of(cfg).with_checkpoints()
        found[name] = sweep.run_table(grids, name, sweep.run_algorithm(grids, name, progress=False))
    return found


def test_runs_csv_has_counts_and_reported_tau(tmp_path, tables):
    path = str(tmp_path / "runs.csv")
    both = results.concat([tables["adap_tt_published"], tables["ttucb"]])
    results.write_csv(both, path, results.RUN_COLUMNS)
    back = results.read_csv(path)
    published = back["algorithm"] == "adap_tt_published"
    counts = results.counts_matrix(back["counts"])
    np.testing.assert_array_equal(counts.sum(axis=1), back["tau"])
    np.testing.assert_array_equal(
        back["reported_tau"][published], _highest_powers(counts)[published]
    )
    assert (back["reported_tau"][published] < back["tau"][published]).any()
    assert np.isnan(back["reported_tau"][~published]).all()  # not applicable: missing


def test_an_older_runs_csv_reads_without_counts(tmp_path, tables):
    path = str(tmp_path / "runs.csv")
    old = [c for c in results.RUN_COLUMNS if c not in results.OPTIONAL_COLUMNS]
    results.write_csv(tables["ttucb"], path, old)
    back = results.read_csv(path)
    assert (back["counts"] == "").all() and np.isnan(back["reported_tau"]).all()
    summary = stats.summarize(back)
    assert summary["proportions"][0] == "" and math.isnan(summary["omega_deviation"][0])


def _tiny() -> results.Table:
    """Two cells of one algorithm (K = 2) and one of another on a K = 3 instance."""
    n = 5
    return {
        "algorithm": np.array(["a", "a", "a", "a", "b"], dtype=object),
        "privacy": np.full(n, "global", dtype=object),
        "privacy_measure": np.full(n, "ε-DP (global, pure)", dtype=object),
        "instance": np.array(["i2"] * 4 + ["i3"], dtype=object),
        "means": np.array(["0.6 0.2"] * 4 + ["0.9 0.5 0.1"], dtype=object),
        "K": np.array([2, 2, 2, 2, 3]),
        "epsilon": np.array([1.0, 1.0, 1.0, 2.0, 1.0]),
        "delta": np.full(n, 0.1),
        "threshold": np.full(n, "heuristic", dtype=object),
        "tau": np.array([10, 20, 8, 4, 12]),
        "correct": np.ones(n, bool),
        "censored": np.array([False, False, True, False, False]),
        "rounds": np.full(n, -1),
        "counts": np.array(["6 4", "10 10", "2 6", "1 3", "6 4 2"], dtype=object),
        "reported_tau": np.array([8, 16, 6, 3, -1]),
    }


def test_summary_proportions_and_deviation_by_hand():
    """Cell (a, ε = 1): proportions (0.6, 0.4), (0.5, 0.5), (0.25, 0.75) (the censored run is
    kept: its counts are the budget's) → mean (0.45, 0.55), std per arm √((0.15² + 0.05² +
    0.2²)/2); with ω* = (1/2, 1/2): per-run max deviations 0.1, 0, 0.25 → 0.35/3, and the
    mean's deviation 0.05."""
    half = np.array([0.5, 0.5])
    s = stats.summarize(_tiny(), {("a", "0.6 0.2", 1.0): half})
    assert s["algorithm"].tolist() == ["a", "a", "b"]
    np.testing.assert_allclose(stats.parse_floats(s["proportions"][0]), [0.45, 0.55])
    spread = math.sqrt((0.15**2 + 0.05**2 + 0.2**2) / 2)
    np.testing.assert_allclose(stats.parse_floats(s["proportions_std"][0]), [spread, spread])
    assert s["omega_deviation"][0] == pytest.approx(0.35 / 3)
    assert s["omega_deviation_of_mean"][0] == pytest.approx(0.05)
    np.testing.assert_array_equal(stats.parse_floats(s["omega_star"][0]), half)
    assert s["censored"][0] == 1 and s["reported_mean"][0] == pytest.approx(10.0)
    # (a, ε = 2) has no target: proportions, no deviation; b's K = 3 reads alongside K = 2
    np.testing.assert_allclose(stats.parse_floats(s["proportions"][1]), [0.25, 0.75])
    assert s["omega_star"][1] == "" and math.isnan(s["omega_deviation"][1])
    np.testing.assert_allclose(stats.parse_floats(s["proportions"][2]), [0.5, 1 / 3, 1 / 6])
    assert math.isnan(s["reported_mean"][2])


@pytest.mark.integration
def test_two_arm_targets_in_closed_form():
    """On two arms ω*_{a*} = β forces ω* = (β, 1 − β), for the β-optimal allocation and for
    that of the modified instance ν_{G,ε} (at every ε); DP-SE has none."""
    means, eps = np.array([0.6, 0.2]), np.array([0.05, 1.0])
    for alg, beta in ((jaxbai.ttucb(), 0.5), (jaxbai.adap_tt(beta=0.3), 0.3)):
        omega = stats.target_allocation(alg, means, eps)
        np.testing.assert_allclose(omega, [[beta, 1 - beta]] * 2, atol=1e-6)
    omega = stats.target_allocation(jaxbai.adap_tt_star(beta=0.3), means[::-1], eps)
    np.testing.assert_allclose(omega, [[0.7, 0.3]] * 2, atol=1e-6)  # the best arm is arm 2
    assert stats.target_allocation(jaxbai.dp_se(), means, eps) is None


def test_deviation_of_a_run_against_the_closed_form(tables):
    """TTUCB's runs on (0.8, 0.4): the summary's deviation is the mean of max_a |N_a/τ − 1/2|
    computed from the counts by hand, with ω* from the theory."""
    runs = tables["ttucb"]
    targets = stats.allocation_targets(runs, {"ttucb": jaxbai.ttucb()})
    s = stats.summarize(runs, targets)
    counts = results.counts_matrix(runs["counts"])
    by_hand = np.abs(counts / runs["tau"][:, None] - 0.5).max(axis=1).mean()
    assert s["omega_deviation"][0] == pytest.approx(by_hand, abs=1e-6)
    np.testing.assert_allclose(stats.parse_floats(s["omega_star"][0]), [0.5, 0.5], atol=1e-6)


def test_allocation_figure_per_instance(tmp_path):
    s = stats.summarize(_tiny(), {("a", "0.6 0.2", 1.0): np.array([0.5, 0.5])})
    assert drawing.allocation_instances(s) == ["i2", "i3"]
    fig = drawing.draw_allocations(s, "i2")
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == ["a"]
    assert len(visible[0].patches) == 4  # two cells × two arms
    ticks = [label.get_text() for label in visible[0].get_xticklabels()]
    assert ticks == ["0", "1"]  # numbered as runs.csv's count_0, count_1 (they read 1, 2)
    paths = drawing.draw_allocation_figures(s, str(tmp_path))
    assert {p.rsplit("/", 1)[-1] for p in paths} == {
        "allocations_i2.png",
        "allocations_i3.png",
    }


def test_report_lists_proportions_against_the_target():
    s = stats.summarize(_tiny(), {("a", "0.6 0.2", 1.0): np.array([0.5, 0.5])})
    rows = [line for line in markdown_report.allocation_table(s) if line.startswith("| a ")]
    assert rows[0] == "| a | i2 | 1 | 0.1 | 1 | 0.450 0.550 | 0.500 0.500 | 0.117 | 0.05 |"
    assert rows[1].endswith("| 0.250 0.750 | — | — | — |")
    older = stats.summarize({k: v for k, v in _tiny().items() if k != "counts"})
    assert "no final counts" in markdown_report.allocation_table(older)[0]
