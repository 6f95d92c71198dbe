"""State and numeric parameters of a Top Two run (arrays only, so they can be vmapped)."""

from __future__ import annotations

from typing import Any, NamedTuple

import jax

__all__ = ["TopTwoParams", "TopTwoState"]


class TopTwoState(NamedTuple):
    """State of one Top Two run (arrays only; K = number of arms).

    The driver's fields, and the estimator's own state in ``estimate`` (defined by the
    estimator: `jaxbai.estimators.MeanEstimate`, `jaxbai.estimators.EpisodeEstimate`, or a
    user's), whose ``means`` and ``local_counts`` are also read as ``state.means`` and
    ``state.local_counts``.

    Attributes:
        n: number of samples drawn so far (τ once stopped).
        counts: global counts N_a, int32 ``(K,)``.
        leader_counts: L_a, times arm a was the leader.
        leader_pulls: N^a_a, times arm a was pulled while being the leader.
        priority: per-run random arm priority for tie-breaking.
        stopped: whether the GLR stopping rule has fired.
        recommendation: â at stopping (−1 before).
        estimate: the estimator's state (a `jaxbai.base.Estimate`).
    """

    n: jax.Array
    counts: jax.Array
    leader_counts: jax.Array
    leader_pulls: jax.Array
    priority: jax.Array
    stopped: jax.Array
    recommendation: jax.Array
    estimate: Any

    @property
    def means(self) -> jax.Array:
        """The estimator's means μ̃_a (noisy under global DP)."""
        return self.estimate.means

    @property
    def local_counts(self) -> jax.Array:
        """Local counts Ñ_a, the samples behind each mean (= N_a but for episodic estimators)."""
        return self.estimate.local_counts


class TopTwoParams(NamedTuple):
    """Numeric (traced, vmappable) parameters of a Top Two algorithm.

    Attributes:
        epsilon: privacy budget ε (``inf`` for the non-private TTUCB).
        delta: risk δ.
        beta: tracking proportion β.
        sigma2: sub-Gaussian variance proxy σ² of costs, bonuses and thresholds, with the
            variance the participant mechanism adds (Remark 13).
    """

    epsilon: jax.Array
    delta: jax.Array
    beta: jax.Array
    sigma2: jax.Array
