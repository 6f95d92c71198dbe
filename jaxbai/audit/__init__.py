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

Examples:
    >>> import jaxbai
    >>> laplace = lambda key, x: x + jaxbai.mechanisms.laplace(key, 1.0)
    >>> res = jaxbai.audit.audit_mechanism(laplace, 0.0, 1.0, 1.0, samples=20_000, seed=0)
    >>> res.epsilon_lower <= res.epsilon_claimed
    True
"""

from jaxbai.audit._bounds import certified_epsilon, clopper_pearson
from jaxbai.audit._select import CERTIFIED_EVENTS, NONE, AuditResult
from jaxbai.audit.algorithm import PILOT_RUNS, PREFIX_VALUES, audit_algorithm
from jaxbai.audit.mechanism import DISCRETE_VALUES, Mechanism, audit_mechanism, host_mechanism

__all__ = [
    "CERTIFIED_EVENTS",
    "DISCRETE_VALUES",
    "NONE",
    "PILOT_RUNS",
    "PREFIX_VALUES",
    "AuditResult",
    "Mechanism",
    "audit_algorithm",
    "audit_mechanism",
    "certified_epsilon",
    "clopper_pearson",
    "host_mechanism",
]
