"""Every CPU core by default: what a fresh interpreter that imports jaxbai gets."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys

import pytest
from _flags import xla_flags

from jaxbai._devices import available_cores

WARNING = "jaxbai: this grid runs on 1 of"

SIMULATE = """
import jax, jaxbai
res = jaxbai.simulate(jaxbai.ttucb(), jaxbai.bernoulli([0.9, 0.5]), runs=4)
print(json.dumps({"devices": len(jax.devices()), "taus": res.tau.tolist()}))
"""


def run(script: str, **env: str) -> subprocess.CompletedProcess:
    """``script`` in a fresh interpreter, without any device-count setting but ``env``. It
    compiles with the suite's compiler options (`_flags.xla_flags`: they fix no device count)
    unless ``env`` sets ``XLA_FLAGS``."""
    environ = {k: v for k, v in os.environ.items() if k != "JAX_NUM_CPU_DEVICES"}
    environ["XLA_FLAGS"] = xla_flags()
    proc = subprocess.run(
        [sys.executable, "-c", "import json\n" + script],
        env=environ | {"JAX_PLATFORMS": "cpu"} | env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.mark.integration
def test_fresh_interpreter_uses_every_core():
    """``import jaxbai`` then `jaxbai.simulate` runs on one CPU device per available core,
    silently; the same script with the device count fixed to 1 by the user gets 1 device, also
    silently (the user's choice wins), and the same results."""
    every = run(SIMULATE)
    assert json.loads(every.stdout)["devices"] == available_cores()
    one = run(SIMULATE, XLA_FLAGS=xla_flags(1))
    assert json.loads(one.stdout)["devices"] == 1
    assert json.loads(one.stdout)["taus"] == json.loads(every.stdout)["taus"]
    assert WARNING not in every.stderr + one.stderr


@pytest.mark.integration
def test_jax_started_first_warns_once_and_use_cpu_cores_explains():
    """When JAX computed before ``import jaxbai`` the count is fixed at one device: two grids
    print one warning (on a multi-core machine), and `jaxbai.use_cpu_cores` with another count
    raises a RuntimeError that says what to do (with the count JAX has, it returns it)."""
    script = """
import jax, jax.numpy as jnp
jnp.zeros(1).block_until_ready()
import jaxbai
for _ in range(2):
    jaxbai.simulate(jaxbai.ttucb(), jaxbai.bernoulli([0.9, 0.5]), runs=2)
try:
    jaxbai.use_cpu_cores(2)
    error = None
except RuntimeError as err:
    error = str(err)
print(json.dumps({"devices": len(jax.devices()), "same": jaxbai.use_cpu_cores(1), "error": error}))
"""
    proc = run(script)
    out = json.loads(proc.stdout)
    assert out["devices"] == 1 and out["same"] == 1
    assert proc.stderr.count(WARNING) == (1 if available_cores() > 1 else 0)
    assert "before the first JAX computation" in out["error"]


def test_use_cpu_cores_rejects_bad_counts_before_touching_jax():
    """A count that is not a positive integer is a ValueError, whatever JAX's state."""
    import jaxbai

    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(ValueError, match="positive integer"):
            jaxbai.use_cpu_cores(bad)


NOISES = ("ttucb", "ctb_tt", "gauss_ldp_tt", "adap_tt", "dp_se")
"""One algorithm per kind of float-heavy step: the thresholds' and bonuses' square roots and
logarithms alone, randomised response, Gaussian and Laplace noise (with episodes), DP-SE's
epochs."""

LEVELS = """
import jaxbai
instance = jaxbai.bernoulli([0.8, 0.6, 0.5])
out = {}
for name in NAMES:
    res = jaxbai.simulate(jaxbai.ALGORITHMS[name](), instance, epsilon=[0.5, 5.0], runs=6)
    out[name] = [res.tau.tolist(), res.recommendation.tolist()]
print(json.dumps(out))
"""


@pytest.mark.integration
def test_the_suites_compiler_options_change_no_result():
    """The suite compiles with LLVM's optimisation level 1 and XLA CPU's older elementwise
    emitter (`conftest.SUITE_XLA_FLAGS`): the results here equal, bit for bit, a fresh
    interpreter's with XLA's defaults."""
    from conftest import SUITE_XLA_FLAGS

    assert SUITE_XLA_FLAGS in os.environ["XLA_FLAGS"]
    script = LEVELS.replace("NAMES", repr(NOISES))
    here = io.StringIO()
    with contextlib.redirect_stdout(here):
        exec(script, {"json": json})
    default = run(script, XLA_FLAGS="")  # XLA's defaults
    assert json.loads(here.getvalue()) == json.loads(default.stdout)
