"""Characteristic times, lower bounds, regime switches and asymptotic upper bounds.

Every characteristic time is the value of a zero-sum game (Eq. 1), solved to a certified
relative accuracy. The package is split by concern:

* `jaxbai.theory.divergences`: KL between Bernoulli arms and the local-DP contraction c(ε).
* `jaxbai.theory.private_divergences`: the signed private divergences d±_ε and the private
  transportation cost C*_ε of DP-TT (Jourdan & Azize 2025, arXiv 2510.17348).
* `jaxbai.theory.characteristic_times`: T*_KL, T*_TV, T*_TV², local T*_ℓ (Theorem 10),
  global T*_g (Theorem 17), their relaxations (Corollaries 11 and 18) and proxies, and the
  ε-global-DP T*_ε of Jourdan & Azize (2025).
* `jaxbai.theory.bounds`: lower bounds on the expected sample complexity, privacy-regime
  switches, the ε from which privacy is free, and the asymptotic upper bounds of the algorithms.

Every public name is re-exported here, e.g. ``jaxbai.theory.t_star_global``.
"""

from jaxbai.theory.bounds import (
    adap_tt_bound,
    adap_tt_star_bound,
    ctb_tt_bound,
    free_privacy_epsilon,
    g1,
    g2,
    lower_bound_dp,
    lower_bound_samples,
    practical_bound,
    regime_switch,
)
from jaxbai.theory.characteristic_times import (
    DIVERGENCES,
    SolverInfo,
    hardness,
    t_star,
    t_star_dp,
    t_star_global,
    t_star_global_proxy,
    t_star_global_relaxed,
    t_star_local,
    t_star_local_relaxed,
    t_star_tv_closed_form,
)
from jaxbai.theory.divergences import c_local, kl_bernoulli
from jaxbai.theory.private_divergences import d_minus_eps, d_plus_eps, g_eps, private_cost

__all__ = [
    "DIVERGENCES",
    "SolverInfo",
    "adap_tt_bound",
    "adap_tt_star_bound",
    "c_local",
    "ctb_tt_bound",
    "d_minus_eps",
    "d_plus_eps",
    "free_privacy_epsilon",
    "g1",
    "g2",
    "g_eps",
    "hardness",
    "kl_bernoulli",
    "lower_bound_dp",
    "lower_bound_samples",
    "practical_bound",
    "private_cost",
    "regime_switch",
    "t_star",
    "t_star_dp",
    "t_star_global",
    "t_star_global_proxy",
    "t_star_global_relaxed",
    "t_star_local",
    "t_star_local_relaxed",
    "t_star_tv_closed_form",
]
