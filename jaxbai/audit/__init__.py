"""Statistical privacy audits: certified lower bounds on the ε of mechanisms and algorithms.

A mechanism that is (ε, δ)-DP satisfies P(M(x) ∈ E) ≤ e^ε P(M(x′) ∈ E) + δ for every output
event E and neighbouring inputs x, x′. The auditor runs the mechanism (or a whole BAI
algorithm, on two reward tables that differ in one participant's row) many times on each
input, chooses output events on one half of the samples, and turns the other half's event
frequencies into ε ≥ log((p_lower − δ)/p′_upper) with exact Clopper–Pearson limits,
Bonferroni-corrected over the events it certifies (Jagielski et al. 2020; Nasr et al. 2021).
The bound holds at the stated confidence whatever the mechanism: an ``epsilon_lower`` above
the claimed ε means the claim is false (or, with probability ≤ 1 − confidence, bad luck).

* `audit_mechanism`: any JAX function ``mechanism(key, x)``; `host_mechanism` wraps host-side
  samplers such as the real trial noise of `jaxbai.mechanisms.secure`.
* `audit_algorithm`: any `jaxbai.base.Algorithm` on two neighbouring (T, K) reward tables,
  global DP (Definition 8). Local-DP algorithms are audited at their participant-side
  mechanism, which is their guarantee.
* `neighbouring_tables`: a pair of tables on which the algorithm's releases matter to its
  decisions, searched on pilot runs for a given algorithm and ε; `audit_algorithm` uses it
  when it is given no tables.

Where no event separates the inputs, the result says "no evidence at these tables (N events
tried)" (`AuditResult.verdict`), never a lower bound of 0.

Examples:
    >>> import jaxbai
    >>> laplace = lambda key, x: x + jaxbai.mechanisms.laplace(key, 1.0)
    >>> res = jaxbai.audit.audit_mechanism(laplace, 0.0, 1.0, 1.0, samples=20_000, seed=0)
    >>> res.epsilon_lower <= res.epsilon_claimed
    True
"""

from jaxbai.audit._bounds import certified_epsilon, clopper_pearson
from jaxbai.audit._runs import PILOT_RUNS, PREFIX_VALUES
from jaxbai.audit._select import CERTIFIED_EVENTS, NONE, AuditResult
from jaxbai.audit.algorithm import audit_algorithm
from jaxbai.audit.mechanism import DISCRETE_VALUES, Mechanism, audit_mechanism, host_mechanism
from jaxbai.audit.tables import (
    BACKGROUNDS,
    DEPENDENCE,
    GRID,
    MAX_HORIZON,
    SEARCH_RUNS,
    VALUE_PAIRS,
    ZOOM,
    NeighbouringTables,
    neighbouring_tables,
)

__all__ = [
    "BACKGROUNDS",
    "CERTIFIED_EVENTS",
    "DEPENDENCE",
    "DISCRETE_VALUES",
    "GRID",
    "MAX_HORIZON",
    "NONE",
    "PILOT_RUNS",
    "PREFIX_VALUES",
    "SEARCH_RUNS",
    "VALUE_PAIRS",
    "ZOOM",
    "AuditResult",
    "Mechanism",
    "NeighbouringTables",
    "audit_algorithm",
    "audit_mechanism",
    "certified_epsilon",
    "clopper_pearson",
    "host_mechanism",
    "neighbouring_tables",
]
