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

import numpy as np

from experiments.bench.numba_loop import BONUS, SIGMA2
from jaxbai.extras import require

numba = require("numba", extra="bench", purpose="the numba loops of experiments.bench")

__all__ = ["LANES", "TABLE_SIZE", "ttucb_lanes"]

LANES = 64
"""Lanes per block: a block's state (about 10·K·LANES doubles) stays in the L1 cache."""
TABLE_SIZE = 1 << 16
"""log n and the threshold are tabulated for n < TABLE_SIZE."""
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_JIT = {"cache": True, "error_model": "numpy"}
"""Every kernel: no division-by-zero branch (the only division, 1/N, has N ≥ 1)."""


@numba.njit(inline="always", **_JIT)
def _mix(x: np.uint64) -> np.uint64:
    """SplitMix64's finaliser (a bijection of 64-bit words)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@numba.njit(inline="always", **_JIT)
def _uniform(key: np.uint64, n: np.int64) -> float:
    """A uniform on [0, 1) from the hash of (run key, counter n)."""
    bits = _mix(key + np.uint64(n + 1) * _GOLDEN)
    return float(bits >> np.uint64(11)) * 2.0**-53


@numba.njit(**_JIT)
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


# Every loop over lanes loads its operands into locals, then selects among them and stores once:
# the form LLVM turns into vector selects (a load under a condition stays a branch).


@numba.njit(**_JIT)
def _argmax_ties(values, prio, out, best_value, best_prio) -> None:
    """Per lane: argmax_a values[a], ties by the larger priority."""
    for i in range(out.shape[0]):
        out[i], best_value[i], best_prio[i] = 0, values[0, i], prio[0, i]
    for a in range(1, values.shape[0]):
        for i in range(out.shape[0]):
            v, p = values[a, i], prio[a, i]
            o, bv, bp = out[i], best_value[i], best_prio[i]
            if (v > bv) | ((v == bv) & (p > bp)):
                o, bv, bp = a, v, p
            out[i], best_value[i], best_prio[i] = o, bv, bp


@numba.njit(**_JIT)
def _pick(values, index, out) -> None:
    """Per lane: values[index[i], i]."""
    for i in range(out.shape[0]):
        out[i] = values[0, i]
    for a in range(1, values.shape[0]):
        for i in range(out.shape[0]):
            old, new = out[i], values[a, i]
            out[i] = new if index[i] == a else old


@numba.njit(**_JIT)
def _put(values, index, value) -> None:
    """Per lane: values[index[i], i] = value[i]."""
    for a in range(values.shape[0]):
        for i in range(value.shape[0]):
            old, new = values[a, i], value[i]
            values[a, i] = new if index[i] == a else old


@numba.njit(inline="always", **_JIT)
def _c2(n: int, delta: float) -> float:
    """2σ² · log((1 + log n)/δ): the heuristic threshold times 2σ²."""
    return 2 * SIGMA2 * math.log((1 + math.log(n)) / delta)


@numba.njit(inline="always", **_JIT)
def _root(n: int) -> float:
    """√(BONUS · log n): the bonus b^G (Eq. 3) times √N_a."""
    return math.sqrt(BONUS * math.log(n))


@numba.njit(**_JIT)
def _thresholds(n, delta, c2_table, root_table, c2, root) -> None:
    """Per lane: `_c2` and `_root` of n, from the tables below their size, exact above."""
    exact = False
    for i in range(n.shape[0]):
        m = min(n[i], TABLE_SIZE - 1)
        exact |= n[i] >= TABLE_SIZE
        c2[i], root[i] = c2_table[m], root_table[m]
    if exact:
        for i in range(n.shape[0]):
            c2[i], root[i] = _c2(n[i], delta), _root(n[i])


@numba.njit(**_JIT)
def _glr_stop(mu, inv, best, mu_b, inv_b, c2, n, max_samples, stop) -> None:
    """Per lane: the GLR test (Eq. 2) at â, gap² ≥ 2σ²c (1/N_â + 1/N_b) for every b ≠ â (or
    the budget reached)."""
    for i in range(stop.shape[0]):
        stop[i] = 1.0
    for a in range(mu.shape[0]):
        for i in range(stop.shape[0]):
            gap, s = max(mu_b[i] - mu[a, i], 0.0), stop[i]
            if (a != best[i]) & (gap * gap < c2[i] * (inv_b[i] + inv[a, i])):
                s = 0.0
            stop[i] = s
    for i in range(stop.shape[0]):
        s = stop[i]
        if n[i] >= max_samples:
            s = 1.0
        stop[i] = s


@numba.njit(**_JIT)
def _tc_challenger(mu, inv, prio, leader, mu_l, inv_l, out, num_best, den_best, prio_best):
    """Per lane: argmin_{b ≠ B} W^G_{B,b} (Eq. 3) compared as gap²·(1/N_B + 1/N_c) against
    gap_c²·(1/N_B + 1/N_b), ties by the larger priority."""
    for i in range(out.shape[0]):
        out[i], num_best[i], den_best[i], prio_best[i] = -1, np.inf, 1.0, -1.0
    for a in range(mu.shape[0]):
        for i in range(out.shape[0]):
            gap = max(mu_l[i] - mu[a, i], 0.0)
            num, den, p = gap * gap, inv_l[i] + inv[a, i], prio[a, i]
            lhs, rhs = num * den_best[i], num_best[i] * den
            o, nb, db, pb = out[i], num_best[i], den_best[i], prio_best[i]
            if (a != leader[i]) & ((lhs < rhs) | ((lhs == rhs) & (p > pb))):
                o, nb, db, pb = a, num, den, p
            out[i], num_best[i], den_best[i], prio_best[i] = o, nb, db, pb


@numba.njit(**_JIT)
def _block(
    means, delta, seed, first, stride, runs, max_samples, taus, best_arms, c2_table, root_table
):
    """Run jobs first, first + stride, … < runs in one block of lanes; τ and â into ``taus``
    and ``best_arms``."""
    k, shape = means.shape[0], (means.shape[0], LANES)
    mu, sums, counts, inv = np.zeros(shape), np.zeros(shape), np.zeros(shape), np.zeros(shape)
    inv_sqrt, lc, lp = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    prio, scores = np.zeros(shape), np.zeros(shape)
    n, job = np.zeros(LANES, np.int64), np.full(LANES, -1, np.int64)
    key = np.zeros(LANES, np.uint64)
    best, leader = np.zeros(LANES, np.int64), np.zeros(LANES, np.int64)
    challenger, arm = np.zeros(LANES, np.int64), np.zeros(LANES, np.int64)
    v1, v2, v3, mu_b = np.zeros(LANES), np.zeros(LANES), np.zeros(LANES), np.zeros(LANES)
    inv_b, c2, root, stop = np.zeros(LANES), np.zeros(LANES), np.zeros(LANES), np.zeros(LANES)
    next_run, active = first, 0
    for lane in range(LANES):
        if next_run < runs:
            job[lane] = next_run
            _load(
                lane, next_run, seed, means, mu, sums, counts, inv, inv_sqrt, lc, lp, prio, n, key
            )
            next_run, active = next_run + stride, active + 1
    while active > 0:
        _argmax_ties(mu, prio, best, v1, v2)
        _pick(mu, best, mu_b)
        _pick(inv, best, inv_b)
        _thresholds(n, delta, c2_table, root_table, c2, root)
        _glr_stop(mu, inv, best, mu_b, inv_b, c2, n, max_samples, stop)
        # UCB leader (Alg. 1 line 8): argmax μ̂_a + √(BONUS log n) / √N_a.
        for a in range(k):
            for i in range(LANES):
                scores[a, i] = mu[a, i] + root[i] * inv_sqrt[a, i]
        _argmax_ties(scores, prio, leader, v1, v2)
        _pick(mu, leader, mu_b)
        _pick(inv, leader, inv_b)
        _tc_challenger(mu, inv, prio, leader, mu_b, inv_b, challenger, v1, v2, v3)
        # β-tracking (line 10): the leader is pulled iff N^B_B ≤ β (L_B + 1).
        _pick(lc, leader, v1)
        _pick(lp, leader, v2)
        for i in range(LANES):
            a = challenger[i]
            if v2[i] <= 0.5 * (v1[i] + 1):
                a = leader[i]
            arm[i] = a
            v1[i] += 1.0
            if a == leader[i]:
                v2[i] += 1.0
        _put(lc, leader, v1)
        _put(lp, leader, v2)
        # The pull's reward, then the caches of the pulled arm: N, S, μ̂ = S/N, 1/N, 1/√N.
        for i in range(LANES):
            v3[i] = means[0]
        for a in range(1, k):
            for i in range(LANES):
                p = v3[i]
                if arm[i] == a:
                    p = means[a]
                v3[i] = p
        for i in range(LANES):
            r = 0.0
            if _uniform(key[i], n[i]) < v3[i]:
                r = 1.0
            v3[i] = r
        _pick(counts, arm, v1)
        _pick(sums, arm, v2)
        for i in range(LANES):
            v1[i] += 1.0
            v2[i] += v3[i]
            inv_b[i] = 1.0 / v1[i]
            mu_b[i] = v2[i] * inv_b[i]
            root[i] = math.sqrt(inv_b[i])
        _put(counts, arm, v1)
        _put(sums, arm, v2)
        _put(mu, arm, mu_b)
        _put(inv, arm, inv_b)
        _put(inv_sqrt, arm, root)
        for i in range(LANES):
            if job[i] >= 0:
                n[i] += 1
        # Stopped runs record τ; their lanes load the block's next runs (tested next step).
        for i in range(LANES):
            if stop[i] > 0 and job[i] >= 0:
                taus[job[i]], best_arms[job[i]] = n[i] - 1, best[i]
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
    taus, best_arms = np.zeros(runs, np.int64), np.zeros(runs, np.int64)
    c2_table, root_table = np.zeros(TABLE_SIZE), np.zeros(TABLE_SIZE)
    for m in range(1, TABLE_SIZE):
        c2_table[m], root_table[m] = _c2(m, delta), _root(m)
    for b in numba.prange(blocks):
        _block(
            means, delta, seed, b, blocks, runs, max_samples, taus, best_arms, c2_table, root_table
        )
    return taus, best_arms


def ttucb_lanes(
    means: np.ndarray, runs: int, delta: float, seed: int, max_samples: int = 10**9
) -> tuple[np.ndarray, np.ndarray]:
    """(τ, â) of ``runs`` TTUCB runs on Bernoulli ``means``, int64 ``(runs,)`` each: blocks of
    `LANES` lanes, one block per thread and ``runs / (threads · LANES)`` runs per lane
    (parallel over blocks). Run r's numbers depend on (seed, r) only."""
    blocks = max(1, min(numba.get_num_threads(), -(-runs // LANES)))
    means = np.asarray(means, np.float64)
    return _ttucb_blocks(means, runs, delta, seed, blocks, max_samples)
