"""Plain-Python transcription of the paper's pseudocode, for trajectory-equality tests.

Written from the paper (Alg. 1, 4–11, Eq. 3/4/11–14/20, Lemma 23, Appendix H) and the fixed
semantics of ``docs/semantics.md``, independently of `jaxbai` (it imports nothing from it): loops
and Python floats (double precision), no JAX, no NumPy in the algorithms. The costs, bonuses and
stopping thresholds are `experiments.studies.reference_formulas`.

Both drivers consume pre-drawn tables, so the same randomness can be fed to the JAX code:

* ``observations[a][j]``: the j-th observation of arm a, as the algorithm sees it (already
  privatised for the local-DP algorithms; see `randomised_response`, `gaussian_mechanism`);
* ``laplace[a][i]``: standard Lap(1) draws; the i-th noisy release of arm a (DAF phase i + 1,
  DP-SE epoch i + 1) adds ``laplace[a][i] * scale`` with the mechanism's scale. With one global
  episode (docs/semantics.md §18) every arm releases at each episode end, in the same order.

Ties in every argmax/argmin go to the tied arm with the highest ``priority`` (docs/semantics.md §6);
with one global episode, to the highest rank in the priority order rotated with n (§18).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from experiments.studies.reference_formulas import (
    c_gaussian,
    c_private,
    c_tilde_private,
    gaussian_bonus,
    gaussian_cost,
    heuristic_gaussian,
    heuristic_private,
    heuristic_tilde,
    k_index,
    kl_cost,
    private_bonus,
    private_cost,
)

UNIT_SIGMA2 = 0.25
"""σ² = 1/4: rewards (or randomised-response bits) in [0, 1] are 1/2-sub-Gaussian."""


@dataclass(frozen=True)
class Trajectory:
    """Outcome of one run: pulled arms in order, τ (= len(arms)) and the recommendation.

    ``deferred`` (not part of equality) lists the samples at which the reference followed a
    given trajectory because its own decision was a floating-point near-tie (see `top_two`).
    ``rounds`` (not part of equality; compare it explicitly) is the number of rounds of
    adaptivity C(τ) (Appendix H, docs/semantics.md §20): Σ_a k_a with per-arm episodes, the
    completed global episodes + 1 with one global episode, the completed DP-SE epochs, −1 for
    the fully sequential algorithms.
    """

    arms: tuple[int, ...]
    tau: int
    recommendation: int
    deferred: tuple[int, ...] = field(default=(), compare=False)
    rounds: int = field(default=-1, compare=False)


# ----------------------------------------------------------------------------- tie-breaking
def argmax(values: Sequence[float], priority: Sequence[float], allowed=None) -> int:
    """arg max over ``allowed`` arms; ties go to the highest priority (docs/semantics.md §6)."""
    arms = range(len(values)) if allowed is None else allowed
    best = max(values[a] for a in arms)
    return max((a for a in arms if values[a] == best), key=lambda a: priority[a])


def argmin(values: Sequence[float], priority: Sequence[float], allowed=None) -> int:
    """arg min over ``allowed`` arms; ties go to the highest priority."""
    return argmax([-v for v in values], priority, allowed)


def near(x: float, y: float, tolerance: float) -> bool:
    """Distinct values closer than ``tolerance`` (relative): a tie in lower precision."""
    return x != y and abs(x - y) <= tolerance * max(abs(x), abs(y))


# ----------------------------------------------------------------------------- local mechanisms
def randomised_response(reward: float, uniform: float, epsilon: float) -> float:
    """CTB bit r̃ ~ Ber((r(e^ε − 1) + 1)/(e^ε + 1)) (Alg. 4, line 2), from a uniform draw.

    The probability is evaluated as (r(1 − e^{−ε}) + e^{−ε})/(1 + e^{−ε}), the same number
    without overflow for large ε (ε = ∞ gives r).
    """
    tail = math.exp(-epsilon)
    p = (reward * (1 - tail) + tail) / (1 + tail)
    return 1.0 if uniform < p else 0.0


def gaussian_mechanism_sigma(epsilon: float, gamma: float) -> float:
    """σ_{ε,γ} = √(2 log(1.25/γ))/ε (Remark 13, Alg. 8)."""
    return math.sqrt(2 * math.log(1.25 / gamma)) / epsilon


def gaussian_mechanism(reward: float, normal: float, epsilon: float, gamma: float) -> float:
    """r̃ = r + σ_{ε,γ}·g with g ~ N(0, 1) (Alg. 8, line 11)."""
    return reward + gaussian_mechanism_sigma(epsilon, gamma) * normal


# ----------------------------------------------------------------------------- Top Two (Alg. 1)
TOP_TWO = (
    "ttucb",
    "ctb_tt",
    "gauss_ldp_tt",
    "adap_tt",
    "adap_tt_star",
    "adap_tt_star_ratio",
    "ttucb_dpa",
)
EPISODIC = ("adap_tt", "adap_tt_star", "adap_tt_star_ratio", "ttucb_dpa")
"""Estimators whose means change only at episode ends: DAF (Alg. 5) and DPA (Alg. 11)."""


def top_two(
    name: str,
    observations: Sequence[Sequence[float]],
    priority: Sequence[float],
    delta: float,
    epsilon: float = math.inf,
    threshold: str = "heuristic",
    leader_bonus: str = "time",
    episodes: str = "per_arm",
    laplace: Sequence[Sequence[float]] | None = None,
    beta: float = 0.5,
    gamma: float = 1e-3,
    max_samples: int = 10**6,
    follow: Sequence[int] | None = None,
    tolerance: float = 0.0,
    censor: bool = False,
    cost: str = "gaussian",
) -> Trajectory:
    """One run of an instance of Alg. 1 (Table 1; standalone forms Alg. 6–10; DPA: Alg. 11).

    ttucb / ctb_tt / gauss_ldp_tt (Alg. 6/7/8): MLE of the observations, W^G and b^G (Eq. 3),
    threshold c^G (Eq. 4) or log((1 + log n)/δ). adap_tt (Alg. 9): DAF (Alg. 5), W^G, b^{G,ε}
    (Eq. 11), c^{G,ε} (Eq. 12) or its δ → 0 form. adap_tt_star (Alg. 10): as adap_tt with
    W^{G,ε} (Eq. 13) and c̃^{G,ε} (Eq. 14). adap_tt_star_ratio (beyond the paper,
    docs/threshold-aware-challenger.md): adap_tt_star whose challenger is
    argmin_{b ≠ B} W^{G,ε}_{B,b}/c̃_{B,b}, both at (μ̃, N) and n. DAF rows use the local counts
    Ñ in the leader and in the GLR test, global counts N in the TC challenger (Alg. 9/10, line
    15). ttucb_dpa
    (Alg. 11, docs/semantics.md §17): TTUCB (σ = 1/2, W^G, b^G with the log of the samples so
    far, c^G or log((1 + log n)/δ)) on the DPA estimator: at an arm's episode end its mean
    becomes the mean of all its rewards so far and Ñ_a = N_a (no forgetting, no noise); (μ̃, Ñ)
    in the leader and the GLR test, N in the TC challenger.

    With ``episodes="global"`` (DAF and DPA; Appendix H, docs/semantics.md §18) each arm's first
    pull still closes its phase 0, then one episode is shared by all arms: it ends after the
    update at which N_a ≥ 2·N_a(start of the episode) for every arm, and every arm's statistics
    are refreshed at once (DAF: mean of its rewards in the episode + Lap(1/(ε Ñ_a)), Ñ_a = its
    count in the episode; DPA: mean of all its rewards, Ñ_a = N_a). The leader's bonus then reads
    the global counts N instead of Ñ (docs/semantics.md §18).

    Args:
        observations: per-arm observation sequences (already privatised for local DP).
        priority: tie-breaking priority of each arm.
        episodes: ``"per_arm"`` (Alg. 5/11) or ``"global"`` (Appendix H); episodic rows only.
        laplace: standard Lap(1) draws per arm and release (DAF only; zeros if omitted).
        follow: a trajectory computed in lower precision (τ = ``len(follow)``). Where its next
            outcome (arm, or stop) differs from ours and one of our decisions — an arg max/min
            or a GLR comparison W ≥ c — was within ``tolerance`` (relative) of going the other
            way, we take its outcome and record the sample in ``Trajectory.deferred``. Any other
            difference is kept, so it shows up as a divergence.
        tolerance: relative width of a floating-point near-tie.
        censor: return a censored run (recommendation −1, τ = ``max_samples``; docs/semantics.md
            §14) instead of raising when there is no stop within ``max_samples``.
        cost: ttucb only: ``"gaussian"`` (W^G) or ``"kl_bernoulli"`` (inf_x of the count-weighted
            Bernoulli KL, `experiments.studies.reference_dp_tt.kl_cost`), in the challenger and
            the GLR test alike.

    Raises:
        RuntimeError: no stop within ``max_samples`` (unless ``censor``).
    """
    if name not in TOP_TWO:
        raise ValueError(name)
    if episodes not in ("per_arm", "global") or (episodes == "global" and name not in EPISODIC):
        raise ValueError(f"episodes={episodes!r} for {name}")
    if cost not in ("gaussian", "kl_bernoulli") or (cost != "gaussian" and name != "ttucb"):
        raise ValueError(f"cost={cost!r} for {name}")
    num_arms = len(observations)
    daf = name in ("adap_tt", "adap_tt_star", "adap_tt_star_ratio")
    dpa = name == "ttucb_dpa"
    episodic = daf or dpa
    one_episode = episodes == "global"
    sigma2 = UNIT_SIGMA2
    if name == "gauss_ldp_tt":
        sigma2 += gaussian_mechanism_sigma(epsilon, gamma) ** 2  # Remark 13, docs/semantics.md §7
    cost_eps = name in ("adap_tt_star", "adap_tt_star_ratio")

    def transport(mu_a, mu_b, w_a, w_b):
        if cost_eps:
            return private_cost(mu_a, mu_b, w_a, w_b, sigma2, epsilon)
        if cost == "kl_bernoulli":
            return kl_cost(mu_a, mu_b, w_a, w_b)
        return gaussian_cost(mu_a, mu_b, w_a, w_b, sigma2)

    def stop_threshold(mu_a, mu_b, w_a, w_b, samples):
        theory = threshold == "theory"
        if name == "adap_tt":
            if theory:
                return c_private(w_a, w_b, delta, epsilon, sigma2, num_arms)
            return heuristic_private(w_a, w_b, delta, epsilon, sigma2)
        if cost_eps:
            if theory:
                return c_tilde_private(mu_a, mu_b, w_a, w_b, delta, epsilon, sigma2, num_arms)
            return heuristic_tilde(mu_a, mu_b, w_a, w_b, delta, epsilon, sigma2)
        if theory:
            return c_gaussian(w_a, w_b, delta, num_arms)
        return heuristic_gaussian(samples, delta)

    def bonus(a, local, samples):
        w_a = counts[a] if one_episode else local[a]  # docs/semantics.md §18
        if not daf:
            return gaussian_bonus(w_a, samples, sigma2)
        k = k_index(samples if leader_bonus == "time" else w_a)
        return private_bonus(w_a, k, epsilon)

    def noise(a, i):
        return 0.0 if laplace is None else laplace[a][i]

    # Initialisation (Alg. 1 line 2; docs/semantics.md §2): pull arms 0..K−1 once.
    arms = list(range(num_arms))
    deferred: list[int] = []
    counts = [1] * num_arms  # N
    leader_counts = [0] * num_arms  # L
    leader_pulls = [0] * num_arms  # N^a_a
    totals = [observations[a][0] for a in range(num_arms)]  # sums of all rewards
    if daf:
        # DAF (Alg. 5 / Alg. 9 line 2): T_1(a) = K+1, Ñ = 1, μ̃ = r + Lap(1/ε), phase k = 1.
        means = [observations[a][0] + noise(a, 0) / epsilon for a in range(num_arms)]
    else:
        # MLE (Alg. 2); DPA (Alg. 11): T_1(a) = K+1, μ̃ = r, Ñ = 1, phase k = 1.
        means = list(totals)
    local = [1] * num_arms if episodic else counts  # Ñ (the MLE uses N itself)
    if episodic:
        # Phase 0 of every arm closed with its first pull (docs/semantics.md §11, §17, §18).
        phase_start = [1] * num_arms  # N at the start of the current episode: N_{T_k(a),a}
        phase_sum = [0.0] * num_arms  # DAF: rewards since the episode start (forgetting)
        released = [1] * num_arms  # noisy releases so far (DAF: index into laplace[a])
        rounds = 1 if one_episode else num_arms  # docs/semantics.md §20
    else:
        rounds = -1

    def glr(rec):
        """[(W_{rec,b}, c_{rec,b}) for b ≠ rec] on (μ̃, Ñ) (Eq. 2)."""
        return [
            (
                transport(means[rec], means[b], local[rec], local[b]),
                stop_threshold(means[rec], means[b], local[rec], local[b], samples),
            )
            for b in range(num_arms)
            if b != rec
        ]

    def near_set(values, chosen, allowed=None):
        """``chosen`` first, then the allowed arms whose value is a near-tie with it."""
        candidates = range(len(values)) if allowed is None else allowed
        return [chosen, *(a for a in candidates if near(values[a], values[chosen], tolerance))]

    def sampling(leader):
        """Arms pulled under ``leader`` (TC challenger, β-tracking; lines 9–10, note 4).

        The exact choice first, then challengers that are near-ties with it. The threshold-aware
        challenger minimises W/c instead of W, both at (μ̃, N) and n.
        """
        others = [a for a in range(num_arms) if a != leader]
        mu, w = means[leader], counts[leader]
        tc = [transport(mu, means[a], w, counts[a]) for a in range(num_arms)]
        if name == "adap_tt_star_ratio":
            tc = [
                tc[a] / stop_threshold(mu, means[a], w, counts[a], samples) if a != leader else 0.0
                for a in range(num_arms)
            ]
        challenger = argmin(tc, priority, others)
        if leader_pulls[leader] <= beta * (leader_counts[leader] + 1):
            return [leader]
        return near_set([-w for w in tc], challenger, others)

    while True:
        samples = len(arms)  # n − 1 in the paper's indexing
        # Recommendation and GLR stopping rule (Alg. 1 lines 4–7, Eq. 2).
        best = argmax(means, priority)
        stop = all(w >= c for w, c in glr(best))
        # UCB leader (line 8), then TC challenger and tracking.
        index = [means[a] + bonus(a, local, samples) for a in range(num_arms)]
        leader = argmax(index, priority)
        arm = sampling(leader)[0]
        theirs = None if follow is None or samples >= len(follow) else follow[samples]
        if follow is not None and theirs != (None if stop else arm):
            # Outcomes reachable by flipping near-ties only.
            for rec in near_set(means, best):
                pairs = glr(rec)
                if theirs is None and all(w >= c or near(w, c, tolerance) for w, c in pairs):
                    deferred.append(samples)
                    stop, best = True, rec
                    break
                if theirs is not None and any(w < c or near(w, c, tolerance) for w, c in pairs):
                    found = [b for b in near_set(index, leader) if theirs in sampling(b)]
                    if found:
                        deferred.append(samples)
                        stop, leader, arm = False, found[0], theirs
                        break
        if stop:
            return Trajectory(tuple(arms), samples, best, tuple(deferred), rounds)
        if samples >= max_samples:
            if censor:
                return Trajectory(tuple(arms), samples, -1, tuple(deferred), rounds)
            raise RuntimeError("no stop within max_samples")
        leader_counts[leader] += 1
        leader_pulls[leader] += arm == leader
        # Sampling and update rules (lines 11–13).
        z = observations[arm][counts[arm]]
        counts[arm] += 1
        arms.append(arm)
        totals[arm] += z
        if not episodic:
            means[arm] = totals[arm] / counts[arm]
            continue
        phase_sum[arm] += z
        # End of episode (Alg. 5/11 line 3): the pulled arm doubled its count (per arm), or
        # every arm did (one global episode, Appendix H).
        doubled = [counts[a] >= 2 * phase_start[a] for a in range(num_arms)]
        if one_episode:
            ended = list(range(num_arms)) if all(doubled) else []
        else:
            ended = [arm] if doubled[arm] else []
        for a in ended:
            if daf:  # Alg. 5 lines 4–7: this episode's rewards only, plus Laplace noise
                local[a] = counts[a] - phase_start[a]
                means[a] = phase_sum[a] / local[a] + noise(a, released[a]) / (epsilon * local[a])
                released[a] += 1
            else:  # Alg. 11: all rewards so far; Ñ = N (docs/semantics.md §17)
                local[a] = counts[a]
                means[a] = totals[a] / counts[a]
            phase_start[a] = counts[a]
            phase_sum[a] = 0.0
        if ended:
            rounds += 1 if one_episode else len(ended)  # C = Σ_a k_a, or global episodes + 1


# ----------------------------------------------------------------------------- DP-SE
def dpse_epoch(num_active: int, epoch: int, delta: float, epsilon: float) -> tuple[float, ...]:
    """(R_e as the unfloored real max(·) + 1, h_e, c_e) of DP-SE; R_e = ⌊first⌋."""
    gap = 2.0**-epoch
    log8 = math.log(8 * num_active * epoch**2 / delta)
    log4 = math.log(4 * num_active * epoch**2 / delta)
    real = max(32 * log8 / gap**2, 8 * log4 / (gap * epsilon)) + 1
    pulls = math.floor(real)
    return real, math.sqrt(log8 / (2 * pulls)), log4 / (pulls * epsilon)


def dp_se(
    observations: Sequence[Sequence[float]],
    delta: float,
    epsilon: float,
    laplace: Sequence[Sequence[float]] | None = None,
) -> Trajectory:
    """DP-SE (Sajed & Sheffet 2019) stopped when one arm is left (Section 4.4).

    Epoch e pulls each active arm R_e times, round-robin in index order; the epoch means
    (this epoch only) get Lap(1/(ε R_e)) noise; arm a is eliminated if max μ̃ − μ̃_a > 2(h_e + c_e).
    """
    num_arms = len(observations)
    active = list(range(num_arms))
    taken = [0] * num_arms
    arms: list[int] = []
    epoch = 1
    while len(active) > 1:
        real, h, c = dpse_epoch(len(active), epoch, delta, epsilon)
        pulls = math.floor(real)
        sums = dict.fromkeys(active, 0.0)
        for _ in range(pulls):
            for a in active:
                sums[a] += observations[a][taken[a]]
                taken[a] += 1
                arms.append(a)
        noise = {a: 0.0 if laplace is None else laplace[a][epoch - 1] for a in active}
        means = {a: sums[a] / pulls + noise[a] / (epsilon * pulls) for a in active}
        top = max(means.values())
        active = [a for a in active if top - means[a] <= 2 * (h + c)]
        epoch += 1
    return Trajectory(tuple(arms), len(arms), active[0], rounds=epoch - 1)
