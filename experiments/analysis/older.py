"""What results written by an older jaxbai lacked, read as what it was."""

from __future__ import annotations

from jaxbai.base.privacy import claim
from jaxbai.registry import ALGORITHMS

__all__ = ["UNSTATED", "privacy_claim"]

UNSTATED = "unstated (written before privacy measures)"
"""The ``privacy_measure`` of a private row of an older CSV whose algorithm jaxbai does not know."""


def privacy_claim(algorithm: str, privacy: str) -> str:
    """The privacy claim of a row written before ``privacy_measure`` existed: its registered
    algorithm's (jaxbai's own have not changed: pure ε-DP, and (ε, γ)-DP with the default γ for
    ``gauss_ldp_tt``, the only γ a sweep label without options names), ``"not private"``, or
    `UNSTATED` for an algorithm this process does not know.

    Examples:
        >>> privacy_claim("adap_tt", "global"), privacy_claim("ttucb", "none")
        ('ε-DP (global, pure)', 'not private')
        >>> privacy_claim("someone_elses", "global") == UNSTATED
        True
    """
    if privacy == "none":
        return claim(None, privacy)
    if algorithm in ALGORITHMS and ALGORITHMS[algorithm]().info.privacy == privacy:
        return ALGORITHMS[algorithm]().info.claim
    return UNSTATED
