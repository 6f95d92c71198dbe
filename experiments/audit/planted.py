"""Planted privacy bugs: each must be caught by the audit (``python -m experiments.audit
--planted``, tests/test_audit.py).

Laplace noise at half its scale, randomised response at 3× its claimed ε, a wrapper that runs
an algorithm at 8× the ε it reports (`Overspending`), AdaP-TT with a DAF that does not forget
earlier phases (`remembering_adap_tt`) and DP-TT whose estimator re-noises the running sum of
all rewards at each phase change instead of adding a noisy increment (`renoising_dp_tt`): in the
last two a participant enters every later release of her arm, so the loss only shows through
composition over phases.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp

import jaxbai
from jaxbai import audit, mechanisms
from jaxbai.arrays import compensated, kahan_add
from jaxbai.base import AlgorithmWrapper
from jaxbai.estimators import DAF, CumulativeLaplace

__all__ = [
    "Overspending",
    "RememberingDAF",
    "RenoisingCumulative",
    "half_scale_laplace",
    "remembering_adap_tt",
    "renoising_dp_tt",
    "tripled_randomised_response",
]


def half_scale_laplace(epsilon: float) -> audit.Mechanism:
    """Planted bug: claims ε but adds Lap(1/(2ε)), so it is 2ε-DP."""
    return lambda key, x: x + mechanisms.laplace(key, 0.5 / epsilon)


def tripled_randomised_response(epsilon: float) -> audit.Mechanism:
    """Planted bug: claims ε but runs randomised response at 3ε."""
    return lambda key, x: mechanisms.randomised_response(key, x, 3.0 * epsilon)


@dataclasses.dataclass(frozen=True)
class Overspending(AlgorithmWrapper):
    """Planted bug, written as a user would: a wrapper of ``algorithm``
    (`jaxbai.base.AlgorithmWrapper`) that quietly runs it at ``factor`` × the ε it is given."""

    factor: float = 8.0

    def params(self, epsilon: Any = None, delta: Any = 0.01) -> Any:
        return self.algorithm.params(epsilon=self.factor * epsilon, delta=delta)


@dataclasses.dataclass(frozen=True)
class RememberingDAF(DAF):
    """Planted bug: DAF (Alg. 5) without forgetting. At the end of a phase it releases the mean
    of **all** the arm's rewards plus Lap(1/(εÑ)) (Ñ the phase length, as DAF): a participant
    then enters every later release of her arm, each ε/2-DP, so ε grows with the phases."""

    def observe(self, u, key, estimate, counts, pulled, z, params, release=None):
        del release
        sums, error = kahan_add(estimate.sums, estimate.sums_error, pulled, z)
        due = self.ended(estimate, counts)
        local = self.episode_pulls(estimate, counts)
        means = compensated(sums, error) / jnp.maximum(counts, 1)
        noisy = means + self._noise(u, key, 1.0 / (params.epsilon * jnp.maximum(local, 1)))
        return estimate._replace(
            sums=sums,
            sums_error=error,
            means=jnp.where(due, noisy, estimate.means),
            local_counts=jnp.where(due, local, estimate.local_counts),
            phase_start=jnp.where(due, counts, estimate.phase_start),
            phases=estimate.phases + due,
        )


def remembering_adap_tt() -> Any:
    """AdaP-TT with `RememberingDAF` (a planted bug)."""
    return dataclasses.replace(
        jaxbai.adap_tt(), name="adap_tt_remembering", estimator=RememberingDAF()
    )


@dataclasses.dataclass(frozen=True)
class RenoisingCumulative(CumulativeLaplace):
    """Planted bug: DP-TT's estimator that, at a phase change, releases the sum of **all** the
    arm's rewards plus a fresh Lap(1/ε), instead of adding a noisy increment to S̃: a participant
    then enters every later release of her arm, each ε-DP, so ε grows with the phases."""

    def _close(self, u, estimate, counts, due, sums, error, params, release):
        del release
        noise = mechanisms.laplace_from_uniform(u, 1.0 / params.epsilon)
        raw = compensated(estimate.noisy_sums, estimate.noisy_sums_error)  # all rewards so far
        total = raw + compensated(sums, error)
        means = (total + noise) / jnp.maximum(counts, 1)
        return self._closed(
            estimate,
            counts,
            due,
            sums=jnp.where(due, 0.0, sums),
            sums_error=jnp.where(due, 0.0, error),
            means=jnp.where(due, means, estimate.means),
            local_counts=jnp.where(due, counts, estimate.local_counts),
            noisy_sums=jnp.where(due, total, estimate.noisy_sums),
            noisy_sums_error=jnp.where(due, 0.0, estimate.noisy_sums_error),
        )


def renoising_dp_tt() -> Any:
    """DP-TT with `RenoisingCumulative` (a planted bug; its ``noisy_sums`` hold the raw sums)."""
    return dataclasses.replace(
        jaxbai.dp_tt(), name="dp_tt_renoising", estimator=RenoisingCumulative()
    )
