"""Exact discrete Laplace and discrete Gaussian noise for the releases of real trials (global DP).

A DAF phase (Alg. 5) or DP-SE epoch releases the mean of ``count`` rewards. Here the release
adds *discrete* Laplace noise to an *integer* statistic, so no floating-point operation touches
the secret before the noise is added, and the privacy guarantee is exact. The phase's exact
(rational) sum S is put on the grid 1/m, ``round(m S) = floor(m S + 1/2)``, an integer of
sensitivity m (``floor(a) ≤ floor(b) + m`` whenever ``a ≤ b + m``, m an integer), with m the
smallest power of two such that the step 1/m is at most 1 % of the noise scale 1/ε on the sum
(`release_resolution`). For binary outcomes (0 or 1) S is an integer, so m S is exact: no
rounding at all; for rewards in [0, 1] the rounding is at most 1/(2m), 0.5 % of the noise scale.

Noise: ``DLap(t)`` with ``P(X = x) ∝ exp(−|x|/t)`` and ``t = m/ε``; a shift of the input by at
most m changes every log-probability by at most ε, so each release is exactly ε-DP. The noisy
integer divided by ``m · count`` is the released mean (post-processing): Lap(1/(ε count)) noise
on the mean, as Alg. 5 prescribes, on the lattice 1/(m count).

Effect on the stopping thresholds. With s = 1/t, the discrete Laplace has
``E exp(λX) = 1 / (1 − sinh²(λ/2) / sinh²(s/2)) ≤ 1 / (1 − λ² t²) = E exp(λY)`` for every
|λ| < s, Y ~ Lap(t), because sinh(x)/x increases in |x| (and Var X = 1/(2 sinh²(s/2)) ≤ 2t²):
it is at least as concentrated as the continuous Laplace in every Chernoff bound. Its tail at
the lattice points is slightly heavier: ``P(|X| ≥ u) = 2 q^⌈u⌉ / (1 + q) ≤ (1 + tanh(s/2))
exp(−u/t)``, q = e^(−s); the δ-correctness proofs of the private thresholds (Lemma 21, Eq. 22;
Lemma 23) use ``P(ε Ñ |Y| ≥ u) = e^(−u)``, so with the grid they hold with that event's
probability multiplied by c = `tail_factor` = (1 + tanh(ε/(2m))) · e^(ε/(2m)) (the second
factor, absent for binary outcomes, covers the rounding): c ≤ 1.0101 with m ≥ 100 ε, so the
theory thresholds as printed keep the error probability below δ (1 + (c − 1)/2) ≤ 1.0051 δ, and
below δ for a trial created with δ/c. (With m = 1, DLap(1/ε) on the integer sum, c would be
1 + tanh(ε/2), up to 2: this is why binary outcomes use the grid too, where it is exact.)

Discrete Gaussian (ρ-zCDP releases, `jaxbai.base.privacy`). ``N_Z(0, σ²)`` with
``P(X = x) ∝ exp(−x²/(2σ²))`` on the integers; added to an integer of sensitivity m it is exactly
m²/(2σ²)-zCDP (Canonne, Kamath & Steinke 2020, Theorem 4), so σ = m/√(2ρ) with ρ = c·ε² gives
the estimator's zCDP at ε, on the same grid 1/m (m from `release_resolution` at ε√(2c), so the
step is at most 1 % of the noise's σ on the sum). It has variance at most σ² and is
σ-sub-Gaussian (ibid., Corollary 9): its moment generating function is at most the continuous
Gaussian's, so every Chernoff bound of N(0, σ²) holds for it; its tail at a lattice point may
exceed the continuous one's, and `tail_factor`, which is the Laplace's, does not cover it.

Samplers. `opendp_laplace` uses OpenDP's Laplace measurement on an integer domain (the exact
Canonne–Kamath–Steinke discrete Laplace sampler, drawn from the operating system's CSPRNG,
with OpenDP's privacy map): real trials use it (``pip install opendp``). `exact_laplace` is the
same algorithm (Canonne, Kamath & Steinke 2020, Alg. 1–2) in integer and `fractions.Fraction`
arithmetic over any source of random bits: rehearsals (a seeded source) and tests use it.
`opendp_gaussian` and `exact_gaussian` are the same pair for the discrete Gaussian (OpenDP's
``make_gaussian`` on integers; Canonne, Kamath & Steinke 2020, Alg. 3).

Examples:
  >>> import random
  >>> noise = exact_laplace(epsilon=1.0, sensitivity=1, randbits=random.Random(0).getrandbits)
  >>> isinstance(noise.add(7), int), noise.epsilon
  (True, 1.0)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import NamedTuple

from jaxbai.extras import require

__all__ = [
    "GRID_FRACTION",
    "IntegerNoise",
    "RandBits",
    "exact_gaussian",
    "exact_laplace",
    "noisy_mean",
    "opendp_gaussian",
    "opendp_laplace",
    "release_resolution",
    "round_to_grid",
    "tail_factor",
]

RandBits = Callable[[int], int]
"""``randbits(k)``: k independent fair bits as an int in [0, 2^k) (e.g. `secrets.randbits`)."""

GRID_FRACTION = Fraction(1, 100)
"""Largest grid step on a released sum, relative to the noise scale 1/ε (outcomes in [0, 1])."""

_INT64_MAX = 2**63 - 1


class IntegerNoise(NamedTuple):
    """A discrete Laplace or discrete Gaussian mechanism on integers of a given sensitivity.

    Attributes:
      add: ``x ↦ x + DLap(sensitivity/ε)``, or ``x + N_Z(0, σ²)``.
      epsilon: the mechanism's effective ε (at most the target): exactly the target for the
        exact samplers, OpenDP's privacy map for OpenDP's (for the discrete Gaussian the ε
        whose ρ = c·ε² the map gives).
      scale: the noise scale actually used: t of the Laplace, σ of the Gaussian.
    """

    add: Callable[[int], int]
    epsilon: float
    scale: Fraction


def release_resolution(epsilon: float) -> int:
    """m: the grid 1/m of released sums, the smallest power of two with 1/m ≤ 1 % of 1/ε.

    Examples:
      >>> release_resolution(0.05), release_resolution(1.0), release_resolution(0.001)
      (8, 128, 1)
    """
    needed = Fraction(epsilon) / GRID_FRACTION
    return 1 << max(math.ceil(needed) - 1, 0).bit_length()


def tail_factor(epsilon: float, resolution: int, binary: bool) -> float:
    """c: how much more likely the released noise exceeds a threshold than Lap(1/(ε Ñ)) does.

    ``(1 + tanh(ε/(2m))) · e^(ε/(2m))``, without the second factor for binary outcomes (see
    the module docstring). A trial created with ``delta=δ / c`` keeps the theory thresholds'
    guarantee at δ exactly.

    Examples:
      >>> round(tail_factor(1.0, 128, binary=True), 5), round(tail_factor(1.0, 1, True), 3)
      (1.00391, 1.462)
    """
    half_step = epsilon / (2 * resolution)
    return (1 + math.tanh(half_step)) * (1.0 if binary else math.exp(half_step))


def round_to_grid(total: Fraction, resolution: int) -> int:
    """``floor(m · total + 1/2)``, exactly: the sum on the grid 1/m, as an integer.

    Examples:
      >>> round_to_grid(Fraction(5, 8), 2), round_to_grid(Fraction(3, 4), 2)
      (1, 2)
    """
    return math.floor(resolution * total + Fraction(1, 2))


def noisy_mean(total: Fraction, count: int, resolution: int, noise: IntegerNoise) -> Fraction:
    """The private mean of ``count`` rewards in [0, 1] from their exact sum (Alg. 5, line 7).

    ``(round_to_grid(total, m) + noise) / (m · count)``, the noise of sensitivity
    m = ``resolution``: DLap(m/ε) (ε-DP) or a discrete Gaussian (`exact_gaussian`, ρ-zCDP).
    Exact: the caller rounds the result once, for the algorithm's state.

    Examples:
      >>> import random
      >>> noise = exact_laplace(2.0, 1, random.Random(1).getrandbits)
      >>> noisy_mean(Fraction(3), 4, 1, noise).denominator in (1, 2, 4)
      True
    """
    if count < 1:
        raise ValueError(f"a release needs at least one sample, got {count}")
    return Fraction(noise.add(round_to_grid(total, resolution)), resolution * count)


# ------------------------------------------------------------------------------ exact sampler
def _uniform_below(bound: int, randbits: RandBits) -> int:
    """Uniform on {0, …, bound − 1} by rejection from fair bits."""
    if bound == 1:
        return 0
    width = (bound - 1).bit_length()
    while True:
        value = randbits(width)
        if value < bound:
            return value


def _bernoulli(p: Fraction, randbits: RandBits) -> bool:
    """True with probability exactly p ∈ [0, 1] (rational)."""
    return _uniform_below(p.denominator, randbits) < p.numerator


def _bernoulli_exp(gamma: Fraction, randbits: RandBits) -> bool:
    """True with probability exactly exp(−γ), γ ∈ [0, 1] rational (Canonne et al. 2020, Alg. 1).

    Draws A_k ~ Bernoulli(γ/k) for k = 1, 2, … until one fails: the first failure is at k with
    probability γ^(k−1)/(k−1)! − γ^k/k!, so k is odd with probability Σ_i (−γ)^i/i! = exp(−γ).
    """
    k = 1
    while _bernoulli(gamma / k, randbits):
        k += 1
    return k % 2 == 1


def _sample_discrete_laplace(scale: Fraction, randbits: RandBits) -> int:
    """One draw of DLap(t), t = scale > 0 rational (Canonne et al. 2020, Alg. 2)."""
    t, s = scale.numerator, scale.denominator  # DLap(t/s) in the paper's notation
    while True:
        u = _uniform_below(t, randbits)
        if not _bernoulli_exp(Fraction(u, t), randbits):
            continue
        v = 0
        while _bernoulli_exp(Fraction(1), randbits):
            v += 1
        y = (u + t * v) // s
        negative = randbits(1) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def exact_laplace(epsilon: float, sensitivity: int, randbits: RandBits) -> IntegerNoise:
    """Discrete Laplace with scale exactly sensitivity/ε, from ``randbits`` (integer arithmetic).

    Args:
      epsilon: ε > 0, finite; taken as the exact rational value of the double.
      sensitivity: the integer statistic's sensitivity m ≥ 1.
      randbits: the source of fair bits (a seeded one for rehearsals and tests).

    Examples:
      >>> import random
      >>> noise = exact_laplace(0.5, 4, random.Random(0).getrandbits)
      >>> noise.scale, noise.epsilon
      (Fraction(8, 1), 0.5)
    """
    _check(epsilon, sensitivity)
    scale = Fraction(sensitivity) / Fraction(epsilon)
    return IntegerNoise(
        lambda x: x + _sample_discrete_laplace(scale, randbits), float(epsilon), scale
    )


def _bernoulli_exp_any(gamma: Fraction, randbits: RandBits) -> bool:
    """True with probability exactly exp(−γ), γ ≥ 0 rational: exp(−1)^⌊γ⌋ · exp(−(γ − ⌊γ⌋))
    (Canonne et al. 2020, Alg. 1)."""
    whole = math.floor(gamma)
    for _ in range(whole):
        if not _bernoulli_exp(Fraction(1), randbits):
            return False
    return _bernoulli_exp(gamma - whole, randbits)


def _sample_discrete_gaussian(sigma2: Fraction, randbits: RandBits) -> int:
    """One draw of N_Z(0, σ²), σ² > 0 rational (Canonne et al. 2020, Alg. 3): a DLap(t) draw
    Y, t = ⌊σ⌋ + 1, kept with probability exp(−(|Y| − σ²/t)²/(2σ²))."""
    t = math.isqrt(math.floor(sigma2)) + 1  # ⌊σ⌋ + 1
    while True:
        y = _sample_discrete_laplace(Fraction(t), randbits)
        if _bernoulli_exp_any((abs(y) - sigma2 / t) ** 2 / (2 * sigma2), randbits):
            return y


def _gaussian_sigma2(epsilon: float, sensitivity: int, rho_per_epsilon_squared: float) -> Fraction:
    """σ² = m²/(2ρ), ρ = c·ε², exactly (the doubles as rationals)."""
    _check(epsilon, sensitivity)
    if not (math.isfinite(rho_per_epsilon_squared) and rho_per_epsilon_squared > 0):
        raise ValueError(f"ρ/ε² must be positive and finite, got {rho_per_epsilon_squared!r}")
    rho = Fraction(rho_per_epsilon_squared) * Fraction(epsilon) ** 2
    return Fraction(sensitivity) ** 2 / (2 * rho)


def exact_gaussian(
    epsilon: float, sensitivity: int, randbits: RandBits, rho_per_epsilon_squared: float = 0.5
) -> IntegerNoise:
    """Discrete Gaussian with σ² exactly m²/(2c ε²) (ρ = c·ε²-zCDP at sensitivity m), from
    ``randbits`` (integer arithmetic); ``scale`` is σ rounded to a fraction (σ² is exact).

    Examples:
      >>> import random
      >>> noise = exact_gaussian(0.5, 4, random.Random(0).getrandbits)
      >>> noise.scale, noise.epsilon, isinstance(noise.add(3), int)
      (Fraction(8, 1), 0.5, True)
    """
    sigma2 = _gaussian_sigma2(epsilon, sensitivity, rho_per_epsilon_squared)
    scale = Fraction(math.sqrt(sigma2)).limit_denominator(2**32)
    return IntegerNoise(
        lambda x: x + _sample_discrete_gaussian(sigma2, randbits), float(epsilon), scale
    )


# ------------------------------------------------------------------------------ OpenDP
def _check(epsilon: float, sensitivity: int) -> None:
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"discrete noise needs a finite epsilon > 0, got {epsilon!r}")
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, int) or sensitivity < 1:
        raise ValueError(f"sensitivity must be an integer ≥ 1, got {sensitivity!r}")


def _opendp():
    dp = require(
        "opendp.prelude",
        extra="trial",
        purpose="a real trial's releases (noise='secure'; noise='prng' rehearses without it)",
    )
    dp.enable_features("contrib")
    return dp


@functools.cache
def _opendp_measurement(epsilon: float, sensitivity: int):
    """OpenDP's integer Laplace measurement whose privacy map at ``sensitivity`` is ≤ ε."""
    dp = _opendp()
    space = dp.atom_domain(T="i64"), dp.absolute_distance(T="i64")
    scale = sensitivity / epsilon
    while True:
        measurement = dp.m.make_laplace(*space, scale=scale)
        if measurement.map(sensitivity) <= epsilon:
            return measurement, scale
        scale = math.nextafter(scale, math.inf)


@functools.cache
def _opendp_gaussian_measurement(epsilon: float, sensitivity: int, c: float):
    """OpenDP's integer Gaussian measurement whose zCDP map at ``sensitivity`` is ≤ c·ε²."""
    dp = _opendp()
    space = dp.atom_domain(T="i64"), dp.absolute_distance(T="i64")
    scale = sensitivity / (math.sqrt(2 * c) * epsilon)
    while True:
        measurement = dp.m.make_gaussian(*space, scale=scale)
        if measurement.map(sensitivity) <= c * epsilon**2:
            return measurement, scale
        scale = math.nextafter(scale, math.inf)


def _checked_add(measurement) -> Callable[[int], int]:
    """``x ↦ measurement(x)`` for x in OpenDP's 64-bit range (with room for the noise)."""

    def add(x: int) -> int:
        if abs(x) > _INT64_MAX // 2:
            raise ValueError(f"statistic {x} is out of OpenDP's 64-bit integer range")
        return int(measurement(x))

    return add


def opendp_gaussian(
    epsilon: float, sensitivity: int, rho_per_epsilon_squared: float = 0.5
) -> IntegerNoise:
    """Discrete Gaussian from the operating system's CSPRNG, by OpenDP (``make_gaussian``).

    The scale is m/(√(2c)·ε) rounded to a double, nudged up until OpenDP's zCDP map reports at
    most ρ = c·ε²; the effective ε is √(map/c).

    Raises:
      RuntimeError: OpenDP is not installed.
      ValueError: ε not finite and > 0, a bad sensitivity or c.

    Examples:
      >>> noise = opendp_gaussian(0.5, 4)
      >>> float(noise.scale), noise.epsilon, isinstance(noise.add(3), int)
      (8.0, 0.5, True)
    """
    _gaussian_sigma2(epsilon, sensitivity, rho_per_epsilon_squared)  # checks the arguments
    c = float(rho_per_epsilon_squared)
    measurement, scale = _opendp_gaussian_measurement(float(epsilon), sensitivity, c)
    rho = measurement.map(sensitivity)  # ≤ c·ε², so √(ρ/c) ≤ ε but for its last rounding
    return IntegerNoise(
        _checked_add(measurement), min(math.sqrt(rho / c), float(epsilon)), Fraction(scale)
    )


def opendp_laplace(epsilon: float, sensitivity: int) -> IntegerNoise:
    """Discrete Laplace from the operating system's CSPRNG, by OpenDP (``make_laplace``).

    The scale is sensitivity/ε rounded up to a double, nudged up until OpenDP's privacy map
    reports at most ε; the effective ε is that map's value.

    Raises:
      RuntimeError: OpenDP is not installed.
      ValueError: ε not finite and > 0, or a bad sensitivity.

    Examples:
      >>> noise = opendp_laplace(0.5, 1)
      >>> noise.scale, noise.epsilon, isinstance(noise.add(3), int)
      (Fraction(2, 1), 0.5, True)
    """
    _check(epsilon, sensitivity)
    measurement, scale = _opendp_measurement(float(epsilon), sensitivity)
    return IntegerNoise(
        _checked_add(measurement), float(measurement.map(sensitivity)), Fraction(scale)
    )
