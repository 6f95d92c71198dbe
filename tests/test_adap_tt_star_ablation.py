"""The AdaP-TT* ablation (`experiments.studies.adap_tt_star_ablation`): each variant swaps
exactly the factor it declares, the cost-swapped challengers are the TC challenger of the
swapped-cost algorithm, and the table's core runs end to end."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import pytest

import jaxbai
from experiments.studies import adap_tt_star_ablation as ablation
from jaxbai.toptwo import components

VARIANTS = ablation.variants()


def _differing(a: object, b: object) -> set[str]:
    """The components in which two Top Two algorithms differ (not their names, nor the
    `guarantee` the paper proves for each base: `TopTwo.info` checks it against the
    components, so a variant never reports its base's bound)."""
    return {
        f.name
        for f in dataclasses.fields(a)
        if f.name not in ("name", "guarantee") and getattr(a, f.name) != getattr(b, f.name)
    }


def test_the_bases_are_the_factories_and_differ_only_in_cost_and_threshold():
    """AdaP-TT and AdaP-TT* share estimator, bonus, challenger rule, β and σ: the ablation's
    factors (cost in the challenger and in the stopping statistic, threshold) are all of it."""
    tt, star = VARIANTS["adap_tt"].algorithm, VARIANTS["adap_tt_star"].algorithm
    assert tt == jaxbai.adap_tt() and star == jaxbai.adap_tt_star()
    assert _differing(tt, star) == {"cost", "threshold"}
    assert tt.sigma == star.sigma == 0.5


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_each_variant_differs_from_its_base_in_exactly_the_declared_fields(name):
    variant = VARIANTS[name]
    base = VARIANTS[variant.base]
    assert variant.algorithm.name == name
    root = variant
    while root.fields:
        root = VARIANTS[root.base]
    assert root.base in ("adap_tt", "adap_tt_star") and root.algorithm.name == root.base
    assert _differing(variant.algorithm, base.algorithm) == set(variant.fields)
    assert VARIANTS[variant.reference].algorithm.cost is components.cost_gaussian


def _effective_costs(alg: object) -> tuple[object, object]:
    """(cost the challenger uses, cost the stopping statistic uses)."""
    by_challenger = {
        components.tc_challenger_gaussian_cost: components.cost_gaussian,
        components.tc_challenger_private_cost: components.cost_private,
        components.transportation_cost_challenger: alg.cost,
    }
    return by_challenger[alg.challenger], alg.cost


def test_cost_swaps_change_one_side_only():
    tt, star = (
        _effective_costs(VARIANTS["adap_tt"].algorithm),
        _effective_costs(VARIANTS["adap_tt_star"].algorithm),
    )
    g, p = components.cost_gaussian, components.cost_private
    assert tt == (g, g) and star == (p, p)
    assert _effective_costs(VARIANTS["star_challenger_wg"].algorithm) == (g, p)
    assert _effective_costs(VARIANTS["star_stopping_wg"].algorithm) == (p, g)
    assert _effective_costs(VARIANTS["tt_challenger_wge"].algorithm) == (p, g)
    assert _effective_costs(VARIANTS["tt_stopping_wge"].algorithm) == (g, p)


def _hand_built_state(alg):
    """Leader 0 (μ̃ 0.9, N 100); arm 1: gap 0.3, N 5; arm 2: gap 0.06, N 50. At ε = 0.1,
    argmin W^G is arm 2 (0.24 against 0.86), argmin W^{G,ε} is arm 1 (0.14 against 0.20)."""
    state = alg.init(jax.random.key(0), alg.params(0.1), 3)
    counts = jnp.asarray([100, 5, 50], jnp.int32)
    means = jnp.asarray([0.9, 0.6, 0.84], jnp.float32)
    estimate = state.estimate._replace(means=means, local_counts=counts)
    return state._replace(n=jnp.int32(155), counts=counts, estimate=estimate)


@pytest.mark.parametrize("base", ["adap_tt", "adap_tt_star"])
def test_custom_challengers_are_the_tc_challenger_of_the_swapped_cost_algorithm(base):
    alg = VARIANTS[base].algorithm
    params = alg.params(0.1)
    state = _hand_built_state(alg)
    leader = jnp.int32(0)
    expected = {}
    for own, cost in (
        (components.tc_challenger_gaussian_cost, components.cost_gaussian),
        (components.tc_challenger_private_cost, components.cost_private),
    ):
        swapped = dataclasses.replace(alg, cost=cost)
        tc = int(components.transportation_cost_challenger(swapped, state, leader, params))
        assert int(own(alg, state, leader, params)) == tc
        expected[cost] = tc
    assert expected == {components.cost_gaussian: 2, components.cost_private: 1}
    assert int(alg.challenger(alg, state, leader, params)) == expected[alg.cost]


@pytest.mark.integration
def test_table_end_to_end():
    """One variant on one cheap cell: a row with mean τ, errors, censored runs; no ratio
    without its reference in the rows."""
    rows = ablation.table(["tt_challenger_wge"], ["mu3"], [10.0], runs=2, seed=1)
    assert len(rows) == 1
    (row,) = rows
    assert (row["variant"], row["instance"], row["epsilon"], row["runs"]) == (
        "tt_challenger_wge",
        "mu3",
        10.0,
        2,
    )
    assert row["censored"] == 0 and 0 <= row["errors"] <= 2 and row["mean_tau"] >= 5
    assert row["reference"] == "adap_tt" and row["ratio"] is None
    text = ablation.markdown_table(rows)
    assert text.count("\n") == 2 and "| tt_challenger_wge | mu3 | 10 |" in text and "| – |" in text


def test_ratios_to_the_reference_in_the_same_cell():
    def row(variant, eps, mean, se):
        return {
            "variant": variant,
            "reference": "adap_tt",
            "instance": "mu1",
            "epsilon": eps,
            "mean_tau": mean,
            "se_tau": se,
        }

    rows = ablation.with_ratios(
        [
            row("adap_tt", 0.1, 100.0, 3.0),
            row("adap_tt_star", 0.1, 200.0, 8.0),
            row("adap_tt_star", 1.0, 50.0, 1.0),
        ]
    )
    assert [(r["ratio"], r["se_ratio"]) for r in rows[::2]] == [(1.0, 0.0), (None, None)]
    assert rows[1]["ratio"] == 2.0
    assert rows[1]["se_ratio"] == pytest.approx(2.0 * (0.03**2 + 0.04**2) ** 0.5)
