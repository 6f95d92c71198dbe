"""Divergences between Bernoulli arms and the local-DP contraction c(ε)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxbai.theory._common import _float

__all__ = ["c_local", "kl_bernoulli"]


def kl_bernoulli(p: ArrayLike, q: ArrayLike) -> jax.Array:
    """KL(Ber(p) ‖ Ber(q)) = p log(p/q) + (1−p) log((1−p)/(1−q)) (Lemma 5).

    ``q`` is clipped to [eps, 1 − eps] (machine epsilon) so the result stays finite.

    Examples:
        >>> float(kl_bernoulli(0.5, 0.5))
        0.0
    """
    p, q = _float(p), _float(q)
    dtype = jnp.result_type(p, q)
    p, q = p.astype(dtype), q.astype(dtype)
    tiny = jnp.finfo(dtype).eps
    q = jnp.clip(q, tiny, 1.0 - tiny)
    # log1p of exact differences: absolute error ~ eps·|p − q| instead of ~eps (no cancellation
    # of O(1) terms), so KL values ~1e-3 keep ~6 significant digits in float32.
    up = jnp.where(p > 0, p * jnp.log1p((p - q) / q), 0.0)
    down = jnp.where(p < 1, (1.0 - p) * jnp.log1p((q - p) / (1.0 - q)), 0.0)
    return up + down


_C_LOCAL_CAP = 1e30
"""c(ε) beyond which min{KL, c·TV²} = KL for every alternative of interest."""


def c_local(epsilon: ArrayLike) -> jax.Array:
    """Local-DP contraction c(ε) = min{4, e^{2ε}} (e^ε − 1)² (Theorem 10, Eq. 7).

    Examples:
        >>> round(float(c_local(1.0)), 2)  # 4 (e − 1)²
        11.81
    """
    eps = _float(epsilon)
    return jnp.minimum(4.0, jnp.exp(2.0 * eps)) * jnp.expm1(eps) ** 2
