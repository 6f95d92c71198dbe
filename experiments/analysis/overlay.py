"""Theory overlays from `jaxbai.theory`: lower bounds on E[τ] and privacy-regime switches.

The lower bound of a cell is T*·log(1/(2.4δ)) with T* = T*_KL(ν) (non-private, Lemma 5),
T*_ℓ(ν; ε) (local DP, Theorem 10) or T*_g(ν; ε) (global DP, Theorem 17). Beside it,
`practical_bound` is the smallest t ≥ T*·c(t, δ), with c the Gaussian GLR threshold of the
stopping-threshold family (`jaxbai.theory.practical_bound`). The regime switch is
`jaxbai.theory.regime_switch` (Corollaries 11 and 18). Every figure and report gets its theory
through this module only.

What `jaxbai.theory` supports depends on the reward family (`theory_note` says it in words):

* Bernoulli: everything above (Bernoulli KL and TV);
* Gaussian: the non-private T*_KL with the Gaussian KL of the instance's σ; nothing for DP (no
  DP algorithm of jaxbai takes unbounded rewards) and no regime switch;
* Beta: nothing. jaxbai.theory has no Beta KL, and the Bernoulli bound with the same means is
  not a lower bound for Beta arms (a Beta arm is easier to tell apart than a Bernoulli one of
  the same mean), so no curve is drawn rather than a wrong one.

Where no bound exists the functions return NaN. Instances are described by
`experiments.config.specs.InstanceSpec`; a name without one (a CSV without its ``sweep.json``) is
taken
as Bernoulli, the only family before experiment files existed.

Examples:
    >>> lb = lower_bound([0.9, 0.5], "global", np.array([0.01, 100.0]), 0.01)
    >>> bool(lb[0] > lb[1])
    True
    >>> float(lower_bound([0.6, 0.4], "none", np.array([np.inf]), 0.01, family="beta")[0])
    nan
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import numpy as np

from experiments.analysis.results import parse_means
from experiments.config.specs import InstanceSpec
from jaxbai.base.privacy import PURE

__all__ = [
    "DP_BOUND_BATCH",
    "LOCAL_EPSILON_CAP",
    "cell_dp_lower_bounds",
    "cell_lower_bounds",
    "characteristic_time",
    "dp_lower_bound",
    "instance_family",
    "lower_bound",
    "practical_bound",
    "regime_switch",
    "theory_model",
    "theory_note",
]

LOCAL_EPSILON_CAP = 30.0
"""T*_ℓ is evaluated at min(ε, 30): c(30) ≈ 5·10²⁶ already makes min{KL, c(ε)·TV²} = KL to
float32 precision, while c(ε) overflows float32 above ε ≈ 44 (T*_ℓ is constant beyond the cap)."""

_NOTES = {
    "bernoulli": "lower bounds T*_KL, T*_ℓ(ε), T*_g(ε) (Bernoulli KL) and the regime switch",
    "gaussian": "the non-private lower bound T*_KL with the Gaussian KL of σ; no DP bound and no "
    "regime switch (no DP algorithm takes unbounded rewards)",
    "beta": "nothing: jaxbai.theory has no Beta KL, and the Bernoulli bound with the same means "
    "is not a lower bound for Beta arms",
}


def theory_note(family: str) -> str:
    """What the figures and reports draw for an instance of ``family``, in words."""
    return _NOTES[family]


def instance_family(name: str, instances: Mapping[str, InstanceSpec] | None) -> tuple:
    """(family, σ) of instance ``name``: from its spec, else Bernoulli."""
    spec = (instances or {}).get(name)
    return ("bernoulli", None) if spec is None else (spec.family, spec.sigma)


def theory_model(family: str, privacy: str) -> str | None:
    """The trust model whose bound `jaxbai.theory` gives for ``family`` (None: no bound).

    >>> theory_model("bernoulli", "global"), theory_model("gaussian", "none")
    ('global', 'none')
    >>> theory_model("gaussian", "global") is None, theory_model("beta", "none") is None
    (True, True)
    """
    if family == "bernoulli":
        return privacy
    return "none" if family == "gaussian" and privacy == "none" else None


@functools.lru_cache(maxsize=256)
def _switch(means: tuple[float, ...], privacy: str) -> float:
    from jaxbai import compilation, theory

    return float(
        compilation.remembered("regime_switch", theory.regime_switch, np.asarray(means), privacy)
    )


@functools.lru_cache(maxsize=256)
def _t_kl(means: tuple[float, ...], family: str, sigma: float | None) -> float:
    from jaxbai import compilation, theory

    def solve(arms: np.ndarray, family: str, sigma: float | None) -> np.ndarray:
        if family == "gaussian":
            return theory.t_star(arms, "kl_gaussian", sigma=sigma)[0]
        return theory.t_star(arms, "kl_bernoulli")[0]

    return float(compilation.remembered("t_star", solve, np.asarray(means), family, sigma))


def regime_switch(means, privacy: str, family: str = "bernoulli") -> float:
    """ε at which the two terms of the relaxed lower bound cross (NaN: non-private, or not a
    Bernoulli instance)."""
    if privacy == "none" or family != "bernoulli":
        return float("nan")
    return _switch(tuple(float(m) for m in means), privacy)


def characteristic_time(
    means, privacy: str, epsilon: np.ndarray, family: str = "bernoulli", sigma=None
) -> np.ndarray:
    """T*_KL, T*_ℓ(ε) or T*_g(ε) for each ε (∞ allowed); NaN where `theory_model` is None."""
    from jaxbai import compilation, theory

    means = np.asarray(means, np.float64)
    eps = np.atleast_1d(np.asarray(epsilon, np.float64))
    model = theory_model(family, privacy)
    if model is None:
        return np.full(eps.shape, np.nan)
    out = np.full(eps.shape, _t_kl(tuple(means.tolist()), family, sigma))
    finite = np.isfinite(eps)
    if model != "none" and finite.any():
        if model == "local":
            solve, at = theory.t_star_local, np.minimum(eps[finite], LOCAL_EPSILON_CAP)
        else:
            solve, at = theory.t_star_global, eps[finite]
        times = compilation.remembered(solve.__name__, solve, means, at)
        out[finite] = np.asarray(times, np.float64)
    return out


def lower_bound(
    means, privacy: str, epsilon: np.ndarray, delta: float, family: str = "bernoulli", sigma=None
) -> np.ndarray:
    """T*·log(1/(2.4δ)) for each ε (Lemma 5, Theorems 10 and 17); NaN where there is none.

    ``delta`` is a scalar or an array broadcast against ``epsilon``.
    """
    from jaxbai import theory

    times = characteristic_time(means, privacy, epsilon, family, sigma)
    return np.asarray(theory.lower_bound_samples(times, delta), np.float64)


def _gaussian_threshold(threshold: str, num_arms: int):
    """c(t, δ) of a threshold family's Gaussian GLR test as a function of the samples t: the
    heuristic log((1 + log t)/δ), or Eq. 4 at N_a = N_b = t/2 (``"theory"``)."""
    from jaxbai import thresholds

    if threshold == "heuristic":
        return thresholds.heuristic_gaussian_threshold
    if threshold == "theory":
        return lambda t, d: thresholds.c_gaussian_threshold(t / 2, t / 2, d, num_arms)
    raise ValueError(f"unknown threshold family {threshold!r}")


def practical_bound(
    means,
    privacy: str,
    epsilon: np.ndarray,
    delta,
    threshold: str = "heuristic",
    family: str = "bernoulli",
    sigma=None,
) -> np.ndarray:
    """The smallest t ≥ T*·c(t, δ) for each ε (T* as in `lower_bound`, c the Gaussian GLR
    threshold of the family ``threshold``); NaN where there is no T*.

    Examples:
        >>> lb = lower_bound([0.9, 0.5], "none", np.array([np.inf]), 0.01)
        >>> bool(practical_bound([0.9, 0.5], "none", np.array([np.inf]), 0.01)[0] > lb[0])
        True
    """
    from jaxbai import theory

    times = characteristic_time(means, privacy, epsilon, family, sigma)
    fn = _gaussian_threshold(threshold, len(means))
    out = np.full(np.broadcast_shapes(times.shape, np.shape(delta)), np.nan)
    known = np.broadcast_to(np.isfinite(times), out.shape)
    if known.any():
        t, d = np.broadcast_arrays(times, np.asarray(delta, np.float64))
        out[known] = theory.practical_bound(t[known], d[known], fn)
    return out


DP_BOUND_BATCH = 16
"""The ε of one instance are solved in batches of this many (the last padded), so one compiled
T*_ε solve serves every report of instances with the same number of arms."""


def dp_lower_bound(means, epsilons: np.ndarray, delta: float) -> np.ndarray:
    """T*_ε(ν) log(1/(3δ)) (Jourdan & Azize 2025, `jaxbai.theory.t_star_dp`) at each ε of
    ``epsilons`` (finite; Bernoulli means, δ < 1/3), solved in batches of `DP_BOUND_BATCH`."""
    from jaxbai import compilation, theory

    epsilons = np.asarray(epsilons, np.float64)
    unique = np.unique(epsilons)
    padded = np.resize(unique, -(-len(unique) // DP_BOUND_BATCH) * DP_BOUND_BATCH)
    arms = np.asarray(means, np.float64)

    def solve(arms: np.ndarray, padded: np.ndarray) -> np.ndarray:
        return theory.t_star_dp(np.broadcast_to(arms, (len(padded), len(arms))), padded)[0]

    times = compilation.remembered("t_star_dp", solve, arms, padded)
    time_of = dict(zip(padded.tolist(), np.asarray(times, np.float64).tolist(), strict=True))
    return np.array([time_of[e] for e in epsilons.tolist()]) * np.log(1 / (3 * delta))


def cell_dp_lower_bounds(
    summary: dict[str, np.ndarray], instances: Mapping[str, InstanceSpec] | None = None
) -> np.ndarray:
    """`dp_lower_bound` of every ε-global-DP row (pure ε-DP: the bound is for that measure) on
    Bernoulli arms with finite ε and δ < 1/3; NaN for the other rows. One batched solve per
    (instance, δ)."""
    out = np.full(len(summary["epsilon"]), np.nan)
    groups: dict[tuple, list[int]] = {}
    pure = PURE.describe("global")
    keys = zip(
        summary["instance"], summary["means"], summary["privacy_measure"], summary["delta"],
        strict=True,
    )  # fmt: skip
    for i, (name, means, claim, delta) in enumerate(keys):
        finite = math.isfinite(summary["epsilon"][i]) and delta < 1 / 3
        if claim == pure and finite and instance_family(name, instances)[0] == "bernoulli":
            groups.setdefault((means, float(delta)), []).append(i)
    for (means, delta), rows in groups.items():
        idx = np.asarray(rows)
        out[idx] = dp_lower_bound(parse_means(means), summary["epsilon"][idx], delta)
    return out


def cell_lower_bounds(
    summary: dict[str, np.ndarray], instances: Mapping[str, InstanceSpec] | None = None
) -> np.ndarray:
    """The lower bound of every row of a summary table (NaN where `jaxbai.theory` has none),
    one theory call per (instance, trust model, δ)."""
    out = np.full(len(summary["epsilon"]), np.nan)
    groups: dict[tuple, list[int]] = {}
    keys = zip(
        summary["instance"], summary["means"], summary["privacy"], summary["delta"], strict=True
    )
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    for (name, means, privacy, delta), rows in groups.items():
        idx = np.asarray(rows)
        family, sigma = instance_family(name, instances)
        out[idx] = lower_bound(
            parse_means(means), privacy, summary["epsilon"][idx], float(delta), family, sigma
        )
    return out
