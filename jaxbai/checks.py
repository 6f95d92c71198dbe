"""Eager argument checks shared by the public entry points.

Every check runs on concrete (host) values before anything is traced or compiled, and raises a
`ValueError` naming the offending parameter. Traced values pass through unchecked: the jitted
paths document what they assume instead.
"""

from __future__ import annotations

import math
import os

import jax
import numpy as np

COUNT_MAX = int(np.iinfo(np.int32).max)
"""Largest sample count representable by the count dtype (int32)."""
SMALLEST_PARAMETER = 1e-30
"""Smallest δ and γ accepted: parameters are float32 on device, whose normal range ends near
1e-38; below 1e-30, log(1/δ) would lose precision or underflow (ε: `SMALLEST_EPSILON`)."""


def is_concrete(x: object) -> bool:
    """True when ``x`` holds no tracer, so its value can be inspected on the host."""
    return not any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(x))


def as_float_array(name: str, value: object) -> np.ndarray:
    """Convert to a float64 array, rejecting NaN."""
    arr = np.asarray(value, dtype=np.float64)
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not be NaN, got {value!r}")
    return arr


SMALLEST_EPSILON = 1e-12
"""Smallest ε accepted anywhere. Every δ-correct ε-DP algorithm needs E[τ] ≥ T*_ε log(1/(3δ))
with T*_ε ≥ 1/ε (Jourdan & Azize 2025; d_ε ≤ ε TV ≤ ε), so below 1e-12 no run can stop
legitimately within the 2³¹ − 1 samples a count holds (δ ≤ 0.33); and the float32 programs
break down further on: AdaP-TT's threshold divides by ε², which underflows below ~1e-19, and
its runs then stopped after 3 samples with a random arm (docs/semantics.md §35)."""


def check_epsilon(epsilon: object) -> np.ndarray:
    """Privacy budget ε ≥ `SMALLEST_EPSILON` (``inf`` allowed: no privacy)."""
    eps = as_float_array("epsilon", epsilon)
    too_small = eps[eps < SMALLEST_EPSILON]
    if too_small.size:
        where = f" (and {too_small.size - 1} more)" if too_small.size > 1 else ""
        raise ValueError(
            f"epsilon must be >= {SMALLEST_EPSILON:g} (below it no run can stop within 2**31 "
            f"samples, and float32 breaks down), got {too_small[0]:g}{where}"
        )
    return eps


LARGEST_EPSILON = 30.0
"""Largest ε of a mechanism on real data (trials, the participant side). Randomised response
flips a bit with probability 1/(1 + e^ε): 1e-13 at ε = 30, and exactly 0 in double precision
from ε ≈ 37 on, where the mechanism would send the raw reward; a larger ε protects nothing."""

SEED_BOUND = 1 << 32
"""Seeds are below 2³²: `jax.random.key` keeps the low 32 bits of a larger seed (without x64),
so two seeds 2³² apart would give the same key."""


def check_mechanism_epsilon(epsilon: object) -> float:
    """ε of a mechanism that runs on real data: a float in [`SMALLEST_EPSILON`,
    `LARGEST_EPSILON`].

    Examples:
      >>> check_mechanism_epsilon(0.5)
      0.5
    """
    eps = real_number("epsilon", epsilon)
    if not (math.isfinite(eps) and SMALLEST_EPSILON <= eps <= LARGEST_EPSILON):
        raise ValueError(
            f"epsilon must be finite, in [{SMALLEST_EPSILON:g}, {LARGEST_EPSILON:g}], got {eps!r}"
        )
    return eps


def check_mechanism_gamma(gamma: object) -> float:
    """γ of the Gaussian mechanism on real data: a float in (0, 1), as `check_open_unit`.

    Examples:
      >>> check_mechanism_gamma(0.001)
      0.001
    """
    return float(check_open_unit("gamma", real_number("gamma", gamma)))


def real_number(name: str, value: object) -> float:
    """``value`` as a float: a Python or NumPy real number, not a bool or a string."""
    if isinstance(value, (bool, str, bytes)) or value is None:
        raise ValueError(f"{name} must be a real number, got {value!r}")
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError) as err:
        raise ValueError(f"{name} must be a real number, got {value!r}") from err


def check_seed(seed: object) -> int:
    """A seed of `jax.random.key`: an integer in [0, 2³²).

    Examples:
      >>> check_seed(7)
      7
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    if not 0 <= seed < SEED_BOUND:
        raise ValueError(f"seed must lie in [0, 2**32), got {seed}")
    return int(seed)


def check_open_unit(name: str, value: object) -> np.ndarray:
    """A probability-like parameter in the open interval (0, 1) (δ, γ, β)."""
    arr = as_float_array(name, value)
    if ((arr <= 0) | (arr >= 1)).any():
        raise ValueError(f"{name} must lie in (0, 1), got {value!r}")
    if (arr < SMALLEST_PARAMETER).any() or (np.float32(arr) >= 1).any():
        raise ValueError(
            f"{name} must lie in [{SMALLEST_PARAMETER}, 1 - 6e-8] to be exact in float32, "
            f"got {value!r}"
        )
    return arr


def check_flag(name: str, value: object) -> bool:
    """``value`` as a bool: True or False (Python or NumPy), never a string or a number.

    Examples:
      >>> check_flag("clip", False)
      False
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


MAX_ARMS = 1 << 16
"""The most arms an instance, a trial or a grid may have: every lane holds a few float32 arrays
of K and each step reads them all, so K = 65 536 already costs ~1 MiB of state per lane; a
larger K (2³¹ was killed for memory, 10²⁰ failed inside the compiler) is refused."""

JOB_BYTES = 64
"""Host memory one job of a grid takes at least (its ε, δ, run and results), K aside."""


def check_num_arms(num_arms: int) -> int:
    """Two to `MAX_ARMS` arms, given as a Python integer (it fixes array shapes)."""
    if isinstance(num_arms, bool) or not isinstance(num_arms, (int, np.integer)):
        raise ValueError(f"num_arms must be a Python int, got {num_arms!r}")
    if not 2 <= num_arms <= MAX_ARMS:
        raise ValueError(f"num_arms must be in [2, {MAX_ARMS}], got {num_arms}")
    return int(num_arms)


def check_job_count(jobs: int, num_arms: int, memory: int | None) -> int:
    """``jobs`` if a grid of that many jobs of ``num_arms`` arms can run: job indices are int32
    in the compiled program, and the host holds each job's parameters and results (at least
    `JOB_BYTES` plus 24 bytes an arm) within ``memory`` bytes (None: not known).

    Examples:
      >>> check_job_count(10**6, 5, 2**34)
      1000000
      >>> check_job_count(10**12, 5, 2**34)  # doctest: +ELLIPSIS
      Traceback (most recent call last):
      ...
      ValueError: a grid of 1,000,000,000,000 jobs (...) exceeds the 2,147,483,647 job indices ...
    """
    if jobs > COUNT_MAX:
        raise ValueError(
            f"a grid of {jobs:,} jobs (instances × ε × δ × runs) exceeds the {COUNT_MAX:,} job "
            "indices a compiled program holds"
        )
    need = jobs * (JOB_BYTES + 24 * num_arms)
    if memory is not None and need > memory:
        raise ValueError(
            f"a grid of {jobs:,} jobs of {num_arms} arms needs about {need / 2**30:,.1f} GiB of "
            f"host memory, more than this machine's {memory / 2**30:,.1f} GiB: fewer runs"
        )
    return jobs


def memory_bytes() -> int | None:
    """The machine's physical memory in bytes (None where the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def check_max_samples(max_samples: object) -> int:
    """A positive sample budget that the int32 counts can hold."""
    if isinstance(max_samples, float) and max_samples.is_integer():
        max_samples = int(max_samples)
    if isinstance(max_samples, bool) or not isinstance(max_samples, (int, np.integer)):
        raise ValueError(f"max_samples must be an integer, got {max_samples!r}")
    if not 0 < max_samples <= COUNT_MAX:
        raise ValueError(
            f"max_samples must lie in [1, {COUNT_MAX}] (int32 sample counts), got {max_samples}"
        )
    return int(max_samples)


def check_unit_rewards(name: str, reward: object) -> None:
    """Rewards in [0, 1], as the privacy proofs of CTB, DAF and DP-SE require."""
    if not is_concrete(reward):
        return
    arr = np.asarray(reward, dtype=np.float64)
    if not np.isfinite(arr).all() or (arr < 0).any() or (arr > 1).any():
        raise ValueError(f"{name} must lie in [0, 1] for this algorithm's privacy, got {reward!r}")


def check_unit_reward(reward: float, clip: bool) -> float:
    """A reward of a real trial as a finite float in [0, 1], or clipped there if ``clip``
    (one reward, on the host; `check_unit_rewards` checks the arrays of ask/tell).

    Args:
      reward: the raw reward.
      clip: clip into [0, 1] instead of rejecting.

    Returns:
      The reward as a float in [0, 1].

    Raises:
      ValueError: if the reward is not a finite number, or is outside [0, 1] and not ``clip``.

    Examples:
      >>> check_unit_reward(1.5, clip=True)
      1.0
    """
    r = check_finite_reward(reward)
    if clip:
        return min(max(r, 0.0), 1.0)
    if not 0.0 <= r <= 1.0:
        raise ValueError(
            f"reward {r!r} is outside [0, 1], which this mechanism's privacy proof needs "
            "(to clip instead, create the trial with clip=True: --clip on the command line)"
        )
    return r


FLOAT32_MAX = 3.4028234663852886e38
"""The largest finite float32: the algorithms' states hold observations in float32."""


def check_finite_reward(reward: float) -> float:
    """The reward as a float, or ValueError if it is not a real number finite in float32 (the
    precision of the algorithm's state: 1e300 is finite as a float64 but not there).

    Examples:
      >>> check_finite_reward(1)
      1.0
      >>> check_finite_reward(1e39)  # doctest: +ELLIPSIS
      Traceback (most recent call last):
      ...
      ValueError: reward must be finite in float32 (|reward| ≤ 3.4e+38, ...), got 1e+39
    """
    if isinstance(reward, (str, bytes)):
        raise ValueError(f"reward must be a real number, got {reward!r}")
    try:
        r = float(reward)
    except (TypeError, ValueError, OverflowError) as err:
        raise ValueError(f"reward must be a real number, got {reward!r}") from err
    if not math.isfinite(r):
        raise ValueError(f"reward must be finite, got {r!r}")
    if abs(r) > FLOAT32_MAX:
        raise ValueError(
            f"reward must be finite in float32 (|reward| ≤ {FLOAT32_MAX:.2g}, the precision of "
            f"the algorithm's state), got {r!r}"
        )
    return r


def check_finite(name: str, value: object) -> None:
    """Reject NaN and ±inf in a concrete observation."""
    if is_concrete(value) and not np.isfinite(np.asarray(value, dtype=np.float64)).all():
        raise ValueError(f"{name} must be finite, got {value!r}")


def check_positive(name: str, value: object) -> np.ndarray:
    """A strictly positive, finite parameter (σ, Beta shape parameters)."""
    arr = as_float_array(name, value)
    if not np.isfinite(arr).all() or (arr <= 0).any():
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return arr


def check_unique_best(means: object) -> np.ndarray:
    """Index of the unique best arm of every instance in ``means`` (shape ``(..., K)``).

    Raises:
        ValueError: some instance's maximum is shared by several arms.
    """
    arr = np.asarray(means, dtype=np.float64)
    if ((arr == arr.max(axis=-1, keepdims=True)).sum(axis=-1) != 1).any():
        raise ValueError("every instance must have a unique best arm")
    return np.argmax(arr, axis=-1)


def check_algorithm(alg: object) -> None:
    """ValueError unless ``alg`` is an algorithm object (`jaxbai.base.Algorithm`): a factory
    passed uncalled (``jaxbai.adap_tt`` for ``jaxbai.adap_tt()``), a name or None is named.

    Examples:
      >>> import jaxbai
      >>> check_algorithm(jaxbai.ttucb())
      >>> check_algorithm(jaxbai.ttucb)
      Traceback (most recent call last):
      ...
      ValueError: algorithm: ttucb is a factory; pass the algorithm it builds, ttucb()
    """
    from jaxbai.base import Algorithm

    if isinstance(alg, Algorithm):
        return
    if callable(alg) and hasattr(alg, "__name__"):
        name = alg.__name__
        raise ValueError(f"algorithm: {name} is a factory; pass the algorithm it builds, {name}()")
    raise ValueError(
        f"algorithm must be an algorithm object such as jaxbai.ttucb(), got {alg!r}"
        + (
            " (a registry name: jaxbai.ALGORITHMS[name]() builds it)"
            if isinstance(alg, str)
            else ""
        )
    )


def check_instance(inst: object) -> None:
    """ValueError unless ``inst`` is an instance (`jaxbai.base.Instance`, e.g.
    ``jaxbai.bernoulli([0.6, 0.4])``), naming what it got."""
    from jaxbai.base import Instance

    if not isinstance(inst, Instance) or isinstance(inst, (str, bytes)):
        raise ValueError(
            f"instance must be an instance such as jaxbai.bernoulli([0.6, 0.4]), got {inst!r}"
        )


def real_values(name: str, value: object) -> np.ndarray:
    """``value`` as a float64 scalar or non-empty 1-D array of real numbers: no strings or
    bools (NumPy would read ``"1"`` as 1.0), no empty grid.

    Examples:
      >>> real_values("epsilon", [0.5, 1]).tolist()
      [0.5, 1.0]
    """
    values = np.asarray(value, dtype=object)
    if any(isinstance(v, (str, bytes, bool, np.bool_)) for v in values.reshape(-1)):
        raise ValueError(f"{name} must be real numbers, got {value!r}")
    try:
        arr = np.asarray(value, np.float64)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be real numbers, got {value!r}") from err
    if arr.ndim > 1 or arr.size == 0:
        raise ValueError(f"{name} must be a number or a non-empty 1-D sequence, got {value!r}")
    return arr


def cell_values(alg: object, epsilon: object, delta: object) -> tuple[np.ndarray, np.ndarray]:
    """The ε and δ grids of a `jaxbai.simulate`-like call on ``alg`` (`real_values`), after
    checking the algorithm (`check_algorithm`) and that one that takes ε is given it; ε is
    ``inf`` where it is not given."""
    check_algorithm(alg)
    if epsilon is None and alg.info.takes_epsilon:  # type: ignore[attr-defined]
        raise ValueError(f"{alg.name} needs epsilon")  # type: ignore[attr-defined]
    return real_values("epsilon", np.inf if epsilon is None else epsilon), real_values(
        "delta", delta
    )
