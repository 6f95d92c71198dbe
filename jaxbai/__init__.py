"""jaxbai: differentially private best-arm identification as compiled, vmapped JAX programs.

Example:
    >>> import jaxbai
    >>> alg = jaxbai.adap_tt_star()
    >>> res = jaxbai.simulate(alg, jaxbai.bernoulli([0.9, 0.5]), epsilon=[1.0], runs=8)
"""

from jaxbai import engine, secure_noise, theory, trial
from jaxbai.dpse import DPSE, DPSEParams, DPSEState, dp_se
from jaxbai.engine import GridResult, Jobs, grid_jobs, run_grid, run_vmap
from jaxbai.estimators import CTB, DAF, MLE, GaussianMechanism, Release
from jaxbai.instances import PAPER_INSTANCES, Bernoulli, Beta, Gaussian, bernoulli, beta, gaussian
from jaxbai.secure_noise import privatize_locally
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
from jaxbai.trial import Trial, TrialStatus

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
    "GridResult",
    "Jobs",
    "Release",
    "SimulationResult",
    "TopTwo",
    "TopTwoParams",
    "TopTwoState",
    "Trial",
    "TrialStatus",
    "adap_tt",
    "adap_tt_star",
    "bernoulli",
    "beta",
    "ctb_tt",
    "dp_se",
    "engine",
    "gauss_ldp_tt",
    "gaussian",
    "grid_jobs",
    "privatize_locally",
    "run_grid",
    "run_vmap",
    "secure_noise",
    "simulate",
    "theory",
    "trial",
    "ttucb",
]
