"""δ-correctness at both ends of the accepted ε range, for every registered private algorithm.

ε is accepted in [`jaxbai.checks.SMALLEST_EPSILON`, ∞) (docs/semantics.md §35). At the small
end no run can stop legitimately (E[τ] ≥ log(1/(3δ))/ε), so every stop is a false alarm and
must stay as rare as δ allows; AdaP-TT used to stop after 3 samples with a random arm at
ε ≤ 1e-20, inside the range accepted then. At the large end (10⁹) the algorithms meet the
non-private problem. An error rate fails when a one-sided Clopper–Pearson bound at 99.9 % puts
it above δ. The published code's variants reproduce that code, which states no δ-correctness
(docs/published-code.md): they are only required to run at both ends.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import jaxbai
from jaxbai.checks import SMALLEST_EPSILON

DELTA = 0.1
RUNS = 200
MEANS = (0.7, 0.5, 0.4)
ENDS = {SMALLEST_EPSILON: 20_000, 1e9: 10**6}
"""Each end with its budget: at 1e-12 every run is cut there (what it must be); at 10⁹ a budget
that the slowest (AdaP-TT with one global episode, a heavy tail) needs."""
PRIVATE = tuple(
    name for name, entry in jaxbai.ALGORITHMS.items() if entry.info().takes_epsilon
)  # fmt: skip


def _lower_confidence_bound(errors: int, runs: int, level: float = 0.999) -> float:
    return 0.0 if errors == 0 else float(stats.beta.ppf(1 - level, errors, runs - errors + 1))


def test_below_the_range_is_refused_before_anything_compiles():
    with pytest.raises(ValueError, match=r"epsilon must be >= 1e-12"):
        jaxbai.simulate(jaxbai.adap_tt(), jaxbai.bernoulli(MEANS), epsilon=1e-13, runs=2)


@pytest.mark.statistical
@pytest.mark.parametrize("name", PRIVATE)
def test_delta_correct_at_both_ends_of_the_epsilon_range(name):
    alg = jaxbai.ALGORITHMS[name]()
    for epsilon, budget in ENDS.items():
        res = jaxbai.simulate(
            alg,
            jaxbai.bernoulli(MEANS),
            epsilon=epsilon,
            delta=DELTA,
            runs=RUNS,
            seed=7,
            max_samples=budget,
        )
        wrong = int(np.sum(~res.correct & ~res.censored))
        if epsilon > 1:
            censored = int(np.sum(res.censored))
            assert censored <= RUNS // 20, f"{name} at ε = 1e9: {censored} runs censored"
        if jaxbai.ALGORITHMS.get_entry(name).published_code_of is not None:
            continue
        bound = _lower_confidence_bound(wrong, RUNS)
        assert bound <= DELTA, f"{name} at ε = {epsilon:g}: {wrong} wrong of {RUNS}"
        if epsilon < 1:  # no stop is legitimate here, right or wrong (E[τ] ≥ log(1/(3δ))/ε)
            stops = int(np.sum(~res.censored))
            assert _lower_confidence_bound(stops, RUNS) <= DELTA, f"{name}: {stops} stops"
