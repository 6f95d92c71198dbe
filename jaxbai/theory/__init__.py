"""Characteristic times, lower bounds, regime switches and asymptotic upper bounds.

Every characteristic time is the value of a zero-sum game (Eq. 1), solved to a certified
relative accuracy. The package is split by concern:

* :mod:`jaxbai.theory.divergences`: KL between Bernoulli arms and the local-DP contraction c(ε).
* :mod:`jaxbai.theory.characteristic_times`: T*_KL, T*_TV, T*_TV², local T*_ℓ (Theorem 10),
  global T*_g (Theorem 17), their relaxations (Corollaries 11 and 18) and proxies.
* :mod:`jaxbai.theory.bounds`: lower bounds on the expected sample complexity, privacy-regime
  switches and the asymptotic upper bounds of the algorithms.

Every public name is re-exported here, e.g. ``jaxbai.theory.t_star_global``.
"""

from jaxbai.theory.bounds import (
    adap_tt_bound,
    adap_tt_star_bound,
    ctb_tt_bound,
    g1,
    g2,
    lower_bound_samples,
    practical_bound,
    regime_switch,
)
from jaxbai.theory.characteristic_times import (
    DIVERGENCES,
    SolverInfo,
    hardness,
    t_star,
    t_star_global,
    t_star_global_proxy,
    t_star_global_relaxed,
    t_star_local,
    t_star_local_relaxed,
    t_star_tv_closed_form,
)
from jaxbai.theory.divergences import c_local, kl_bernoulli

__all__ = [
    "DIVERGENCES",
    "SolverInfo",
    "adap_tt_bound",
    "adap_tt_star_bound",
    "c_local",
    "ctb_tt_bound",
    "g1",
    "g2",
    "hardness",
    "kl_bernoulli",
    "lower_bound_samples",
    "practical_bound",
    "regime_switch",
    "t_star",
    "t_star_global",
    "t_star_global_proxy",
    "t_star_global_relaxed",
    "t_star_local",
    "t_star_local_relaxed",
    "t_star_tv_closed_form",
]
