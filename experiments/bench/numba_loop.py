"""A numba scalar TTUCB loop (heuristic threshold, random tie-breaking), the W1 baseline.

Same algorithm as `jaxbai.ttucb()` with σ = 1/2: recommendation, GLR test with
log((1 + log n)/δ), UCB leader with b^G (Eq. 3), TC challenger, β-tracking (β = 1/2). No
allocation inside the sample loop; runs in parallel over all cores with `prange`.
"""

from __future__ import annotations

import math

import numpy as np

from jaxbai.extras import require

numba = require("numba", extra="bench", purpose="the numba loops of experiments.bench")

__all__ = [
    "BONUS",
    "SIGMA2",
    "threads",
    "ttucb_runs",
]

SIGMA2 = 0.25
BONUS = 2 * SIGMA2 * 1.2 * (1 + 1.2)


@numba.njit(cache=True)
def _argmax_ties(values: np.ndarray, priority: np.ndarray, skip: int) -> int:
    best, best_value, best_priority = -1, -np.inf, -1.0
    for a in range(values.shape[0]):
        if a == skip:
            continue
        v = values[a]
        if v > best_value or (v == best_value and priority[a] > best_priority):
            best, best_value, best_priority = a, v, priority[a]
    return best


@numba.njit(cache=True)
def _ttucb_one(means: np.ndarray, delta: float, max_samples: int) -> int:
    k = means.shape[0]
    counts = np.zeros(k)
    sums = np.zeros(k)
    mu = np.zeros(k)
    leader_counts = np.zeros(k)
    leader_pulls = np.zeros(k)
    priority = np.random.random(k)
    scores = np.zeros(k)
    for a in range(k):
        counts[a] = 1.0
        sums[a] = 1.0 if np.random.random() < means[a] else 0.0
        mu[a] = sums[a]
    n = k
    while n < max_samples:
        best = _argmax_ties(mu, priority, -1)
        threshold = math.log((1 + math.log(n)) / delta)
        stop = True
        for b in range(k):
            if b != best:
                gap = max(mu[best] - mu[b], 0.0)
                if gap * gap / (2 * SIGMA2 * (1 / counts[best] + 1 / counts[b])) < threshold:
                    stop = False
                    break
        if stop:
            return n
        log_n = math.log(n)
        for a in range(k):
            scores[a] = mu[a] + math.sqrt(BONUS * log_n / counts[a])
        leader = _argmax_ties(scores, priority, -1)
        for b in range(k):
            gap = max(mu[leader] - mu[b], 0.0)
            scores[b] = -gap * gap / (2 * SIGMA2 * (1 / counts[leader] + 1 / counts[b]))
        challenger = _argmax_ties(scores, priority, leader)
        leader_counts[leader] += 1
        arm = leader if leader_pulls[leader] <= 0.5 * leader_counts[leader] else challenger
        if arm == leader:
            leader_pulls[leader] += 1
        reward = 1.0 if np.random.random() < means[arm] else 0.0
        counts[arm] += 1
        sums[arm] += reward
        mu[arm] = sums[arm] / counts[arm]
        n += 1
    return n


@numba.njit(parallel=True, cache=True)
def _ttucb_many(means: np.ndarray, runs: int, delta: float, seed: int) -> np.ndarray:
    taus = np.zeros(runs, np.int64)
    for r in numba.prange(runs):
        np.random.seed(seed * 1_000_003 + r)
        taus[r] = _ttucb_one(means, delta, 10**9)
    return taus


def ttucb_runs(means: np.ndarray, runs: int, delta: float, seed: int) -> np.ndarray:
    """τ of ``runs`` TTUCB runs on Bernoulli ``means`` (parallel over runs)."""
    return _ttucb_many(np.asarray(means, np.float64), runs, delta, seed)


def threads() -> int:
    """Threads numba uses."""
    return numba.get_num_threads()
