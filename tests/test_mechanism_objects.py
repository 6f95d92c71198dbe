"""Participant-side mechanisms as objects (`jaxbai.base.Mechanism`, `jaxbai.mechanisms`).

Each object owns its simulation sampler, its secure sampler, its options (γ) and the variance
it adds to σ² (Remark 13), and the values it outputs; the Top Two driver, the trial and the
audit read nothing else. The ε-local-DP Laplace estimator of colab/03_your_own_algorithm.ipynb
(`LocalLaplace`, written here as there) runs in a real trial: its participants privatise with
the secure Laplace sampler, and the trial's state is an ask/tell replay of the same
observations.

Statistical checks use fixed seeds. Moments: within Z_TOL = 5 standard errors (two-sided
false-alarm rate ≈ 6e-7). Distributions: the Dvoretzky–Kiefer–Wolfowitz band
t = sqrt(log(2/α)/(2n)), α = 1e-6, valid for any n; each band test comes with a power check
(the same draws leave the band of a wrong scale).
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import jaxbai
from experiments import audit as audit_table
from jaxbai import base, mechanisms
from jaxbai.mechanisms import GaussianNoise, LaplaceNoise, RandomisedResponse, secure
from jaxbai.trial import Trial

MECHANISMS = [RandomisedResponse(), GaussianNoise(0.01), LaplaceNoise()]
Z_TOL = 5.0
ALPHA = 1e-6
NUM_DRAWS = 200_000


def dkw(n: int) -> float:
    """The DKW band at α for n draws."""
    return math.sqrt(math.log(2 / ALPHA) / (2 * n))


def sup_distance(samples: np.ndarray, cdf) -> float:
    """sup |empirical CDF − cdf| over the sample points, from both sides of each jump."""
    x = np.sort(samples)
    upper = np.arange(1, x.size + 1) / x.size
    return float(max(np.max(np.abs(upper - cdf(x))), np.max(np.abs(upper - 1 / x.size - cdf(x)))))


def uniform_stream(seed: int):
    """Deterministic doubles in (0, 1), for the participants' mechanisms."""
    rng = np.random.default_rng(seed)
    return lambda: int(rng.integers(1, 2**53)) / 2**53


# --- the estimator of notebook 03 ----------------------------------------------------------------
class LaplaceSums(NamedTuple):
    sums: jax.Array
    means: jax.Array
    local_counts: jax.Array


@dataclasses.dataclass(frozen=True)
class LocalLaplace:
    """ε-local DP by the Laplace mechanism: z = r + Lap(1/ε), r ∈ [0, 1]; means of the z."""

    privacy: str = "local"
    participant_mechanism: base.Mechanism | None = dataclasses.field(default_factory=LaplaceNoise)
    unit_observations: bool = False

    @property
    def measure(self):
        return self.participant_mechanism.measure

    def init(self, num_arms):
        zeros = jnp.zeros(num_arms, jnp.float32)
        return LaplaceSums(zeros, zeros, jnp.zeros(num_arms, jnp.int32))

    def observe(self, u, key, estimate, counts, pulled, z, params):
        sums = estimate.sums + jnp.where(pulled, z, 0.0)
        return LaplaceSums(sums, sums / jnp.maximum(counts, 1), counts)


def laplace_tt(**options):
    """CTB-TT with `LocalLaplace` in place of CTB (options as for `jaxbai.ctb_tt`)."""
    return dataclasses.replace(
        jaxbai.ctb_tt(**options), name="laplace_tt", estimator=LocalLaplace()
    )


@pytest.fixture
def registered():
    entry = jaxbai.register("laplace_tt", laplace_tt, "Laplace-LDP-TT", replace=True)
    yield entry
    jaxbai.unregister("laplace_tt")


# --- the objects ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", MECHANISMS, ids=lambda m: m.name)
def test_mechanisms_are_static_objects_of_the_protocol(mechanism):
    """Every member of `jaxbai.base.Mechanism`; hashable and equal by their options (so an
    algorithm holding one stays a `jax.jit` static argument)."""
    assert isinstance(mechanism, base.Mechanism)
    assert base.missing_members(mechanism, base.Mechanism) == []
    assert hash(mechanism) == hash(dataclasses.replace(mechanism))
    assert mechanism == dataclasses.replace(mechanism)
    assert hash(jaxbai.gauss_ldp_tt(gamma=0.01)) == hash(jaxbai.gauss_ldp_tt(gamma=0.01))


def test_options_live_in_the_mechanism():
    """γ is the Gaussian mechanism's attribute, set by the factory's option; it is validated
    there, and two γ give two mechanisms (two compiled programs)."""
    info = jaxbai.gauss_ldp_tt(gamma=0.01).info
    assert info.participant_mechanism == GaussianNoise(0.01) != GaussianNoise()
    assert info.participant_mechanism.gamma == 0.01 and GaussianNoise().gamma == 1e-3
    assert info.measure == info.participant_mechanism.measure == base.approximate_dp(0.01)
    assert RandomisedResponse().measure == LaplaceNoise().measure == base.PURE
    assert jaxbai.ctb_tt().info.participant_mechanism == RandomisedResponse()
    assert jaxbai.adap_tt().info.participant_mechanism is None
    with pytest.raises(ValueError, match="gamma must lie in"):
        GaussianNoise(1.0)
    with pytest.raises(ValueError, match="gamma must be a real number"):
        jaxbai.gauss_ldp_tt(gamma=None)


def test_a_mechanism_that_is_not_one_is_refused_at_construction():
    """A name where the object belongs (the old string form) is named, not met deep in a trace."""
    with pytest.raises(ValueError, match="participant mechanism 'laplace' lacks added_variance"):
        dataclasses.replace(jaxbai.ctb_tt(), estimator=jaxbai.CTB(participant_mechanism="laplace"))


@pytest.mark.parametrize(
    ("name", "variance"),
    [
        ("ctb_tt", lambda eps: 0 * eps),
        ("gauss_ldp_tt", lambda eps: 2 * np.log(1.25 / 1e-3) / eps**2),  # σ²_{ε,γ}, Remark 13
        ("laplace_tt", lambda eps: 2 / eps**2),  # Var Lap(1/ε)
    ],
)
def test_added_variance_enters_sigma2_vmapped_over_epsilon(registered, name, variance):
    """σ² = 1/4 + the mechanism's variance at ε (float64 closed forms), identical whether the
    parameters are built for an array of ε, vmapped over ε or traced under `jax.jit`."""
    alg = jaxbai.ALGORITHMS[name]()
    eps = jnp.array([0.1, 0.5, 1.0, 3.0], jnp.float32)
    direct = alg.params(epsilon=eps, delta=0.05)
    np.testing.assert_allclose(direct.sigma2, 0.25 + variance(np.asarray(eps, np.float64)), 1e-6)
    for other in (
        jax.vmap(lambda e: alg.params(epsilon=e, delta=0.05))(eps),
        jax.jit(lambda e: alg.params(epsilon=e, delta=0.05))(eps),
    ):
        for got, want in zip(other, direct, strict=True):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mechanism", [GaussianNoise(0.01), LaplaceNoise()], ids=lambda m: m.name)
def test_added_variance_is_the_variance_of_the_simulated_noise(mechanism):
    """The variance the object adds to σ² is that of its own simulation sampler: within Z_TOL
    standard errors of the sample variance, √((μ₄ − σ⁴)/n) (Gaussian: σ²√(2/n); Laplace:
    σ²√(5/n), μ₄ = 24b⁴ and σ⁴ = 4b⁴). Seed 5, n = 200 000, ε = 2, r = 0.3."""
    epsilon, reward = 2.0, 0.3
    z = mechanisms.sample(mechanism, jax.random.key(5), jnp.full(NUM_DRAWS, reward), epsilon)
    z = np.asarray(z, np.float64)
    variance = float(mechanism.added_variance(jnp.float32(epsilon)))
    kurtosis = 3.0 if isinstance(mechanism, GaussianNoise) else 6.0  # μ₄/σ⁴
    se = variance * math.sqrt((kurtosis - 1) / NUM_DRAWS)
    assert abs(z.var() - variance) <= Z_TOL * se
    assert abs(z.mean() - reward) <= Z_TOL * math.sqrt(variance / NUM_DRAWS)


def test_randomised_response_adds_no_variance_its_bits_are_half_sub_gaussian():
    """0 added to σ² = 1/4 (CTB-TT, Alg. 7): a bit's variance is at most 1/4."""
    rr = RandomisedResponse()
    assert float(rr.added_variance(jnp.float32(0.5))) == 0.0
    bits = np.asarray(mechanisms.sample(rr, jax.random.key(6), jnp.full(NUM_DRAWS, 0.5), 0.5))
    assert set(np.unique(bits)) <= set(rr.outputs) and bits.var() <= 0.25


def test_laplace_simulation_sampler_is_reward_plus_laplace_noise():
    """z − r ~ Lap(1/ε) (KS p > 1e-3, as `jaxbai.mechanisms.laplace`), not Lap(1.05/ε)."""
    epsilon, reward = 0.5, 0.7
    z = mechanisms.sample(LaplaceNoise(), jax.random.key(7), jnp.full(NUM_DRAWS, reward), epsilon)
    noise = np.asarray(z, np.float64) - np.float32(reward)
    assert stats.kstest(noise, stats.laplace(scale=1 / epsilon).cdf).pvalue > 1e-3
    assert stats.kstest(noise, stats.laplace(scale=1.05 / epsilon).cdf).pvalue < 1e-6


@pytest.mark.parametrize("name", ["ctb_tt", "gauss_ldp_tt", "laplace_tt"])
def test_the_driver_privatises_with_the_estimators_mechanism(registered, name):
    """`Algorithm.privatize` is the mechanism's sampler at the parameters' ε (one uniform of
    the key), and refuses a reward outside [0, 1], which every mechanism's privacy needs."""
    alg = jaxbai.ALGORITHMS[name](**({"gamma": 0.01} if name == "gauss_ldp_tt" else {}))
    params = alg.params(epsilon=0.8, delta=0.05)
    mechanism = alg.info.participant_mechanism
    for i, reward in enumerate((0.0, 0.35, 1.0)):
        key = jax.random.key(i)
        want = mechanisms.sample(mechanism, key, jnp.float32(reward), params.epsilon)
        assert float(alg.privatize(key, reward, params)) == float(want)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        alg.privatize(jax.random.key(0), 1.5, params)


# --- the Laplace estimator of notebook 03 in a real trial -----------------------------------------
EPSILON = 1.0
TRIAL_MEANS = (0.6, 0.5, 0.4)
PARTICIPANTS = 2000
SEED = 4


def test_laplace_ldp_algorithm_runs_a_real_trial(tmp_path, no_fsync, registered):
    """Participants privatise Beta rewards with the trial's mechanism (the secure Laplace
    sampler, seeded uniforms); the trial records their values, refuses what the mechanism
    cannot output, publishes no γ, and ends in the state of an ask/tell replay of the same
    observations with the trial's documented keys. The privatised values minus the rewards
    lie in the DKW band of Lap(1/ε), not in that of Lap(2/ε)."""
    rng, stream = np.random.default_rng(8), uniform_stream(9)
    records = []
    with Trial.create(tmp_path / "l.trial", "laplace_tt", 3, EPSILON, 0.05, SEED) as trial:
        assert trial.mechanism == LaplaceNoise() and trial.config.noise == "secure"
        assert trial.status().noise == "participant-side Laplace mechanism"
        p, arm = trial.next_assignment()
        for bad in (math.nan, math.inf, "0.5", None):
            with pytest.raises(ValueError, match="reward must be"):
                trial.record(arm, bad, participant=p)
        while len(records) < PARTICIPANTS and not trial.status().stopped:
            p, arm = trial.next_assignment()
            reward = float(rng.beta(4 * TRIAL_MEANS[arm], 4 * (1 - TRIAL_MEANS[arm])))
            z = secure.privatize_locally(trial.mechanism, reward, EPSILON, uniform=stream)
            trial.record(arm, z, participant=p)
            records.append((arm, reward, z))
        published, state = trial.publish(), trial._snap.state
    assert published["privacy"] == "local" and published["gamma"] is None
    assert len(records) >= PARTICIPANTS // 2  # enough draws for the band below

    arms, rewards, observed = (np.array(column) for column in zip(*records, strict=True))
    noise = observed - rewards
    band = dkw(noise.size)
    assert sup_distance(noise, stats.laplace(scale=1 / EPSILON).cdf) < band
    assert sup_distance(noise, stats.laplace(scale=2 / EPSILON).cdf) > band  # power
    assert np.any(observed < 0) and np.any(observed > 1)  # any real is recorded

    alg = registered()
    params = alg.params(epsilon=EPSILON, delta=0.05)
    select, update = jax.jit(alg.select), jax.jit(alg.update)
    key_init, key = jax.random.split(jax.random.key(SEED))
    replay, selected = alg.init(key_init, params, 3), []
    for arm, z in zip(arms.tolist(), observed.tolist(), strict=True):
        selected.append(int(select(replay, params)))
        key, key_update = jax.random.split(key)
        replay = update(key_update, replay, np.int32(arm), np.float32(z), params)
    assert selected == arms.tolist() == published["actions"][: len(records)]
    leaves = jax.tree_util.tree_leaves(state), jax.tree_util.tree_leaves(replay)
    for ours, theirs in zip(*leaves, strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_audit_table_builds_the_local_row_from_the_mechanism(registered):
    """A registered local-DP algorithm gets its audit row from its own mechanism: the same
    audit as the mechanism's row, certified below ε."""
    rows = {row.name: row for row in audit_table.rows()}
    local = rows["laplace_tt (at Laplace mechanism)"]
    assert local.kind == "local algorithm"
    got = local.run(1.0, 20_000, 0, 0, None)
    want = rows["Laplace mechanism"].run(1.0, 20_000, 0, 0, None)
    assert (got.epsilon_lower, got.event, got.delta) == (want.epsilon_lower, want.event, 0.0)
    assert 0.5 < got.epsilon_lower <= 1.0 and not got.violation
