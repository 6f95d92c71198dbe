"""What the paper proves about its Top Two algorithms, carried by the algorithms themselves.

A `Guarantee` holds the allocation ω* that an algorithm's sampling rule converges to and the
paper's bound on lim sup E[τ]/log(1/δ), as functions of the instance, ε, β and σ, together with
the components it was proved for (`COMPONENTS`: estimator, cost, bonus, leader, challenger,
tracking, stopping rule). A factory puts one on the algorithm it builds;
`jaxbai.toptwo.TopTwo.info` hands it out, with the algorithm's own β and σ, only while those
components are still the algorithm's, so a variant with another β keeps its guarantee and one
with another component loses it (docs/semantics.md §33).

Examples:
    >>> import numpy as np, jaxbai
    >>> info = jaxbai.ttucb().info
    >>> info.allocation_target(np.array([0.6, 0.2]), np.array([np.inf])).round(6).tolist()
    [[0.5, 0.5]]
    >>> round(info.asymptotic_bound(np.array([0.6, 0.2]), np.inf), 3)  # 8σ²/Δ², σ = 1/2
    12.5
    >>> jaxbai.adap_tt_star_ratio().info.asymptotic_bound is None  # another challenger
    True
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from jaxbai.base import AllocationTarget, AsymptoticBound

__all__ = [
    "COMPONENTS",
    "Guarantee",
    "adap_tt_bound",
    "adap_tt_star_bound",
    "beta_optimal",
    "beta_optimal_bernoulli",
    "beta_optimal_modified",
    "beta_optimal_private",
    "components_of",
    "ctb_tt_bound",
    "t_star_beta",
    "t_star_beta_bernoulli",
    "with_guarantee",
]

Allocation = Callable[..., np.ndarray]
"""``(means (K,), epsilons (E,), *, beta, sigma) → ω* (E, K)``."""
Bound = Callable[..., float]
"""``(means (K,), ε, *, beta, sigma) → lim sup E[τ]/log(1/δ)``."""


def beta_optimal(means: np.ndarray, epsilons: np.ndarray, *, beta: float, sigma: float):
    """The β-optimal allocation of T*_{KL,β}(ν) for Gaussian arms (Eq. 5; ω*_{a*} = β, ω does
    not depend on σ nor on ε), one row per ε."""
    from jaxbai import theory

    _, omega = theory.t_star(np.asarray(means, np.float64), "kl_gaussian", beta=beta, sigma=sigma)
    return np.broadcast_to(np.asarray(omega, np.float64), (len(epsilons), len(means)))


def beta_optimal_modified(means: np.ndarray, epsilons: np.ndarray, *, beta: float, sigma: float):
    """The β-optimal allocation of the modified instance ν_{G,ε}, T*_{KL,β}(ν_{G,ε}) (Eq. 15,
    AdaP-TT*'s bound, Theorem 24), one row per ε."""
    from jaxbai import theory

    _, omega, _ = theory.t_star_global_proxy(
        np.asarray(means, np.float64), epsilons, beta=beta, sigma=sigma, return_info=True
    )
    return np.asarray(omega, np.float64).reshape(len(epsilons), len(means))


def beta_optimal_bernoulli(means: np.ndarray, epsilons: np.ndarray, *, beta: float, sigma: float):
    """The β-optimal allocation of T*_{KL,β}(ν) for Bernoulli arms (EB-TCI; ω*_{a*} = β), one
    row per ε."""
    del sigma
    from jaxbai import theory

    _, omega = theory.t_star(np.asarray(means, np.float64), "kl_bernoulli", beta=beta)
    return np.broadcast_to(np.asarray(omega, np.float64), (len(epsilons), len(means)))


def beta_optimal_private(means: np.ndarray, epsilons: np.ndarray, *, beta: float, sigma: float):
    """The β-optimal allocation of T*_{ε,β}(ν), the ε-global-DP characteristic time of
    Jourdan & Azize (2025) with ω_{a*} = β (`jaxbai.theory.t_star_dp`), one row per ε: the
    allocation DP-TT's sampling rule tracks at the true means."""
    del sigma
    from jaxbai import theory

    means = np.asarray(means, np.float64)
    epsilons = np.asarray(epsilons, np.float64).reshape(-1)
    rows = np.broadcast_to(means, (len(epsilons), len(means)))
    _, omega = theory.t_star_dp(rows, epsilons, beta=beta)
    return np.asarray(omega, np.float64).reshape(len(epsilons), len(means))


def t_star_beta_bernoulli(means: np.ndarray, epsilon: float, *, beta: float, sigma: float) -> float:
    """T*_{KL,β}(ν) for Bernoulli arms: EB-TCI is asymptotically β-optimal (Jourdan et al. 2022)."""
    del epsilon, sigma
    from jaxbai import theory

    return float(theory.t_star(np.asarray(means, np.float64), "kl_bernoulli", beta=beta)[0])


def t_star_beta(means: np.ndarray, epsilon: float, *, beta: float, sigma: float) -> float:
    """T*_{KL,β}(ν) for Gaussian arms of σ (Eq. 5): TTUCB is asymptotically β-optimal."""
    del epsilon
    from jaxbai import theory

    means = np.asarray(means, np.float64)
    return float(theory.t_star(means, "kl_gaussian", beta=beta, sigma=sigma)[0])


def ctb_tt_bound(means: np.ndarray, epsilon: float, *, beta: float, sigma: float) -> float:
    """Eq. 5 with the randomised response's factor (CTB-TT; σ = 1/2 is fixed by the bits)."""
    del sigma
    from jaxbai import theory

    return float(theory.ctb_tt_bound(np.asarray(means, np.float64), epsilon, beta=beta))


def adap_tt_bound(means: np.ndarray, epsilon: float, *, beta: float, sigma: float) -> float:
    """Theorem 22 (AdaP-TT)."""
    from jaxbai import theory

    means = np.asarray(means, np.float64)
    return float(theory.adap_tt_bound(means, epsilon, beta=beta, sigma=sigma))


def adap_tt_star_bound(means: np.ndarray, epsilon: float, *, beta: float, sigma: float) -> float:
    """Theorem 24 (AdaP-TT*)."""
    from jaxbai import theory

    means = np.asarray(means, np.float64)
    return float(theory.adap_tt_star_bound(means, epsilon, beta=beta, sigma=sigma))


COMPONENTS = (
    "estimator",
    "cost",
    "bonus",
    "leader_rule",
    "challenger",
    "tracking_beta",
    "tracking",
    "stopping_rule",
)
"""The fields of a `jaxbai.toptwo.TopTwo` a guarantee is proved for: every component but the
threshold family (the asymptotic results hold for the theory threshold and are applied to its
heuristic form as well, as the paper's figures do)."""


def components_of(alg: Any) -> tuple:
    """The `COMPONENTS` of a Top Two algorithm, in order."""
    return tuple(getattr(alg, name) for name in COMPONENTS)


@dataclasses.dataclass(frozen=True)
class Guarantee:
    """The paper's results for a Top Two algorithm made of these components.

    Attributes:
        components: the algorithm's `COMPONENTS` they were proved for (estimators compared by
            value: DAF per arm and DAF with one global episode differ).
        allocation: ω* as a function of (means, epsilons, β, σ), or None (none known).
        bound: lim sup E[τ]/log(1/δ) as a function of (means, ε, β, σ), or None.
    """

    components: tuple
    allocation: Allocation | None = None
    bound: Bound | None = None

    def holds_for(self, alg: Any) -> bool:
        """Whether ``alg`` (a `jaxbai.toptwo.TopTwo`) still has the components proved for."""
        return components_of(alg) == self.components

    def allocation_target(self, beta: float, sigma: float) -> AllocationTarget | None:
        """ω* at this β and σ, as `jaxbai.base.AlgorithmInfo.allocation_target`."""
        if self.allocation is None:
            return None
        return functools.partial(self.allocation, beta=float(beta), sigma=float(sigma))

    def asymptotic_bound(self, beta: float, sigma: float) -> AsymptoticBound | None:
        """The bound at this β and σ, as `jaxbai.base.AlgorithmInfo.asymptotic_bound`."""
        if self.bound is None:
            return None
        return functools.partial(self.bound, beta=float(beta), sigma=float(sigma))


def with_guarantee(alg: Any, allocation: Allocation | None, bound: Bound | None) -> Any:
    """``alg`` carrying the guarantee of its current components."""
    return dataclasses.replace(alg, guarantee=Guarantee(components_of(alg), allocation, bound))
