"""`check`: does an algorithm keep jaxbai's contract? A conformance check for user code.

`check(alg, instance)` runs one small experiment per part of the contract and returns a
`ConformanceReport`, readable as text, that raises on request
(`ConformanceReport.raise_for_failures`, or ``raise_on_failure=True``):

* ``members``: the members of `jaxbai.base.Algorithm`, the types of ``name`` and ``info``, that
  the algorithm is hashable (a `jax.jit` static argument) and its parameters build, and the
  capabilities it has (`jaxbai.base.Rounds`, `Releasing`, `Episodic`, …);
* ``purity``: `init` then ``steps`` calls of `step` give the same state eagerly, under
  `jax.jit` (twice, exactly; against eager integers exactly and floats to 1e-5) and in both
  lanes of a `jax.vmap` over two keys, each equal to its run alone;
* ``select``: the arm `select` names (what a trial assigns) is the one `step` pulls, at each
  of the first ``steps`` pulls before the run stops; for an `jaxbai.base.Episodic` algorithm,
  each `plan` from those states announces the pulls `step` then makes (Appendix H);
* ``privacy``: the `jaxbai.base.AlgorithmInfo` is coherent (its own validation: a private
  algorithm states its measure, a local one its mechanism's, Gaussian noise never claims pure
  ε-DP); for a global-DP algorithm whose first pull releases a one-sample mean
  (`jaxbai.base.Releasing.pending_release`) and whose state exposes its means
  (``state.estimate.means``, as Top Two algorithms do), that release's noise is consistent with
  the law its `release_noise` and measure give (`jaxbai.base.privacy.release_scale`):
  one-sample Kolmogorov–Smirnov test at level 1e-3 on ``noise_draws`` draws, which by the
  Dvoretzky–Kiefer–Wolfowitz inequality rejects, with probability ≥ 0.9 at 2000 draws, a law
  whose CDF is 0.071 away somewhere (half the claimed Laplace scale is 0.125 away). The noise
  of a local mechanism and of other releases is not checked, and the report says so;
* ``paths``: for an `jaxbai.base.Episodic` algorithm on an `jaxbai.base.ArmSums` instance, no
  difference between the per-sample and per-episode simulations' laws of τ: two-sample KS test
  at level 1e-3 on ``law_runs`` runs per path. By the Dvoretzky–Kiefer–Wolfowitz inequality,
  at 200 runs it rejects two laws whose CDFs are 0.39 apart somewhere with probability at
  least 0.9 (``law_runs=0`` skips it);
* ``trial``: for a global-DP algorithm, that `jaxbai.Trial.create` would accept its releases: it
  hands them over and a trial has an exact sampler for their declared noise
  (`jaxbai.trial.check_releases`; the releases themselves are not run).

A part that does not apply or was not checked (``paths`` of a fully sequential algorithm, the
trial of an algorithm with nothing to release) is reported as such, never as passed; any
exception a part raises is that part's failure. `tests/test_conformance.py` runs the check on
every registered algorithm and shows it failing on planted defects; ``python -m
jaxbai.conformance --plugin MODULE`` runs it on the algorithms a plugin registers
(`jaxbai.conformance.cli`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxbai import base
from jaxbai.base import privacy
from jaxbai.instances import bernoulli
from jaxbai.simulation import simulate
from jaxbai.trial import check_releases

__all__ = [
    "ConformanceError",
    "ConformanceReport",
    "Finding",
    "check",
    "ks_one_sample",
    "ks_two_sample",
]

KS_CRITICAL_VALUE = 1.95
"""√(−log(α/2)/2) at α = 1e-3: a one-sample KS test rejects when √n·D > 1.95, a two-sample one
when √(nm/(n + m))·D > 1.95 (the asymptotic Kolmogorov distribution)."""

CAPABILITIES = (
    base.Rounds,
    base.Releasing,
    base.Episodic,
    base.Budgeted,
    base.ReportsSamples,
    base.SeparableStopping,
    base.SeparableSettle,
)


class ConformanceError(ValueError):
    """An algorithm failed `check` (the message is the report)."""


class Finding(NamedTuple):
    """One part of the check: its name, ``True`` (passed), ``False`` (failed) or ``None`` (not
    checked: it does not apply, or cannot be checked here; ``detail`` says which), and what was
    found."""

    part: str
    passed: bool | None
    detail: str


@dataclasses.dataclass(frozen=True)
class ConformanceReport:
    """What `check` found, part by part (`Finding`)."""

    algorithm: str
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        """No part failed."""
        return all(f.passed is not False for f in self.findings)

    def __str__(self) -> str:
        mark = {True: "passed", False: "FAILED", None: "not checked"}
        lines = [f"conformance of {self.algorithm}: {'ok' if self.ok else 'FAILED'}"]
        lines += [f"  {f.part}: {mark[f.passed]}: {f.detail}" for f in self.findings]
        return "\n".join(lines)

    def raise_for_failures(self) -> ConformanceReport:
        """``self``, or `ConformanceError` with the report when a part failed."""
        if not self.ok:
            raise ConformanceError(str(self))
        return self


def check(
    alg: Any,
    instance: base.Instance | None = None,
    *,
    epsilon: float = 1.0,
    delta: float = 0.1,
    steps: int = 8,
    noise_draws: int = 2000,
    law_runs: int = 200,
    seed: int = 0,
    raise_on_failure: bool = False,
) -> ConformanceReport:
    """Check ``alg`` against jaxbai's contract (module docstring) on ``instance`` (default
    Bernoulli (0.7, 0.5, 0.3)) at ε = ``epsilon`` (ignored without privacy) and δ = ``delta``:
    ``steps`` steps for purity and select, ``noise_draws`` release draws, ``law_runs`` runs per
    path (0: skip).

    Examples:
        >>> import jaxbai
        >>> report = jaxbai.check(jaxbai.ttucb(), law_runs=0)
        >>> report.ok, [f.part for f in report.findings]
        (True, ['members', 'purity', 'select', 'privacy', 'trial', 'paths'])
    """
    instance = bernoulli([0.7, 0.5, 0.3]) if instance is None else instance
    name = str(getattr(alg, "name", type(alg).__name__))
    members = _guarded("members", lambda: _members(alg, epsilon, delta))
    findings = [members]
    if members.passed:
        params = _params(alg, epsilon, delta)
        key = jax.random.key(seed)
        trajectory: list = []  # purity's jitted states, which select reuses
        findings += [
            _guarded("purity", lambda: _purity(alg, instance, params, key, steps, trajectory)),
            _guarded("select", lambda: _select(alg, params, trajectory)),
            _guarded("privacy", lambda: _privacy(alg, instance, params, key, epsilon, noise_draws)),
            _guarded("trial", lambda: _trial_ready(alg)),
            _guarded("paths", lambda: _paths(alg, instance, epsilon, delta, law_runs, seed)),
        ]
    report = ConformanceReport(name, tuple(findings))
    return report.raise_for_failures() if raise_on_failure else report


def _guarded(part: str, body: Callable[[], tuple[bool | None, str]]) -> Finding:
    """``body()``'s (passed, detail) as a `Finding` of ``part``; an exception is a failure that
    names it."""
    try:
        passed, detail = body()
    except Exception as err:  # any error of user code is the finding
        return Finding(part, False, f"raised {type(err).__name__}: {err}")
    return Finding(part, passed, detail)


def _params(alg: Any, epsilon: float, delta: float) -> Any:
    """The algorithm's parameters at (ε, δ), or at δ alone for one that takes no ε."""
    if alg.info.takes_epsilon:
        return alg.params(epsilon=epsilon, delta=delta)
    return alg.params(delta=delta)


def _members(alg: Any, epsilon: float, delta: float) -> tuple[bool, str]:
    """The members of `jaxbai.base.Algorithm`, their types, hashability and parameters."""
    missing = base.missing_members(alg, base.Algorithm)
    if missing:
        return False, f"lacks {', '.join(missing)} (jaxbai.base.Algorithm)"
    if not isinstance(alg.name, str) or not isinstance(alg.info, base.AlgorithmInfo):
        return False, "name must be a str and info a jaxbai.base.AlgorithmInfo"
    hash(alg)  # a TypeError here: jax.jit cannot take it as a static argument
    _params(alg, epsilon, delta)
    has = [c.__name__ for c in CAPABILITIES if isinstance(alg, c)]
    return True, f"hashable, its parameters build; capabilities: {', '.join(has) or 'none'}"


def _states(step: Callable, state, instance, params, keys: list) -> list:
    """The states after each call of ``step`` with ``keys`` in turn, from ``state``."""
    out = [state]
    for key in keys:
        out.append(step(key, out[-1], instance, params))
    return out


def _same(a, b, exact_floats: bool) -> bool:
    """Equal pytrees: integers and booleans exactly, floats exactly or to 1e-5."""

    def leaf(x, y) -> bool:
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if exact_floats or not np.issubdtype(x.dtype, np.floating):
            return bool(np.array_equal(x, y, equal_nan=np.issubdtype(x.dtype, np.floating)))
        return bool(np.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True))

    a, b = (jax.tree.map(_data, t) for t in (a, b))
    if jax.tree.structure(a) != jax.tree.structure(b):
        return False
    return all(leaf(x, y) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


def _data(x):
    """A typed PRNG key's data (comparable), any other leaf as it is."""
    is_key = isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)
    return jax.random.key_data(x) if is_key else x


def _keys(key: jax.Array, steps: int) -> list:
    return [jax.random.fold_in(key, n + 1) for n in range(steps)]


def _purity(alg, instance, params, key, steps: int, trajectory: list) -> tuple[bool, str]:
    """Eager, jitted (twice) and a vmap lane agree over ``steps`` steps; the jitted states go
    to ``trajectory``."""
    k = len(np.asarray(instance.means))
    start = alg.init(jax.random.fold_in(key, 0), params, k)
    if not _same(
        start, jax.jit(alg.init, static_argnums=2)(jax.random.fold_in(key, 0), params, k), False
    ):
        return False, "init under jax.jit differs from init run eagerly"
    eager = _states(alg.step, start, instance, params, _keys(key, steps))[-1]
    step = jax.jit(alg.step)
    trajectory += _states(step, start, instance, params, _keys(key, steps))
    if not _same(eager, trajectory[-1], False):
        return False, (
            "step under jax.jit differs from step run eagerly: it reads something other than "
            "its arguments (Python state, a clock, NumPy's generator)"
        )
    if not _same(
        trajectory[-1], _states(step, start, instance, params, _keys(key, steps))[-1], True
    ):
        return False, "two runs of the jitted step with the same keys differ"
    other = jax.random.fold_in(key, 10**6)
    alone = _states(
        step,
        alg.init(jax.random.fold_in(other, 0), params, k),
        instance,
        params,
        _keys(other, steps),
    )[-1]
    lanes = jax.vmap(lambda kk: alg.init(kk, params, k))(
        jnp.stack([jax.random.fold_in(key, 0), jax.random.fold_in(other, 0)])
    )
    vstep = jax.jit(jax.vmap(alg.step, in_axes=(0, 0, None, None)))
    keys = [jnp.stack(pair) for pair in zip(_keys(key, steps), _keys(other, steps), strict=True)]
    both = _states(vstep, lanes, instance, params, keys)[-1]
    for lane, want in enumerate((trajectory[-1], alone)):
        if not _same(want, jax.tree.map(lambda x, i=lane: x[i], both), False):
            return False, f"lane {lane} of jax.vmap differs from the same run alone"
    return (
        True,
        f"init and {steps} steps agree eagerly, under jax.jit and in both lanes of jax.vmap",
    )


def _pulled(before, after) -> int | None:
    """The arm one step pulled (the count that grew), None if none did (a stopped run)."""
    grew = np.flatnonzero(np.asarray(after.counts) > np.asarray(before.counts))
    return int(grew[0]) if len(grew) == 1 else None


def _select(alg, params, trajectory: list) -> tuple[bool | None, str]:
    """At each state of ``trajectory`` before the run stops, `select` names the arm `step`
    pulled; an episodic algorithm's `plan` from each episode's first state announces them."""
    if not trajectory:
        return None, "no trajectory (purity failed)"
    select = jax.jit(alg.select)
    made = []
    for before, after in itertools.pairwise(trajectory):
        arm = _pulled(before, after)
        if bool(np.asarray(before.stopped)) or arm is None:
            break
        named = int(select(before, params))
        if named != arm:
            return False, f"at pull {len(made)} select named {named}, step pulled {arm}"
        made.append(arm)
    if not isinstance(alg, base.Episodic):
        return True, f"select named each of the first {len(made)} pulls step made"
    plan = jax.jit(alg.plan, static_argnums=2)
    n, plans = 0, 0
    while n < len(made):
        arms, length = plan(trajectory[n], params, len(made))
        announced = np.asarray(arms)[: min(int(length), len(made) - n)].tolist()
        if not announced or made[n : n + len(announced)] != announced:
            pulls = made[n : n + max(len(announced), 1)]
            return False, f"at pull {n} plan announced {announced}, step made {pulls}"
        n, plans = n + len(announced), plans + 1
    return True, f"select and {plans} plans named the first {len(made)} pulls step made"


def _privacy(alg, instance, params, key, epsilon: float, draws: int) -> tuple[bool | None, str]:
    """The info's claim, and the first release's noise against it where it can be read."""
    info = alg.info
    if info.privacy == "none":
        return None, "not private"
    if info.privacy == "local":
        return None, f"{info.claim}; the participant mechanism's noise is not checked"
    k = len(np.asarray(instance.means))
    state = alg.init(jax.random.fold_in(key, 0), params, k)
    arm = int(alg.select(state, params))
    releasing = isinstance(alg, base.Releasing) and info.release_noise is not None
    due, _, counts = alg.pending_release(state, arm, 1.0, params) if releasing else (0, 0, 0)
    single = (
        releasing and bool(due) and np.asarray(counts).tolist() == [int(a == arm) for a in range(k)]
    )
    if not single or not hasattr(getattr(state, "estimate", None), "means"):
        return None, f"{info.claim}; its first release cannot be read here, so it is not checked"
    ones = bernoulli([1.0 if a == arm else 0.0 for a in range(k)])

    def first(kk):
        return alg.step(kk, state, ones, params).estimate.means[arm] - 1.0

    noise = np.asarray(jax.jit(jax.vmap(first))(jax.random.split(key, draws)), np.float64)
    scale = privacy.release_scale(info.release_noise, info.measure, epsilon, 1)
    cdf = _laplace_cdf if info.release_noise == "laplace" else _normal_cdf
    d = ks_one_sample(np.sort(noise / scale), cdf)
    if math.sqrt(draws) * d > KS_CRITICAL_VALUE:
        return False, (
            f"its first release's noise is not the {info.release_noise} noise of scale "
            f"{scale:g} that {info.claim} gives (KS D = {d:.3f} on {draws} draws)"
        )
    return (
        True,
        f"{info.claim}; its first release's noise is consistent with it (KS, {draws} draws)",
    )


def _laplace_cdf(x: np.ndarray) -> np.ndarray:
    return np.where(x < 0, np.exp(np.minimum(x, 0)) / 2, 1 - np.exp(-np.maximum(x, 0)) / 2)


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    import scipy.special  # here, not at the top: it was a third of ``import jaxbai``'s own time

    return scipy.special.ndtr(x)


def ks_one_sample(sorted_sample: np.ndarray, cdf: Callable) -> float:
    """The Kolmogorov–Smirnov statistic sup |F_n − F| of a sorted sample against the CDF
    ``cdf`` (a vectorised function)."""
    f = cdf(sorted_sample)
    n = len(f)
    return float(max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n)))


def _trial_ready(alg: Any) -> tuple[bool | None, str]:
    """Whether `jaxbai.Trial.create` accepts its releases (global DP)."""
    if alg.info.privacy != "global":
        return None, "nothing to release"
    check_releases(alg.name, alg)
    return True, f"a trial has an exact sampler for its declared {alg.info.release_noise} noise"


def _paths(alg, instance, epsilon, delta, runs: int, seed: int) -> tuple[bool | None, str]:
    """The two simulation paths' laws of τ (two-sample KS)."""
    if not isinstance(alg, base.Episodic) or not isinstance(instance, base.ArmSums):
        return None, "one path only (per-episode draws need both capabilities)"
    if runs == 0:
        return None, "skipped (law_runs=0)"
    taus = [
        np.sort(
            np.asarray(
                simulate(alg, instance, epsilon, delta, runs, seed + i, 10**6, draws=draws).tau
            )
        )
        for i, draws in enumerate(("per_sample", "per_episode"))
    ]
    d = ks_two_sample(*taus)
    if math.sqrt(runs / 2) * d > KS_CRITICAL_VALUE:
        return False, f"per-sample and per-episode τ differ (KS D = {d:.3f}, {runs} runs a path)"
    return True, f"no difference in the law of τ detected (KS D = {d:.3f}, {runs} runs a path)"


def ks_two_sample(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov–Smirnov statistic sup |F_a − F_b| of two sorted samples."""
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / len(a)
    fb = np.searchsorted(b, grid, side="right") / len(b)
    return float(np.max(np.abs(fa - fb)))
