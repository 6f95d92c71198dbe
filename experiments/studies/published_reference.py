"""Plain-Python transcription of the algorithms the paper's published code runs.

The published code (TTUCB, AdaP-TT and DP-SE of one commit, c8d8be2) differs from the paper's
pseudocode; docs/published-code.md lists how. This module restates what that code computes,
independently of `jaxbai` (it imports nothing from it): loops over Python floats, Bernoulli
arms, NumPy only for the random draws. A test compares the law of (τ, â) of jaxbai's
``ttucb_published``, ``adap_tt_published`` and ``dp_se_published`` with these.

Every argmax/argmin returns the lowest index among ties (``numpy.argmax``, and the published
challenger loops keep the first minimum). Each function returns a `PublishedRun`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["PublishedRun", "adap_tt", "dp_se", "ttucb"]


@dataclass(frozen=True)
class PublishedRun:
    """One run.

    Attributes:
        tau: the samples drawn.
        reported: the stopping time the published code returns (samples of completed phases
            for AdaP-TT, ``tau`` otherwise).
        recommendation: the arm returned.
        stopped: False if ``max_samples`` ran out first.
    """

    tau: int
    reported: int
    recommendation: int
    stopped: bool = True


def _first_argmax(values: Sequence[float]) -> int:
    return max(range(len(values)), key=lambda a: (values[a], -a))


def _first_argmin(values: Sequence[float], excluded: int) -> int:
    return min((a for a in range(len(values)) if a != excluded), key=lambda a: (values[a], a))


def _kappa_challenger(
    means: Sequence[float], counts: Sequence[int], leader: int, kappa: float
) -> int:
    """argmin_{b ≠ B} (μ_B − μ_b + κ)/√(1/N_B + 1/N_b), the first index among ties."""
    scores = [
        (means[leader] - means[b] + kappa) / math.sqrt(1 / counts[leader] + 1 / counts[b])
        for b in range(len(means))
    ]
    return _first_argmin(scores, leader)


def _squared_gap_statistic(mu_a: float, mu_b: float, n_a: float, n_b: float) -> float:
    """0.5·(μ_a − μ_b)²/(1/n_a + 1/n_b): W^G with σ = 1 and the gap squared unsigned."""
    return 0.5 * (mu_a - mu_b) ** 2 / (1 / n_a + 1 / n_b)


def ttucb(
    means: Sequence[float],
    delta: float,
    rng: np.random.Generator,
    beta: float = 0.5,
    max_samples: int = 10**7,
) -> PublishedRun:
    """The published "TTUCB": empirical-best leader, κ-challenger with κ = log(1 + t)^(−1/4),
    a β-coin, stopping when every b ≠ â has statistic ≥ log((1 + log t)/δ) (tested after each
    pull that follows the K initial ones)."""
    num_arms = len(means)
    counts, sums = [0] * num_arms, [0.0] * num_arms

    def pull(arm: int) -> None:
        counts[arm] += 1
        sums[arm] += float(rng.random() < means[arm])

    for arm in range(num_arms):
        pull(arm)
    t = num_arms
    while t < max_samples:
        mu = [sums[a] / counts[a] for a in range(num_arms)]
        best = _first_argmax(mu)
        challenger = _kappa_challenger(mu, counts, best, math.log(1 + t) ** -0.25)
        pull(best if rng.random() <= beta else challenger)
        t += 1
        mu = [sums[a] / counts[a] for a in range(num_arms)]
        best = _first_argmax(mu)
        threshold = math.log((1 + math.log(t)) / delta)
        if all(
            _squared_gap_statistic(mu[best], mu[b], counts[best], counts[b]) >= threshold
            for b in range(num_arms)
            if b != best
        ):
            return PublishedRun(t, t, best)
    return PublishedRun(t, t, _first_argmax(mu), stopped=False)


def adap_tt(
    means: Sequence[float],
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    beta: float = 0.5,
    max_samples: int = 10**7,
) -> PublishedRun:
    """The published AdaP-TT.

    Phases per arm: a phase ends when its length equals the arm's samples in completed phases
    (lengths 1, 1, 2, 4, …); the arm's mean becomes the phase mean plus Lap(1/(ε·length)) and
    its count Ñ the phase length. Leader: argmax μ̃_a + log(n_c)/(ε Ñ_a) + √(log(n_c)/(2 Ñ_a))
    with n_c the samples in completed phases; κ-challenger with κ = 1/(1 + √n_c) and the counts
    of all samples; a β-coin. At each phase end after the initial pulls, stop when every b ≠ B
    (the leader at the new state) has 0.5 (μ̃_B − μ̃_b)²/(1/Ñ_B + 1/Ñ_b) ≥ log(1/δ)
    + log(1 + log Ñ_B) + log(1 + log Ñ_b) + (1/Ñ_B + 1/Ñ_b) log(1/δ)²/ε²; return n_c and
    argmax μ̃.
    """
    num_arms = len(means)
    done, length, phase_sum = [0] * num_arms, [0] * num_arms, [0.0] * num_arms
    local, mu = [0] * num_arms, [0.0] * num_arms
    log_inv = math.log(1 / delta)

    def pull(arm: int) -> None:
        length[arm] += 1
        phase_sum[arm] += float(rng.random() < means[arm])

    def close(arm: int) -> None:
        done[arm] += length[arm]
        local[arm] = length[arm]
        noise = rng.laplace(scale=1 / (epsilon * length[arm]))
        mu[arm] = phase_sum[arm] / length[arm] + noise
        length[arm], phase_sum[arm] = 0, 0.0

    def leader() -> int:
        log_n = math.log(sum(done))
        return _first_argmax(
            [
                mu[a] + log_n / (epsilon * local[a]) + math.sqrt(log_n / (2 * local[a]))
                for a in range(num_arms)
            ]
        )

    def threshold(n_a: int, n_b: int) -> float:
        base = log_inv + math.log(1 + math.log(n_a)) + math.log(1 + math.log(n_b))
        return base + (1 / n_a + 1 / n_b) * log_inv**2 / epsilon**2

    for arm in range(num_arms):
        pull(arm)
        close(arm)
    drawn = num_arms
    while drawn < max_samples:
        best = leader()
        counts = [done[a] + length[a] for a in range(num_arms)]
        challenger = _kappa_challenger(mu, counts, best, 1 / (1 + math.sqrt(sum(done))))
        arm = best if rng.random() <= beta else challenger
        pull(arm)
        drawn += 1
        if length[arm] != done[arm]:
            continue
        close(arm)
        b_star = leader()
        if all(
            _squared_gap_statistic(mu[b_star], mu[b], local[b_star], local[b])
            >= threshold(local[b_star], local[b])
            for b in range(num_arms)
            if b != b_star
        ):
            return PublishedRun(drawn, sum(done), _first_argmax(mu))
    return PublishedRun(drawn, sum(done), _first_argmax(mu), stopped=False)


def dp_se(
    means: Sequence[float], epsilon: float, delta: float, rng: np.random.Generator
) -> PublishedRun:
    """The published DP-SE.

    Epoch e with m active arms: R_e = max(32 log(8 m e²/δ)/Δ_e², 8 log(4 m e²/δ)/(Δ_e ε)) + 1,
    Δ_e = 2^(−e); ⌊R_e⌋ pulls per active arm; every arm's value is its epoch sum divided by its
    cumulative count (0 for eliminated arms), plus Lap(1/(ε ⌊R_e⌋)) for all K arms; an active
    arm is eliminated if max of all K values − its value > 2(h_e + c_e), with
    h_e = √(log(8 m e²/δ)/(2 R_e)) and c_e = log(4 m e²/δ)/(R_e ε) at R_e unfloored. Stops
    when at most one arm is active; returns the samples drawn and argmax of the values.
    """
    num_arms = len(means)
    active = list(range(num_arms))
    counts = [0] * num_arms
    values = [0.0] * num_arms
    drawn, epoch = 0, 0
    while len(active) > 1:
        epoch += 1
        m, gap = len(active), 2.0**-epoch
        log8 = math.log(8 * m * epoch**2 / delta)
        log4 = math.log(4 * m * epoch**2 / delta)
        real = max(32 * log8 / gap**2, 8 * log4 / (gap * epsilon)) + 1
        pulls = int(real)
        sums = [0.0] * num_arms
        for arm in active:
            sums[arm] = float(rng.binomial(pulls, means[arm]))
            counts[arm] += pulls
        drawn += m * pulls
        noise = rng.laplace(scale=1 / (epsilon * pulls), size=num_arms)
        values = [sums[a] / max(counts[a], 1) + float(noise[a]) for a in range(num_arms)]
        margin = 2 * (math.sqrt(log8 / (2 * real)) + log4 / (real * epsilon))
        top = max(values)
        active = [a for a in active if not top - values[a] > margin]
    return PublishedRun(drawn, drawn, _first_argmax(values))
