"""`jaxbai.check`: every registered algorithm passes it, and it fails, naming the defect, on
planted ones (a select or a plan that is not what step does, an impure step, release noise
that is not what the privacy claim says, an unhashable algorithm, parameters that raise); its
command line runs it on a plugin."""

from __future__ import annotations

import dataclasses
import math
import textwrap
from typing import ClassVar

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.special
import scipy.stats
from _commands import run_module

import jaxbai
from jaxbai import base
from jaxbai.conformance import contract


def test_the_ks_statistics_are_scipys():
    """The check's Kolmogorov–Smirnov statistics equal SciPy's on samples with ties."""
    rng = np.random.default_rng(0)
    a, b = np.sort(rng.normal(size=300)), np.sort(rng.integers(0, 20, 200).astype(float))
    assert contract.ks_one_sample(a, scipy.special.ndtr) == pytest.approx(
        scipy.stats.kstest(a, "norm").statistic, abs=1e-12
    )
    c = np.sort(rng.integers(0, 20, 150).astype(float))
    assert contract.ks_two_sample(b, c) == pytest.approx(scipy.stats.ks_2samp(b, c).statistic)
    assert contract.KS_CRITICAL_VALUE == pytest.approx(math.sqrt(-math.log(1e-3 / 2) / 2), abs=1e-3)


def _parts(report) -> dict[str, bool | None]:
    return {f.part: f.passed for f in report.findings}


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(jaxbai.ALGORITHMS))
def test_every_registered_algorithm_passes(name):
    """Every part passes or is not checked for a stated reason: the release noise of every
    global-DP algorithm but DP-SE (whose state exposes no means) is tested, and the law of the
    two paths below, on the algorithm it costs least."""
    alg = jaxbai.ALGORITHMS[name]()
    report = jaxbai.check(alg, law_runs=0)
    assert report.ok, str(report)
    parts = _parts(report)
    assert parts["members"] and parts["purity"] and parts["select"], str(report)
    global_dp = alg.info.privacy == "global"
    assert parts["trial"] is (True if global_dp else None)
    assert parts["privacy"] is (True if global_dp and not name.startswith("dp_se") else None)


@pytest.mark.integration
def test_the_two_paths_have_one_law():
    """AdaP-TT per sample and per episode: the KS test passes at 200 runs per path."""
    report = jaxbai.check(jaxbai.adap_tt(), jaxbai.bernoulli([0.8, 0.5, 0.4]), law_runs=200)
    assert _parts(report)["paths"] is True, str(report)


@dataclasses.dataclass(frozen=True)
class ShiftedSelect(jaxbai.TopTwo):
    """TTUCB naming, to a trial, the arm after the one its step pulls."""

    def select(self, state, params):
        return (super().select(state, params) + 1) % state.counts.shape[0]


@dataclasses.dataclass(frozen=True)
class ShiftedPlan(jaxbai.EpisodicTopTwo):
    """An episodic Top Two algorithm announcing the arm after the one it pulls."""

    def plan(self, state, params, max_len):
        arms, length = super().plan(state, params, max_len)
        k = state.counts.shape[0]
        return jnp.where(arms >= 0, (arms + 1) % k, arms), length


def _as(cls, alg):
    """``alg``'s fields in the subclass ``cls``."""
    return cls(**{f.name: getattr(alg, f.name) for f in dataclasses.fields(alg)})


@dataclasses.dataclass(frozen=True)
class NegativeDelta(base.AlgorithmWrapper):
    """TTUCB whose parameters refuse every δ."""

    def params(self, epsilon=None, delta=0.01):
        raise ValueError("no δ suits me")


@dataclasses.dataclass(frozen=True, eq=False)
class Unhashable(base.AlgorithmWrapper):
    """TTUCB that cannot be a jax.jit static argument."""

    __hash__ = None


CALLS = [0]


@dataclasses.dataclass(frozen=True)
class CountingStep(base.AlgorithmWrapper):
    """TTUCB whose step adds a Python-side call count to n: traced once under jit, so the jitted
    runs disagree with the eager one."""

    def step(self, key, state, inst, params):
        CALLS[0] += 1
        state = self.algorithm.step(key, state, inst, params)
        return state._replace(n=state.n + CALLS[0] % 2)


@dataclasses.dataclass(frozen=True)
class HalfNoise(jaxbai.CumulativeLaplace):
    """DP-TT's estimator with half the Laplace noise it claims: it leaks at 2ε."""

    def increment_noise(self, u, epsilon):
        return jaxbai.mechanisms.laplace_from_uniform(u, 0.5 / epsilon)


@dataclasses.dataclass(frozen=True)
class LaplaceCalledGaussian(jaxbai.CumulativeLaplace):
    """Laplace increments Lap(1/ε) under a 2ε²-zCDP claim with Gaussian releases (σ = 1/(2ε))."""

    measure: ClassVar[base.PrivacyMeasure] = base.zcdp(2.0)
    release_noise: ClassVar[str] = "gaussian"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("alg", "part", "words"),
    [
        (_as(ShiftedSelect, jaxbai.ttucb()), "select", "at pull 0 select named 1, step pulled 0"),
        (_as(ShiftedPlan, jaxbai.adap_tt()), "select", "plan announced [1], step made [0]"),
        (CountingStep(jaxbai.ttucb()), "purity", "differs from step run eagerly"),
        (
            dataclasses.replace(jaxbai.dp_tt(), estimator=HalfNoise()),
            "privacy",
            "not the laplace noise of scale 1",
        ),
        (
            dataclasses.replace(jaxbai.dp_tt(), estimator=LaplaceCalledGaussian()),
            "privacy",
            "not the gaussian noise of scale 0.5",
        ),
    ],
    ids=["select", "plan", "impure", "half-noise", "misnamed-noise"],
)
def test_a_planted_defect_fails_with_its_name(alg, part, words):
    report = jaxbai.check(alg, law_runs=0)
    assert not report.ok and _parts(report)[part] is False, str(report)
    assert words in str(report)
    failed = [f.part for f in report.findings if f.passed is False]
    assert failed == [part], str(report)
    with pytest.raises(jaxbai.conformance.ConformanceError, match=part):
        report.raise_for_failures()


@pytest.mark.parametrize(
    ("alg", "words"),
    [
        (object(), "lacks info, init"),
        (Unhashable(jaxbai.ttucb()), "raised TypeError: unhashable type"),
        (NegativeDelta(jaxbai.ttucb()), "raised ValueError: no δ suits me"),
    ],
    ids=["not-an-algorithm", "unhashable", "params-raise"],
)
def test_members_failures_are_named_and_stop_the_check(alg, words):
    report = jaxbai.check(alg, law_runs=0)
    assert not report.ok and [f.part for f in report.findings] == ["members"]
    assert words in report.findings[0].detail, str(report)


PLUGIN = textwrap.dedent(
    """
    import dataclasses
    import jaxbai

    def plug_check(**options):
        return dataclasses.replace(jaxbai.ttucb(**options), name="plug_check")

    jaxbai.register("plug_check", plug_check, "Plugged TTUCB")
    """
)


@pytest.mark.integration
def test_the_command_line_checks_what_a_plugin_registers(tmp_path):
    (tmp_path / "plug_check_mod.py").write_text(PLUGIN)
    done = run_module(tmp_path, ["jaxbai.conformance", "--plugin", "plug_check_mod"], (tmp_path,))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("conformance of plug_check: ok")
    assert done.stdout.count(": passed:") >= 3
