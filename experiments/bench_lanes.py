"""A hand-vectorised numba TTUCB over blocks of lanes, the SIMD reference of W1.

Same algorithm as the scalar loop of `experiments.bench.numba_loop` (and `jaxbai.ttucb()` with
σ = 1/2, heuristic threshold, β = 1/2): one pull of every arm, then per sample the GLR test of
Eq. (2) at â = argmax μ̂ with c = log((1 + log n)/δ), the UCB leader with b^G (Eq. 3), the TC
challenger argmin_{b ≠ B} W^G_{B,b} (Eq. 3) and β-tracking; ties by a per-run random priority.

Layout: each thread runs a block of `LANES` runs with the lanes innermost (per-arm arrays
``(K, LANES)``), one branch-free loop body per step (every loop over lanes is a straight
select/arithmetic loop the compiler vectorises); a lane whose run stops loads the block's next
run. Per step a lane needs no logarithm (log n and the threshold come from tables for
n < `TABLE_SIZE`, exact above), one square root and two divisions (the caches μ̂_a, 1/N_a and
1/√N_a are updated for the pulled arm only), and the GLR test and the challenger compare
cross-multiplied values instead of quotients. Random bits come from a counter-based hash of
(run, n) (SplitMix64's finaliser), so a run's numbers do not depend on its block or lane.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from experiments.bench.numba_loop import BONUS, SIGMA2

__all__ = ["LANES", "TABLE_SIZE", "ttucb_lanes"]

LANES = 64
"""Lanes per block (the block's state stays in L1; 32–128 measured alike, 256 slower)."""
TABLE_SIZE = 1 << 16
"""log n and the threshold are tabulated for n < TABLE_SIZE."""
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(cache=True, inline="always")
def _mix(x: np.uint64) -> np.uint64:
    """SplitMix64's finaliser (a bijection of 64-bit words)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@numba.njit(cache=True, inline="always")
def _uniform(key: np.uint64, n: np.int64) -> float:
    """A uniform on [0, 1) from the hash of (run key, counter n)."""
    bits = _mix(key + np.uint64(n + 1) * _GOLDEN)
    return float(bits >> np.uint64(11)) * 2.0**-53


@numba.njit(cache=True)
def _load(lane, run, seed, means, mu, sums, counts, inv, inv_sqrt, lc, lp, prio, n, key) -> None:
    """Start ``run`` in ``lane``: its priority, then one pull of every arm (n = K)."""
    num_arms = means.shape[0]
    key[lane] = _mix(np.uint64(seed) * np.uint64(1_000_003) + np.uint64(run))
    for a in range(num_arms):
        prio[a, lane] = _uniform(key[lane], -2 - a)
        reward = 1.0 if _uniform(key[lane], a) < means[a] else 0.0
        sums[a, lane], mu[a, lane], counts[a, lane] = reward, reward, 1.0
        inv[a, lane], inv_sqrt[a, lane], lc[a, lane], lp[a, lane] = 1.0, 1.0, 0.0, 0.0
    n[lane] = num_arms


@numba.njit(cache=True)
def _argmax_ties(values, prio, skip, out, best_value, best_prio) -> None:
    """Per lane: argmax_a values[a] over a ≠ skip (−1: none skipped), ties by priority."""
    for i in range(out.shape[0]):
        out[i], best_value[i], best_prio[i] = -1, -np.inf, -1.0
    for a in range(values.shape[0]):
        for i in range(out.shape[0]):
            v, p = values[a, i], prio[a, i]
            better = (a != skip[i]) & (
                (v > best_value[i]) | ((v == best_value[i]) & (p > best_prio[i]))
            )
            out[i] = a if better else out[i]
            best_value[i] = v if better else best_value[i]
            best_prio[i] = p if better else best_prio[i]


@numba.njit(cache=True)
def _pick(values, index, out) -> None:
    """Per lane: values[index[i], i]."""
    for i in range(out.shape[0]):
        out[i] = 0.0
    for a in range(values.shape[0]):
        for i in range(out.shape[0]):
            out[i] = values[a, i] if index[i] == a else out[i]


@numba.njit(cache=True, inline="always")
def _per_arm(num_arms: int) -> np.ndarray:
    return np.zeros((num_arms, LANES))


@numba.njit(cache=True, inline="always")
def _floats() -> np.ndarray:
    return np.zeros(LANES)


@numba.njit(cache=True, inline="always")
def _ints() -> np.ndarray:
    return np.zeros(LANES, np.int64)


@numba.njit(cache=True)
def _block(means, delta, seed, first, stride, runs, max_samples, taus, log_table, c_table):
    """Run jobs first, first + stride, … < runs in one block of lanes; τ into ``taus``."""
    k, lanes = means.shape[0], LANES
    mu, sums, counts, inv, inv_sqrt = (
        _per_arm(k),
        _per_arm(k),
        _per_arm(k),
        _per_arm(k),
        _per_arm(k),
    )
    lc, lp, prio, scores = _per_arm(k), _per_arm(k), _per_arm(k), _per_arm(k)
    n, job, no_skip = np.zeros(lanes, np.int64), np.full(lanes, -1), np.full(lanes, -1)
    key = np.zeros(lanes, np.uint64)
    best, leader, challenger, arm = _ints(), _ints(), _ints(), _ints()
    value, prio_best, mu_b, inv_b, c2, root = (
        _floats(),
        _floats(),
        _floats(),
        _floats(),
        _floats(),
        _floats(),
    )
    stop, num_best, l_count, l_pulls, p_arm = _floats(), _floats(), _floats(), _floats(), _floats()
    next_run, active = first, 0
    for lane in range(lanes):
        if next_run < runs:
            job[lane] = next_run
            _load(
                lane, next_run, seed, means, mu, sums, counts, inv, inv_sqrt, lc, lp, prio, n, key
            )
            next_run, active = next_run + stride, active + 1
    while active > 0:
        # GLR test (Eq. 2) at â = argmax μ̂: gap² ≥ c · 2σ² (1/N_â + 1/N_b) for every b ≠ â.
        _argmax_ties(mu, prio, no_skip, best, value, prio_best)
        _pick(mu, best, mu_b)
        _pick(inv, best, inv_b)
        exact = False
        for i in range(lanes):
            exact |= n[i] >= TABLE_SIZE
        for i in range(lanes):
            m = min(n[i], TABLE_SIZE - 1)
            c2[i] = 2 * SIGMA2 * c_table[m]
            root[i] = math.sqrt(BONUS * log_table[m])
        if exact:
            for i in range(lanes):
                log_n = math.log(n[i])
                c2[i] = 2 * SIGMA2 * math.log((1 + log_n) / delta)
                root[i] = math.sqrt(BONUS * log_n)
        for i in range(lanes):
            stop[i] = 1.0
        for a in range(k):
            for i in range(lanes):
                gap = max(mu_b[i] - mu[a, i], 0.0)
                passed = (a == best[i]) | (gap * gap >= c2[i] * (inv_b[i] + inv[a, i]))
                stop[i] = stop[i] if passed else 0.0
        for i in range(lanes):
            stop[i] = 1.0 if (stop[i] > 0) | (n[i] >= max_samples) else 0.0
        # UCB leader (Alg. 1 line 8): argmax μ̂_a + √(BONUS log n) / √N_a.
        for a in range(k):
            for i in range(lanes):
                scores[a, i] = mu[a, i] + root[i] * inv_sqrt[a, i]
        _argmax_ties(scores, prio, no_skip, leader, value, prio_best)
        # TC challenger (line 9): argmin_{b ≠ B} gap² / (1/N_B + 1/N_b), cross-multiplied.
        _pick(mu, leader, mu_b)
        _pick(inv, leader, inv_b)
        for i in range(lanes):
            challenger[i], value[i], num_best[i], prio_best[i] = -1, 1.0, np.inf, -1.0
        for a in range(k):
            for i in range(lanes):
                gap = max(mu_b[i] - mu[a, i], 0.0)
                num, den = gap * gap, inv_b[i] + inv[a, i]
                lhs, rhs = num * value[i], num_best[i] * den  # W_a < W_best ⇔ lhs < rhs
                better = (a != leader[i]) & (
                    (lhs < rhs) | ((lhs == rhs) & (prio[a, i] > prio_best[i]))
                )
                better |= (a != leader[i]) & (challenger[i] < 0)
                challenger[i] = a if better else challenger[i]
                num_best[i] = num if better else num_best[i]
                value[i] = den if better else value[i]
                prio_best[i] = prio[a, i] if better else prio_best[i]
        # β-tracking (line 10), then the pull, its reward and the caches of the pulled arm.
        _pick(lc, leader, l_count)
        _pick(lp, leader, l_pulls)
        for i in range(lanes):
            pull_leader = l_pulls[i] <= 0.5 * (l_count[i] + 1)
            arm[i] = leader[i] if pull_leader else challenger[i]
        for a in range(k):
            for i in range(lanes):
                is_leader = 1.0 if leader[i] == a else 0.0
                lc[a, i] += is_leader
                lp[a, i] += is_leader if arm[i] == a else 0.0
        p_arm[:] = 0.0
        for a in range(k):
            for i in range(lanes):
                p_arm[i] = means[a] if arm[i] == a else p_arm[i]
        for i in range(lanes):
            value[i] = 1.0 if _uniform(key[i], n[i]) < p_arm[i] else 0.0
        _pick(counts, arm, l_count)
        _pick(sums, arm, l_pulls)
        for i in range(lanes):
            l_count[i] += 1.0
            l_pulls[i] += value[i]
            inv_b[i] = 1.0 / l_count[i]
            mu_b[i] = l_pulls[i] * inv_b[i]
            root[i] = 1.0 / math.sqrt(l_count[i])
        for a in range(k):
            for i in range(lanes):
                hit = arm[i] == a
                counts[a, i] = l_count[i] if hit else counts[a, i]
                sums[a, i] = l_pulls[i] if hit else sums[a, i]
                mu[a, i] = mu_b[i] if hit else mu[a, i]
                inv[a, i] = inv_b[i] if hit else inv[a, i]
                inv_sqrt[a, i] = root[i] if hit else inv_sqrt[a, i]
        for i in range(lanes):
            n[i] += 1 if job[i] >= 0 else 0
        # Stopped runs record τ; their lanes load the block's next runs (tested next step).
        for i in range(lanes):
            if stop[i] > 0 and job[i] >= 0:
                taus[job[i]] = n[i] - 1
                job[i] = -1
                active -= 1
                if next_run < runs:
                    job[i] = next_run
                    _load(
                        i,
                        next_run,
                        seed,
                        means,
                        mu,
                        sums,
                        counts,
                        inv,
                        inv_sqrt,
                        lc,
                        lp,
                        prio,
                        n,
                        key,
                    )
                    next_run, active = next_run + stride, active + 1


@numba.njit(parallel=True, cache=True)
def _ttucb_blocks(means, runs, delta, seed, blocks, max_samples):
    taus = np.zeros(runs, np.int64)
    m = np.arange(TABLE_SIZE).astype(np.float64)
    log_table = np.log(np.maximum(m, 1.0))
    c_table = np.log((1 + log_table) / delta)
    for b in numba.prange(blocks):
        _block(means, delta, seed, b, blocks, runs, max_samples, taus, log_table, c_table)
    return taus


def ttucb_lanes(
    means: np.ndarray, runs: int, delta: float, seed: int, max_samples: int = 10**9
) -> np.ndarray:
    """τ of ``runs`` TTUCB runs on Bernoulli ``means``: blocks of `LANES` lanes, one block
    per thread and ``runs / (threads · LANES)`` runs per lane (parallel over blocks)."""
    blocks = max(1, min(numba.get_num_threads(), -(-runs // LANES)))
    means = np.asarray(means, np.float64)
    return _ttucb_blocks(means, runs, delta, seed, blocks, max_samples)
