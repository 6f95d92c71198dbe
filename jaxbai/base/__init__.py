"""The contracts of jaxbai: a small core per component, and capabilities on top; and
`AlgorithmWrapper`, the one base for an algorithm that runs another one.

`typing.Protocol`s: a class satisfies one by having its members, without inheriting, and no
caller in jaxbai (engine, `jaxbai.simulate`, `jaxbai.trial`, experiments) uses a member that a
protocol does not declare. What is optional is a *capability*, a protocol of its own that
callers test for with ``isinstance(obj, Capability)``:

* `Algorithm` — plus `Rounds` (rounds of adaptivity), `Releasing` (hands its global-DP releases
  to the caller; trials need it), `Episodic` (plans its pulls up to the next episode end,
  Appendix H), `Budgeted` (an engine step draws many samples at once) and `ReportsSamples`
  (reports a stopping time other than the samples drawn, as published code may);
* `Instance` — plus `ArmSums` (one arm's reward sum drawn exactly in O(1));
* `Estimator` (the means of a Top Two algorithm) — plus `ReleasingEstimator` and
  `EpisodicEstimator`;
* `Mechanism` (the participant-side mechanism of a local-DP estimator, for simulations, real
  trials and audits);
* `PrivacyMeasure` (what ε guarantees: pure ε-DP, (ε, δ_p)-DP or ρ-zCDP; `jaxbai.base.privacy`
  holds the measures and their conversions).

They are generic in their state and parameter types (``Algorithm[State, Params]``), pytrees the
component defines: an algorithm's state has the members of `RunState`, an estimator's those of
`Estimate`. K is the number of arms (static); the shape aliases below are `jax.Array`s; counts
are int32, means and rewards float32. ``docs/semantics.md §N`` fixes what the paper leaves open.
"""

from jaxbai.base.algorithms import (
    Algorithm,
    AlgorithmWrapper,
    Budgeted,
    Episodic,
    Releasing,
    ReportsSamples,
    Rounds,
    RunState,
    SeparableSettle,
    SeparableStopping,
)
from jaxbai.base.components import (
    PRIVACY_MODELS,
    RELEASE_NOISES,
    AlgorithmInfo,
    AllocationTarget,
    ArmSums,
    AsymptoticBound,
    EpisodicEstimator,
    Estimate,
    Estimator,
    Instance,
    Key,
    Mask,
    Mechanism,
    PerArm,
    Release,
    ReleasingEstimator,
    Scalar,
    missing_members,
    protocol_members,
)
from jaxbai.base.privacy import PURE, PrivacyMeasure, approximate_dp, zcdp

__all__ = [
    "PRIVACY_MODELS",
    "PURE",
    "RELEASE_NOISES",
    "Algorithm",
    "AlgorithmInfo",
    "AlgorithmWrapper",
    "AllocationTarget",
    "ArmSums",
    "AsymptoticBound",
    "Budgeted",
    "Episodic",
    "EpisodicEstimator",
    "Estimate",
    "Estimator",
    "Instance",
    "Key",
    "Mask",
    "Mechanism",
    "PerArm",
    "PrivacyMeasure",
    "Release",
    "Releasing",
    "ReleasingEstimator",
    "ReportsSamples",
    "Rounds",
    "RunState",
    "Scalar",
    "SeparableSettle",
    "SeparableStopping",
    "approximate_dp",
    "missing_members",
    "protocol_members",
    "zcdp",
]
