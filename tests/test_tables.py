"""The result tables: per-arm columns one per arm, "not applicable" missing (never −1), a CSV
that pandas reads as the DataFrames of the API, older CSVs still read; `SimulationResult.to_frame`
and `jaxbai.__version__`."""

from __future__ import annotations

import importlib.metadata

import numpy as np
import pandas as pd
import pytest

import jaxbai
from experiments.analysis import results, stats

NAN = float("nan")


def _runs() -> results.Table:
    """Runs of two instances of different K in one table: a K = 2 cell of a fully sequential
    algorithm (one censored run) and a K = 3 cell of one that counts rounds and reports a
    stopping time."""
    n = 5
    return {
        "algorithm": np.array(["a", "a", "a", "b", "b"], dtype=object),
        "privacy": np.full(n, "global", dtype=object),
        "privacy_measure": np.full(n, "ε-DP (global, pure)", dtype=object),
        "instance": np.array(["i2", "i2", "i2", "i3", "i3"], dtype=object),
        "means": np.array(["0.6 0.2"] * 3 + ["0.9 0.5 0.1"] * 2, dtype=object),
        "K": np.array([2, 2, 2, 3, 3]),
        "epsilon": np.array([1.0, 1.0, 1.0, np.inf, np.inf]),
        "delta": np.full(n, 0.1),
        "threshold": np.array(["heuristic"] * 3 + ["n/a"] * 2, dtype=object),
        "seed": np.zeros(n, np.int64),
        "run": np.array([0, 1, 2, 0, 1]),
        "tau": np.array([10, 20, 8, 12, 9]),
        "recommendation": np.array([0.0, 0.0, NAN, 0.0, 1.0]),
        "correct": np.array([True, True, False, True, False]),
        "censored": np.array([False, False, True, False, False]),
        "rounds": np.array([NAN, NAN, NAN, 4.0, 3.0]),
        "counts": np.array(["6 4", "10 10", "2 6", "6 4 2", "3 3 3"], dtype=object),
        "reported_tau": np.array([NAN, NAN, NAN, 8.0, 6.0]),
    }


def _per_arm(cells: np.ndarray, width: int) -> np.ndarray:
    """Text cells as a (n, width) float matrix, NaN-padded (written here, not by the code)."""
    out = np.full((len(cells), width), NAN)
    for i, text in enumerate(cells):
        values = [float(v) for v in text.split()]
        out[i, : len(values)] = values
    return out


def test_runs_csv_has_numeric_per_arm_columns_and_missing_values(tmp_path):
    """A plain ``pandas.read_csv`` of runs.csv: ``mu_a`` and ``count_a`` numeric, NaN beyond a
    row's K; ``rounds``, ``reported_tau`` and a censored run's ``recommendation`` NaN, not −1;
    no text column of numbers left."""
    table, path = _runs(), tmp_path / "runs.csv"
    results.write_csv(table, str(path), results.RUN_COLUMNS)
    frame = pd.read_csv(path)
    assert "means" not in frame and "counts" not in frame
    mu = frame[[f"mu_{a}" for a in range(3)]].to_numpy()
    counts = frame[[f"count_{a}" for a in range(3)]].to_numpy()
    arms = [c for c in frame if c.startswith(("mu_", "count_"))]
    assert len(arms) == 6 and all(pd.api.types.is_numeric_dtype(frame[c]) for c in arms)
    np.testing.assert_array_equal(mu, _per_arm(table["means"], 3))
    np.testing.assert_array_equal(counts, _per_arm(table["counts"], 3))
    np.testing.assert_array_equal(np.nansum(counts, axis=1), table["tau"])
    for name in ("rounds", "reported_tau", "recommendation"):
        assert frame[name].dtype == np.float64
        np.testing.assert_array_equal(frame[name].to_numpy(), table[name])
    assert not (frame.select_dtypes("number") == -1).any().any()


def test_write_read_write_is_byte_identical(tmp_path):
    """Reading a CSV back gives the table it was written from (text cells of the per-arm
    columns, NaN where not applicable), and writing that again gives the same bytes."""
    table = _runs()
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    results.write_csv(table, str(first), results.RUN_COLUMNS)
    back = results.read_csv(str(first))
    assert list(back) == list(results.RUN_COLUMNS)
    for name, column in table.items():
        if column.dtype == object:
            assert back[name].tolist() == column.tolist(), name
        else:
            np.testing.assert_array_equal(back[name], column)
    results.write_csv(back, str(second), results.RUN_COLUMNS)
    assert first.read_bytes() == second.read_bytes()


def test_to_frame_is_what_pandas_reads(tmp_path):
    """`results.to_frame` of the runs and of their summary equals pandas' reading of the CSVs
    (values and dtypes): the DataFrames of `experiments.sweep.run` are the files."""
    table = _runs()
    summary = stats.summarize(table, {("b", "0.9 0.5 0.1", np.inf): np.array([0.5, 0.3, 0.2])})
    for data, schema in ((table, results.RUN_COLUMNS), (summary, stats.SUMMARY_COLUMNS)):
        path = tmp_path / "t.csv"
        results.write_csv(data, str(path), schema)
        read = pd.read_csv(path, keep_default_na=False, na_values=[""])
        pd.testing.assert_frame_equal(results.to_frame(data, schema), read)


def test_summary_csv_per_arm_columns_and_missing_values(tmp_path):
    """summary.csv: ``proportion_a``, ``proportion_std_a`` and ``omega_star_a`` numeric (NaN
    beyond K, and ω* NaN for a cell without a target); ``rounds_*`` and ``reported_mean`` NaN for
    the fully sequential algorithm."""
    table = _runs()
    omega = np.array([0.5, 0.3, 0.2])
    summary = stats.summarize(table, {("b", "0.9 0.5 0.1", np.inf): omega})
    path = tmp_path / "summary.csv"
    results.write_csv(summary, str(path), stats.SUMMARY_COLUMNS)
    frame = pd.read_csv(path).set_index("algorithm")
    share_a = np.array([[6, 4], [10, 10], [2, 6]]) / np.array([[10], [20], [8]])
    np.testing.assert_allclose(
        frame.loc["a", ["proportion_0", "proportion_1"]].to_numpy(float), share_a.mean(axis=0)
    )
    assert np.isnan(frame.loc["a", "proportion_2"]) and np.isnan(frame.loc["a", "omega_star_0"])
    np.testing.assert_array_equal(frame.loc["b", [f"omega_star_{a}" for a in range(3)]], omega)
    for name in ("rounds_mean", "rounds_std", "rounds_max", "reported_mean"):
        assert np.isnan(frame.loc["a", name]), name
    assert frame.loc["b", "rounds_max"] == 4 and frame.loc["b", "reported_mean"] == 7.0


def test_an_older_csv_reads_as_the_new_one(tmp_path):
    """A runs.csv of the former layout (per-arm text columns, −1 for not applicable) reads as
    the same table as the current layout."""
    table = _runs()
    new, old = tmp_path / "new.csv", tmp_path / "old.csv"
    results.write_csv(table, str(new), results.RUN_COLUMNS)
    frame = pd.read_csv(new, keep_default_na=False, na_values=[""])
    frame = frame.drop(columns=[c for c in frame if c.startswith(("mu_", "count_"))])
    frame.insert(3, "means", table["means"])
    frame.insert(15, "counts", table["counts"])
    frame[["rounds", "reported_tau", "recommendation"]] = (
        frame[["rounds", "reported_tau", "recommendation"]].fillna(-1).astype(int)
    )
    frame.to_csv(old, index=False)
    assert "-1" in old.read_text() and "6 4 2" in old.read_text()
    want, got = results.read_csv(str(new)), results.read_csv(str(old))
    assert list(got) == list(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


def test_a_csv_without_privacy_measures_reads_as_what_it_was(tmp_path):
    """A runs.csv written before measures existed: each row reads as its registered algorithm's
    claim (pure ε-DP, (ε, γ)-DP for the Gaussian LDP algorithm), an unknown private algorithm
    as unstated, never as pure (docs/semantics.md §36)."""
    table = _runs()
    table["algorithm"] = np.array(["adap_tt", "gauss_ldp_tt", "theirs", "ttucb", "b"], object)
    table["privacy"] = np.array(["global", "local", "global", "none", "none"], dtype=object)
    path = tmp_path / "old.csv"
    old = {k: v for k, v in table.items() if k != "privacy_measure"}
    results.write_csv(old, str(path), {k: t for k, t in results.RUN_COLUMNS.items() if k in old})
    got = results.read_csv(str(path))["privacy_measure"].tolist()
    assert got == [
        "ε-DP (global, pure)",
        "(ε, δ)-DP (local, δ = 0.001)",
        "unstated (written before privacy measures)",
        "not private",
        "not private",
    ]


def test_simulation_result_to_frame():
    """One row per (ε, δ, run), in C order of the result's arrays, led by what ran (so frames
    of two simulations concatenate into one table); counts one column per arm; −1 (rounds of
    TTUCB, recommendation of a censored run) NaN."""
    res = jaxbai.simulate(
        jaxbai.ttucb(), jaxbai.bernoulli([0.6, 0.2]), delta=[0.1, 0.01], runs=3, max_samples=40
    )
    frame = res.to_frame()
    assert len(frame) == 2 * 3 and res.censored.any()
    assert list(frame.columns) == [
        "algorithm", "privacy_measure", "mu_0", "mu_1", "epsilon", "delta", "run", "tau",
        "recommendation", "correct", "censored", "rounds", "count_0", "count_1",
    ]  # fmt: skip
    assert set(frame["algorithm"]) == {"ttucb"} and set(frame["mu_1"]) == {0.2}
    other = jaxbai.simulate(jaxbai.adap_tt(), jaxbai.bernoulli([0.7, 0.2, 0.1]), 1.0, runs=2)
    both = pd.concat([frame, other.to_frame()], ignore_index=True)
    assert both.groupby("algorithm")["privacy_measure"].first().to_dict() == {
        "adap_tt": "ε-DP (global, pure)",
        "ttucb": "not private",
    }
    assert both["mu_2"].isna().sum() == len(frame)
    for i, (d, r) in enumerate(np.ndindex(2, 3)):
        row = frame.iloc[i]
        assert (row["delta"], row["run"], row["tau"]) == (res.delta[d, r], r, res.tau[d, r])
        assert row["censored"] == res.censored[d, r] and row["correct"] == res.correct[d, r]
        assert [row["count_0"], row["count_1"]] == res.counts[d, r].tolist()
        if res.censored[d, r]:
            assert np.isnan(row["recommendation"])
        else:
            assert row["recommendation"] == res.recommendation[d, r]
    assert (res.rounds == -1).all() and frame["rounds"].isna().all()
    assert frame["tau"].dtype == np.int64 and frame["count_0"].dtype == np.int64


def test_version_comes_from_the_package_metadata():
    try:
        installed = importlib.metadata.version("jaxbai")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("jaxbai is not installed (imported from a checkout)")
    assert jaxbai.__version__ == installed
