"""Noise for real trials: a cryptographically secure source and floating-point-safe mechanisms.

Simulations draw their noise from JAX's counter-based PRNG, which is reproducible but not secret.
A real trial (`jaxbai.trial`) draws it here instead, from the operating system's CSPRNG
(`secrets`), on the host, in double precision:

* `secure_uniform` draws a double in (0, 1) with probability equal to the width of the real
  interval it stands for, i.e. an exact discretisation of U(0, 1) (the sampler Mironov (2012)
  requires; ``random()``-style samplers only reach multiples of 2^-53).
* `snapping_mechanism` is the Laplace mechanism (Theorem 3 of the paper) hardened against the
  floating-point attack on naive samplers of Mironov (2012), "On significance of the least
  significant bits for differential privacy": clamp the input to [-B, B], add ``λ · S · ln U``
  with an exactly rounded logarithm, round to the nearest multiple of Λ (the smallest power of
  two ≥ λ) and clamp again. Mironov's Theorem 1 states that, for a sensitivity-1 input in double
  precision and λ < B < 2^46 λ, the output is (1/λ + 2^-49 B/λ)-DP; `snapping_scale`
  inverts that bound so the *effective* ε never exceeds the target.
* `release_mean` is a snapped release of the mean of ``count`` rewards in [0, 1] (Alg. 5,
  line 7), ε-DP by snapping their (exactly accumulated) sum; its rounding to multiples of Λ ≥ λ is
  as large as the noise. Trials of schema 1 released with it; trials now release with the exact
  discrete Laplace of `jaxbai.mechanisms.discrete` (no rounding for binary outcomes, a grid of
  at most 1 % of the noise scale otherwise).
* `secure_randomised_response` (CTB, Alg. 4 / Lemma 12), `secure_gaussian_mechanism`
  (Alg. 8) and `secure_laplace_mechanism` (Theorem 3) are the local mechanisms: the
  host-side, CSPRNG samplers of `jaxbai.mechanisms.RandomisedResponse`,
  `jaxbai.mechanisms.GaussianNoise` and `jaxbai.mechanisms.LaplaceNoise`
  (`jaxbai.base.Mechanism.secure_privatize`). `privatize_locally` is the helper a
  participant runs on her own device with the trial's mechanism, so that only the privatised
  value ever reaches the trial's server (Definition 7).

Every sampler takes a ``uniform`` argument, a callable returning doubles in (0, 1); it defaults
to `secure_uniform`. Only tests should pass anything else.

Caveat: the Gaussian and Laplace participant mechanisms here are sampled from secure uniforms
(by Box–Muller, and by inversion with an exactly rounded logarithm) but are not snapped: the
reward plus the noise, rounded to a double, is exposed to floating-point attacks of the kind
Mironov (2012) describes (snapping would round the output to a grid as coarse as the noise and
bias the means the algorithm compares; no snapping theorem is known to us for the Gaussian).
Prefer randomised response (``ctb_tt``), whose output is one bit, for real local-DP trials.
"""

from __future__ import annotations

import decimal
import math
import secrets
from collections.abc import Callable
from fractions import Fraction

from jaxbai import checks
from jaxbai.base import Mechanism

__all__ = [
    "Uniform",
    "exact_log",
    "gaussian_sigma",
    "laplace_noise",
    "privatize_locally",
    "release_mean",
    "secure_gaussian_mechanism",
    "secure_laplace_mechanism",
    "secure_randomised_response",
    "secure_uniform",
    "snapping_epsilon",
    "snapping_grid",
    "snapping_mechanism",
    "snapping_scale",
]

Uniform = Callable[[], float]
"""A source of doubles in (0, 1); `secure_uniform` for real use, a deterministic stream in tests."""

# 60 significant digits (~199 bits) make the decimal logarithm, once rounded to a double, the
# exactly rounded natural log: the hardest double-precision cases of ln need ~120 bits
# (Lefèvre & Muller, worst cases for correct rounding of elementary functions).
_LN_CONTEXT = decimal.Context(prec=60, rounding=decimal.ROUND_HALF_EVEN)

# Mironov (2012), Theorem 1, double precision: ε = (Δ + 2^-49 B) / λ, valid for λ < B < 2^46 λ.
_SNAP_ROUNDING = 2.0**-49
_SNAP_MAX_RATIO = 2.0**46
# A correctly rounded double differs from the exact sum by at most half an ulp ≤ 2^-53 |x|, so two
# neighbouring sums (exact difference ≤ 1) differ by at most 1 + 2^-52 B once rounded.
_SUM_ROUNDING = 2.0**-52


def secure_uniform() -> float:
    """Draws a double from (0, 1) with the CSPRNG, each with probability equal to its spacing.

    The binade [2^-e, 2^-e+1) is chosen with probability 2^-e (e - 1 is the number of trailing
    zero bits of a random word) and the 52 mantissa bits uniformly, so each double d is drawn
    with probability equal to the width of [d, next double), and ``P(U < p) = p`` exactly for
    every double p in [0, 1]. Binades below 2^-1022 (probability 2^-1022) fold into the lowest
    normal one.

    Returns:
      A double in (0, 1).

    Examples:
      >>> 0.0 < secure_uniform() < 1.0
      True
    """
    exponent = 1
    word = secrets.randbits(64)
    while word == 0:
        exponent += 64
        word = secrets.randbits(64)
    exponent += (word & -word).bit_length() - 1
    mantissa = secrets.randbits(52)
    return math.ldexp(1.0 + math.ldexp(mantissa, -52), -min(exponent, 1022))


def exact_log(u: float) -> float:
    """Natural logarithm of a positive double, exactly rounded to the nearest double.

    Args:
      u: a positive finite double.

    Returns:
      ln(u) rounded to nearest (ties to even), as Mironov's analysis assumes of LN(·).

    Examples:
      >>> exact_log(1.0)
      0.0
    """
    return float(_LN_CONTEXT.ln(decimal.Decimal(u)))


def laplace_noise(scale: float, uniform: Uniform = secure_uniform) -> float:
    """One draw of Lap(scale) (mean 0, variance 2 scale²) as ``S · scale · ln U``.

    Args:
      scale: the Laplace scale b > 0.
      uniform: source of doubles in (0, 1).

    Returns:
      The noise, a double.

    Examples:
      >>> isinstance(laplace_noise(1.0), float)
      True
    """
    sign = 1.0 if uniform() < 0.5 else -1.0
    return sign * (scale * exact_log(uniform()))


def snapping_grid(scale: float) -> float:
    """Λ, the smallest power of two greater than or equal to ``scale``.

    Examples:
      >>> snapping_grid(3.0), snapping_grid(0.25)
      (4.0, 0.25)
    """
    mantissa, exponent = math.frexp(scale)
    return math.ldexp(1.0, exponent - 1 if mantissa == 0.5 else exponent)


def _clamp(x: float, bound: float) -> float:
    return min(max(x, -bound), bound)


def snapping_mechanism(
    value: float, scale: float, bound: float, uniform: Uniform = secure_uniform
) -> float:
    """Mironov's snapping mechanism: ``clamp_B(round_Λ(clamp_B(value) + S λ ln U))``.

    Args:
      value: the non-private statistic f(D).
      scale: the Laplace scale λ.
      bound: the clamping bound B; choose it so that |f(D)| ≤ B always.
      uniform: source of doubles in (0, 1).

    Returns:
      A multiple of Λ = `snapping_grid` (λ) in [-B, B]. For a sensitivity-1 f and
      λ < B < 2^46 λ it is (1/λ + 2^-49 B/λ)-DP (Mironov 2012, Theorem 1).

    Examples:
      >>> x = snapping_mechanism(3.0, scale=2.0, bound=100.0)
      >>> x % 2.0 == 0.0 and -100.0 <= x <= 100.0
      True
    """
    grid = snapping_grid(scale)
    noisy = _clamp(value, bound) + laplace_noise(scale, uniform)
    return _clamp(math.floor(noisy / grid + 0.5) * grid, bound)


def snapping_epsilon(scale: float, bound: float, sensitivity: float = 1.0) -> float:
    """Effective privacy of `snapping_mechanism` (Mironov 2012, Theorem 1).

    The theorem's (1/λ + 2^-49 B/λ) is stated for sensitivity 1; it is applied to f/Δ, i.e. the
    Laplace term scales with the sensitivity Δ while the rounding term depends on B/λ only.

    Args:
      scale: the Laplace scale λ.
      bound: the clamping bound B.
      sensitivity: Δ, the largest change of f between neighbouring data sets.

    Returns:
      ε such that the mechanism is ε-DP.

    Raises:
      ValueError: if λ < B < 2^46 λ fails (the theorem does not apply).

    Examples:
      >>> snapping_epsilon(2.0, 4.0) > 0.5
      True
    """
    if not scale < bound < _SNAP_MAX_RATIO * scale:
        raise ValueError(f"the snapping bound needs λ < B < 2^46 λ, got λ={scale!r}, B={bound!r}")
    return (sensitivity + _SNAP_ROUNDING * bound) / scale


def snapping_scale(epsilon: float, bound: float, sensitivity: float = 1.0) -> float:
    """Smallest λ (up to one ulp) with ``snapping_epsilon(λ, bound, sensitivity) <= epsilon``.

    Args:
      epsilon: the target privacy budget, finite and > 0.
      bound: the clamping bound B.
      sensitivity: Δ of the snapped statistic.

    Returns:
      λ = (Δ + 2^-49 B)/ε, rounded up until the effective ε is at most the target.

    Raises:
      ValueError: if ε is not finite and positive, or the theorem's λ < B < 2^46 λ fails.

    Examples:
      >>> lam = snapping_scale(0.5, bound=100.0)
      >>> snapping_epsilon(lam, 100.0) <= 0.5
      True
    """
    if not (math.isfinite(epsilon) and epsilon > 0.0):
        raise ValueError(f"snapping needs a finite epsilon > 0, got {epsilon!r}")
    scale = (sensitivity + _SNAP_ROUNDING * bound) / epsilon
    while snapping_epsilon(scale, bound, sensitivity) > epsilon:
        scale = math.nextafter(scale, math.inf)
    return scale


def release_mean(
    total: Fraction, count: int, epsilon: float, uniform: Uniform = secure_uniform
) -> float:
    """ε-DP release of the mean of ``count`` rewards in [0, 1] from their exact sum (Alg. 5, l. 7).

    The sum f ∈ [0, count] is rounded once to a double (sensitivity Δ = 1 + 2^-52 B), snapped with
    B = max(count, 2/ε) and λ = `snapping_scale` (ε, B, Δ), and divided by ``count``
    (post-processing). The effective ε is therefore at most ``epsilon``; the noise is Lap(λ) on
    the sum, i.e. Lap(λ/count) ≈ Lap(1/(ε count)) on the mean, as Alg. 5 prescribes, plus the
    rounding to multiples of Λ/count.

    Args:
      total: the exact sum of the rewards (a `fractions.Fraction`).
      count: how many rewards, ≥ 1.
      epsilon: the privacy budget of this release.
      uniform: source of doubles in (0, 1).

    Returns:
      The private mean, a double (not necessarily in [0, 1]).

    Examples:
      >>> isinstance(release_mean(Fraction(3, 2), 2, epsilon=1.0), float)
      True
    """
    bound = max(float(count), 2.0 / epsilon)
    sensitivity = 1.0 + _SUM_ROUNDING * bound
    scale = snapping_scale(epsilon, bound, sensitivity)
    return snapping_mechanism(float(total), scale, bound, uniform) / count


def secure_randomised_response(
    reward: float, epsilon: float, uniform: Uniform = secure_uniform
) -> int:
    """CTB randomised response (Alg. 4, line 2): 1 with probability (r(e^ε - 1) + 1)/(e^ε + 1).

    The probability is computed as 1/2 + (r - 1/2) tanh(ε/2), stable for every ε > 0; with
    `secure_uniform`, ``P(1) = p`` exactly for the double p so computed.

    Args:
      reward: r in [0, 1].
      epsilon: the local privacy budget ε > 0.
      uniform: source of doubles in (0, 1).

    Returns:
      The privatised bit, 0 or 1; ε-local DP (Lemma 12).

    Raises:
      ValueError: ε not in [1e-12, 30], or r not in [0, 1].

    Examples:
      >>> secure_randomised_response(1.0, epsilon=1.0) in (0, 1)
      True
    """
    epsilon = checks.check_mechanism_epsilon(epsilon)
    reward = checks.check_unit_reward(reward, clip=False)
    keep = 0.5 + (reward - 0.5) * math.tanh(epsilon / 2.0)
    return int(uniform() < keep)


def gaussian_sigma(epsilon: float, gamma: float) -> float:
    """σ_{ε,γ} = sqrt(2 log(1.25/γ))/ε of the Gaussian mechanism (Alg. 8, line 2).

    Examples:
      >>> round(gaussian_sigma(1.0, 0.01), 4)
      3.1075

    Raises:
      ValueError: ε not in [1e-12, 30], or γ not in (0, 1).
    """
    epsilon = checks.check_mechanism_epsilon(epsilon)
    gamma = checks.check_mechanism_gamma(gamma)
    return math.sqrt(2.0 * math.log(1.25 / gamma)) / epsilon


def secure_gaussian_mechanism(
    reward: float, epsilon: float, gamma: float, uniform: Uniform = secure_uniform
) -> float:
    """``reward + N(0, σ²_{ε,γ})`` by Box–Muller from two uniforms (Alg. 8, line 11).

    (ε, γ)-local DP for rewards in [0, 1] in exact arithmetic; see the module caveat on
    floating point.

    Args:
      reward: r in [0, 1].
      epsilon: ε > 0.
      gamma: γ in (0, 1).
      uniform: source of doubles in (0, 1).

    Returns:
      The privatised reward, a double.

    Examples:
      >>> isinstance(secure_gaussian_mechanism(0.5, 1.0, 0.01), float)
      True
    """
    radius = math.sqrt(-2.0 * exact_log(uniform()))
    return reward + gaussian_sigma(epsilon, gamma) * radius * math.cos(2.0 * math.pi * uniform())


def secure_laplace_mechanism(
    reward: float, epsilon: float, uniform: Uniform = secure_uniform
) -> float:
    """``reward + Lap(1/ε)`` (`laplace_noise`, two uniforms): the Laplace mechanism on one reward.

    ε-local DP for rewards in [0, 1] (sensitivity 1, Theorem 3) in exact arithmetic; see the
    module caveat on floating point.

    Args:
      reward: r in [0, 1].
      epsilon: ε > 0.
      uniform: source of doubles in (0, 1).

    Returns:
      The privatised reward, a double.

    Raises:
      ValueError: ε not in [1e-12, 30].

    Examples:
      >>> isinstance(secure_laplace_mechanism(0.5, 1.0), float)
      True
    """
    epsilon = checks.check_mechanism_epsilon(epsilon)
    return reward + laplace_noise(1.0 / epsilon, uniform)


def privatize_locally(
    mechanism: Mechanism,
    reward: float,
    epsilon: float,
    *,
    clip: bool = False,
    uniform: Uniform = secure_uniform,
) -> float:
    """Participant-side privatisation for local-DP trials; run it on the participant's device.

    ``mechanism`` is the trial's: ``trial.mechanism``, or, from the trial's public record, the
    ``alg.info.participant_mechanism`` of ``jaxbai.ALGORITHMS[algorithm](**options)`` (e.g.
    randomised response for ``ctb_tt``, the Gaussian mechanism with the trial's γ for
    ``gauss_ldp_tt``). Send only the returned value to the trial.

    Args:
      mechanism: the participants' `jaxbai.base.Mechanism`.
      reward: the participant's raw reward, in [0, 1].
      epsilon: the trial's ε.
      clip: clip the reward into [0, 1] instead of rejecting it.
      uniform: source of doubles in (0, 1); keep the default (the CSPRNG) for real use.

    Returns:
      The privatised value, one of ``mechanism.outputs`` if it has a finite set (0.0 or 1.0
      for randomised response), else a real number.

    Raises:
      ValueError: ``mechanism`` is not a `jaxbai.base.Mechanism` (the algorithm is not
        local-DP); ε is not in [1e-12, 30] (as `jaxbai.trial.Trial.create` checks it); the
        reward is not finite, or outside [0, 1] and ``clip`` is False.

    Examples:
      >>> from jaxbai.mechanisms import RandomisedResponse
      >>> privatize_locally(RandomisedResponse(), 0.7, epsilon=1.0) in (0.0, 1.0)
      True
    """
    if not isinstance(mechanism, Mechanism):
        raise ValueError(
            "mechanism must be a participant-side mechanism (jaxbai.base.Mechanism: the "
            f"alg.info.participant_mechanism of a local-DP algorithm), got {mechanism!r}"
        )
    epsilon = checks.check_mechanism_epsilon(epsilon)
    return float(
        mechanism.secure_privatize(checks.check_unit_reward(reward, clip), epsilon, uniform)
    )
