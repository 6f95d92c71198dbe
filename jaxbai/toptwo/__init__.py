"""The Top Two meta-algorithm (Alg. 1) and its instances (Table 1, Alg. 6–10; DP-TT, EB-TCI).

One driver, `TopTwo` (or `EpisodicTopTwo` for an episodic estimator), is assembled from small
components, in the style of optax:

* an estimator (`jaxbai.estimators`): MLE, CTB, Gaussian mechanism, DAF, DPA or DP-TT's
  `jaxbai.estimators.CumulativeLaplace`;
* a transportation cost ``cost(mu_a, mu_b, w_a, w_b, params)``: W^G (Eq. 3), W^{G,ε} (Eq. 13),
  the Bernoulli-KL cost or DP-TT's C*_ε;
* a leader ``leader_rule(alg, state, params) -> arm`` (UCB by default; the empirical best in
  DP-TT and EB-TCI) and its bonus ``bonus(state, params) -> (K,)``: b^G (Eq. 3) or b^{G,ε}
  (Eq. 11);
* a stopping threshold ``threshold(mu_a, mu_b, w_a, w_b, n, num_arms, params)``;
* a challenger rule ``challenger(alg, state, leader, params) -> arm`` (TC challenger by default;
  `threshold_aware_challenger`, a variant beyond the paper, in `adap_tt_star_ratio`; the TCI
  challenger in DP-TT and EB-TCI),
  a proportion ``tracking_beta(alg, state, leader, challenger, params) -> β`` (fixed β by
  default, so a user can plug in e.g. an IDS-style adaptive β) and the rule that uses it,
  ``tracking(state, β)`` (β-tracking by default; a β-coin in the published code's variants);
* a stopping rule ``stopping_rule(alg, state, params) -> (stop, â)`` (the GLR test, Eq. 2)
  and a tie rule ``ties`` (per-run random priority, or the lowest index).

`jaxbai.toptwo.published` rebuilds the published code's TTUCB and AdaP-TT from such components
(docs/published-code.md); `jaxbai.toptwo.dp_tt_components` holds DP-TT's and EB-TCI's
(docs/dp-tt.md).

Every component is a plain function of arrays; swap one with `dataclasses.replace`.

Iteration order (docs/semantics.md §2–6): the first K samples pull arms 0..K−1; afterwards each
iteration computes the recommendation â = argmax μ̃, the GLR stopping test of â against every
b ≠ â (Eq. 2), and only then the leader B (UCB), the challenger C (TC, global counts N) and the
tracking decision: L_B ← L_B + 1, pull B iff N^B_B ≤ β·L_B. DAF phase switches happen inside
`update`, right after the observation that triggers them, i.e. before the next iteration's
recommendation. Ties in every argmax/argmin are broken by a per-run random arm priority drawn at
`init` (``ties="random"``), so results are invariant in distribution to permuting the arms.
"""

from jaxbai.toptwo import dp_tt_components, guarantees, published
from jaxbai.toptwo.components import (
    beta_tracking,
    bonus_gaussian,
    bonus_gaussian_global_counts,
    bonus_private_eq11,
    bonus_private_eq11_global_counts,
    bonus_private_time,
    bonus_private_time_global_counts,
    cost_gaussian,
    cost_private,
    fixed_beta,
    glr_pair,
    glr_pairs_passed,
    glr_stopping,
    leader_side,
    step_key,
    tc_challenger_gaussian_cost,
    tc_challenger_private_cost,
    threshold_aware_challenger,
    threshold_gaussian_heuristic,
    threshold_gaussian_theory,
    threshold_private_heuristic,
    threshold_private_theory,
    threshold_tilde_heuristic,
    threshold_tilde_theory,
    transportation_cost_challenger,
    ucb_leader,
)
from jaxbai.toptwo.driver import TIE_RULES, TopTwo
from jaxbai.toptwo.episodic import EpisodicTopTwo, PerEpisode
from jaxbai.toptwo.factories import (
    DP_TT_ETA_MAX,
    DP_TT_ETA_MIN_HEURISTIC,
    adap_tt,
    adap_tt_star,
    adap_tt_star_ratio,
    ctb_tt,
    dp_tt,
    eb_tci,
    gauss_ldp_tt,
    ttucb,
    ttucb_dpa,
)
from jaxbai.toptwo.published import adap_tt_published, ttucb_published
from jaxbai.toptwo.state import TopTwoParams, TopTwoState

__all__ = [
    "DP_TT_ETA_MAX",
    "DP_TT_ETA_MIN_HEURISTIC",
    "TIE_RULES",
    "EpisodicTopTwo",
    "PerEpisode",
    "TopTwo",
    "TopTwoParams",
    "TopTwoState",
    "adap_tt",
    "adap_tt_published",
    "adap_tt_star",
    "adap_tt_star_ratio",
    "beta_tracking",
    "bonus_gaussian",
    "bonus_gaussian_global_counts",
    "bonus_private_eq11",
    "bonus_private_eq11_global_counts",
    "bonus_private_time",
    "bonus_private_time_global_counts",
    "cost_gaussian",
    "cost_private",
    "ctb_tt",
    "dp_tt",
    "dp_tt_components",
    "eb_tci",
    "fixed_beta",
    "gauss_ldp_tt",
    "glr_pair",
    "glr_pairs_passed",
    "glr_stopping",
    "guarantees",
    "leader_side",
    "published",
    "step_key",
    "tc_challenger_gaussian_cost",
    "tc_challenger_private_cost",
    "threshold_aware_challenger",
    "threshold_gaussian_heuristic",
    "threshold_gaussian_theory",
    "threshold_private_heuristic",
    "threshold_private_theory",
    "threshold_tilde_heuristic",
    "threshold_tilde_theory",
    "transportation_cost_challenger",
    "ttucb",
    "ttucb_dpa",
    "ttucb_published",
    "ucb_leader",
]
