"""The paper's Top Two algorithms (Table 1, Alg. 6–10) and TTUCB-DPA (Alg. 11), by factory.

`adap_tt_star_ratio` is a variant beyond the paper (docs/threshold-aware-challenger.md); `dp_tt`
and `eb_tci` are the later ε-global-DP algorithm of Jourdan & Azize (2025) and its non-private
reference (docs/dp-tt.md).
"""

from __future__ import annotations

import dataclasses
import numbers

from jaxbai import checks, estimators, mechanisms, thresholds
from jaxbai.toptwo.components import (
    Bonus,
    Threshold,
    bonus_gaussian,
    bonus_gaussian_global_counts,
    bonus_private_eq11,
    bonus_private_eq11_global_counts,
    bonus_private_time,
    bonus_private_time_global_counts,
    cost_gaussian,
    cost_private,
    threshold_aware_challenger,
    threshold_gaussian_heuristic,
    threshold_gaussian_theory,
    threshold_private_heuristic,
    threshold_private_theory,
    threshold_tilde_heuristic,
    threshold_tilde_theory,
)
from jaxbai.toptwo.dp_tt_components import (
    cost_kl_bernoulli,
    cost_private_bernoulli,
    empirical_best_leader,
    empirical_best_stopping,
    forced_tci_challenger,
    no_bonus,
    phase_tci_challenger,
    tci_challenger,
    threshold_dp_heuristic,
    threshold_dp_theory,
)
from jaxbai.toptwo.driver import TopTwo
from jaxbai.toptwo.episodic import EpisodicTopTwo
from jaxbai.toptwo.guarantees import (
    adap_tt_bound,
    adap_tt_star_bound,
    beta_optimal,
    beta_optimal_bernoulli,
    beta_optimal_modified,
    beta_optimal_private,
    ctb_tt_bound,
    t_star_beta,
    t_star_beta_bernoulli,
    with_guarantee,
)

__all__ = [
    "DP_TT_ETA_MAX",
    "DP_TT_ETA_MIN_HEURISTIC",
    "adap_tt",
    "adap_tt_star",
    "adap_tt_star_ratio",
    "ctb_tt",
    "dp_tt",
    "eb_tci",
    "gauss_ldp_tt",
    "ttucb",
    "ttucb_dpa",
]


_THRESHOLDS = {
    "gaussian": {"theory": threshold_gaussian_theory, "heuristic": threshold_gaussian_heuristic},
    "private": {"theory": threshold_private_theory, "heuristic": threshold_private_heuristic},
    "tilde": {"theory": threshold_tilde_theory, "heuristic": threshold_tilde_heuristic},
    "dp": {"theory": threshold_dp_theory, "heuristic": threshold_dp_heuristic},
}
_LEADER_BONUSES = {
    ("time", "per_arm"): bonus_private_time,
    ("eq11", "per_arm"): bonus_private_eq11,
    ("time", "global"): bonus_private_time_global_counts,
    ("eq11", "global"): bonus_private_eq11_global_counts,
}


def _threshold(kind: str, family: str) -> Threshold:
    if family not in thresholds.THRESHOLD_FAMILIES:
        raise ValueError(
            f"threshold must be one of {thresholds.THRESHOLD_FAMILIES}, got {family!r}"
        )
    return _THRESHOLDS[kind][family]


def _leader_bonus(leader_bonus: str, episodes: str) -> Bonus:
    """b^{G,ε} (Eq. 11) with k at n or at the count; the count is N with one global episode."""
    if leader_bonus not in ("time", "eq11"):
        raise ValueError(f"leader_bonus must be one of ('time', 'eq11'), got {leader_bonus!r}")
    return _LEADER_BONUSES[leader_bonus, estimators.check_episodes(episodes)]


def _check_beta_sigma(beta: float, sigma: float) -> None:
    checks.check_open_unit("beta", beta)
    checks.check_positive("sigma", sigma)


TTUCB_COSTS = ("gaussian", "kl_bernoulli")
"""The transportation costs `ttucb` offers."""


def ttucb(
    threshold: str = "heuristic", beta: float = 0.5, sigma: float = 0.5, cost: str = "gaussian"
) -> TopTwo:
    """TTUCB (Alg. 6; Jourdan & Degenne 2024): MLE, W^G and b^G (Eq. 3), c^G (Eq. 4). Not private.

    Args:
        threshold: ``"heuristic"`` (log((1 + log n)/δ)) or ``"theory"`` (Eq. 4).
        beta: tracking proportion β.
        sigma: sub-Gaussian σ (1/2 for rewards in [0, 1]).
        cost: ``"gaussian"`` (W^G, Eq. 3) or ``"kl_bernoulli"``, beyond the paper: the
            Bernoulli-KL cost of EB-TCI (`jaxbai.costs.kl_bernoulli_cost`) in the TC challenger
            and the GLR test, named ``ttucb_kl``. Its rewards must lie in [0, 1], and only the
            heuristic threshold is offered with it: Eq. (4) bounds the Gaussian statistic, which
            the KL one exceeds (Pinsker), so c^G would not make it δ-correct. Its allocation
            target and asymptotic bound are those of T*_{KL,β} (Jourdan et al. 2022).

    Examples:
        >>> alg = ttucb()
        >>> params = alg.params(delta=0.01)
        >>> kl = ttucb(cost="kl_bernoulli")
        >>> kl.name, kl.info.unit_interval
        ('ttucb_kl', True)
    """
    _check_beta_sigma(beta, sigma)
    if cost not in TTUCB_COSTS:
        raise ValueError(f"cost must be one of {TTUCB_COSTS}, got {cost!r}")
    kl = cost == "kl_bernoulli"
    if kl and threshold != "heuristic":
        raise ValueError(
            "cost='kl_bernoulli' takes threshold='heuristic' only: the theory threshold "
            "(Eq. 4) is proved for the Gaussian statistic, which the KL one exceeds"
        )
    alg = TopTwo(
        "ttucb_kl" if kl else "ttucb",
        estimators.MLE(unit_observations=kl),
        cost_kl_bernoulli if kl else cost_gaussian,
        bonus_gaussian,
        _threshold("gaussian", threshold),
        beta=beta,
        sigma=sigma,
        takes_epsilon=False,
    )
    if kl:
        return with_guarantee(alg, beta_optimal_bernoulli, t_star_beta_bernoulli)
    return with_guarantee(alg, beta_optimal, t_star_beta)


def ctb_tt(threshold: str = "heuristic", beta: float = 0.5) -> TopTwo:
    """CTB-TT (Alg. 7): TTUCB on randomised-response bits (CTB, Alg. 4), σ = 1/2; ε-local DP."""
    _check_beta_sigma(beta, 0.5)
    alg = TopTwo(
        "ctb_tt",
        estimators.CTB(),
        cost_gaussian,
        bonus_gaussian,
        _threshold("gaussian", threshold),
        beta=beta,
    )
    return with_guarantee(alg, beta_optimal, ctb_tt_bound)


def gauss_ldp_tt(threshold: str = "heuristic", beta: float = 0.5, gamma: float = 1e-3) -> TopTwo:
    """(ε, γ)-local DP TTUCB with the Gaussian mechanism (Alg. 8, Remark 13).

    Costs, bonuses and thresholds use σ² = 1/4 + σ²_{ε,γ} (Remark 13), not the σ = 1/2 printed
    in Alg. 8 (docs/semantics.md §7). ``gamma`` is an option of the participants' mechanism, a
    `jaxbai.mechanisms.GaussianNoise` (``alg.info.participant_mechanism.gamma``).

    Examples:
        >>> gauss_ldp_tt(gamma=0.01).info.participant_mechanism.gamma
        0.01
    """
    _check_beta_sigma(beta, 0.5)
    mechanism = mechanisms.GaussianNoise(gamma)
    return TopTwo(
        "gauss_ldp_tt",
        estimators.GaussianMechanism(participant_mechanism=mechanism),
        cost_gaussian,
        bonus_gaussian,
        _threshold("gaussian", threshold),
        beta=beta,
    )


def _episodic_name(name: str, episodes: str) -> str:
    """Registry name of an episodic variant: ``name`` per arm, ``name_global`` otherwise."""
    return name if estimators.check_episodes(episodes) == "per_arm" else f"{name}_global"


def ttucb_dpa(
    threshold: str = "heuristic", beta: float = 0.5, episodes: str = "per_arm"
) -> EpisodicTopTwo:
    """TTUCB-DPA (Alg. 11, Appendix H): TTUCB whose means change only at episode ends. Not private.

    Batched non-private BAI: after an episode ends, the pulls up to the next episode end are
    fixed without looking at any observation (`EpisodicTopTwo.plan`). Means are those of all
    rewards, with the local count Ñ they are based on (docs/semantics.md §17); leader b^G
    (Eq. 3) with Ñ and log n, TC challenger with the global counts, GLR stopping with (μ̃, Ñ).

    Args:
        threshold: ``"heuristic"`` (log((1 + log n)/δ)) or ``"theory"`` (Eq. 4 with Ñ).
        beta: tracking proportion β.
        episodes: ``"per_arm"`` (Alg. 11) or ``"global"`` (one global episode, Appendix H;
            the algorithm is then named ``ttucb_dpa_global``).

    Examples:
        >>> ttucb_dpa(episodes="global").name
        'ttucb_dpa_global'
    """
    _check_beta_sigma(beta, 0.5)
    return EpisodicTopTwo(
        _episodic_name("ttucb_dpa", episodes),
        estimators.DPA(episodes),
        cost_gaussian,
        bonus_gaussian if episodes == "per_arm" else bonus_gaussian_global_counts,
        _threshold("gaussian", threshold),
        beta=beta,
        takes_epsilon=False,
    )


def adap_tt(
    threshold: str = "heuristic",
    beta: float = 0.5,
    leader_bonus: str = "time",
    episodes: str = "per_arm",
) -> EpisodicTopTwo:
    """AdaP-TT (Alg. 9): DAF, W^G (Eq. 3), b^{G,ε} (Eq. 11), c^{G,ε} (Eq. 12); ε-global DP.

    Args:
        threshold: ``"heuristic"`` or ``"theory"`` (Eq. 12).
        beta: tracking proportion β.
        leader_bonus: ``"time"`` (default) evaluates k in b^{G,ε} at the number of samples so
            far, k = log₂ n + 2, so an arm's bonus keeps growing while it is not sampled.
            ``"eq11"`` evaluates k at the arm's local count, as Eq. (11) prints. With ``"eq11"``
            an arm whose early Laplace noise is very negative can be starved forever: its bonus
            never grows, so it is never the leader; its transportation cost is too large for it
            to be the challenger; so its phase never ends and the GLR test never passes. At small
            ε a clear fraction of runs then never stops (reported as censored;
            docs/semantics.md §10).
        episodes: ``"per_arm"`` (Alg. 5) or ``"global"`` (one global episode, Appendix H,
            docs/semantics.md §18; the algorithm is then named ``adap_tt_global``).
    """
    _check_beta_sigma(beta, 0.5)
    bound = adap_tt_bound if episodes == "per_arm" else None
    alg = EpisodicTopTwo(
        _episodic_name("adap_tt", episodes),
        estimators.DAF(episodes),
        cost_gaussian,
        _leader_bonus(leader_bonus, episodes),
        _threshold("private", threshold),
        beta=beta,
    )
    return with_guarantee(alg, beta_optimal, bound)


def adap_tt_star(
    threshold: str = "heuristic",
    beta: float = 0.5,
    leader_bonus: str = "time",
    episodes: str = "per_arm",
) -> EpisodicTopTwo:
    """AdaP-TT* (Alg. 10): DAF, W^{G,ε} (Eq. 13), c̃^{G,ε} (Eq. 14); ε-global DP.

    W^{G,ε} replaces W^G in both the TC challenger and the GLR stopping rule.

    See `adap_tt` for ``leader_bonus`` and ``episodes`` (``"global"``: named
    ``adap_tt_star_global``).

    Examples:
        >>> alg = adap_tt_star(threshold="heuristic")
        >>> params = alg.params(epsilon=0.5, delta=0.01)
    """
    _check_beta_sigma(beta, 0.5)
    bound = adap_tt_star_bound if episodes == "per_arm" else None
    alg = EpisodicTopTwo(
        _episodic_name("adap_tt_star", episodes),
        estimators.DAF(episodes),
        cost_private,
        _leader_bonus(leader_bonus, episodes),
        _threshold("tilde", threshold),
        beta=beta,
    )
    return with_guarantee(alg, beta_optimal_modified, bound)


def adap_tt_star_ratio(
    threshold: str = "heuristic",
    beta: float = 0.5,
    leader_bonus: str = "time",
    episodes: str = "per_arm",
) -> EpisodicTopTwo:
    """AdaP-TT* with the threshold-aware challenger: a variant beyond the paper; ε-global DP.

    `adap_tt_star` (Alg. 10) whose challenger is `threshold_aware_challenger`,
    C = argmin_{b ≠ B} W^{G,ε}_{B,b} / c̃^{G,ε}_{B,b} (Eq. 13, Eq. 14 or its heuristic form),
    instead of the TC challenger. The stopping rule is AdaP-TT*'s, so δ-correctness is that
    of Lemma 23 (docs/threshold-aware-challenger.md).

    Args: as `adap_tt_star` (``episodes="global"``: named ``adap_tt_star_ratio_global``).

    Examples:
        >>> adap_tt_star_ratio().challenger.__name__
        'threshold_aware_challenger'
    """
    alg = adap_tt_star(threshold, beta, leader_bonus, episodes)
    name = _episodic_name("adap_tt_star_ratio", episodes)
    return dataclasses.replace(alg, name=name, challenger=threshold_aware_challenger)


_DP_TT_CHALLENGERS = {
    "tci": (tci_challenger, "dp_tt"),
    "forced": (forced_tci_challenger, "dp_tt_forced"),
    "tci_phase": (phase_tci_challenger, "dp_tt_tci_phase"),
}
"""DP-TT's challengers by option value: (challenger, the algorithm's name)."""


DP_TT_ETA_MIN_HEURISTIC = 1.0
"""The least η DP-TT's heuristic threshold is accepted with. Measured on (0.7, 0.5, 0.45),
ε = 1, δ = 0.1, 1000 runs each: errors 25.1 % at η = 0.1, 14.7 % at 0.25, 9.0 % at 0.5, 4.1 %
at 1, 1.1 % at 2 (docs/dp-tt.md); below η = 1 the heuristic is not δ-correct there or within
sampling error of failing. The theory threshold takes any η in the range."""

DP_TT_ETA_MAX = 16.0
"""The largest η DP-TT takes: its phase counts lag the counts by up to a factor 1 + η, and τ
grows with it (same instance: mean τ 394 at η = 1, 1472 at η = 8); at η = 10⁹ no second phase
ever ends and no run stops."""


def _check_dp_tt_eta(eta: object, threshold: str) -> None:
    """ValueError for an η outside DP-TT's range (`DP_TT_ETA_MAX`, and
    `DP_TT_ETA_MIN_HEURISTIC` for the heuristic threshold)."""
    real = isinstance(eta, numbers.Real) and not isinstance(eta, bool)
    if not real or not 0 < eta <= DP_TT_ETA_MAX:
        raise ValueError(f"eta must be in (0, {DP_TT_ETA_MAX:g}], got {eta!r}")
    if threshold == "heuristic" and eta < DP_TT_ETA_MIN_HEURISTIC:
        raise ValueError(
            f"eta = {eta:g} < {DP_TT_ETA_MIN_HEURISTIC:g}: the heuristic threshold is not "
            'δ-correct on so fine a phase grid (docs/dp-tt.md); use threshold="theory"'
        )


def dp_tt(
    threshold: str = "heuristic", beta: float = 0.5, eta: float = 1.0, challenger: str = "tci"
) -> EpisodicTopTwo:
    """DP-TT (Jourdan & Azize 2025, arXiv 2510.17348): ε-global DP, d_ε transportation costs.

    `jaxbai.estimators.CumulativeLaplace` (phases on a geometric grid of ratio 1 + η, one
    Lap(1/ε) draw per phase on the sum of its rewards, nothing forgotten), the empirical-best
    leader ã = argmax clip(μ̃, 0, 1), the TCI challenger argmin_{a ≠ ã} C*_ε(ã, a, μ̃, N) +
    log N_a at the true counts N, β-tracking, and the GLR stop C*_ε(ã, a, μ̃, Ñ) ≥ c(Ñ_ã) +
    c(Ñ_a) for every a ≠ ã at the phase counts Ñ (docs/semantics.md §34).

    Args:
        threshold: ``"heuristic"`` (c(m) = ½ log((1 + log m)/δ)) or ``"theory"``
            (c(m) = log(1/δ) + log m · log(1 + εm/log m)).
        beta: tracking proportion β.
        eta: the phase grid's ratio η, in [`DP_TT_ETA_MIN_HEURISTIC`, `DP_TT_ETA_MAX`] with the
            heuristic threshold and in (0, `DP_TT_ETA_MAX`] with the theory one.
        challenger: ``"tci"`` (the specification), or a variant beyond the paper:
            ``"forced"`` (`jaxbai.toptwo.dp_tt_components.forced_tci_challenger`: the
            least-pulled arm a ≠ B while some a ≠ B has N_a < √n), named ``dp_tt_forced``,
            or ``"tci_phase"`` (`jaxbai.toptwo.dp_tt_components.phase_tci_challenger`: TCI at
            the phase counts Ñ), named ``dp_tt_tci_phase``. docs/dp-tt.md measures both: with
            the heuristic threshold, ``"tci_phase"`` was not δ-correct at ε = 0.1 on mu1 and
            mu2.

    Examples:
        >>> alg = dp_tt()
        >>> alg.info.privacy, alg.estimator.eta, dp_tt(challenger="forced").name
        ('global', 1.0, 'dp_tt_forced')
    """
    _check_beta_sigma(beta, 0.5)
    _check_dp_tt_eta(eta, threshold)
    if challenger not in _DP_TT_CHALLENGERS:
        choices = tuple(_DP_TT_CHALLENGERS)
        raise ValueError(f"challenger must be one of {choices}, got {challenger!r}")
    challenger_rule, name = _DP_TT_CHALLENGERS[challenger]
    alg = EpisodicTopTwo(
        name,
        estimators.CumulativeLaplace(eta=eta),
        cost_private_bernoulli,
        no_bonus,
        _threshold("dp", threshold),
        challenger=challenger_rule,
        stopping_rule=empirical_best_stopping,
        leader_rule=empirical_best_leader,
        beta=beta,
    )
    # the variants' challengers are not the specification's: no allocation target is claimed
    allocation = beta_optimal_private if challenger == "tci" else None
    return with_guarantee(alg, allocation, None)


def eb_tci(beta: float = 0.5) -> TopTwo:
    """EB-TCI (Jourdan et al. 2022), DP-TT's non-private reference: its sampling rule at ε = ∞
    on every sample (μ̂, N), Bernoulli-KL costs, GLR stop against log((1 + log n)/δ). Not private.

    Rewards must lie in [0, 1] (the Bernoulli-KL cost is defined there).

    Examples:
        >>> eb_tci().info.privacy, eb_tci().info.unit_interval
        ('none', True)
    """
    _check_beta_sigma(beta, 0.5)
    alg = TopTwo(
        "eb_tci",
        estimators.MLE(unit_observations=True),
        cost_kl_bernoulli,
        no_bonus,
        threshold_gaussian_heuristic,
        challenger=tci_challenger,
        stopping_rule=empirical_best_stopping,
        leader_rule=empirical_best_leader,
        beta=beta,
        takes_epsilon=False,
    )
    return with_guarantee(alg, beta_optimal_bernoulli, t_star_beta_bernoulli)
