"""Auditing an algorithm written outside jaxbai, without hand-made tables (issue 52, item 2).

`_outside_se.SuccessiveElimination` is a private successive elimination written from scratch
against the public `jaxbai.base.Algorithm` protocol. On the documented neighbouring tables (all
rewards 0 against participant 0 = 1, horizon 16) its record holds no decision, so no event
separates them even for a copy leaking at 8× its ε: the audit must say "no evidence at these
tables (N events tried)", never a bound of 0. On the tables `jaxbai.audit.neighbouring_tables`
finds (what `audit_algorithm` uses by default) the correct algorithm passes and copies with a
quarter and an eighth of its noise are caught. The command line audits it, loaded as a plugin,
with ``--algorithms``.
"""

from __future__ import annotations

import csv

import jax
import numpy as np
import pytest
from _outside_se import SuccessiveElimination

import jaxbai
from experiments import audit as experiment
from experiments.audit.cli import main
from experiments.audit.table import markdown
from jaxbai import audit

RUNS = 10_000
"""Runs per table of the statistical test (5000 held out)."""


@pytest.mark.statistical
@pytest.mark.parametrize(("noise", "leaks"), [(1.0, False), (0.25, True), (0.125, True)])
def test_default_tables_pass_the_correct_elimination_and_catch_leaking_copies(noise, leaks):
    """Claimed ε = 1, seed 0, no tables given: the search finds a pair, the audit certifies.

    Power. The search puts epoch 1's elimination test at its threshold, where the noisy gap
    D = μ̂₀ − μ̂₁ + L₀ − L₁ (L ~ Lap(b), b = noise/(εR₁)) is at its median, and changes one
    participant's reward by 1, which moves μ̂₀ by 1/R₁ = m Laplace scales (m = 1, 4, 8 for
    noise = 1, ¼, ⅛). P(D > t + mb) for the difference of two Laplace draws is
    ½(1 + m/2)e^−m: 0.28, 0.027, 8·10⁻⁴ against ½, log-ratios 0.6, 2.9 and 6.4. With 5000
    held-out runs per table and Clopper–Pearson limits at α = 0.05/8, the 4× copy's event is
    counted ≈ 140 times under one table, whose upper limit is ≈ 1.25 times its frequency, and
    ≈ 2500 under the other (lower limit ≈ 0.96 times): the certified bound is ≈ 2.6, far above
    1; the 8× copy's ≈ 4 counts give an upper limit ≈ 0.0026 and a bound ≈ 5. Whatever the
    tables, the correct algorithm's bound exceeds 1 with probability ≤ 5% (fixed seeds make the
    outcome deterministic); that it still certifies > 0.3 shows the tables have power.
    """
    res = audit.audit_algorithm(SuccessiveElimination(noise=noise), 1.0, runs=RUNS, seed=0)
    assert res.evidence and res.inputs == "tables", res
    assert res.violation == leaks, res
    assert res.epsilon_lower > 0.3, res


def test_no_event_reads_no_evidence_never_a_bound_of_zero():
    """The documented tables show nothing of an elimination's first test (after 2R₁ = 82
    samples): even the 8× copy gives no evidence, and says so with the number of events."""
    table, table_prime = experiment.toptwo_tables()
    res = audit.audit_algorithm(
        SuccessiveElimination(noise=0.125), 1.0, table, table_prime, runs=200, seed=0, horizon=16
    )
    assert not res.evidence and res.event == audit.NONE
    assert res.events_tried >= 16 * 2  # a[t] = k for every t < 16 and both arms, at least
    expected = f"no evidence at these tables ({res.events_tried} events tried)"
    assert res.verdict == expected and str(res) == expected
    assert res.epsilon_lower == 0.0  # numeric, for programs
    noise = lambda key, x: jax.random.normal(key)  # noqa: E731
    res = audit.audit_mechanism(noise, 0.0, 1.0, 1.0, samples=2000, seed=0)
    assert res.verdict.startswith("no evidence at these inputs (")
    record = experiment.audit_row(
        experiment.Row("independent", "mechanism", lambda *_: res), 1.0, 2000, 2, 0
    )
    assert record["epsilon_lower"] == "" and record["verdict"] == res.verdict
    assert res.verdict in markdown([record])


def test_a_found_bound_reads_as_a_bound():
    """A leak certified by an event reads "ε ≥ …", and a violation says so."""
    leak = lambda key, x: x + 0.0 * jax.random.normal(key)  # noqa: E731
    res = audit.audit_mechanism(leak, 0.0, 1.0, 1.0, samples=2000, seed=0)
    assert res.evidence and res.verdict.startswith(f"ε ≥ {res.epsilon_lower:.3f} at 95%")
    assert "privacy violation" in res.verdict and res.event in str(res)


def test_neighbouring_tables_validates_before_running():
    alg = SuccessiveElimination()
    for kwargs in (
        {"num_arms": 1},
        {"horizon": 0},
        {"max_horizon": 0},
        {"runs": 1},
        {"risk": 1.0},
        {"confidence": 1.0},
    ):
        with pytest.raises(ValueError):
            audit.neighbouring_tables(alg, 1.0, seed=0, **kwargs)
    with pytest.raises(ValueError):
        audit.neighbouring_tables(alg, 0.0, seed=0)
    with pytest.raises(ValueError, match="neither"):
        audit.audit_algorithm(alg, 1.0, np.zeros((4, 2)), runs=10, seed=0)
    with pytest.raises(ValueError, match="seed"):
        audit.neighbouring_tables(alg, 1.0, seed=1.5)
    table, table_prime = experiment.toptwo_tables()
    with pytest.raises(ValueError, match="horizon"):
        audit.audit_algorithm(alg, 1.0, table, table_prime, runs=10, seed=0)
    with pytest.raises(ValueError, match="search_runs is for the table search"):
        audit.audit_algorithm(alg, 1.0, table, table_prime, runs=10, seed=0, search_runs=4)


PLUGIN = """\
import jaxbai
from _outside_se import SuccessiveElimination


def leaky_se():
    return SuccessiveElimination(name="leaky_se", noise=0.125)


jaxbai.register("leaky_se", leaky_se, "successive elimination at 8 times its epsilon")
"""


def test_the_command_line_audits_a_plugin_algorithm_named_by_algorithms(
    tmp_path, monkeypatch, capsys
):
    """``--plugin MODULE --algorithms NAME``: that algorithm only (no mechanism), on searched
    tables, which catch the plugin's elimination leaking at 8× its ε through its first
    elimination test (exit status 1); a non-private or unknown name is refused (status 2)."""
    (tmp_path / "leaky_se_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    argv = ["--plugin", "leaky_se_plugin", "--epsilons", "1", "--runs", "400", "--out", str(out)]
    try:
        assert main([*argv, "--algorithms", "leaky_se"]) == 1
        for names in (["ttucb"], ["no_such_algorithm"]):
            with pytest.raises(SystemExit) as exit_:
                main([*argv, "--algorithms", *names])
            assert exit_.value.code == 2
    finally:
        jaxbai.unregister("leaky_se")
    with open(out / "audit.csv", newline="") as fh:
        (record,) = list(csv.DictReader(fh))
    assert record["name"] == "leaky_se" and record["kind"] == "global algorithm"
    assert record["violation"] == "True" and float(record["epsilon_lower"]) > 1.0, record
    assert "privacy violation" in record["verdict"]
    assert "leaky_se" in capsys.readouterr().out
