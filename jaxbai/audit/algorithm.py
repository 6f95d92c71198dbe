"""Statistical audit of a BAI algorithm under global DP (Definition 8): `audit_algorithm`.

Global DP protects one participant's row of the reward table: the algorithm's published record
(its actions, and τ and â once it stops) must be ε-indistinguishable on two tables that differ
in one row. The auditor runs the algorithm ``runs`` times on each table (`jaxbai.reward_table`:
participant n answers the n-th pull), through nothing but the `jaxbai.base.Algorithm` protocol,
so a user's own algorithm or wrapper is audited the same way as jaxbai's (the runs, the record
and the candidate events: `jaxbai.audit._runs`). Run r of table i uses
``fold_in(fold_in(key(seed), i), r)``. Without tables, `jaxbai.audit.neighbouring_tables`
searches for a pair on pilot runs of its own stream (``fold_in(key(seed), 2)``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxbai import checks
from jaxbai.audit._runs import base_key, count, labels, runner, selection
from jaxbai.audit._select import (
    AuditResult,
    certify,
    check_count,
    check_epsilon,
    check_level,
    choose,
)
from jaxbai.audit.tables import SEARCH_RUNS, neighbouring_tables
from jaxbai.base import Algorithm
from jaxbai.instances import reward_table

__all__ = ["audit_algorithm"]


def _check_tables(table: Any, table_prime: Any, horizon: object) -> tuple[Any, Any, int]:
    """Reward-table instances of both tables and the validated horizon."""
    inst, inst_prime = reward_table(table), reward_table(table_prime)
    a, b = np.asarray(inst.table), np.asarray(inst_prime.table)
    if a.shape != b.shape:
        raise ValueError(f"the tables must have the same shape, got {a.shape} and {b.shape}")
    rows = np.flatnonzero(np.any(a != b, axis=1))
    if rows.size != 1:
        raise ValueError(f"the tables must differ in exactly one row, they differ in {rows.size}")
    if horizon is None:
        raise ValueError("give the horizon with the tables")
    horizon = check_count("horizon", horizon, minimum=1)
    if horizon > a.shape[0]:
        raise ValueError(f"horizon must lie in [1, T = {a.shape[0]}], got {horizon}")
    if rows[0] >= horizon:
        raise ValueError(
            f"the tables differ in row {rows[0]}, which no pull before the horizon reads"
        )
    return inst, inst_prime, int(horizon)


def audit_algorithm(
    alg: Algorithm,
    epsilon: float,
    table: Any = None,
    table_prime: Any = None,
    *,
    runs: int,
    seed: int,
    horizon: int | None = None,
    confidence: float = 0.95,
    delta: float = 0.0,
    risk: float = 0.01,
    search_runs: int | None = None,
    device: str | None = None,
) -> AuditResult:
    """Certified lower bound on the global-DP ε of ``alg`` from its records on two tables.

    Runs ``alg`` ``runs`` times on each (T, K) reward table, with fresh randomness per run,
    up to ``horizon`` samples; ``runs // 2`` runs of each table choose the events, the rest
    certify them (`jaxbai.audit`). With probability ≥ ``confidence``, ε ≥ ``epsilon_lower``
    for any algorithm that is (ε, ``delta``)-DP with respect to changing one row (Definition 8).
    Without tables, `neighbouring_tables` finds a pair for ``alg`` at ε (two arms; at
    ``horizon``, or a horizon it chooses) on pilot runs that the audit never reuses.

    Args:
        alg: any object satisfying `jaxbai.base.Algorithm` (hashable: it is a static argument).
        epsilon: the ε it claims (passed to ``alg.params``), finite and > 0.
        table: (T, K) rewards in [0, 1]; row t is participant t's reward for each arm. None
            (with ``table_prime`` None): searched by `neighbouring_tables`.
        table_prime: the neighbouring table, equal to ``table`` except in one row < horizon.
        runs: runs per table, ≥ 2.
        seed: seed of the runs' keys (and of the search's pilot runs, on another stream).
        horizon: the record covers the first ``horizon`` samples, 1 ≤ horizon ≤ T; required
            with tables, chosen by the search if None without them.
        confidence: confidence of the bound, in (0, 1).
        delta: the δ of an (ε, δ) claim (0 for the ε-DP algorithms of the paper).
        risk: the BAI risk δ passed to ``alg.params``.
        search_runs: pilot runs per table and candidate of the search (without tables);
            None: ``runs // 2`` (a pilot no larger than the audit), at most `SEARCH_RUNS`.
        device: ``"cpu"``, ``"gpu"`` or None (JAX's default devices).

    Returns:
        An `AuditResult` (``samples`` counts runs per table); its `AuditResult.verdict` says
        "no evidence at these tables (N events tried)" where no event separates them.

    Raises:
        ValueError: a bad argument, before anything is compiled.

    Examples:
        >>> import numpy as np, jaxbai
        >>> table = np.zeros((8, 2)); table[1, 1] = 1.0
        >>> table_prime = table.copy(); table_prime[0, 0] = 1.0
        >>> res = audit_algorithm(
        ...     jaxbai.adap_tt(), 1.0, table, table_prime, runs=1000, seed=0, horizon=4
        ... )
        >>> res.epsilon_lower <= 1.0
        True
    """
    eps = check_epsilon(epsilon)
    runs = check_count("runs", runs)
    confidence, delta = check_level(confidence, delta)
    checks.check_open_unit("risk", risk)
    if table is None and table_prime is None:
        found = neighbouring_tables(
            alg, eps, seed=seed, horizon=horizon, risk=risk,
            runs=min(SEARCH_RUNS, max(2, runs // 2)) if search_runs is None else search_runs,
            confidence=confidence, delta=delta, device=device,
        )  # fmt: skip
        table, table_prime, horizon = found.table, found.table_prime, found.horizon
    elif table is None or table_prime is None:
        raise ValueError("give both tables, or neither (then neighbouring_tables finds them)")
    elif search_runs is not None:
        raise ValueError("search_runs is for the table search: give it without tables")
    inst, inst_prime, horizon = _check_tables(table, table_prime, horizon)
    params = alg.params(epsilon=eps, delta=risk)
    num_arms = int(inst.table.shape[1])
    half = runs // 2
    run = runner(alg, params, horizon, num_arms, half, device)
    bases = [base_key(seed, i) for i in range(2)]
    insts = (inst, inst_prime)
    tallies, values = selection(run, bases, insts, half)
    scores = [tally.counts() for tally in tallies]
    choices = choose(scores[0], scores[1], half, half, confidence, delta)
    chosen = [c.index for c in choices]
    held_out = [
        count(run, base, inst, half, runs, values).counts()[chosen]
        for base, inst in zip(bases, insts, strict=True)
    ]
    names = labels(horizon, num_arms, run.checkpoints, values)
    rest = runs - half
    return certify(
        choices, names, held_out[0], held_out[1], rest, rest, eps, confidence, delta, runs,
        inputs="tables",
    )  # fmt: skip
