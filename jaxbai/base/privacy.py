"""Privacy measures: what an algorithm's privacy parameter ε guarantees, and their conversions.

Every private algorithm in jaxbai takes one privacy parameter, ε (``params.epsilon``, the ε axis
of a grid). What ε buys depends on the mechanism that runs, so an algorithm states it with a
`PrivacyMeasure`, as OpenDP types every measurement by its privacy measure:

* ``"pure"``: ε-DP (max-divergence) — the Laplace mechanism, randomised response;
* ``"approximate"``: (ε, δ_p)-DP, with δ_p a fixed option of the mechanism — the (ε, γ)
  Gaussian mechanism of Alg. 8 (Remark 13) is (ε, γ)-DP;
* ``"zcdp"``: ρ-zero-concentrated DP with ρ = c·ε², c a fixed option of the mechanism. With
  c = ½ (the default) ε means what it means for ε-DP, whose zCDP is ε²/2 (`pure_to_zcdp`), and
  a Gaussian release of sensitivity Δ has σ = Δ/ε (`gaussian_rho`).

With the trust model (local or global, `jaxbai.base.PRIVACY_MODELS`) the measure is the whole
privacy claim; `describe` puts it in words. The conversions are those of Bun & Steinke,
"Concentrated Differential Privacy: Simplifications, Extensions, and Lower Bounds" (TCC 2016):

* `pure_to_zcdp`: ε-DP ⇒ ε²/2-zCDP (their Proposition 1.4);
* `zcdp_to_approximate`: ρ-zCDP ⇒ (ρ + 2√(ρ log(1/δ)), δ)-DP for every δ ∈ (0, 1) (their
  Proposition 1.3);
* `gaussian_rho`: adding N(0, σ²) to a query of sensitivity Δ is Δ²/(2σ²)-zCDP (their
  Proposition 1.6).

Examples:
    >>> PURE.describe("global")
    'ε-DP (global, pure)'
    >>> approximate_dp(0.001).describe("local")
    '(ε, δ)-DP (local, δ = 0.001)'
    >>> zcdp().describe("global")
    'ρ-zCDP (global, ρ = ε²/2) ⇒ (ρ + 2√(ρ log(1/δ)), δ)-DP'
    >>> round(zcdp_to_approximate(0.5, 1e-5), 4)
    5.2985
"""

from __future__ import annotations

import dataclasses
import math
import numbers


def _real(name: str, value: object) -> float:
    """``value`` as a float: a real number, not a bool or a string (no `jaxbai.checks` here:
    it imports `jaxbai.base`)."""
    if isinstance(value, (bool, str, bytes)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    return float(value)


def _open_unit(name: str, value: object) -> float:
    """A probability in the open interval (0, 1)."""
    value = _real(name, value)
    if not 0 < value < 1:
        raise ValueError(f"{name} must lie in (0, 1), got {value!r}")
    return value


__all__ = [
    "CALIBRATED_RELEASES",
    "MEASURES",
    "PURE",
    "PrivacyMeasure",
    "approximate_dp",
    "claim",
    "gaussian_rho",
    "pure_to_zcdp",
    "release_scale",
    "zcdp",
    "zcdp_to_approximate",
]

MEASURES = ("pure", "approximate", "zcdp")
"""The privacy measures: ε-DP, (ε, δ_p)-DP and ρ-zCDP (module docstring)."""

CALIBRATED_RELEASES = frozenset({("laplace", "pure"), ("gaussian", "zcdp")})
"""The (release noise, measure kind) pairs whose scale `release_scale` gives: Laplace noise
under ε-DP, Gaussian noise under ρ-zCDP. Real trials release exactly these."""


@dataclasses.dataclass(frozen=True)
class PrivacyMeasure:
    """The guarantee a mechanism gives at privacy parameter ε (module docstring).

    Attributes:
        kind: one of `MEASURES`.
        delta: δ_p of ``"approximate"`` (in (0, 1)), else ``None``.
        rho_per_epsilon_squared: c of ``"zcdp"``, ρ = c·ε² (a positive real), else ``None``.

    Raises:
        ValueError: an unknown kind, or parameters that do not fit it (δ_p outside (0, 1), c
            not positive, a parameter the kind does not have).
    """

    kind: str
    delta: float | None = None
    rho_per_epsilon_squared: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in MEASURES:
            raise ValueError(f"a privacy measure is one of {MEASURES}, got {self.kind!r}")
        if (self.delta is None) == (self.kind == "approximate"):
            raise ValueError("δ_p goes with the approximate measure, and only with it")
        if (self.rho_per_epsilon_squared is None) == (self.kind == "zcdp"):
            raise ValueError("ρ/ε² goes with the zcdp measure, and only with it")
        if self.delta is not None:
            object.__setattr__(self, "delta", _open_unit("delta_p", self.delta))
        if self.rho_per_epsilon_squared is not None:
            c = _real("rho_per_epsilon_squared", self.rho_per_epsilon_squared)
            if not (0 < c < math.inf):
                raise ValueError(f"ρ/ε² must be a positive real number, got {c!r}")
            object.__setattr__(self, "rho_per_epsilon_squared", c)

    def rho(self, epsilon: float) -> float | None:
        """The ρ of the zCDP this measure implies at ε: ε²/2 for ε-DP (`pure_to_zcdp`), c·ε²
        for zCDP; ``None`` for (ε, δ_p)-DP, which implies no zCDP."""
        if self.kind == "pure":
            return pure_to_zcdp(epsilon)
        if self.kind == "zcdp":
            return self.rho_per_epsilon_squared * epsilon**2
        return None

    def approximate(self, epsilon: float, delta: float) -> float:
        """The ε' of the (ε', δ)-DP this measure implies at ε for a target δ ∈ (0, 1): ε itself
        for ε-DP and for (ε, δ_p)-DP with δ_p ≤ δ, `zcdp_to_approximate` for zCDP.

        Raises:
            ValueError: (ε, δ_p)-DP with δ_p > δ (no ε' gives a smaller δ).
        """
        _open_unit("delta", delta)
        if self.kind == "zcdp":
            return zcdp_to_approximate(self.rho(epsilon), delta)
        if self.kind == "approximate" and self.delta > delta:
            raise ValueError(f"(ε, {self.delta:g})-DP implies no (ε', {delta:g})-DP")
        return float(epsilon)

    def describe(self, model: str) -> str:
        """The claim in words, with the trust model ``model`` (``"local"`` or ``"global"``)."""
        if self.kind == "pure":
            return f"ε-DP ({model}, pure)"
        if self.kind == "approximate":
            return f"(ε, δ)-DP ({model}, δ = {self.delta:g})"
        c = self.rho_per_epsilon_squared
        factor = "ε²/2" if c == 0.5 else f"{c:g}·ε²"
        return f"ρ-zCDP ({model}, ρ = {factor}) ⇒ (ρ + 2√(ρ log(1/δ)), δ)-DP"


PURE = PrivacyMeasure("pure")
"""ε-DP."""


def claim(measure: PrivacyMeasure | None, model: str) -> str:
    """A privacy claim in words: ``measure.describe(model)``, ``"not private"`` for None.

    Examples:
        >>> claim(PURE, "local"), claim(None, "none")
        ('ε-DP (local, pure)', 'not private')
    """
    return "not private" if measure is None else measure.describe(model)


def approximate_dp(delta: float) -> PrivacyMeasure:
    """(ε, δ_p)-DP with δ_p = ``delta``."""
    return PrivacyMeasure("approximate", delta=delta)


def zcdp(rho_per_epsilon_squared: float = 0.5) -> PrivacyMeasure:
    """ρ-zCDP with ρ = c·ε², c = ``rho_per_epsilon_squared`` (½: the ρ of ε-DP)."""
    return PrivacyMeasure("zcdp", rho_per_epsilon_squared=rho_per_epsilon_squared)


def pure_to_zcdp(epsilon: float) -> float:
    """ε-DP ⇒ ε²/2-zCDP (Bun & Steinke 2016, Proposition 1.4)."""
    return epsilon**2 / 2


def zcdp_to_approximate(rho: float, delta: float) -> float:
    """ρ-zCDP ⇒ (ρ + 2√(ρ log(1/δ)), δ)-DP for δ ∈ (0, 1) (Bun & Steinke 2016, Proposition
    1.3): the ε of that guarantee."""
    _open_unit("delta", delta)
    return rho + 2 * math.sqrt(rho * math.log(1 / delta))


def gaussian_rho(sigma: float, sensitivity: float = 1.0) -> float:
    """The ρ of the Gaussian mechanism: N(0, σ²) added to a query of sensitivity Δ is
    Δ²/(2σ²)-zCDP (Bun & Steinke 2016, Proposition 1.6)."""
    return sensitivity**2 / (2 * sigma**2)


def release_scale(noise: str, measure: PrivacyMeasure, epsilon, count):
    """The noise scale of a released mean of ``count`` rewards in [0, 1] (sensitivity
    Δ = 1/count) at ε, for ``noise`` under ``measure`` (`jaxbai.base.Release`): the Laplace
    scale b = Δ/ε (ε-DP, Theorem 3), or the Gaussian σ = Δ/√(2ρ) with ρ = c·ε² (ρ-zCDP,
    `gaussian_rho`). Works on floats and on arrays.

    Raises:
        ValueError: any other pair (Laplace noise under another measure, Gaussian noise under
            (ε, δ_p)-DP: jaxbai calibrates Gaussian releases by zCDP only).
    """
    if (noise, measure.kind) not in CALIBRATED_RELEASES:
        raise ValueError(f"no calibration of {noise} releases under {measure}")
    if noise == "laplace":
        return 1 / (epsilon * count)
    return 1 / ((2 * measure.rho_per_epsilon_squared) ** 0.5 * epsilon * count)
