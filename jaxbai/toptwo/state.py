"""State and numeric parameters of a Top Two run (arrays only, so they can be vmapped)."""

from __future__ import annotations

from typing import NamedTuple

import jax

__all__ = ["TopTwoParams", "TopTwoState"]


class TopTwoState(NamedTuple):
    """State of one Top Two run (arrays only; K = number of arms).

    Attributes:
        n: number of samples drawn so far (τ once stopped).
        counts: global counts N_a, int32 ``(K,)``.
        sums: running (Kahan) sum of the estimator's window: all observations (MLE, CTB,
            Gaussian) or the current phase's (DAF).
        sums_error: Kahan compensation of ``sums``.
        means: the estimator's means μ̃_a (noisy for DAF).
        local_counts: local counts Ñ_a (= N_a except for DAF).
        phase_start: N_{T_k(a),a}, the count at the start of arm a's current phase (DAF).
        phases: phase index k_a (DAF); Σ_a k_a = rounds of adaptivity.
        leader_counts: L_a, times arm a was the leader.
        leader_pulls: N^a_a, times arm a was pulled while being the leader.
        priority: per-run random arm priority for tie-breaking.
        stopped: whether the GLR stopping rule has fired.
        recommendation: â at stopping (−1 before).
    """

    n: jax.Array
    counts: jax.Array
    sums: jax.Array
    sums_error: jax.Array
    means: jax.Array
    local_counts: jax.Array
    phase_start: jax.Array
    phases: jax.Array
    leader_counts: jax.Array
    leader_pulls: jax.Array
    priority: jax.Array
    stopped: jax.Array
    recommendation: jax.Array


class TopTwoParams(NamedTuple):
    """Numeric (traced, vmappable) parameters of a Top Two algorithm.

    Attributes:
        epsilon: privacy budget ε (``inf`` for the non-private TTUCB).
        delta: risk δ.
        beta: tracking proportion β.
        sigma2: sub-Gaussian variance proxy σ² of costs, bonuses and thresholds.
        gamma: γ of the (ε, γ) Gaussian mechanism (unused otherwise).
    """

    epsilon: jax.Array
    delta: jax.Array
    beta: jax.Array
    sigma2: jax.Array
    gamma: jax.Array
