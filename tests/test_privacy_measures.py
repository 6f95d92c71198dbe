"""Privacy measures (`jaxbai.base.privacy`): their conversions against independently computed
values, their validation, every registered algorithm's measure against the mechanism that runs,
and a zCDP estimator through simulate and a real trial."""

from __future__ import annotations

import dataclasses
import math
import random
from typing import ClassVar

import jax
import numpy as np
import pytest
import scipy.special
import scipy.stats

import jaxbai
from jaxbai import base
from jaxbai.base import privacy
from jaxbai.conformance.contract import KS_CRITICAL_VALUE, ks_one_sample, ks_two_sample
from jaxbai.mechanisms import discrete


def _phi(x: float) -> float:
    """The standard normal CDF."""
    return math.erfc(-x / math.sqrt(2)) / 2


def _gaussian_delta(epsilon: float, mu: float) -> float:
    """The exact δ(ε) of the Gaussian mechanism with Δ/σ = mu (Balle & Wang 2018, Theorem 8):
    Φ(mu/2 − ε/mu) − e^ε Φ(−mu/2 − ε/mu)."""
    return _phi(mu / 2 - epsilon / mu) - math.exp(epsilon) * _phi(-mu / 2 - epsilon / mu)


def _renyi(log_p: np.ndarray, log_q: np.ndarray, alpha: float, dx: float) -> float:
    """D_α(P‖Q) = log(∫ p^α q^(1−α))/(α − 1) of two log-densities on a grid of step dx."""
    terms = alpha * log_p + (1 - alpha) * log_q
    top = terms.max()
    return (top + math.log(np.sum(np.exp(terms - top)) * dx)) / (alpha - 1)


# --- conversions -------------------------------------------------------------------------------
def test_conversions_at_hand_computed_values():
    """ρ + 2√(ρ log 1/δ), ε²/2 and Δ²/(2σ²), each computed by hand."""
    assert privacy.zcdp_to_approximate(0.5, 1e-5) == pytest.approx(5.298526, abs=1e-6)
    assert privacy.zcdp_to_approximate(0.02, 0.01) == pytest.approx(0.626971, abs=1e-6)
    assert privacy.pure_to_zcdp(0.3) == pytest.approx(0.045)
    assert privacy.gaussian_rho(2.0) == 0.125 and privacy.gaussian_rho(2.0, 3.0) == 1.125


@pytest.mark.parametrize(("rho", "delta"), [(0.005, 1e-6), (0.125, 1e-3), (0.5, 1e-5), (2.0, 0.05)])
def test_zcdp_to_approximate_holds_for_the_gaussian_mechanism(rho, delta):
    """The Gaussian mechanism with Δ²/(2σ²) = ρ is ρ-zCDP; its exact privacy profile at the
    converted ε' is at most δ: the conversion is a valid bound (loose, by 17–780× in δ at
    these points; the hand-computed values above pin the formula)."""
    epsilon = privacy.zcdp_to_approximate(rho, delta)
    assert _gaussian_delta(epsilon, math.sqrt(2 * rho)) <= delta


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_pure_to_zcdp_bounds_the_laplace_renyi_divergences(epsilon):
    """Lap(0, 1/ε) against Lap(1, 1/ε) (sensitivity 1, ε-DP): D_α ≤ ρα with ρ = ε²/2 at every α
    (the definition of ρ-zCDP), integrated numerically."""
    rho = privacy.pure_to_zcdp(epsilon)
    x, dx = np.linspace(-60 / epsilon, 60 / epsilon, 400_001, retstep=True)
    p, q = (math.log(epsilon / 2) - epsilon * np.abs(x - shift) for shift in (0.0, 1.0))
    for alpha in (1.5, 2.0, 5.0, 20.0):
        assert _renyi(p, q, alpha, dx) <= rho * alpha * (1 + 1e-6)


def test_gaussian_rho_is_the_gaussian_renyi_divergence():
    """N(0, σ²) against N(Δ, σ²): D_α = αΔ²/(2σ²) exactly, integrated numerically."""
    sigma, sensitivity = 1.7, 0.6
    rho = privacy.gaussian_rho(sigma, sensitivity)
    x, dx = np.linspace(-20, 20, 200_001, retstep=True)
    p, q = (
        -((x - m) ** 2) / (2 * sigma**2) - math.log(sigma * math.sqrt(2 * math.pi))
        for m in (0, sensitivity)
    )
    for alpha in (2.0, 4.0):
        assert _renyi(p, q, alpha, dx) == pytest.approx(rho * alpha, rel=1e-6)


def test_measures_convert_and_describe():
    """Each measure's ρ, (ε', δ) and words."""
    assert base.PURE.rho(2.0) == 2.0 and base.zcdp(0.25).rho(2.0) == 1.0
    assert base.approximate_dp(1e-3).rho(1.0) is None
    assert base.PURE.approximate(0.7, 1e-6) == 0.7
    assert base.approximate_dp(1e-3).approximate(0.7, 1e-2) == 0.7
    assert base.zcdp().approximate(1.0, 1e-5) == privacy.zcdp_to_approximate(0.5, 1e-5)
    with pytest.raises(ValueError, match="implies no"):
        base.approximate_dp(1e-3).approximate(0.7, 1e-4)
    assert base.PURE.describe("global") == "ε-DP (global, pure)"
    assert base.approximate_dp(0.01).describe("local") == "(ε, δ)-DP (local, δ = 0.01)"
    assert (
        base.zcdp().describe("global") == "ρ-zCDP (global, ρ = ε²/2) ⇒ (ρ + 2√(ρ log(1/δ)), δ)-DP"
    )
    assert (
        base.zcdp(2).describe("global") == "ρ-zCDP (global, ρ = 2·ε²) ⇒ (ρ + 2√(ρ log(1/δ)), δ)-DP"
    )
    assert privacy.release_scale("laplace", base.PURE, 0.5, 4) == 0.5
    assert privacy.release_scale("gaussian", base.zcdp(2.0), 0.5, 4) == 0.25


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: base.PrivacyMeasure("renyi"), "one of"),
        (lambda: base.approximate_dp(0.0), "delta_p must lie in"),
        (lambda: base.approximate_dp(1.0), "delta_p must lie in"),
        (lambda: base.approximate_dp(math.nan), "delta_p"),
        (lambda: base.zcdp(0.0), "positive"),
        (lambda: base.zcdp(-1.0), "positive"),
        (lambda: base.zcdp(math.inf), "positive"),
        (lambda: base.PrivacyMeasure("pure", delta=0.1), "only with it"),
        (lambda: base.PrivacyMeasure("zcdp"), "only with it"),
        (
            lambda: privacy.release_scale("gaussian", base.approximate_dp(0.1), 1.0, 1),
            "no calibration",
        ),
        (lambda: privacy.release_scale("laplace", base.zcdp(), 1.0, 1), "no calibration"),
    ],
)
def test_a_measure_whose_parameters_do_not_fit_is_refused(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"privacy": "global", "measure": None}, "states its privacy measure"),
        ({"privacy": "none", "measure": base.PURE}, "only a private one"),
        ({"release_noise": "gaussian"}, "unbounded privacy loss"),
        ({"release_noise": "laplace", "measure": base.zcdp()}, "Laplace releases give pure"),
        ({"release_noise": "uniform"}, "release noise must be one of"),
        ({"privacy": "none", "measure": None, "release_noise": "laplace"}, "goes with global"),
        (
            {"privacy": "local", "participant_mechanism": jaxbai.mechanisms.GaussianNoise()},
            "participant mechanism's",
        ),
    ],
)
def test_an_algorithm_info_whose_claim_does_not_fit_is_refused(fields, match):
    """A private algorithm states its measure; Gaussian noise never claims pure ε-DP; a local
    algorithm's measure is its mechanism's."""
    good = {"privacy": "global", "takes_epsilon": True, "measure": base.PURE}
    with pytest.raises(ValueError, match=match):
        base.AlgorithmInfo(**(good | fields))


# --- the registered algorithms ----------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(jaxbai.ALGORITHMS))
def test_every_algorithm_names_the_measure_of_the_mechanism_that_runs(name):
    """Its info's measure and words: the mechanism's under local DP, pure ε-DP with Laplace
    releases under global DP (the claims every algorithm of jaxbai makes), not private else.
    That the noise which runs is the one claimed is `jaxbai.check`'s (tests/test_conformance.py)
    and the KS tests below."""
    info = jaxbai.ALGORITHMS[name]().info
    mechanism = info.participant_mechanism
    if info.privacy == "none":
        assert info.measure is None and info.claim == "not private"
    elif info.privacy == "local":
        assert info.measure == mechanism.measure and info.claim.endswith(")")
        assert info.measure.kind == ("approximate" if name == "gauss_ldp_tt" else "pure")
    else:
        assert (info.release_noise, info.measure) == ("laplace", base.PURE)
        assert info.claim == "ε-DP (global, pure)"


@pytest.mark.parametrize("name", ["adap_tt", "dp_tt"])
def test_global_laplace_estimators_release_at_the_declared_scale(name):
    """The simulated release noise of the first pull of an arm (μ̃ − r with Ñ = 1) has the law
    `release_scale` gives: Lap(1/ε). KS at level 1e-3 on 4000 draws (power > 0.99 against a
    Gaussian of the same variance)."""
    alg = jaxbai.ALGORITHMS[name]()
    info, epsilon = alg.info, 0.5
    scale = privacy.release_scale(info.release_noise, info.measure, epsilon, 1)
    noise = _first_release_noise(alg, epsilon, 4000)
    laplace = np.sort(noise / scale)
    cdf = scipy.stats.laplace.cdf
    assert ks_one_sample(laplace, cdf) < KS_CRITICAL_VALUE / math.sqrt(len(laplace))


def _first_release_noise(alg, epsilon: float, runs: int) -> np.ndarray:
    """μ̃_0 − 1 after the first pull of arm 0 (reward 1), over ``runs`` keys."""
    params = alg.params(epsilon=epsilon, delta=0.1)
    inst = jaxbai.bernoulli([1.0, 0.0])

    def first(key):
        state = alg.init(jax.random.key(0), params, 2)
        return alg.step(key, state, inst, params).estimate.means[0] - 1.0

    keys = jax.random.split(jax.random.key(3), runs)
    return np.asarray(jax.jit(jax.vmap(first))(keys), np.float64)


# --- a zCDP estimator ------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class CumulativeGaussian(jaxbai.CumulativeLaplace):
    """DP-TT's estimator with Gaussian increments N(0, 1/ε²): ε²/2-zCDP (σ = Δ/√(2ρ), Δ = 1)."""

    measure: ClassVar[base.PrivacyMeasure] = base.zcdp()
    release_noise: ClassVar[str] = "gaussian"

    def increment_noise(self, u, epsilon):
        return jaxbai.mechanisms.gaussian_from_uniform(u) / epsilon


def gaussian_dp_tt(**options):
    return dataclasses.replace(
        jaxbai.dp_tt(**options), name="zcdp_tt", estimator=CumulativeGaussian()
    )


@pytest.fixture
def zcdp_tt():
    entry = jaxbai.register("zcdp_tt", gaussian_dp_tt, "zCDP-TT", replace=True)
    yield entry
    jaxbai.unregister("zcdp_tt")


def test_a_gaussian_estimator_is_reported_as_what_it_is(zcdp_tt):
    info = zcdp_tt.info()
    assert info.claim == "ρ-zCDP (global, ρ = ε²/2) ⇒ (ρ + 2√(ρ log(1/δ)), δ)-DP"
    assert info.release_noise == "gaussian"


def test_a_gaussian_estimator_claiming_pure_dp_is_refused():
    """Gaussian increments have unbounded privacy loss: a pure claim is refused at build."""

    @dataclasses.dataclass(frozen=True)
    class Lying(CumulativeGaussian):
        measure: ClassVar[base.PrivacyMeasure] = base.PURE

    with pytest.raises(ValueError, match="unbounded privacy loss"):
        dataclasses.replace(jaxbai.dp_tt(), estimator=Lying()).info  # noqa: B018


def test_a_trial_refuses_what_it_cannot_release_before_any_participant(tmp_path, no_fsync):
    """A global estimator without releases, and (ε, δ_p)-DP Gaussian releases (no calibrated
    sampler), are refused at create: no store is written."""

    @dataclasses.dataclass(frozen=True)
    class Approximate(CumulativeGaussian):
        measure: ClassVar[base.PrivacyMeasure] = base.approximate_dp(1e-6)

    @dataclasses.dataclass(frozen=True)
    class Unreleasing(jaxbai.CumulativeLaplace):
        release_noise: ClassVar[None] = None

        pending_release = None

    cases = {
        "approx_tt": (Approximate(), "no secure sampler"),
        "silent_tt": (Unreleasing(), "states no releases"),
    }
    for name, (estimator, match) in cases.items():

        def factory(estimator=estimator, name=name, **options):
            return dataclasses.replace(jaxbai.dp_tt(**options), name=name, estimator=estimator)

        jaxbai.register(name, factory, name, replace=True)
        try:
            with pytest.raises(ValueError, match=match):
                jaxbai.Trial.create(tmp_path / f"{name}.db", name, 2, 1.0, 0.1, noise="prng")
        finally:
            jaxbai.unregister(name)
        assert not (tmp_path / f"{name}.db").exists()


def test_a_zcdp_estimator_releases_the_same_law_in_simulate_and_in_a_trial(
    tmp_path, no_fsync, zcdp_tt
):
    """The first release of each arm (Ñ = 1, binary rewards: exact sums) in 150 real trials
    (discrete Gaussian from an injected bit source, K = 2: 300 releases) against 4000
    simulated ones (`CumulativeGaussian`'s float Gaussian): both N(0, 1/ε²) by KS at level
    1e-3, the same law by the two-sample KS test at level 1e-3, and the trial's standard
    deviation 1/ε within 4 standard errors (±0.16/ε at 300 draws). The KS tests have little
    power against a wrong shape of the same scale; the standard deviation check catches the
    Laplace release of the same scale b = 1/ε (standard deviation √2/ε) with certainty, and a
    σ 30 % too large with probability > 0.9. The grid 1/m (m = 128) moves the CDF by < 0.01."""
    epsilon = 1.0
    simulated = _first_release_noise(zcdp_tt(), epsilon, 4000) * epsilon
    bits = random.Random(2024).getrandbits
    released = []
    for i in range(150):
        trial = jaxbai.Trial.create(
            tmp_path / f"t{i}.db", "zcdp_tt", 2, epsilon, 0.1, seed=i, outcomes="binary",
            randbits=bits,
        )  # fmt: skip
        for _ in range(2):
            arm = trial.next_arm()
            trial.record(arm, 1.0 if arm == 0 else 0.0)
        released.extend(np.asarray(trial._snap.state.estimate.means, np.float64) - [1.0, 0.0])
        assert trial.status().noise.startswith("exact discrete gaussian on integer phase sums")
        assert (
            trial.status().privacy_measure
            == "ρ-zCDP (global, ρ = ε²/2) ⇒ (ρ + 2√(ρ log(1/δ)), δ)-DP"
        )
        trial.close()
    released = np.sort(np.asarray(released) * epsilon)
    for sample in (np.sort(simulated), released):
        assert ks_one_sample(sample, scipy.special.ndtr) < KS_CRITICAL_VALUE / math.sqrt(
            len(sample)
        )
    assert ks_two_sample(np.sort(simulated), released) < KS_CRITICAL_VALUE * math.sqrt(
        (len(simulated) + len(released)) / (len(simulated) * len(released))
    )
    assert abs(np.std(released) - 1.0) < 4 / math.sqrt(2 * len(released))


def test_the_exact_discrete_gaussian_has_its_law():
    """N_Z(0, σ²) at σ² = 9/0.49 (ε = 0.7, m = 3: not a perfect square, so t = ⌊σ⌋ + 1 is
    taken from an inexact root): 6000 draws against the exact pmf ∝ exp(−x²/(2σ²)), χ² test
    at level 1e-3 on the values |x| ≤ 10 and the two tails (Wilson–Hilferty critical value)."""
    sigma2 = 9 / 0.49
    noise = discrete.exact_gaussian(0.7, 3, random.Random(11).getrandbits)
    draws = np.array([noise.add(0) for _ in range(6000)])
    support = np.arange(-60, 61)
    pmf = np.exp(-(support**2) / (2 * sigma2))
    pmf /= pmf.sum()
    edges = [-np.inf, *np.arange(-10, 11) - 0.5, 10.5, np.inf]
    observed = np.histogram(draws, bins=edges)[0]
    expected = np.histogram(support, bins=edges, weights=pmf)[0] * len(draws)
    chi2 = float(np.sum((observed - expected) ** 2 / expected))
    df = len(observed) - 1
    critical = df * (1 - 2 / (9 * df) + 3.09 * math.sqrt(2 / (9 * df))) ** 3
    assert chi2 < critical


def test_the_exact_discrete_gaussian_has_its_variance():
    """N_Z(0, σ²) at σ = 8 (ε = 0.5, m = 4): 4000 draws, mean and variance within 4 standard
    errors of 0 and σ² (the discrete Gaussian's variance is below σ² by < 1e-100 here)."""
    noise = discrete.exact_gaussian(0.5, 4, random.Random(5).getrandbits)
    draws = np.array([noise.add(0) for _ in range(4000)], np.float64)
    assert abs(draws.mean()) < 4 * 8 / math.sqrt(4000)
    assert abs(draws.var() - 64) < 4 * 64 * math.sqrt(2 / 4000)
    assert np.allclose(draws, np.round(draws))


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(jaxbai.ALGORITHMS))
def test_a_trial_runs_the_mechanism_the_algorithm_declares(name, tmp_path, no_fsync):
    """A rehearsal trial of every registered algorithm: its status states the algorithm's claim,
    a global-DP one releases the exact discrete noise its info declares, a local-DP one hands
    participants the mechanism whose measure it states."""
    info = jaxbai.ALGORITHMS[name]().info
    epsilon = 1.0 if info.takes_epsilon else None
    with jaxbai.Trial.create(tmp_path / "t.trial", name, 3, epsilon, 0.1, 0, noise="prng") as t:
        status = t.status()
        assert status.privacy_measure == info.claim
        if info.privacy == "global":
            assert status.noise.startswith(f"exact discrete {info.release_noise} on ")
        elif info.privacy == "local":
            assert t.mechanism.measure == info.measure and status.noise.startswith("participant")
        else:
            assert status.noise == "none"
