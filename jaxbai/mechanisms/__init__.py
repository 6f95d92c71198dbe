"""Privacy mechanisms: randomised response (Lemma 12), Gaussian (Alg. 8), Laplace (Alg. 5).

The participant-side mechanisms of local DP are objects satisfying `jaxbai.base.Mechanism`:
`RandomisedResponse` (CTB, Alg. 4; Lemma 12), `GaussianNoise` (Alg. 8, Remark 13; it holds γ)
and `LaplaceNoise` (Lap(1/ε), Theorem 3). Each owns its simulation sampler (`privatize`, from
one uniform u ∈ (0, 1), so that one `jax.random.bits` call feeds a whole step; `sample` drives
it from a key), its sampler for real trials (`secure_privatize`), its options and the variance
it adds (Remark 13), and the values it outputs.

A mechanism's samplers live together in this package: the JAX ones in
`jaxbai.mechanisms.simulated` (re-exported here), the host-side, CSPRNG ones in
`jaxbai.mechanisms.secure`, and the exact discrete Laplace and Gaussian of the trials' releases
in `jaxbai.mechanisms.discrete`.

Below them are the array functions they are made of, which the global-DP estimators (DAF,
DP-SE) use too in simulation.
"""

from jaxbai.mechanisms import discrete, secure
from jaxbai.mechanisms.simulated import (
    GaussianNoise,
    LaplaceNoise,
    RandomisedResponse,
    gaussian_from_uniform,
    gaussian_mechanism_sigma,
    laplace,
    laplace_from_uniform,
    open_uniform,
    randomised_response,
    randomised_response_from_uniform,
    randomised_response_mean,
    randomised_response_probability,
    sample,
)

__all__ = [
    "GaussianNoise",
    "LaplaceNoise",
    "RandomisedResponse",
    "discrete",
    "gaussian_from_uniform",
    "gaussian_mechanism_sigma",
    "laplace",
    "laplace_from_uniform",
    "open_uniform",
    "randomised_response",
    "randomised_response_from_uniform",
    "randomised_response_mean",
    "randomised_response_probability",
    "sample",
    "secure",
]
