"""Characteristic times T*_KL, T*_TV, T*_TV², local T*_ℓ and global T*_g, with their relaxations.

Every characteristic time of the paper is the value of a zero-sum game (Eq. 1)

    T*(ν)⁻¹ = sup_{ω ∈ Σ_K} inf_{λ ∈ Alt(ν)} Σ_a ω_a d(ν_a, λ_a),

with d = KL (Lemma 5), TV or TV² (Corollaries 11 and 18), min{KL, c(ε)·TV²} (Theorem 10) or the
instance-level min{Σ ω KL, ε Σ ω TV} (Theorem 17); beyond that paper, T*_ε (`t_star_dp`)
has the signed private divergences d±_ε of Jourdan & Azize (2025, arXiv 2510.17348). Because
Alt(ν) = ∪_{a ≠ a*} {λ_a ≥ λ_{a*}}, each alternative only moves the pair (a*, a) to a common
mean x ∈ [μ_a, μ_{a*}], so the game is

    T*⁻¹ = sup_ω min_{a ≠ a*} inf_x ω_{a*} A_a(x) + ω_a B_a(x),

with A_a(x) = d(μ_{a*}, x) and B_a(x) = d(μ_a, x).

The games without a closed form are solved by one compiled optax program, batched over
instances and ε, that stops at a certified relative accuracy (`SolverInfo`).

All functions accept means of shape (..., K) and broadcast ε (and β) against the batch shape.
Input checks run on concrete values only (a ValueError before anything is compiled); under
``jit``/``vmap`` traced values pass unchecked.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxbai.theory._common import (
    _as_means,
    _check_choice,
    _check_means,
    _check_open_unit,
    _check_positive,
    _gaps,
)
from jaxbai.theory._solver import SolverInfo, _run
from jaxbai.theory.divergences import c_local

__all__ = [
    "DIVERGENCES",
    "SolverInfo",
    "hardness",
    "t_star",
    "t_star_dp",
    "t_star_global",
    "t_star_global_proxy",
    "t_star_global_relaxed",
    "t_star_local",
    "t_star_local_relaxed",
    "t_star_tv_closed_form",
]

DIVERGENCES = ("kl_bernoulli", "kl_gaussian", "tv", "tv2")
"""Divergences d accepted by `t_star` (Eq. 1)."""


# --------------------------------------------------------------------------------------------
# Closed forms
# --------------------------------------------------------------------------------------------


def t_star_tv_closed_form(means: ArrayLike) -> jax.Array:
    """TV characteristic time of a Bernoulli instance, T*_TV = 1/Δ_min + Σ_{a≠a*} 1/Δ_a.

    Corollary 18 / Proposition 30 (Appendix D.3.5), i.e. Σ_{a ∈ [K]} Δ_a⁻¹ with Δ_{a*} = Δ_min.

    Examples:
        >>> round(float(t_star_tv_closed_form([0.9, 0.8, 0.5])), 4)
        22.5
    """
    _check_means(means, bernoulli=True)
    _, _, gaps = _gaps(_as_means(means))
    return jnp.sum(1.0 / gaps, axis=-1)


def hardness(means: ArrayLike, sigma: ArrayLike = 1.0) -> jax.Array:
    """H(ν) = 2σ² Σ_{a ∈ [K]} Δ_a⁻² with Δ_{a*} = Δ_min (Section 2.2.3, after Eq. 5).

    For Gaussian instances H(ν) ≤ T*_KL(ν) ≤ 2 H(ν).

    Examples:
        >>> round(float(hardness([1.0, 0.0])), 4)
        4.0
    """
    _check_means(means, bernoulli=False)
    _check_positive("sigma", sigma)
    _, _, gaps = _gaps(_as_means(means))
    return 2.0 * jnp.asarray(sigma) ** 2 * jnp.sum(gaps**-2.0, axis=-1)


# --------------------------------------------------------------------------------------------
# Characteristic times from the game solver
# --------------------------------------------------------------------------------------------


def t_star(
    means: ArrayLike,
    divergence: str = "kl_bernoulli",
    beta: ArrayLike | None = None,
    sigma: ArrayLike = 1.0,
    *,
    tol: float = 1e-5,
    max_steps: int = 3000,
    return_info: bool = False,
) -> tuple[jax.Array, jax.Array] | tuple[jax.Array, jax.Array, SolverInfo]:
    """Characteristic time T*_d(ν) and optimal allocation ω*_d(ν) (Eq. 1; Eq. 5 with β).

    Args:
        means: arm means, shape (..., K), with a unique best arm.
        divergence: ``"kl_bernoulli"`` (Lemma 5), ``"kl_gaussian"`` (variance σ²), ``"tv"`` or
            ``"tv2"`` (TV and TV² between Bernoulli arms, Corollaries 11 and 18).
        beta: if given, the β-characteristic time T*_{d,β} with ω_{a*} = β (Eq. 5).
        sigma: Gaussian standard deviation (``"kl_gaussian"`` only).
        tol: certified relative accuracy at which the solver stops.
        max_steps: optax step budget.
        return_info: also return a `SolverInfo` with the certified accuracy.

    Returns:
        ``(T, ω)``, or ``(T, ω, info)`` with ``return_info=True``; T has the batch shape and
        ω shape (..., K). T = 1 / (game value of ω), so T ≥ T* ≥ info.time_lower.

    Examples:
        >>> T, w = t_star([0.5, 0.4, 0.3], "kl_gaussian", sigma=1.0)
        >>> round(float(T), 1)
        857.1
    """
    _check_choice("divergence", divergence, DIVERGENCES)
    _check_means(means, bernoulli=divergence != "kl_gaussian")
    _check_positive("sigma", sigma)
    if beta is not None:
        _check_open_unit("beta", beta)
    time, omega, info = _run(
        divergence, means, sigma=sigma, beta=beta, tol=tol, max_steps=max_steps
    )
    return (time, omega, info) if return_info else (time, omega)


def t_star_local(
    means: ArrayLike,
    epsilon: ArrayLike,
    *,
    tol: float = 1e-5,
    max_steps: int = 3000,
    return_info: bool = False,
) -> jax.Array | tuple[jax.Array, jax.Array, SolverInfo]:
    """Local-DP characteristic time T*_ℓ(ν; ε) of a Bernoulli instance (Theorem 10).

    T*_ℓ⁻¹ = sup_ω inf_{λ ∈ Alt} Σ_a ω_a min{KL(ν_a ‖ λ_a), c(ε) TV(ν_a ‖ λ_a)²}. The inner
    infimum (a non-convex one-dimensional problem per challenger) is solved on a dense grid
    refined by golden-section search at its two best local minima.

    Args:
        means: Bernoulli means, shape (..., K).
        epsilon: privacy budget ε > 0, broadcast against the batch shape.
        tol: certified relative accuracy at which the solver stops (as in `t_star`).
        max_steps: optax step budget.
        return_info: also return ω* and a `SolverInfo` with the certified accuracy.

    Returns:
        T*_ℓ, or ``(T*_ℓ, ω*, info)`` with ``return_info=True``.

    Examples:
        >>> T = t_star_local([0.75, 0.7, 0.7, 0.7, 0.7], 0.5)
        >>> bool(T > t_star_local_relaxed([0.75, 0.7, 0.7, 0.7, 0.7], 0.5) * 0.999)
        True
    """
    _check_means(means, bernoulli=True)
    _check_positive("epsilon", epsilon)
    time, omega, info = _run("local", means, epsilon=epsilon, tol=tol, max_steps=max_steps)
    return (time, omega, info) if return_info else time


def t_star_local_relaxed(means: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """Relaxed local-DP bound max{T*_KL(ν), T*_TV²(ν) / c(ε)} ≤ T*_ℓ(ν; ε) (Corollary 11, Eq. 7).

    Examples:
        >>> round(float(t_star_local_relaxed([0.9, 0.5], 10.0)), 2)  # = T*_KL at large ε
        9.78
    """
    _check_means(means, bernoulli=True)
    _check_positive("epsilon", epsilon)
    t_kl, _ = t_star(means, "kl_bernoulli")
    t_tv2, _ = t_star(means, "tv2")
    return jnp.maximum(t_kl, t_tv2 / c_local(epsilon))


def t_star_global(
    means: ArrayLike,
    epsilon: ArrayLike,
    *,
    tol: float = 1e-5,
    max_steps: int = 3000,
    return_info: bool = False,
) -> jax.Array | tuple[jax.Array, jax.Array, SolverInfo]:
    """Global-DP characteristic time T*_g(ν; ε) of a Bernoulli instance (Theorem 17).

    T*_g⁻¹ = sup_ω inf_{λ ∈ Alt} min{Σ_a ω_a KL(ν_a ‖ λ_a), ε Σ_a ω_a TV(ν_a ‖ λ_a)}; since an
    infimum of a minimum is the minimum of the infima, every alternative is either a KL one
    (exact weighted-mean minimiser) or one of the two ε·TV endpoints.

    Args:
        means: Bernoulli means, shape (..., K).
        epsilon: privacy budget ε > 0, broadcast against the batch shape.
        tol: certified relative accuracy at which the solver stops (as in `t_star`).
        max_steps: optax step budget.
        return_info: also return ω* and a `SolverInfo` with the certified accuracy.

    Returns:
        T*_g, or ``(T*_g, ω*, info)`` with ``return_info=True``.

    Examples:
        >>> T = t_star_global([0.95, 0.9, 0.9, 0.9, 0.5], 1.0)
        >>> bool(T >= t_star_global_relaxed([0.95, 0.9, 0.9, 0.9, 0.5], 1.0) * 0.999)
        True
    """
    _check_means(means, bernoulli=True)
    _check_positive("epsilon", epsilon)
    time, omega, info = _run("global", means, epsilon=epsilon, tol=tol, max_steps=max_steps)
    return (time, omega, info) if return_info else time


def t_star_dp(
    means: ArrayLike,
    epsilon: ArrayLike,
    *,
    beta: ArrayLike | None = None,
    tol: float = 1e-5,
    max_steps: int = 3000,
    return_info: bool = False,
) -> tuple[jax.Array, jax.Array] | tuple[jax.Array, jax.Array, SolverInfo]:
    """ε-global-DP characteristic time T*_ε(ν) and allocation ω*_ε of a Bernoulli instance.

    Jourdan & Azize (2025), arXiv 2510.17348, lower bound:
    T*_ε(ν)⁻¹ = max_{w ∈ Σ_K} min_{a ≠ a*} C*_ε(a*, a, ν, w), with C*_ε the private
    transportation cost (`jaxbai.theory.private_cost`). T*_ε ≥ T*_g (Theorem 17: the signed
    divergence d_ε is at most min{KL, ε TV} arm by arm) and T*_ε ≥ T*_KL, with equality for
    ε ≥ `jaxbai.theory.free_privacy_epsilon` (privacy is free); ε = ``inf`` gives T*_KL.

    Args:
        means: Bernoulli means, shape (..., K), in [0, 1], with a unique best arm.
        epsilon: privacy budget ε > 0 (``inf`` allowed), broadcast against the batch shape
            (one ε or an array of them).
        beta: if given, the β-characteristic time T*_{ε,β} with ω_{a*} = β (as in `t_star`).
        tol: certified relative accuracy at which the solver stops (as in `t_star`).
        max_steps: optax step budget.
        return_info: also return a `SolverInfo` with the certified accuracy.

    Returns:
        ``(T*_ε, ω*_ε)``, or ``(T*_ε, ω*_ε, info)`` with ``return_info=True``; T*_ε has the
        broadcast batch shape and ω*_ε shape (..., K).

    Examples:
        >>> T, w = t_star_dp([0.95, 0.9, 0.9, 0.9, 0.5], [0.1, float("inf")])
        >>> T_kl, _ = t_star([0.95, 0.9, 0.9, 0.9, 0.5], "kl_bernoulli")
        >>> bool(T[0] > T[1]), bool(abs(T[1] / T_kl - 1) < 1e-4)
        (True, True)
    """
    _check_means(means, bernoulli=True)
    _check_positive("epsilon", epsilon)
    time, omega, info = _run(
        "private", means, epsilon=epsilon, beta=beta, tol=tol, max_steps=max_steps
    )
    return (time, omega, info) if return_info else (time, omega)


def t_star_global_relaxed(means: ArrayLike, epsilon: ArrayLike) -> jax.Array:
    """Relaxed global-DP bound max{T*_KL(ν), T*_TV(ν) / ε} ≤ T*_g(ν; ε) (Corollary 18, Eq. 9).

    Examples:
        >>> round(float(t_star_global_relaxed([0.9, 0.5], 0.01)), 1)  # = T*_TV / ε
        500.0
    """
    _check_means(means, bernoulli=True)
    _check_positive("epsilon", epsilon)
    t_kl, _ = t_star(means, "kl_bernoulli")
    return jnp.maximum(t_kl, t_star_tv_closed_form(means) / jnp.asarray(epsilon))


def _gaussian_eps_means(means: jax.Array, epsilon: jax.Array) -> jax.Array:
    """Means of ν_{G,ε} (Corollary 18): μ_{a*} − √(εΔ_a/2) where Δ_a > ε/2, else μ_a."""
    _, is_best, gaps = _gaps(means)
    top = jnp.max(means, axis=-1, keepdims=True)
    eps = jnp.asarray(epsilon)[..., None]
    clipped = top - jnp.sqrt(eps * gaps / 2.0)
    return jnp.where(is_best | (gaps <= eps / 2.0), means, clipped)


def t_star_global_proxy(
    means: ArrayLike,
    epsilon: ArrayLike,
    beta: ArrayLike | None = None,
    *,
    sigma: ArrayLike = 0.5,
    return_info: bool = False,
):
    """Upper proxy T*_KL(ν_{G,ε}) ≥ T*_g(ν; ε) (Eq. 10), or T*_{KL,β}(ν_{G,ε}) (Eq. 15).

    ν_{G,ε} is Gaussian with σ = 1/2 and means μ_{a*} − √(εΔ_a/2) for the arms with
    Δ_a > ε/2 (unchanged otherwise), so the cost of challenger a is
    2Δ_a min{ε/2, Δ_a} / (1/ω_{a*} + 1/ω_a).

    Args:
        means: Bernoulli means, shape (..., K).
        epsilon: privacy budget ε > 0.
        beta: if given, the β-version of Eq. (15).
        sigma: Gaussian standard deviation (the paper's σ = 1/2).
        return_info: also return ``(ω, info)``.

    Examples:
        >>> T = t_star_global_proxy([0.9, 0.5], 10.0)  # ε large: T*_KL of N(μ, 1/4)
        >>> round(float(T), 4)
        12.5
    """
    _check_means(means, bernoulli=True)
    _check_positive("epsilon", epsilon)
    _check_positive("sigma", sigma)
    if beta is not None:
        _check_open_unit("beta", beta)
    m = _as_means(means)
    eps = jnp.asarray(epsilon, m.dtype)
    shape = jnp.broadcast_shapes(m.shape[:-1], eps.shape)
    m = jnp.broadcast_to(m, (*shape, m.shape[-1]))
    time, omega, info = _run(
        "kl_gaussian", _gaussian_eps_means(m, jnp.broadcast_to(eps, shape)), sigma=sigma, beta=beta
    )
    return (time, omega, info) if return_info else time
