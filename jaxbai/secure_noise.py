"""Former home of `jaxbai.trial.secure_noise`, kept so that existing imports keep working.

Everything public there is re-exported here. Two functions were renamed there, to keep them
apart from the JAX mechanisms of `jaxbai.mechanisms`; their old names remain available from this
module only:

* ``randomised_response`` → `jaxbai.trial.secure_noise.secure_randomised_response`
* ``gaussian_mechanism`` → `jaxbai.trial.secure_noise.secure_gaussian_mechanism`

New code should import `jaxbai.trial.secure_noise`.

Example:
    >>> import jaxbai.secure_noise
    >>> from jaxbai.trial import secure_noise
    >>> jaxbai.secure_noise.privatize_locally is secure_noise.privatize_locally
    True
    >>> jaxbai.secure_noise.randomised_response is secure_noise.secure_randomised_response
    True
    >>> jaxbai.secure_noise.gaussian_mechanism is secure_noise.secure_gaussian_mechanism
    True
"""

from __future__ import annotations

from jaxbai.trial.secure_noise import (
    Uniform,
    exact_log,
    finite_reward,
    gaussian_sigma,
    laplace_noise,
    privatize_locally,
    release_mean,
    secure_gaussian_mechanism,
    secure_randomised_response,
    secure_uniform,
    snapping_epsilon,
    snapping_grid,
    snapping_mechanism,
    snapping_scale,
    unit_reward,
)

randomised_response = secure_randomised_response
"""Old name of `secure_randomised_response`."""

gaussian_mechanism = secure_gaussian_mechanism
"""Old name of `secure_gaussian_mechanism`."""

__all__ = [
    "Uniform",
    "exact_log",
    "finite_reward",
    "gaussian_mechanism",
    "gaussian_sigma",
    "laplace_noise",
    "privatize_locally",
    "randomised_response",
    "release_mean",
    "secure_gaussian_mechanism",
    "secure_randomised_response",
    "secure_uniform",
    "snapping_epsilon",
    "snapping_grid",
    "snapping_mechanism",
    "snapping_scale",
    "unit_reward",
]
