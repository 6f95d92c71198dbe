"""Costs, bonuses and stopping thresholds of the plain-Python transcription
(`experiments.studies.reference`).

Written from the paper (Eq. 3/4/11–14/20, Lemma 23) like the transcription, independently of
`jaxbai` (it imports nothing from it), in Python floats (double precision). SciPy only evaluates
the special functions of the theory thresholds (Riemann ζ, Lambert W₋₁, a scalar minimisation).
"""

from __future__ import annotations

import functools
import math

from scipy import optimize, special

S = 1.2
"""Concentration parameter s of the TTUCB bonus (Eq. 3; s = α = 1.2 in practice)."""
ALPHA = 1.2
"""Concentration parameter α of the TTUCB bonus (Eq. 3)."""


# ----------------------------------------------------------------------------- costs, bonuses
def gaussian_cost(mu_a: float, mu_b: float, w_a: float, w_b: float, sigma2: float) -> float:
    """W^G_{a,b} = (μ_a − μ_b)₊² / (2σ²(1/ω_a + 1/ω_b)) (Eq. 3)."""
    gap = max(mu_a - mu_b, 0.0)
    return gap * gap / (2 * sigma2 * (1 / w_a + 1 / w_b))


def private_cost(mu_a, mu_b, w_a, w_b, sigma2: float, epsilon: float) -> float:
    """W^{G,ε}_{a,b} = (μ_a − μ_b)₊ min{ε/2, (μ_a − μ_b)₊} / (2σ²(1/ω_a + 1/ω_b)) (Eq. 13)."""
    gap = max(mu_a - mu_b, 0.0)
    return gap * min(epsilon / 2, gap) / (2 * sigma2 * (1 / w_a + 1 / w_b))


def gaussian_bonus(w_a: float, total: float, sigma2: float) -> float:
    """b^G_a(ω) = √(2σ²α(1+s) log‖ω‖₁ / ω_a) (Eq. 3); ‖ω‖₁ = samples so far."""
    return math.sqrt(2 * sigma2 * ALPHA * (1 + S) * math.log(total) / w_a)


def k_index(x: float) -> float:
    """k(x) = log₂ x + 2 (Eq. 11)."""
    return math.log2(x) + 2


def private_bonus(w_a: float, k: float, epsilon: float) -> float:
    """b^{G,ε}_a = √(k/ω_a) + k/(ε ω_a) (Eq. 11), with k supplied by the caller."""
    return math.sqrt(k / w_a) + k / (epsilon * w_a)


# ----------------------------------------------------------------------------- theory thresholds
@functools.cache
def cal_c_gaussian(x: float) -> float:
    """𝒞_G(x) = min_{λ∈]1/2,1]} (g_G(λ) + x)/λ (Eq. 20).

    g_G(λ) = 2λ − 2λ log(4λ) + log ζ(2λ) − ½ log(1 − λ).
    """

    def objective(lam: float) -> float:
        g = (
            2 * lam
            - 2 * lam * math.log(4 * lam)
            + math.log(special.zeta(2 * lam))
            - 0.5 * (math.log(1 - lam))
        )
        return (g + x) / lam

    res = optimize.minimize_scalar(
        objective, bounds=(0.5, 1.0), method="bounded", options={"xatol": 1e-12}
    )
    return float(res.fun)


def lambert_w_bar(x: float) -> float:
    """W̄₋₁(x) = −W₋₁(−e^{−x}) for x ≥ 1 (Lemma 23, Lemma 40)."""
    return float(-special.lambertw(-math.exp(-x), k=-1).real)


def c_gaussian(w_a: float, w_b: float, delta: float, num_arms: int) -> float:
    """c^G_{a,b}(ω, δ) = 2𝒞_G(log((K−1)/δ)/2) + 2 log(4 + log ω_a) + 2 log(4 + log ω_b) (Eq. 4)."""
    return (
        2 * cal_c_gaussian(math.log((num_arms - 1) / delta) / 2)
        + 2 * math.log(4 + math.log(w_a))
        + 2 * math.log(4 + math.log(w_b))
    )


def c_private(w_a, w_b, delta: float, epsilon: float, sigma2: float, num_arms: int) -> float:
    """c^{G,ε}_{a,b}(ω, δ) of Eq. (12)."""
    ka, kb = k_index(w_a), k_index(w_b)
    base = 2 * c_gaussian(w_a, w_b, delta / (ka**2 * kb**2 * math.pi**4 / 18), num_arms)
    privacy = sum(
        (1 / w) * math.log(math.pi**2 * num_arms * k_index(w) ** 2 / (3 * delta)) ** 2
        for w in (w_a, w_b)
    )
    return base + privacy / (epsilon**2 * sigma2)


def h_lemma23(x: float, delta: float, num_arms: int) -> float:
    """h(x, δ) = W̄₋₁(2 log(π²K k(x)²/(2δ)) + 4 log(4 + log x) + 1/2)/2 (Lemma 23)."""
    arg = 2 * math.log(math.pi**2 * num_arms * k_index(x) ** 2 / (2 * delta))
    return lambert_w_bar(arg + 4 * math.log(4 + math.log(x)) + 0.5) / 2


def c_tilde_private(mu_a, mu_b, w_a, w_b, delta, epsilon, sigma2, num_arms) -> float:
    """c̃^{G,ε}_{a,b}(μ, ω, δ) of Eq. (14), transcribed as printed."""
    sigma = math.sqrt(sigma2)
    pair = (w_a, w_b)
    if max(mu_a - mu_b, 0.0) < epsilon / 2:
        extra = sum(
            math.sqrt(h_lemma23(w, delta, num_arms) / w)
            * math.log(math.pi**2 * num_arms * k_index(w) ** 2 / (2 * delta))
            for w in pair
        )
        return (
            c_private(w_a, w_b, 2 * delta / 3, epsilon, sigma2, num_arms) / 2
            + math.sqrt(2) / (epsilon * sigma) * extra
        )
    k_max = max(k_index(w) for w in pair)
    return math.log(math.pi**2 * num_arms * k_max / (2 * delta)) / (2 * sigma2) + epsilon / (
        2 * math.sqrt(2) * sigma
    ) * sum(math.sqrt(w * h_lemma23(w, delta, num_arms)) for w in pair)


# ----------------------------------------------------------------------------- heuristic thresholds
def heuristic_gaussian(samples: int, delta: float) -> float:
    """log((1 + log n)/δ), n = samples so far (heuristic TTUCB threshold)."""
    return math.log((1 + math.log(samples)) / delta)


def heuristic_private(w_a, w_b, delta, epsilon, sigma2) -> float:
    """δ → 0 form of Eq. (12) (AdaP-TT)."""
    log_d = math.log(1 / delta)
    return (
        log_d
        + math.log(1 + math.log(w_a))
        + math.log(1 + math.log(w_b))
        + (1 / w_a + 1 / w_b) * log_d**2 / (epsilon**2 * sigma2)
    )


def heuristic_tilde(mu_a, mu_b, w_a, w_b, delta, epsilon, sigma2) -> float:
    """δ → 0 forms of Eq. (14) stated after Lemma 23 (AdaP-TT*)."""
    sigma = math.sqrt(sigma2)
    log_d = math.log(1 / delta)
    if max(mu_a - mu_b, 0.0) >= epsilon / 2:
        return log_d / (2 * sigma2) + epsilon / (2 * math.sqrt(2) * sigma) * (
            math.sqrt(w_a) + math.sqrt(w_b)
        ) * math.sqrt(log_d)
    return (
        log_d
        + (1 / w_a + 1 / w_b) * log_d**2 / (2 * epsilon**2 * sigma2)
        + math.sqrt(2) / (epsilon * sigma) * (1 / math.sqrt(w_a) + 1 / math.sqrt(w_b)) * log_d**1.5
    )


def kl(p: float, q: float) -> float:
    """Bernoulli KL(p, q), with 0 log 0 = 0; log1p of the exact differences, so near ties keep
    their relative accuracy (each term's error is ~1e-16 |p − q|, not ~1e-16); infinite where q
    is 0 or 1 and p is not."""
    total = 0.0
    if p > 0:
        total += p * math.log1p((p - q) / q) if q > 0 else math.inf
    if p < 1:
        total += (1 - p) * math.log1p((q - p) / (1 - q)) if q < 1 else math.inf
    return total


def kl_cost(mu_i: float, mu_j: float, w_i: float, w_j: float) -> float:
    """inf_x w_i kl(μ_i, x) + w_j kl(μ_j, x) for μ_i > μ_j: x = the weighted mean."""
    if mu_i <= mu_j:
        return 0.0
    x = (w_i * mu_i + w_j * mu_j) / (w_i + w_j)
    return w_i * kl(mu_i, x) + w_j * kl(mu_j, x)
