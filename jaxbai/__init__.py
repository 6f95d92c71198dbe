"""jaxbai: differentially private best-arm identification as compiled, vmapped JAX programs.

Example:
    >>> import jaxbai
    >>> alg = jaxbai.adap_tt_star()
    >>> res = jaxbai.simulate(alg, jaxbai.bernoulli([0.9, 0.5]), epsilon=[1.0], runs=8)
"""

from jaxbai.dpse import DPSE, DPSEParams, DPSEState, dp_se
from jaxbai.estimators import CTB, DAF, MLE, GaussianMechanism, Release
from jaxbai.instances import PAPER_INSTANCES, Bernoulli, Beta, Gaussian, bernoulli, beta, gaussian
from jaxbai.simulate import SimulationResult, simulate
from jaxbai.toptwo import (
    TopTwo,
    TopTwoParams,
    TopTwoState,
    adap_tt,
    adap_tt_star,
    ctb_tt,
    gauss_ldp_tt,
    ttucb,
)

ALGORITHMS = {
    "ttucb": ttucb,
    "ctb_tt": ctb_tt,
    "gauss_ldp_tt": gauss_ldp_tt,
    "adap_tt": adap_tt,
    "adap_tt_star": adap_tt_star,
    "dp_se": dp_se,
}
"""Factories by name."""

__all__ = [
    "ALGORITHMS",
    "CTB",
    "DAF",
    "DPSE",
    "MLE",
    "PAPER_INSTANCES",
    "Bernoulli",
    "Beta",
    "DPSEParams",
    "DPSEState",
    "Gaussian",
    "GaussianMechanism",
    "Release",
    "SimulationResult",
    "TopTwo",
    "TopTwoParams",
    "TopTwoState",
    "adap_tt",
    "adap_tt_star",
    "bernoulli",
    "beta",
    "ctb_tt",
    "dp_se",
    "gauss_ldp_tt",
    "gaussian",
    "simulate",
    "ttucb",
]
