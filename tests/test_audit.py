"""Privacy audits (`jaxbai.audit`) and the reward-table instance they run algorithms on.

The Clopper–Pearson limits are checked against `scipy.stats.beta` (not a runtime dependency)
and against closed forms. The audits are checked for power on planted bugs (each must certify
an ε_lower above the ε it claims), for no false alarms on jaxbai's mechanisms and algorithms
(ε_lower ≤ ε), and for tightness where it is possible (Laplace). Every audit states its bound
at 95% confidence; with fixed seeds the outcomes are deterministic, and the sizes below leave
wide margins: a planted bug's true ε is ≥ 2× the claim, and a real mechanism's bound sits a
Clopper–Pearson width below its ε.
"""

from __future__ import annotations

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import jaxbai
from experiments import audit as planted
from jaxbai import audit, mechanisms
from jaxbai.audit import _runs as audit_runs
from jaxbai.instances import reward_table
from jaxbai.mechanisms import secure

RUNS = 20_000
"""Runs per table for the algorithm audits of the tests."""


# --- Clopper–Pearson ------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 7, 1000, 10**5, 10**7])
@pytest.mark.parametrize("alpha", [0.05, 0.05 / 8, 1e-6])
def test_clopper_pearson_matches_scipy_and_is_conservative(n, alpha):
    """Within 1e-5 relative of scipy's beta quantiles, and never narrower than them (the
    limits are solved at α(1 − 10⁻⁶))."""
    for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
        lower, upper = audit.clopper_pearson(k, n, alpha)
        exact_lower = 0.0 if k == 0 else stats.beta.ppf(alpha, k, n - k + 1)
        exact_upper = 1.0 if k == n else stats.beta.ppf(1 - alpha, k + 1, n - k)
        assert lower == pytest.approx(exact_lower, rel=1e-5, abs=1e-300)
        assert upper == pytest.approx(exact_upper, rel=1e-5)
        assert lower <= exact_lower * (1 + 1e-9)
        assert upper >= exact_upper * (1 - 1e-9)


def test_clopper_pearson_closed_forms():
    """k = 0: upper = 1 − α^(1/n); k = n: lower = α^(1/n) (P(Bin(n, p) = n) = pⁿ)."""
    for n in (1, 10, 500):
        assert audit.clopper_pearson(0, n, 0.05)[1] == pytest.approx(1 - 0.05 ** (1 / n), 1e-5)
        assert audit.clopper_pearson(n, n, 0.05)[0] == pytest.approx(0.05 ** (1 / n), 1e-5)
    with pytest.raises(ValueError):
        audit.clopper_pearson(3, 2, 0.05)
    with pytest.raises(ValueError):
        audit.clopper_pearson(1, 2, 1.5)


def test_certified_epsilon_is_log_ratio_of_limits_in_hockey_stick_form():
    """log((p_lower − δ)/p′_upper) with the scipy limits; −inf once p_lower ≤ δ."""
    lower = stats.beta.ppf(0.01, 600, 401)
    upper = stats.beta.ppf(0.99, 101, 900)
    for delta in (0.0, 0.1):
        got = audit.certified_epsilon(600, 1000, 100, 1000, 0.01, delta)
        assert got == pytest.approx(math.log((lower - delta) / upper), rel=1e-5)
    assert audit.certified_epsilon(600, 1000, 100, 1000, 0.01, 0.6) == -math.inf


# --- the reward-table instance --------------------------------------------------------------
def test_reward_table_reads_row_index_and_nan_past_the_end():
    table = np.array([[0.0, 1.0], [0.25, 0.5], [1.0, 0.75]])
    inst = reward_table(table)
    draw = jax.jit(lambda arm, index: inst.draw(jnp.float32(0.5), None, arm, index))
    for index in range(3):
        for arm in range(2):
            assert float(draw(arm, index)) == table[index, arm]
    assert math.isnan(float(draw(1, 3)))
    assert inst.means.tolist() == pytest.approx(table.mean(axis=0).tolist())
    assert inst.unit_interval


def _round_robin_sums(table, counts, start):
    """Plain-Python reference: the arms with a positive count, in turn, from row ``start``."""
    arms = [a for a, c in enumerate(counts) if c > 0]
    sums = np.zeros(len(counts))
    for j in range(sum(counts)):
        arm = arms[j % len(arms)]
        sums[arm] += table[start + j, arm]
    return sums


def test_reward_table_sample_sum_is_round_robin_from_the_index():
    rng = np.random.default_rng(0)
    table = rng.random((40, 4))
    inst = reward_table(table)
    total = jax.jit(lambda counts, index: inst.sample_sum(None, counts, index))
    for counts, start in (([3, 0, 3, 3], 5), ([10, 10, 10, 10], 0), ([0, 7, 0, 0], 33)):
        got = np.asarray(total(jnp.asarray(counts, jnp.float32), start))
        np.testing.assert_allclose(got, _round_robin_sums(table, counts, start), rtol=1e-6)
    assert np.isnan(total(jnp.asarray([3.0, 0, 2, 3]), 0)).all()  # unequal counts
    assert np.isnan(total(jnp.asarray([0.0, 6, 0, 0]), 35)).all()  # past the last row


def test_dpse_step_on_a_reward_table_equals_its_ask_tell_epoch():
    """DP-SE's `step` (one epoch, `sample_sum` from sample n) reads exactly the rows that
    ask/tell reads pull by pull; at ε = 10⁹ the released means agree to float32 rounding."""
    alg = jaxbai.dp_se()
    params = alg.params(epsilon=1e9, delta=0.1)
    pulls = int(jaxbai.dpse.epoch_constants(3, 1, 0.1, 1e9).pulls_per_arm)
    table = np.random.default_rng(1).random((3 * pulls, 3))
    inst = reward_table(table)
    state = alg.init(jax.random.key(0), params, 3)
    stepped = jax.jit(lambda s: alg.step(jax.random.key(1), s, inst, params))(state)

    @jax.jit
    def ask_tell(state):
        def pull(n, s):
            arm = alg.select(s, params)
            return alg.update(jax.random.key(2), s, arm, inst.table[n, arm], params)

        return jax.lax.fori_loop(0, 3 * pulls, pull, state)

    told = ask_tell(state)
    assert int(stepped.n) == int(told.n) == 3 * pulls
    np.testing.assert_allclose(stepped.means, told.means, rtol=1e-5)
    expected = _round_robin_sums(table, [pulls] * 3, 0) / pulls
    np.testing.assert_allclose(stepped.means, expected, rtol=1e-5)


def test_toptwo_step_on_a_reward_table_reads_participant_n():
    """TTUCB's n-th pull reads row n: `step` matches ask/tell fed ``table[n, arm]``."""
    alg = jaxbai.ttucb()
    params = alg.params(delta=0.1)
    table = np.random.default_rng(2).random((64, 3))
    inst = reward_table(table)
    step = jax.jit(lambda k, s: alg.step(k, s, inst, params))
    update = jax.jit(lambda s, arm, z: alg.update(jax.random.key(0), s, arm, z, params))
    a = b = alg.init(jax.random.key(3), params, 3)
    for n in range(40):
        arm = int(alg.select(b, params))
        a = step(jax.random.key(n), a)
        b = update(b, arm, table[n, arm])
        np.testing.assert_array_equal(a.counts, b.counts)
        np.testing.assert_allclose(a.means, b.means, rtol=1e-6)


@pytest.mark.parametrize(
    "table",
    [np.zeros(4), np.zeros((3, 1)), np.full((2, 2), 1.5), np.array([[0.0, np.nan], [0, 0]])],
)
def test_reward_table_rejects_bad_tables(table):
    with pytest.raises(ValueError):
        reward_table(table)


# --- mechanisms: tightness, planted bugs, no false alarms ------------------------------------
@pytest.mark.statistical
def test_laplace_audit_is_tight():
    """Lap(1/ε) at ε = 1 with 10⁶ samples per input: 0.8 ε ≤ ε_lower ≤ ε."""
    laplace = lambda key, x: x + mechanisms.laplace(key, 1.0)  # noqa: E731
    res = audit.audit_mechanism(laplace, 0.0, 1.0, 1.0, samples=10**6, seed=0)
    assert 0.8 <= res.epsilon_lower <= 1.0, res
    assert res.samples == 10**6 and res.events_certified == audit.CERTIFIED_EVENTS


@pytest.mark.statistical
@pytest.mark.parametrize(
    ("factory", "samples"),
    [(planted.half_scale_laplace, 10**6), (planted.tripled_randomised_response, 10**5)],
)
def test_planted_mechanism_bugs_are_caught(factory, samples):
    """Half-scale Laplace (true 2ε) and randomised response at 3ε exceed their claim ε."""
    for eps in (0.5, 1.0):
        res = audit.audit_mechanism(factory(eps), 0.0, 1.0, eps, samples=samples, seed=1)
        assert res.violation and res.epsilon_lower > eps, res


@pytest.mark.statistical
@pytest.mark.parametrize("name", sorted(planted.MECHANISMS))
def test_no_false_alarm_on_jaxbai_mechanisms(name):
    """Every mechanism of `experiments.audit` at ε = 1, on 2·10⁵ samples per input (fewer for
    the slow ones); the pure ε-DP ones are also audited at more than half their ε (power)."""
    case = planted.MECHANISMS[name](1.0)
    res = audit.audit_mechanism(
        case.mechanism,
        case.x,
        case.x_prime,
        1.0,
        samples=200_000 // case.fraction,
        seed=2,
        delta=case.delta,
    )
    assert not res.violation, res
    assert case.delta > 0 or res.epsilon_lower > 0.5, res


@pytest.mark.statistical
def test_independent_output_certifies_nothing_and_leaky_one_everything():
    noise = lambda key, x: jax.random.normal(key)  # noqa: E731
    res = audit.audit_mechanism(noise, 0.0, 1.0, 1.0, samples=20_000, seed=4)
    assert res.epsilon_lower == 0.0 and res.event == audit.NONE and math.isnan(res.p)
    leak = lambda key, x: x + 0.0 * jax.random.normal(key)  # noqa: E731
    res = audit.audit_mechanism(leak, 0.0, 1.0, 1.0, samples=20_000, seed=4)
    # p = 1 against p′ = 0 on 10⁴ samples: CP limits α^(1/n) and 1 − α^(1/n), α = 0.05/8
    alpha = 0.05 / (2 * audit.CERTIFIED_EVENTS)
    bound = math.log(alpha ** (1 / 10_000) / (1 - alpha ** (1 / 10_000)))
    assert res.epsilon_lower == pytest.approx(bound, rel=1e-4)


def test_host_mechanism_is_reproducible_per_key():
    mech = audit.host_mechanism(lambda x, u: secure.release_mean(Fraction(float(x)), 1, 1.0, u))
    keys = jax.random.split(jax.random.key(5), 6)
    batched = jax.vmap(mech, in_axes=(0, None))(keys, 1.0)
    single = [float(mech(k, 1.0)) for k in keys]
    np.testing.assert_array_equal(np.asarray(batched), single)
    assert len(set(single)) > 1


# --- algorithms -----------------------------------------------------------------------------
def _audit(alg, eps, runs=RUNS, seed=0):
    table, table_prime = planted.toptwo_tables()
    return audit.audit_algorithm(
        alg, eps, table, table_prime, runs=runs, seed=seed, horizon=planted.TOPTWO_HORIZON
    )


@pytest.mark.statistical
@pytest.mark.parametrize(
    ("name", "epsilons"), [("adap_tt", (0.5, 1.0)), ("adap_tt_star", (1.0,)), ("dp_tt", (1.0,))]
)
def test_no_false_alarm_on_global_toptwo(name, epsilons):
    alg = jaxbai.ALGORITHMS[name]()
    for eps in epsilons:
        res = _audit(alg, eps)
        assert not res.violation, res
        assert res.epsilon_lower > 0.2 * eps, res  # the audit has power on these tables


@pytest.mark.statistical
def test_no_false_alarm_on_dpse():
    table, table_prime, horizon = planted.dpse_tables(1.0)
    res = audit.audit_algorithm(
        jaxbai.dp_se(), 1.0, table, table_prime, runs=RUNS // 2, seed=0, horizon=horizon
    )
    assert not res.violation, res
    assert res.epsilon_lower > 0.3, res


@pytest.mark.statistical
def test_overspending_wrapper_is_caught():
    """A user-style wrapper that runs AdaP-TT at 8× the ε it reports."""
    res = _audit(planted.Overspending(jaxbai.adap_tt()), 0.5)
    assert res.violation and res.epsilon_lower > 0.5, res


@pytest.mark.statistical
def test_daf_without_forgetting_is_caught_and_daf_is_not():
    """DAF that does not forget (participant 0 enters every later release of arm 0, each
    ε/2-DP, so its ε grows with the phases) against AdaP-TT itself, on the same design."""
    table, table_prime = planted.remembering_tables()
    for alg, caught in ((planted.remembering_adap_tt(), True), (jaxbai.adap_tt(), False)):
        res = audit.audit_algorithm(
            alg, 1.0, table, table_prime, runs=RUNS, seed=0, horizon=planted.REMEMBERING_HORIZON
        )
        assert res.violation == caught, res


@pytest.mark.statistical
def test_renoised_cumulative_sum_is_caught_and_dp_tt_is_not():
    """DP-TT whose estimator re-noises the sum of all rewards at each phase change (participant
    0 enters every later release of arm 0, each ε-DP) against DP-TT itself, on that design."""
    table, table_prime = planted.remembering_tables()
    for alg, caught in ((planted.renoising_dp_tt(), True), (jaxbai.dp_tt(), False)):
        res = audit.audit_algorithm(
            alg, 1.0, table, table_prime, runs=RUNS, seed=0, horizon=planted.REMEMBERING_HORIZON
        )
        assert res.violation == caught, res


@pytest.mark.integration
def test_algorithm_audit_does_not_depend_on_chunking(monkeypatch):
    """Same seed, runs split into more program calls: the same result, bit for bit."""
    alg = jaxbai.adap_tt()
    first = _audit(alg, 1.0)  # the program of test_no_false_alarm_on_global_toptwo
    monkeypatch.setattr(audit_runs, "_MAX_RUNS_PER_DEVICE", 1024)
    assert _audit(alg, 1.0) == first


def test_audit_algorithm_validates_before_running():
    table, table_prime = planted.toptwo_tables()
    alg = jaxbai.adap_tt()
    kwargs = {"runs": 100, "seed": 0, "horizon": 8}
    bad = [
        (table, table, kwargs),  # no row differs
        (table, 1 - table, kwargs),  # every row differs
        (table, table_prime[:8], kwargs),  # shapes
        (table, table_prime * 2, kwargs),  # rewards outside [0, 1]
        (table, table_prime, {**kwargs, "horizon": 17}),
        (table, table_prime, {**kwargs, "runs": 1}),
        (table, table_prime, {**kwargs, "confidence": 1.0}),
        (table, table_prime, {**kwargs, "delta": -0.1}),
    ]
    for a, b, kw in bad:
        with pytest.raises(ValueError):
            audit.audit_algorithm(alg, 1.0, a, b, **kw)
    moved = table.copy()
    moved[10, 0] = 1.0  # the differing row lies beyond the horizon
    with pytest.raises(ValueError, match="horizon"):
        audit.audit_algorithm(alg, 1.0, table, moved, **kwargs)
    for eps in (0.0, math.inf):
        with pytest.raises(ValueError):
            audit.audit_algorithm(alg, eps, table, table_prime, **kwargs)
    with pytest.raises(ValueError):
        audit.audit_mechanism(lambda k, x: x, 0.0, 1.0, 1.0, samples=1, seed=0)
