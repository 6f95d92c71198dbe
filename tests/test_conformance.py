"""`jaxbai.check`: every registered algorithm passes it, and it fails, naming the defect, on
planted ones (a plan that is not what step does, an impure step, release noise that is not
what the privacy claim says); its command line runs it on a plugin."""

from __future__ import annotations

import dataclasses
import textwrap
from typing import ClassVar

import jax.numpy as jnp
import pytest
from _commands import run_module

import jaxbai
from jaxbai import base


def _parts(report) -> dict[str, bool | None]:
    return {f.part: f.passed for f in report.findings}


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(jaxbai.ALGORITHMS))
def test_every_registered_algorithm_passes(name):
    """Every part passes or does not apply (the law of the two paths is checked below, on the
    algorithms it costs least)."""
    report = jaxbai.check(jaxbai.ALGORITHMS[name](), law_runs=0)
    assert report.ok, str(report)
    parts = _parts(report)
    assert parts["members"] and parts["purity"] and parts["trial"]
    assert parts["plan"] is (True if _episodic(name) else None)


def _episodic(name: str) -> bool:
    return isinstance(jaxbai.ALGORITHMS[name](), base.Episodic)


@pytest.mark.integration
def test_the_two_paths_have_one_law():
    """AdaP-TT per sample and per episode: the KS test passes at 200 runs per path."""
    report = jaxbai.check(jaxbai.adap_tt(), jaxbai.bernoulli([0.8, 0.5, 0.4]), law_runs=200)
    assert _parts(report)["paths"] is True, str(report)


@dataclasses.dataclass(frozen=True)
class ShiftedPlan(jaxbai.EpisodicTopTwo):
    """An episodic Top Two algorithm announcing the arm after the one it pulls."""

    def plan(self, state, params, max_len):
        arms, length = super().plan(state, params, max_len)
        k = state.counts.shape[0]
        return jnp.where(arms >= 0, (arms + 1) % k, arms), length


def _shifted_adap_tt() -> ShiftedPlan:
    adap = jaxbai.adap_tt()
    return ShiftedPlan(**{f.name: getattr(adap, f.name) for f in dataclasses.fields(adap)})


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
        (_shifted_adap_tt(), "plan", "plan announced [1], step made [0]"),
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
    ids=["plan", "impure", "half-noise", "misnamed-noise"],
)
def test_a_planted_defect_fails_with_its_name(alg, part, words):
    report = jaxbai.check(alg, law_runs=0)
    assert not report.ok and _parts(report)[part] is False, str(report)
    assert words in str(report)
    failed = [f.part for f in report.findings if f.passed is False]
    assert failed == [part], str(report)
    with pytest.raises(jaxbai.conformance.ConformanceError, match=part):
        report.raise_for_failures()


def test_members_a_non_algorithm_lacks_are_named():
    report = jaxbai.check(object(), law_runs=0)
    assert not report.ok and [f.part for f in report.findings] == ["members"]
    assert "lacks info, init" in report.findings[0].detail


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
