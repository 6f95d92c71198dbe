"""Mean estimators of the Top Two driver.

MLE (Alg. 2), CTB (Alg. 4), Gaussian mechanism (Alg. 8), DAF (Alg. 5), DPA (Alg. 11) and
DP-TT's cumulative Laplace estimator (Jourdan & Azize 2025). Each satisfies
`jaxbai.base.Estimator`; DAF, DPA and `CumulativeLaplace` are also
`jaxbai.base.EpisodicEstimator`s, DAF and `CumulativeLaplace` `jaxbai.base.ReleasingEstimator`s.

An estimator owns the privacy of an algorithm and its own state, which the driver nests as
``state.estimate``: `MeanEstimate` for the MLE family, `EpisodeEstimate` (with the episode
bookkeeping) for DAF and DPA. A local-DP estimator holds its user-side mechanism, a
`jaxbai.base.Mechanism` (``participant_mechanism``), which the driver applies to a raw reward
before the algorithm sees it; `observe` folds an (already privatised) observation into the
estimate, given the global counts after the pull. Arms are addressed by a one-hot mask
``pulled`` (see `jaxbai.arrays`). Both are driven by a uniform u ∈ (0, 1) rather than a key,
so one hash feeds a whole simulation step; `observe` also receives the step's key, for the rare
update that needs more than one uniform (one global episode ending for every arm at once).
Global-DP estimators (DAF, `CumulativeLaplace`) add their noise inside `observe`, when an arm's
phase ends; the noisy value may instead be supplied by the caller through ``release`` (a real
trial releases with the exact discrete noise of the estimator's ``release_noise`` from the
operating system's CSPRNG).

Running sums use Kahan compensation, so float32 means stay accurate at 10⁹ samples.
"""

from jaxbai.estimators.cumulative import CumulativeEstimate, CumulativeLaplace
from jaxbai.estimators.episodic import DAF, DPA, EPISODE_MODES, EpisodeEstimate, check_episodes
from jaxbai.estimators.mle import CTB, MLE, GaussianMechanism, MeanEstimate

__all__ = [
    "CTB",
    "DAF",
    "DPA",
    "EPISODE_MODES",
    "MLE",
    "CumulativeEstimate",
    "CumulativeLaplace",
    "EpisodeEstimate",
    "GaussianMechanism",
    "MeanEstimate",
    "check_episodes",
]
