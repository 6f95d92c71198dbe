"""Theory overlays from `jaxbai.theory`: lower bounds on E[τ] and privacy-regime switches.

The lower bound of a cell is T*·log(1/(2.4δ)) with T* = T*_KL(ν) (non-private, Lemma 5),
T*_ℓ(ν; ε) (local DP, Theorem 10) or T*_g(ν; ε) (global DP, Theorem 17). The regime switch is
`jaxbai.theory.regime_switch` (Corollaries 11 and 18). Every figure and report gets its theory
through this module only.

Example:
    >>> lb = lower_bound([0.9, 0.5], "global", np.array([0.01, 100.0]), 0.01)
    >>> bool(lb[0] > lb[1])
    True
"""

from __future__ import annotations

import functools

import numpy as np

from experiments.results import parse_means

__all__ = [
    "LOCAL_EPSILON_CAP",
    "cell_lower_bounds",
    "characteristic_time",
    "lower_bound",
    "regime_switch",
]

LOCAL_EPSILON_CAP = 30.0
"""T*_ℓ is evaluated at min(ε, 30): c(30) ≈ 5·10²⁶ already makes min{KL, c(ε)·TV²} = KL to
float32 precision, while c(ε) overflows float32 above ε ≈ 44 (T*_ℓ is constant beyond the cap)."""


@functools.lru_cache(maxsize=256)
def _switch(means: tuple[float, ...], privacy: str) -> float:
    from jaxbai import theory

    return float(theory.regime_switch(np.asarray(means), privacy))


def regime_switch(means, privacy: str) -> float:
    """ε at which the two terms of the relaxed lower bound cross (NaN if ``privacy="none"``)."""
    if privacy == "none":
        return float("nan")
    return _switch(tuple(float(m) for m in means), privacy)


def characteristic_time(means, privacy: str, epsilon: np.ndarray) -> np.ndarray:
    """T*_KL, T*_ℓ(ε) or T*_g(ε) of a Bernoulli instance, for each ε (∞ allowed)."""
    from jaxbai import theory

    means = np.asarray(means, np.float64)
    eps = np.atleast_1d(np.asarray(epsilon, np.float64))
    t_kl = float(theory.t_star(means, "kl_bernoulli")[0])
    if privacy == "none":
        return np.full(eps.shape, t_kl)
    finite = np.isfinite(eps)
    out = np.full(eps.shape, t_kl)
    if finite.any():
        if privacy == "local":
            times = theory.t_star_local(means, np.minimum(eps[finite], LOCAL_EPSILON_CAP))
        else:
            times = theory.t_star_global(means, eps[finite])
        out[finite] = np.asarray(times, np.float64)
    return out


def lower_bound(means, privacy: str, epsilon: np.ndarray, delta: float) -> np.ndarray:
    """T*·log(1/(2.4δ)) for each ε (Lemma 5, Theorems 10 and 17)."""
    from jaxbai import theory

    times = characteristic_time(means, privacy, epsilon)
    return np.asarray(theory.lower_bound_samples(times, delta), np.float64)


def cell_lower_bounds(summary: dict[str, np.ndarray]) -> np.ndarray:
    """The lower bound of every row of a summary table, one theory call per (instance, model)."""
    out = np.full(len(summary["epsilon"]), np.nan)
    groups: dict[tuple, list[int]] = {}
    keys = zip(summary["means"], summary["privacy"], summary["delta"], strict=True)
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    for (means, privacy, delta), rows in groups.items():
        idx = np.asarray(rows)
        out[idx] = lower_bound(parse_means(means), privacy, summary["epsilon"][idx], float(delta))
    return out
