"""The releases of global-DP trials: noisy means computed from exact sums, with exact noise.

The trial keeps, per arm, the count and exact sum of the observations not yet released (its
*windows*). Before an update it asks the algorithm's `pending_release` which means the update
would release and from how many samples; it checks those counts against its windows, releases
each mean with `jaxbai.mechanisms.discrete.noisy_mean` and hands the values to
``update(release=...)``, so the algorithm's own (PRNG) draws are never used.

The noise is the one the algorithm declares (`jaxbai.base.AlgorithmInfo.release_noise`), at the
scale its measure gives (`jaxbai.base.privacy.release_scale` on a mean, the same scale times
m·count on the integer sum): discrete Laplace for pure ε-DP, discrete Gaussian for ρ-zCDP
(`jaxbai.mechanisms.discrete`). Where it comes from (``noise`` of
the trial's configuration):

* ``"secure"``: OpenDP's sampler from the operating system's CSPRNG, or, when a test
  injects a bit source, the exact sampler over it;
* ``"prng"``: the exact sampler over a generator seeded by the update's JAX key, so a rehearsal
  is reproducible from its seed, and recording outcomes in cohorts gives the same noise as
  recording them one by one.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxbai.base import Algorithm
from jaxbai.mechanisms import discrete
from jaxbai.trial._config import TrialConfig, Windows

__all__ = ["Releaser", "add_to_window"]


def add_to_window(windows: Windows, arm: int, z: float) -> Windows:
    """The windows after observing ``z`` for ``arm`` (exact arithmetic)."""
    count, total = windows[arm]
    return (*windows[:arm], (count + 1, total + Fraction(z)), *windows[arm + 1 :])


def _seeded_bits(key: jax.Array) -> discrete.RandBits:
    """A bit source seeded by ``key`` (rehearsals): reproducible, not secret."""
    words = np.asarray(jax.random.key_data(jax.random.fold_in(key, 1)))
    return random.Random(int.from_bytes(words.tobytes(), "little")).getrandbits


class Releaser:
    """How one trial releases its means (see the module docstring).

    Args:
      config: the trial's configuration.
      alg: its algorithm.
      randbits: an injected bit source for ``"secure"`` mode (tests only), else ``None``.

    Raises:
      RuntimeError: a real (``"secure"``) global-DP trial without OpenDP installed.
    """

    def __init__(
        self, config: TrialConfig, alg: Algorithm, randbits: discrete.RandBits | None
    ) -> None:
        self._epsilon = config.epsilon
        self._prng = config.noise == "prng"
        self._binary = config.outcomes == "binary"
        self._randbits = randbits
        self.resolution: int | None = None
        self._secure: discrete.IntegerNoise | None = None
        self._gaussian = alg.info.release_noise == "gaussian"
        self._c = alg.info.measure.rho_per_epsilon_squared if self._gaussian else None
        if alg.info.privacy == "global":
            # The grid step is at most 1 % of the noise's scale on a sum, 1/ε or 1/(ε√(2c)).
            grid_epsilon = config.epsilon * (math.sqrt(2 * self._c) if self._gaussian else 1.0)
            self.resolution = discrete.release_resolution(grid_epsilon)
            if not self._prng and randbits is None:
                self._secure = self._sampler(None)

    @property
    def epsilon(self) -> float | None:
        """The effective ε of every release (at most the target), or ``None`` if none."""
        if self.resolution is None:
            return None
        return self._secure.epsilon if self._secure is not None else self._epsilon

    def describe(self) -> str:
        """The noise source, in words (for status and publication)."""
        if self._prng:
            source = "a generator seeded by the JAX key (rehearsal only: not secret)"
        elif self._secure is None:
            source = "an injected bit source (testing only)"
        else:
            source = "the operating system CSPRNG (OpenDP)"
        sums = "integer" if self._binary else "rounded"
        kind = "gaussian" if self._gaussian else "laplace"
        return (
            f"exact discrete {kind} on {sums} phase sums on the grid 1/{self.resolution}, "
            f"from {source}"
        )

    def _sampler(self, randbits: discrete.RandBits | None) -> discrete.IntegerNoise:
        """The declared noise at sensitivity m: OpenDP's (``randbits`` None) or the exact one."""
        eps, m = self._epsilon, self.resolution
        if self._gaussian:
            if randbits is None:
                return discrete.opendp_gaussian(eps, m, self._c)
            return discrete.exact_gaussian(eps, m, randbits, self._c)
        if randbits is None:
            return discrete.opendp_laplace(eps, m)
        return discrete.exact_laplace(eps, m, randbits)

    def _noise(self, key: jax.Array) -> discrete.IntegerNoise:
        if self._secure is not None:
            return self._secure
        return self._sampler(_seeded_bits(key) if self._prng else self._randbits)

    def release(
        self,
        pending_release: Callable[..., Any],
        state: Any,
        arm: int,
        z: float,
        windows: Windows,
        key: jax.Array,
    ) -> tuple[jax.Array, Windows]:
        """The means the update of ``arm`` with ``z`` releases (NaN elsewhere: unused).

        Args:
          pending_release: ``(state, arm, z) -> Release`` of the algorithm.
          state: the state before the update.
          arm, z: the observation.
          windows: the windows after adding ``z`` (`add_to_window`).
          key: the update's key (seeds the noise in ``"prng"`` mode).

        Returns:
          The ``(K,)`` release for ``update`` and the windows after it.

        Raises:
          RuntimeError: the algorithm would release a mean of samples the trial does not hold.
        """
        due, _, counts = pending_release(state, np.int32(arm), np.float32(z))
        release = np.full(len(windows), np.nan)
        if not bool(due):
            return jnp.asarray(release, jnp.float32), windows
        noise = self._noise(key)
        updated = list(windows)
        for a, count in enumerate(np.asarray(counts).tolist()):
            if count == 0:
                continue
            held, total = windows[a]
            if held != count:
                raise RuntimeError(
                    f"the algorithm would release a mean of {count} samples of arm {a}, but the "
                    f"trial holds {held} unreleased ones: refusing an unaccounted release"
                )
            mean = discrete.noisy_mean(total, count, self.resolution, noise)
            release[a] = float(mean)
            updated[a] = (0, Fraction(0))
        return jnp.asarray(release, jnp.float32), tuple(updated)
