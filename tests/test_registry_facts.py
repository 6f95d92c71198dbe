"""Every per-algorithm fact comes from the registry and the algorithm built with its options.

A user variant registered here gets its own asymptotic bound, allocation target, plot style and
privacy model, from the algorithm it builds (not from a table keyed by name), and a factory
whose privacy depends on an option is reported with the privacy of the options it ran with.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import jaxbai
from experiments import sweep
from experiments.analysis import drawing
from experiments.analysis.styles import PAPER_STYLES, styles
from experiments.config import specs
from jaxbai import theory
from jaxbai.engine._checkpoint import grid_fingerprint

MU = np.array(jaxbai.PAPER_INSTANCES["mu2"], np.float64)


def _adap_tt_b03(**options):
    """AdaP-TT with β = 0.3 under a name of its own."""
    return dataclasses.replace(jaxbai.adap_tt(beta=0.3, **options), name="adap_tt_b03")


def _switchable(base: str = "ttucb", **options):
    """A Top Two algorithm on the estimator of ``base``: private or not by an option (the
    shape of a user factory such as a KL-cost variant of any registered algorithm)."""
    return dataclasses.replace(jaxbai.ALGORITHMS[base](**options), name="switchable")


@pytest.fixture
def user_variants():
    """``adap_tt_b03`` and ``switchable`` registered for one test."""
    jaxbai.register("adap_tt_b03", _adap_tt_b03, "AdaP-TT (β = 0.3)")
    jaxbai.register("switchable", _switchable, "Switchable")
    try:
        yield
    finally:
        jaxbai.unregister("adap_tt_b03")
        jaxbai.unregister("switchable")


def test_a_registered_variant_gets_its_own_bound_target_and_style(user_variants):
    info = jaxbai.ALGORITHMS["adap_tt_b03"].info()
    assert info.privacy == "global"
    want = float(theory.adap_tt_bound(MU, 0.5, beta=0.3, sigma=0.5))  # Theorem 22 at β = 0.3
    assert info.asymptotic_bound(MU, 0.5) == pytest.approx(want, rel=1e-12)
    assert want != pytest.approx(float(theory.adap_tt_bound(MU, 0.5, beta=0.5, sigma=0.5)))
    omega = info.allocation_target(MU, np.array([0.5, 2.0]))
    _, want_omega = theory.t_star(MU, "kl_gaussian", beta=0.3, sigma=0.5)
    np.testing.assert_allclose(omega, np.stack([want_omega] * 2), rtol=1e-6)
    assert omega[0, 0] == pytest.approx(0.3)  # ω*_{a*} = β
    drawn = styles(["adap_tt", "adap_tt_b03"], {})
    assert drawn["adap_tt_b03"] != drawn["adap_tt"], "drawn in a style of its own"


def test_privacy_is_that_of_the_options_it_runs_with(user_variants):
    entry = jaxbai.ALGORITHMS["switchable"]
    assert entry.info().privacy == "none" and not entry.info().takes_epsilon
    assert entry.info(base="adap_tt").privacy == "global"
    assert entry.info(base="ctb_tt").privacy == "local"
    config = sweep.resolve(
        {
            "instances": ["mu2"],
            "algorithms": [{"name": "sw_global", "algorithm": "switchable", "base": "adap_tt"}],
            "global_epsilons": [0.5],
            "runs": 2,
        }
    )
    assert config.epsilons_for("sw_global") == (0.5,), "a private build runs on its ε grid"
    assert config.epsilons_for("switchable") == (np.inf,)


def test_options_of_a_keyword_factory_reach_it(user_variants):
    spec = specs.check_algorithm(
        specs.AlgorithmSpec("sw", "switchable", (("base", "adap_tt"), ("beta", 0.3))), 0, "theory"
    )
    alg = spec.build("theory")
    assert alg.beta == 0.3 and alg.info.privacy == "global"


def _adaptive_beta(alg, state, leader, challenger, params):
    """An IDS-style β (a user's tracking proportion): not the fixed β the bounds assume."""
    del alg, state, leader, challenger
    return params.beta * 0.9


REPLACEMENTS = {
    "estimator": jaxbai.estimators.DAF("global"),  # Appendix H states no bound
    "cost": jaxbai.toptwo.cost_private,
    "bonus": jaxbai.toptwo.published.bonus_completed_phases,
    "leader_rule": jaxbai.toptwo.dp_tt_components.empirical_best_leader,
    "challenger": jaxbai.toptwo.threshold_aware_challenger,
    "tracking_beta": _adaptive_beta,
    "tracking": jaxbai.toptwo.published.coin_tracking,
    "stopping_rule": jaxbai.toptwo.published.stopping_at_leader,
}


@pytest.mark.parametrize("component", jaxbai.toptwo.guarantees.COMPONENTS)
def test_a_replaced_component_loses_the_guarantee(component):
    adap_tt = jaxbai.adap_tt()
    assert adap_tt.info.asymptotic_bound is not None
    replaced = dataclasses.replace(adap_tt, **{component: REPLACEMENTS[component]})
    assert replaced.info.asymptotic_bound is None
    assert replaced.info.allocation_target is None
    same = dataclasses.replace(adap_tt, name="renamed", beta=0.3)
    assert same.info.asymptotic_bound is not None, "a name or β is not a component"


def test_a_private_estimator_without_epsilon_is_refused():
    """A private algorithm can never run, nor be reported, as non-private."""
    with pytest.raises(ValueError, match="local-DP algorithm takes ε"):
        dataclasses.replace(jaxbai.ttucb(), estimator=jaxbai.CTB())


def test_the_guarantee_is_metadata():
    """Equal algorithms whatever their guarantee: no recompilation, the same fingerprint."""
    adap_tt = jaxbai.adap_tt()
    bare = dataclasses.replace(adap_tt, guarantee=None)
    assert bare == adap_tt and hash(bare) == hash(adap_tt)
    jobs = jaxbai.grid_jobs(jaxbai.bernoulli([0.9, 0.5]), [1.0], [0.1], 2)
    assert grid_fingerprint(bare, jobs, 0, 100) == grid_fingerprint(adap_tt, jobs, 0, 100)


def test_labels_with_options_get_styles_of_their_own():
    b03 = specs.AlgorithmSpec("b03", "adap_tt", (("beta", 0.3),))
    b07 = specs.AlgorithmSpec("b07", "adap_tt", (("beta", 0.7),))
    drawn = styles(["adap_tt", "b03", "b07", "elsewhere"], {"b03": b03, "b07": b07})
    assert drawn["adap_tt"] == PAPER_STYLES["adap_tt"]
    fixed = {(s.color, s.marker) for s in PAPER_STYLES.values()}
    others = [(drawn[a].color, drawn[a].marker) for a in ("b03", "b07", "elsewhere")]
    assert len(set(others)) == 3 and not set(others) & fixed


@pytest.mark.integration
def test_a_sweep_reports_each_variant_with_its_own_facts(user_variants):
    result = sweep.run(
        {
            "instances": ["mu2"],
            "algorithms": [
                "adap_tt_b03",
                {"name": "sw_global", "algorithm": "switchable", "base": "adap_tt"},
            ],
            "global_epsilons": [2.0],
            "deltas": [0.1],
            "runs": 4,
            "max_samples": 20000,
        },
        progress=False,
    )
    cells = result.cells.set_index("algorithm")
    assert cells.loc["sw_global", "privacy"] == "global", "a private run is reported private"
    assert cells.loc["sw_global", "epsilon"] == 2.0
    assert cells.loc["adap_tt_b03", "privacy"] == "global"
    omega = cells.loc["adap_tt_b03", [f"omega_star_{a}" for a in range(len(MU))]].to_numpy(float)
    _, want = theory.t_star(MU, "kl_gaussian", beta=0.3, sigma=0.5)
    np.testing.assert_allclose(omega, want, rtol=1e-5)
    summary = {column: result.cells[column].to_numpy() for column in result.cells.columns}
    labels = drawing.Labels.of(summary, result.config)
    assert labels.styles["adap_tt_b03"] != labels.styles["sw_global"]
