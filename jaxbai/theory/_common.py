"""Shared helpers of `jaxbai.theory`: input checks, gaps and float conversion.

Input checks run on concrete values only (a ValueError before anything is compiled); under
``jit``/``vmap`` traced values pass unchecked.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxbai import checks

# --------------------------------------------------------------------------------------------
# Input checks (concrete inputs only)
# --------------------------------------------------------------------------------------------


def _check_means(means: ArrayLike, bernoulli: bool) -> None:
    if not checks.is_concrete(means):
        return
    arr = np.asarray(means, dtype=np.float64)
    if arr.ndim < 1 or arr.shape[-1] < 2:
        raise ValueError(f"means must have shape (..., K) with K >= 2, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError("means must be finite")
    if bernoulli and ((arr < 0).any() or (arr > 1).any()):
        raise ValueError("Bernoulli means must lie in [0, 1]")
    checks.check_unique_best(arr)


def _check_positive(name: str, value: ArrayLike) -> None:
    if checks.is_concrete(value):
        arr = np.asarray(value, dtype=np.float64)
        if np.isnan(arr).any() or (arr <= 0).any():
            raise ValueError(f"{name} must be > 0, got {value!r}")


def _check_open_unit(name: str, value: ArrayLike) -> None:
    if checks.is_concrete(value):
        arr = np.asarray(value, dtype=np.float64)
        if np.isnan(arr).any() or (arr <= 0).any() or (arr >= 1).any():
            raise ValueError(f"{name} must lie in (0, 1), got {value!r}")


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; expected one of {choices}")


# --------------------------------------------------------------------------------------------
# Gaps and float conversion
# --------------------------------------------------------------------------------------------


def _gaps(means: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(best index, is_best mask, gaps Δ with Δ_{a*} = Δ_min) along the last axis."""
    best = jnp.argmax(means, axis=-1)
    is_best = jnp.arange(means.shape[-1]) == best[..., None]
    raw = jnp.max(means, axis=-1, keepdims=True) - means
    dmin = jnp.min(jnp.where(is_best, jnp.inf, raw), axis=-1, keepdims=True)
    return best, is_best, jnp.where(is_best, dmin, raw)


def _float(x: ArrayLike) -> jax.Array:
    """As a JAX array of the default floating dtype (or wider, if ``x`` already is)."""
    x = jnp.asarray(x)
    return x.astype(jnp.result_type(x, float))


def _as_means(means: ArrayLike) -> jax.Array:
    return _float(means)
