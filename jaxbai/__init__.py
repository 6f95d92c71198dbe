"""jaxbai: differentially private best-arm identification as compiled, vmapped JAX programs.

Examples:
    >>> import jaxbai
    >>> alg = jaxbai.adap_tt_star()
    >>> res = jaxbai.simulate(alg, jaxbai.bernoulli([0.9, 0.5]), epsilon=[1.0], runs=8)
"""

from jaxbai import audit, base, engine, registry, simulation, theory, trial
from jaxbai._devices import use_cpu_cores  # sets the default CPU device count on import
from jaxbai.base import Algorithm, AlgorithmInfo, Estimator, Instance, Release
from jaxbai.compilation import compilation_cache
from jaxbai.conformance import ConformanceReport, check
from jaxbai.dpse import DPSE, DPSEParams, DPSEState, dp_se, dp_se_published
from jaxbai.engine import (
    GridResult,
    Jobs,
    TrajectoryRecord,
    grid_jobs,
    record_trajectories,
    run_grid,
    run_vmap,
)
from jaxbai.estimators import CTB, DAF, DPA, MLE, CumulativeLaplace, GaussianMechanism
from jaxbai.instances import (
    PAPER_INSTANCES,
    Bernoulli,
    Beta,
    Gaussian,
    RewardTable,
    bernoulli,
    beta,
    gaussian,
    reward_table,
)
from jaxbai.registry import ALGORITHMS, AlgorithmEntry, register, unregister
from jaxbai.simulation import SimulationResult, simulate
from jaxbai.toptwo import (
    EpisodicTopTwo,
    TopTwo,
    TopTwoParams,
    TopTwoState,
    adap_tt,
    adap_tt_published,
    adap_tt_star,
    adap_tt_star_ratio,
    ctb_tt,
    dp_tt,
    eb_tci,
    gauss_ldp_tt,
    ttucb,
    ttucb_dpa,
    ttucb_published,
)
from jaxbai.trial import Trial, TrialStatus, privatize_locally
from jaxbai.version import __version__ as __version__

__all__ = [
    "ALGORITHMS",
    "CTB",
    "DAF",
    "DPA",
    "DPSE",
    "MLE",
    "PAPER_INSTANCES",
    "Algorithm",
    "AlgorithmEntry",
    "AlgorithmInfo",
    "Bernoulli",
    "Beta",
    "ConformanceReport",
    "CumulativeLaplace",
    "DPSEParams",
    "DPSEState",
    "EpisodicTopTwo",
    "Estimator",
    "Gaussian",
    "GaussianMechanism",
    "GridResult",
    "Instance",
    "Jobs",
    "Release",
    "RewardTable",
    "SimulationResult",
    "TopTwo",
    "TopTwoParams",
    "TopTwoState",
    "TrajectoryRecord",
    "Trial",
    "TrialStatus",
    "adap_tt",
    "adap_tt_published",
    "adap_tt_star",
    "adap_tt_star_ratio",
    "audit",
    "base",
    "bernoulli",
    "beta",
    "check",
    "compilation_cache",
    "ctb_tt",
    "dp_se",
    "dp_se_published",
    "dp_tt",
    "eb_tci",
    "engine",
    "gauss_ldp_tt",
    "gaussian",
    "grid_jobs",
    "privatize_locally",
    "record_trajectories",
    "register",
    "registry",
    "reward_table",
    "run_grid",
    "run_vmap",
    "simulate",
    "simulation",
    "theory",
    "trial",
    "ttucb",
    "ttucb_dpa",
    "ttucb_published",
    "unregister",
    "use_cpu_cores",
]
