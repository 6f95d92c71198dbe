"""Plain-Python transcription of DP-TT and EB-TCI (Jourdan & Azize 2025), for trajectory tests.

Written from the specification jaxbai implements (docs/dp-tt.md, docs/semantics.md §34),
independently of `jaxbai` (it imports nothing from it): Python floats (double precision), loops,
and its own minimisation of the private transportation cost (a golden-section search on the
convex objective, not jaxbai's closed-form minimiser).

* ``observations[a][j]``: the j-th reward of arm a, in [0, 1];
* ``laplace[a][i]``: standard Lap(1) draws; the i-th noisy increment of arm a (its first pull,
  then each phase change) adds ``laplace[a][i] / ε`` to S̃_a.

Ties go to the tied arm with the highest ``priority``, as in `experiments.studies.reference`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from experiments.studies.reference import Trajectory, argmax, argmin, near
from experiments.studies.reference_formulas import kl, kl_cost

GOLDEN_STEPS = 200
"""Golden-section steps of `private_cost`: the bracket shrinks by 0.618 per step, far below
double precision."""


# ----------------------------------------------------------------------------- divergences
def g(mu: float, epsilon: float) -> float:
    """g_ε(μ) = μ e^ε / (μ (e^ε − 1) + 1), as μ / (μ + (1 − μ) e^{−ε}) (no overflow); 1 at ε = ∞
    (no privacy: d⁺_∞ is kl, μ = 0 included)."""
    if math.isinf(epsilon):
        return 1.0
    if mu <= 0:
        return 0.0
    return mu / (mu + (1 - mu) * math.exp(-epsilon))


def d_plus(mu: float, x: float, epsilon: float) -> float:
    """d⁺_ε(μ, x): 0 if x ≤ μ; kl(μ, x) up to g_ε(μ); −log(1 − x(1 − e^{−ε})) − εμ beyond
    (the log as log1p(x expm1(−ε)) while that product is small, else as log((1 − x) + x e^{−ε}):
    accurate at every ε from 1e-12 up)."""
    if x <= mu:
        return 0.0
    if x <= g(mu, epsilon):
        return kl(mu, x)
    moved = x * math.expm1(-epsilon)
    log = math.log1p(moved) if moved >= -0.5 else math.log((1 - x) + x * math.exp(-epsilon))
    return -log - epsilon * mu


def d_minus(mu: float, x: float, epsilon: float) -> float:
    """d⁻_ε(μ, x) = d⁺_ε(1 − μ, 1 − x)."""
    return d_plus(1 - mu, 1 - x, epsilon)


def private_argmin(mu_i: float, mu_j: float, w_i: float, w_j: float, epsilon: float) -> float:
    """A minimiser over [μ_j, μ_i] of w_i d⁻_ε(μ_i, x) + w_j d⁺_ε(μ_j, x) (μ_i > μ_j): golden-
    section search, where the objective is convex, then the best of the bracket and the ends."""

    def objective(x: float) -> float:
        return w_i * d_minus(mu_i, x, epsilon) + w_j * d_plus(mu_j, x, epsilon)

    ratio = (math.sqrt(5) - 1) / 2
    lo, hi = mu_j, mu_i
    for _ in range(GOLDEN_STEPS):
        left, right = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if objective(left) <= objective(right):
            hi = right
        else:
            lo = left
    return min((lo, hi, (lo + hi) / 2, mu_j, mu_i), key=objective)


def private_cost(mu_i: float, mu_j: float, w_i: float, w_j: float, epsilon: float) -> float:
    """C*_ε(i, j) = inf_x w_i d⁻_ε(μ_i, x) + w_j d⁺_ε(μ_j, x), 0 where μ_i ≤ μ_j
    (`private_argmin`)."""
    if mu_i <= mu_j:
        return 0.0
    x = private_argmin(mu_i, mu_j, w_i, w_j, epsilon)
    return w_i * d_minus(mu_i, x, epsilon) + w_j * d_plus(mu_j, x, epsilon)


# ----------------------------------------------------------------------------- thresholds
def _side_scale(mu: float, x: float, epsilon: float, up: bool) -> float:
    """Σ |terms| of d⁺_ε(μ, x) (up) or d⁻_ε(μ, x) = d⁺_ε(1 − μ, 1 − x), float64."""
    if not up:
        mu, x = 1.0 - mu, 1.0 - x
    if x <= mu:
        return 0.0
    if x <= g(mu, epsilon):
        terms = [mu * math.log1p((mu - x) / x) if mu > 0 else 0.0]
        terms.append((1 - mu) * math.log1p((x - mu) / (1 - x)) if x < 1 else math.inf)
        return sum(abs(t) for t in terms)
    return abs(math.log1p(x * math.expm1(-epsilon))) + epsilon * mu


def objective_scale(mu_i: float, mu_j: float, w_i: float, w_j: float, epsilon: float) -> float:
    """S, the sum of the magnitudes of the objective's terms at the minimiser (float64): a few
    float32 units of rounding times S bound the error of evaluating C*_ε in float32, as
    cancellation between the terms near ties and at tiny ε allows no better."""
    if mu_i <= mu_j:
        return 0.0
    x = private_argmin(mu_i, mu_j, w_i, w_j, epsilon)
    down = w_i * _side_scale(mu_i, x, epsilon, up=False) if w_i > 0 else 0.0
    return down + (w_j * _side_scale(mu_j, x, epsilon, up=True) if w_j > 0 else 0.0)


def theory_threshold(m: float, delta: float, epsilon: float) -> float:
    """c(m, ε, δ) = log(1/δ) + log m · log(1 + εm/log m), the second term 0 at m = 1."""
    growth = 0.0 if m <= 1 else math.log(m) * math.log1p(epsilon * m / math.log(m))
    return math.log(1 / delta) + growth


def heuristic_threshold(m: float, delta: float) -> float:
    """c(m, δ) = ½ log((1 + log m)/δ)."""
    return 0.5 * math.log((1 + math.log(m)) / delta)


# ----------------------------------------------------------------------------- the algorithm
def clip(x: float) -> float:
    return min(max(x, 0.0), 1.0)


def dp_tt(
    observations: Sequence[Sequence[float]],
    priority: Sequence[float],
    delta: float,
    epsilon: float = math.inf,
    threshold: str = "heuristic",
    beta: float = 0.5,
    eta: float = 1.0,
    laplace: Sequence[Sequence[float]] | None = None,
    private: bool = True,
    max_samples: int = 10**6,
    follow: Sequence[int] | None = None,
    tolerance: float = 0.0,
    censor: bool = False,
    challenger: str = "tci",
) -> Trajectory:
    """One run of DP-TT (``private``) or EB-TCI (``private=False``; ε, ``threshold``, ``eta``
    and ``laplace`` unused).

    DP-TT: pull every arm once, S̃_a = X_a + Lap(1/ε), Ñ_a = N_a = 1. Each iteration: candidate
    ã = argmax clip(μ̃, 0, 1), μ̃ = S̃/Ñ; stop if C*_ε(ã, a, clip μ̃, Ñ) ≥ c(Ñ_ã) + c(Ñ_a) for every
    a ≠ ã; else leader B = ã, challenger C = argmin_{a ≠ B} C*_ε(B, a, clip μ̃, N) + log N_a,
    pull B if N^B_B ≤ β (L_B + 1) else C, L_B += 1, N^B_B += 1 if B was pulled. After the pull of
    arm a: if N_a ≥ (1 + η) Ñ_a, S̃_a += (its rewards since Ñ_a) + Lap(1/ε), Ñ_a = N_a.

    ``challenger``, DP-TT's variants beyond the paper: ``"forced"``, C = the least-pulled arm
    a ≠ B while some arm a ≠ B has N_a < √n (n the samples so far), else TCI;
    ``"tci_phase"``, TCI at the phase counts, argmin_{a ≠ B} C*_ε(B, a, clip μ̃, Ñ) + log Ñ_a.

    EB-TCI: the same with μ̂ = the mean of all rewards, N in place of Ñ, the Bernoulli-KL cost
    and the stop min_a W(ã, a, μ̂, N) ≥ log((1 + log n)/δ), n the number of samples.

    ``follow``, ``tolerance`` and ``censor`` as in `experiments.studies.reference.top_two`: a
    decision within ``tolerance`` (relative) of going the other way follows ``follow`` and is
    recorded in ``Trajectory.deferred``.
    """
    num_arms = len(observations)
    counts = [1] * num_arms
    arms = list(range(num_arms))
    leader_counts = [0] * num_arms
    leader_pulls = [0] * num_arms
    totals = [observations[a][0] for a in range(num_arms)]
    noisy = [totals[a] + (0.0 if laplace is None else laplace[a][0] / epsilon) for a in arms]
    local = [1] * num_arms
    phase_sum = [0.0] * num_arms
    released = [1] * num_arms
    deferred: list[int] = []

    def cost(mu_i, mu_j, w_i, w_j):
        if private:
            return private_cost(clip(mu_i), clip(mu_j), w_i, w_j, epsilon)
        return kl_cost(clip(mu_i), clip(mu_j), w_i, w_j)

    def glr(best, means, weights, samples):
        """[(W_{best,a}, c_{best,a}) for a ≠ best]."""
        pairs = []
        for a in range(num_arms):
            if a == best:
                continue
            w = cost(means[best], means[a], weights[best], weights[a])
            if not private:
                c = math.log((1 + math.log(samples)) / delta)
            elif threshold == "theory":
                c = theory_threshold(weights[best], delta, epsilon)
                c += theory_threshold(weights[a], delta, epsilon)
            else:
                c = heuristic_threshold(weights[best], delta)
                c += heuristic_threshold(weights[a], delta)
            pairs.append((w, c))
        return pairs

    def pulls(leader, means):
        """The exact pull under ``leader``, then challengers that are near-ties with it."""
        if leader_pulls[leader] <= beta * (leader_counts[leader] + 1):
            return [leader]
        others = [a for a in range(num_arms) if a != leader]
        if challenger == "forced" and any(counts[a] < math.sqrt(len(arms)) for a in others):
            return [argmin(counts, priority, others)]
        n = local if challenger == "tci_phase" else counts
        tci = [
            cost(means[leader], means[a], n[leader], n[a]) + math.log(n[a]) for a in range(num_arms)
        ]
        chosen = argmin(tci, priority, others)
        return [chosen, *(a for a in others if near(tci[a], tci[chosen], tolerance))]

    while True:
        samples = len(arms)
        if private:
            means = [noisy[a] / local[a] for a in range(num_arms)]
        else:
            means = [totals[a] / counts[a] for a in range(num_arms)]
        weights = local if private else counts
        clipped = [clip(m) for m in means]
        best = argmax(clipped, priority)
        stop = all(w >= c for w, c in glr(best, means, weights, samples))
        leader = best
        arm = pulls(leader, means)[0]
        theirs = None if follow is None or samples >= len(follow) else follow[samples]
        if follow is not None and theirs != (None if stop else arm):
            ties = (a for a in range(num_arms) if near(clipped[a], clipped[best], tolerance))
            tied = [best, *ties]
            for candidate in tied:
                pairs = glr(candidate, means, weights, samples)
                if theirs is None and all(w >= c or near(w, c, tolerance) for w, c in pairs):
                    deferred.append(samples)
                    stop, best = True, candidate
                    break
                if theirs is not None and any(w < c or near(w, c, tolerance) for w, c in pairs):
                    if theirs in pulls(candidate, means):
                        deferred.append(samples)
                        stop, leader, arm = False, candidate, theirs
                        break
        if stop:
            return Trajectory(tuple(arms), samples, best, tuple(deferred))
        if samples >= max_samples:
            if censor:
                return Trajectory(tuple(arms), samples, -1, tuple(deferred))
            raise RuntimeError("no stop within max_samples")
        leader_counts[leader] += 1
        leader_pulls[leader] += arm == leader
        z = observations[arm][counts[arm]]
        counts[arm] += 1
        arms.append(arm)
        totals[arm] += z
        phase_sum[arm] += z
        if private and counts[arm] >= (1 + eta) * local[arm]:
            noise = 0.0 if laplace is None else laplace[arm][released[arm]] / epsilon
            noisy[arm] += phase_sum[arm] + noise
            released[arm] += 1
            local[arm] = counts[arm]
            phase_sum[arm] = 0.0
