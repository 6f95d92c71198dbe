"""Bad input raises ValueError naming the offending parameter, before anything is compiled.

Each case checks the message with ``pytest.raises(ValueError, match=...)``, anchored on the
parameter's name. `jaxbai.simulate` cases run with JAX's loop primitives replaced by a stub
that fails the test if reached, which shows the check happens before the simulation is traced.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from _algorithms import ALL, GLOBAL_DP, LOCAL_DP, PRIVATE, WITH_THRESHOLD, taking

import jaxbai
from jaxbai import checks

MU1 = jaxbai.bernoulli(jaxbai.PAPER_INSTANCES["mu1"])
BAD_PROBABILITIES = [0.0, 1.0, -0.1, 1.5, math.nan]
"""Values outside the open interval (0, 1), for δ, γ and β."""


def _make(name: str, **options):
    """The registered algorithm ``name``, built with ``options``."""
    return jaxbai.ALGORITHMS[name](**options)


def _params(name: str, **kwargs):
    """`alg.params` of the registered algorithm ``name``, with ε = 1 unless given."""
    kwargs.setdefault("epsilon", 1.0)
    return _make(name).params(**kwargs)


@pytest.fixture
def no_compile(monkeypatch):
    """Make tracing a simulation loop fail the test: every simulation runs under
    `jax.lax.while_loop` / `fori_loop` and no argument check does, so a ValueError raised with
    these stubbed out was raised before the simulation was traced and compiled."""

    def reached(*args, **kwargs):
        raise AssertionError("validation must run before the simulation is compiled")

    monkeypatch.setattr(jax.lax, "while_loop", reached)
    monkeypatch.setattr(jax.lax, "fori_loop", reached)


# ------------------------------------------------------------------ ε
@pytest.mark.parametrize("epsilon", [0.0, -1.0, math.nan, [0.5, 0.0], [1.0, math.nan]])
@pytest.mark.parametrize("name", PRIVATE)
def test_params_rejects_bad_epsilon(name, epsilon):
    """ε must be > 0 and not NaN, also inside a grid of ε values."""
    with pytest.raises(ValueError, match=r"^epsilon"):
        _params(name, epsilon=epsilon)


@pytest.mark.parametrize("name", PRIVATE)
def test_params_requires_epsilon_for_private_algorithms(name):
    """A private algorithm without ε is an error naming epsilon."""
    with pytest.raises(ValueError, match=r"needs epsilon"):
        _make(name).params(delta=0.01)


@pytest.mark.usefixtures("no_compile")
@pytest.mark.parametrize("epsilon", [0.0, -0.5, math.nan, [1.0, 0.0]])
@pytest.mark.parametrize("name", PRIVATE)
def test_simulate_rejects_bad_epsilon(name, epsilon):
    """`jaxbai.simulate` rejects ε ≤ 0 / NaN before compiling."""
    with pytest.raises(ValueError, match=r"^epsilon"):
        jaxbai.simulate(_make(name), MU1, epsilon=epsilon, runs=2)


# ------------------------------------------------------------------ δ, γ, β
@pytest.mark.parametrize("delta", [*BAD_PROBABILITIES, [0.01, 1.0]])
@pytest.mark.parametrize("name", ALL)
def test_params_rejects_bad_delta(name, delta):
    """δ must lie in (0, 1)."""
    with pytest.raises(ValueError, match=r"^delta"):
        _params(name, delta=delta)


@pytest.mark.usefixtures("no_compile")
@pytest.mark.parametrize("delta", [0.0, 1.0, math.nan])
@pytest.mark.parametrize("name", ALL)
def test_simulate_rejects_bad_delta(name, delta):
    """`jaxbai.simulate` rejects δ ∉ (0, 1) before compiling."""
    with pytest.raises(ValueError, match=r"^delta"):
        jaxbai.simulate(_make(name), MU1, epsilon=1.0, delta=delta, runs=2)


@pytest.mark.parametrize("gamma", BAD_PROBABILITIES)
@pytest.mark.parametrize("name", taking("gamma"))
def test_rejects_bad_gamma(name, gamma):
    """γ of the Gaussian mechanism must lie in (0, 1) when the factory builds it (γ is the
    mechanism's option, `jaxbai.mechanisms.GaussianNoise`, not a parameter of `params`)."""
    with pytest.raises(ValueError, match=r"^gamma"):
        _make(name, gamma=gamma)


@pytest.mark.parametrize("beta", BAD_PROBABILITIES)
@pytest.mark.parametrize("name", taking("beta"))
def test_factory_rejects_bad_beta(name, beta):
    """The tracking proportion β must lie in (0, 1) when the algorithm is built."""
    with pytest.raises(ValueError, match=r"^beta"):
        _make(name, beta=beta)


@pytest.mark.parametrize("beta", BAD_PROBABILITIES)
@pytest.mark.parametrize("name", taking("beta"))
def test_params_rejects_bad_beta(name, beta):
    """The tracking proportion β must lie in (0, 1) when given to `params`."""
    with pytest.raises(ValueError, match=r"^beta"):
        _params(name, beta=beta)


@pytest.mark.parametrize("field", ["delta", "epsilon"])
@pytest.mark.parametrize("name", PRIVATE)
def test_params_tiny_values_do_not_underflow_to_zero(name, field):
    """δ = 1e-50 (or ε = 1e-50) is either rejected naming the parameter, or stored as a
    positive number: never silently turned into 0."""
    try:
        params = _params(name, **{field: 1e-50})
    except ValueError as err:
        assert str(err).startswith(field)
    else:
        assert float(getattr(params, field)) > 0


# ------------------------------------------------------------------ number of arms, instances
@pytest.mark.parametrize(
    "make",
    [
        lambda: jaxbai.bernoulli([0.5]),
        lambda: jaxbai.bernoulli([]),
        lambda: jaxbai.gaussian([0.5]),
        lambda: jaxbai.beta([1.0], [2.0]),
    ],
    ids=["bernoulli", "bernoulli-empty", "gaussian", "beta"],
)
def test_instances_need_two_arms(make):
    """An instance needs K ≥ 2 arms."""
    with pytest.raises(ValueError, match=r"^num_arms"):
        make()


@pytest.mark.parametrize("num_arms", [1, 0])
@pytest.mark.parametrize("name", ALL)
def test_init_needs_two_arms(name, num_arms):
    """`alg.init(key, params, K)` with K < 2."""
    alg = _make(name)
    with pytest.raises(ValueError, match=r"^num_arms"):
        alg.init(jax.random.key(0), _params(name), num_arms)


@pytest.mark.parametrize("means", [[1.2, 0.5], [-0.1, 0.5], [0.5, 1.0 + 1e-6]])
def test_bernoulli_means_in_unit_interval(means):
    """Bernoulli means must lie in [0, 1]."""
    with pytest.raises(ValueError, match=r"^Bernoulli means"):
        jaxbai.bernoulli(means)


@pytest.mark.parametrize("means", [[0.5, math.nan], [0.5, math.inf]])
def test_means_must_be_finite(means):
    """NaN / infinite means are rejected naming the means."""
    with pytest.raises(ValueError, match=r"^means"):
        jaxbai.gaussian(means)


@pytest.mark.parametrize(
    ("a", "b", "name"),
    [
        ([0.0, 1.0], [1.0, 1.0], "a"),
        ([1.0, 1.0], [1.0, -2.0], "b"),
        ([1.0, math.inf], [1.0, 1.0], "a"),
    ],
)
def test_beta_parameters_positive(a, b, name):
    """Beta(a, b) needs finite a, b > 0, i.e. means a/(a + b) strictly inside [0, 1]."""
    with pytest.raises(ValueError, match=rf"^{name} must"):
        jaxbai.beta(a, b)


def test_mu3_and_endpoint_means_are_accepted():
    """μ3 = (0, 0.25, 0.5, 0.75, 1) contains both endpoints and must be accepted."""
    assert jaxbai.bernoulli(jaxbai.PAPER_INSTANCES["mu3"]).means.shape == (5,)
    assert jaxbai.bernoulli([0.0, 1.0]).means.shape == (2,)


@pytest.mark.usefixtures("no_compile")
@pytest.mark.parametrize("means", [[0.7, 0.7, 0.2], [0.9, 0.9]])
def test_simulate_needs_unique_best_arm(means):
    """An instance whose maximum mean is shared has no best arm to identify."""
    with pytest.raises(ValueError, match=r"unique best arm"):
        jaxbai.simulate(jaxbai.ttucb(), jaxbai.bernoulli(means), runs=2)


@pytest.mark.usefixtures("no_compile")
@pytest.mark.parametrize("name", PRIVATE)
def test_simulate_rejects_gaussian_instance_for_dp_algorithms(name):
    """CTB, the Gaussian mechanism, DAF and DP-SE need rewards in [0, 1]: a Gaussian
    instance is refused, naming the algorithm and the instance type."""
    with pytest.raises(ValueError, match=rf"^{name} needs rewards in \[0, 1\].*Gaussian"):
        jaxbai.simulate(_make(name), jaxbai.gaussian([0.9, 0.1], sigma=0.5), epsilon=1.0, runs=2)


# ------------------------------------------------------------------ rewards (ask/tell)
def _fresh_state(name: str):
    """The algorithm ``name``, its parameters at ε = 1 and its state before any pull (K = 3)."""
    alg = _make(name)
    params = _params(name)
    return alg, params, alg.init(jax.random.key(0), params, 3)


@pytest.mark.parametrize("z", [-0.1, 1.5, -1e-6])
@pytest.mark.parametrize("name", GLOBAL_DP)
def test_update_rejects_rewards_outside_unit_interval(name, z):
    """Global-DP algorithms (DAF, DP-SE) refuse observations outside [0, 1] in `update`."""
    alg, params, state = _fresh_state(name)
    with pytest.raises(ValueError, match=r"^z must lie in \[0, 1\]"):
        alg.update(jax.random.key(1), state, 0, z, params)


@pytest.mark.parametrize("reward", [-0.1, 1.5, 2.0])
@pytest.mark.parametrize("name", LOCAL_DP)
def test_privatize_rejects_rewards_outside_unit_interval(name, reward):
    """Local-DP mechanisms refuse raw rewards outside [0, 1] in `privatize`."""
    alg = _make(name)
    with pytest.raises(ValueError, match=r"^reward must lie in \[0, 1\]"):
        alg.privatize(jax.random.key(1), reward, _params(name))


@pytest.mark.parametrize("z", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("name", ALL)
def test_update_rejects_non_finite_observations(name, z):
    """NaN / ±inf observations are refused by every algorithm's `update`."""
    alg, params, state = _fresh_state(name)
    with pytest.raises(ValueError, match=r"^z must"):
        alg.update(jax.random.key(1), state, 0, z, params)


@pytest.mark.parametrize("reward", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("name", ALL)
def test_privatize_rejects_non_finite_rewards(name, reward):
    """NaN / ±inf raw rewards are refused by every algorithm's `privatize` (those without a
    participant mechanism included)."""
    alg = _make(name)
    with pytest.raises(ValueError, match=r"^reward must"):
        alg.privatize(jax.random.key(1), reward, _params(name))


@pytest.mark.parametrize("reward", [0.0, 1.0])
@pytest.mark.parametrize("name", ALL)
def test_unit_interval_rewards_are_privatized_as_given(name, reward):
    """The endpoints 0 and 1 are valid raw rewards, and at ε = 10⁵ every mechanism returns
    the reward itself: randomised response exactly (P(r̃ = 1 | r) is r to float32 precision,
    and r̃ is 0 or 1), the Gaussian mechanism within 5.3 σ_{ε,γ} < 10⁻³, and an algorithm
    without a participant mechanism exactly."""
    alg = _make(name)
    privatized = float(alg.privatize(jax.random.key(1), reward, _params(name, epsilon=1e5)))
    assert abs(privatized - reward) < 1e-3
    if alg.info.privacy != "local":
        assert privatized == reward


@pytest.mark.parametrize("name", GLOBAL_DP)
def test_unit_interval_observations_are_recorded_as_given(name):
    """The endpoints 0 and 1 are valid observations for every global-DP algorithm: from the
    same state and key, each counts one pull of the arm, and observing 1 instead of 0 adds
    exactly 1 to the arm's entry of one statistic (DP-SE's epoch sum, or DAF's release of the
    phase that the arm's first pull closes, whose Laplace noise the key fixes; DP-TT's noisy sum
    S̃ and its mean S̃/Ñ at Ñ = 1), nothing else."""
    alg, params, state = _fresh_state(name)
    zero, one = (alg.update(jax.random.key(1), state, 0, z, params) for z in (0.0, 1.0))
    for after in (zero, one):
        assert int(after.n) == 1
        np.testing.assert_array_equal(after.counts, [1, 0, 0])
    changes = [
        np.asarray(b, np.float64) - np.asarray(a, np.float64)
        for a, b in zip(
            jax.tree_util.tree_leaves(zero), jax.tree_util.tree_leaves(one), strict=True
        )
        if not np.array_equal(a, b)
    ]
    assert 1 <= len(changes) <= 2, changes
    for change in changes:
        np.testing.assert_allclose(change, [1.0, 0.0, 0.0], rtol=0, atol=1e-6)


# ------------------------------------------------------------------ static configuration
@pytest.mark.usefixtures("no_compile")
@pytest.mark.parametrize("max_samples", [2**31, 2**40, 0, -5, 2.5])
def test_simulate_rejects_bad_max_samples(max_samples):
    """`max_samples` must be an integer in [1, 2³¹ − 1] (int32 sample counts)."""
    with pytest.raises(ValueError, match=r"^max_samples"):
        jaxbai.simulate(jaxbai.ttucb(), MU1, runs=2, max_samples=max_samples)


@pytest.mark.usefixtures("no_compile")
@pytest.mark.parametrize("seed", [-1, 2**32, 2**70, 1.0, True, "3"])
def test_simulate_refuses_the_seeds_the_trial_and_the_sweep_refuse(seed):
    """Seeds are integers in [0, 2³²) everywhere (`jaxbai.checks.check_seed`)."""
    with pytest.raises(ValueError, match=r"^seed must"):
        jaxbai.simulate(jaxbai.ttucb(), MU1, runs=2, seed=seed)


@pytest.mark.parametrize(
    ("alg", "inst", "message"),
    [
        (jaxbai.adap_tt, MU1, r"^algorithm: adap_tt is a factory; pass .* adap_tt\(\)"),
        ("ttucb", MU1, r"^algorithm must be an algorithm object .*\(a registry name"),
        (None, MU1, r"^algorithm must be an algorithm object"),
        (jaxbai.ttucb(), None, r"^instance must be an instance"),
        (jaxbai.ttucb(), "mu1", r"^instance must be an instance"),
        (jaxbai.ttucb(), [0.6, 0.4], r"^instance must be an instance"),
    ],
)
def test_simulate_names_a_wrong_algorithm_or_instance(alg, inst, message):
    """These raised AttributeError from deep inside."""
    with pytest.raises(ValueError, match=message):
        jaxbai.simulate(alg, inst, epsilon=1.0, runs=2)


@pytest.mark.parametrize("epsilon", [[], "1", ["1"], [True], [[0.5]]])
def test_simulate_refuses_epsilons_that_are_not_a_grid_of_numbers(epsilon):
    """``epsilon=[]`` ran an empty grid and ``'1'`` was read as 1.0."""
    with pytest.raises(ValueError, match=r"^epsilon must be"):
        jaxbai.simulate(jaxbai.adap_tt(), MU1, epsilon=epsilon, runs=2)


@pytest.mark.parametrize("runs", [10**12, 2**31])
def test_simulate_refuses_more_jobs_than_the_program_indexes(runs):
    """``runs = 10**12`` used to raise MemoryError while the grid was built."""
    with pytest.raises(ValueError, match=r"job indices a compiled program holds"):
        jaxbai.simulate(jaxbai.ttucb(), MU1, runs=runs)


def test_a_grid_larger_than_memory_is_refused_with_its_size():
    assert checks.check_job_count(1000, 5, 1000 * (checks.JOB_BYTES + 24 * 5)) == 1000
    with pytest.raises(ValueError, match=r"1,000 jobs of 5 arms needs about .* fewer runs"):
        checks.check_job_count(1000, 5, 1000 * (checks.JOB_BYTES + 24 * 5) - 1)


@pytest.mark.parametrize("num_arms", [2**16 + 1, 2**31, 10**20])
def test_k_has_an_upper_bound_everywhere(num_arms, tmp_path):
    """K = 2³¹ was killed for memory and K = 10²⁰ failed inside the compiler."""
    message = rf"num_arms must be in \[2, 65536\], got {num_arms}"
    with pytest.raises(ValueError, match=message):
        jaxbai.Trial.create(tmp_path / "t.trial", "ttucb", num_arms, None, 0.05, 0)
    with pytest.raises(ValueError, match=message):
        checks.check_num_arms(num_arms)
    if num_arms == 2**16 + 1:
        with pytest.raises(ValueError, match=message):
            jaxbai.bernoulli(np.linspace(0.1, 0.9, num_arms))


def test_every_seed_below_two_to_the_32_runs():
    """A seed in [2³¹, 2³²) used to raise OverflowError inside the engine (int32 seeds); the
    master key is the same for a seed below 2³¹ either way (its high word is 0)."""
    for seed in (0, 1, 12345, 2**31 - 1):
        as_int32 = jax.random.key_data(jax.random.key(jax.numpy.int32(seed)))
        as_uint32 = jax.random.key_data(jax.random.key(jax.numpy.uint32(seed)))
        np.testing.assert_array_equal(as_int32, as_uint32)
    for seed in (2**31, 2**32 - 1):
        res = jaxbai.simulate(jaxbai.ttucb(), MU1, runs=3, seed=seed, max_samples=10**6)
        assert not res.censored.any() and (res.tau > 0).all()
    assert not np.array_equal(
        jaxbai.simulate(jaxbai.ttucb(), MU1, runs=3, seed=2**31, max_samples=10**6).tau,
        jaxbai.simulate(jaxbai.ttucb(), MU1, runs=3, seed=0, max_samples=10**6).tau,
    )


@pytest.mark.parametrize("threshold", ["Theory", "eq4", ""])
@pytest.mark.parametrize("name", WITH_THRESHOLD)
def test_unknown_threshold_family(name, threshold):
    """Only the "heuristic" and "theory" threshold families exist."""
    with pytest.raises(ValueError, match=r"^threshold must be one of"):
        _make(name, threshold=threshold)


@pytest.mark.parametrize("leader_bonus", ["Eq11", "n", "local"])
@pytest.mark.parametrize("name", taking("leader_bonus"))
def test_unknown_leader_bonus(name, leader_bonus):
    """Only the "time" and "eq11" leader bonuses exist."""
    with pytest.raises(ValueError, match=r"^leader_bonus must be one of"):
        _make(name, leader_bonus=leader_bonus)


@pytest.mark.usefixtures("no_compile")
@pytest.mark.parametrize("name", PRIVATE)
def test_simulate_private_algorithm_without_epsilon(name):
    """A private algorithm never runs silently at ε = ∞ when ε is omitted."""
    with pytest.raises(ValueError, match="needs epsilon"):
        jaxbai.simulate(_make(name), jaxbai.bernoulli([0.9, 0.1]), runs=2)


@pytest.mark.parametrize("name", ["lanes_per_device", "refill_every", "chunk_steps", "min_slots"])
@pytest.mark.parametrize("value", [0, checks.COUNT_MAX + 1, 1.5])
def test_run_grid_rejects_engine_counts_outside_int32(name, value):
    """Lanes, refill period, chunk length and table slots are int32 counts ≥ 1; anything else
    is refused before compiling (2³¹ steps would wrap round to a negative chunk)."""
    from jaxbai import engine

    jobs = engine.grid_jobs(jaxbai.bernoulli([0.9, 0.5]), [1.0], 0.1, 2)
    with pytest.raises(ValueError, match=rf"^{name} must be an integer in \[1, 2147483647\]"):
        engine.run_grid(jaxbai.ttucb(), jobs, **{name: value})
