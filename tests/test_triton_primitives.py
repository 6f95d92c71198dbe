"""The per-sample Top Two lane step uses only primitives that Pallas' Triton lowering has.

A first step towards a fused GPU kernel built from the same step: the step must not use
``slice`` or ``reduce_and`` (no Triton rule), so `fold_in_step`, `uniforms_from_key` and the
GLR test take their words and their conjunction in forms that lower. What remains outside the
Triton rules is the key wrap of `step_lane` (``random_wrap``/``random_unwrap``), which a kernel
replaces by passing the raw key words.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbai
from jaxbai.engine import _lanes
from jaxbai.engine.jobs import grid_jobs

lowering = pytest.importorskip("jax._src.pallas.triton.lowering")

KEY_WRAP = {"random_wrap", "random_unwrap"}
LOWERABLE = (
    "ttucb",
    "ctb_tt",
    "gauss_ldp_tt",
    "adap_tt",
    "adap_tt_star",
    "ttucb_dpa",
    "adap_tt_star_ratio",
)


def primitives(jaxpr: jax.extend.core.Jaxpr, found: set[str]) -> set[str]:
    """Every primitive of ``jaxpr``, sub-jaxprs (loops, conds, calls) included."""
    for eqn in jaxpr.eqns:
        found.add(str(eqn.primitive))
        for value in eqn.params.values():
            for item in value if isinstance(value, (list, tuple)) else [value]:
                inner = getattr(item, "jaxpr", item)
                if hasattr(inner, "eqns"):
                    primitives(inner, found)
    return found


def lane_step_primitives(name: str, num_arms: int = 4, lanes: int = 8) -> set[str]:
    alg = jaxbai.ALGORITHMS[name]()
    jobs = grid_jobs([jaxbai.bernoulli(np.linspace(0.9, 0.3, num_arms))], [1.0], 0.01, lanes)
    table, _ = _lanes.device_tables(jobs, np.arange(len(jobs)), 1)
    loaded = jax.vmap(lambda j: _lanes.load_job(alg, num_arms, jnp.int32(0), table, j))(
        jnp.arange(lanes)
    )
    pool = _lanes.Lanes(jnp.arange(lanes, dtype=jnp.int32), *loaded)
    step = _lanes._lanes_step(alg, jnp.int32(10**6), lambda ln: ln)
    return primitives(jax.make_jaxpr(step)(pool).jaxpr, set())


@pytest.mark.parametrize("name", LOWERABLE)
def test_per_sample_step_has_triton_rules(name: str) -> None:
    rules = {str(p) for p in lowering.triton_lowering_rules}
    missing = lane_step_primitives(name) - rules - KEY_WRAP
    assert not missing, f"{name}: no Triton lowering for {sorted(missing)}"


def test_the_check_can_fail() -> None:
    """DP-SE's epoch step gathers, which Triton cannot lower: the check sees it."""
    rules = {str(p) for p in lowering.triton_lowering_rules}
    assert "gather" in lane_step_primitives("dp_se") - rules
