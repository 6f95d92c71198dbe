"""`check`: does an algorithm keep jaxbai's contract? A conformance check for user code.

`check(alg, instance)` runs one small experiment per part of the contract and returns a
`ConformanceReport`, readable as text, that raises on request
(`ConformanceReport.raise_for_failures`, or ``raise_on_failure=True``):

* ``members``: the members of `jaxbai.base.Algorithm` and the types of ``name`` and ``info``, and
  the capabilities it has (`jaxbai.base.Rounds`, `Releasing`, `Episodic`, …);
* ``purity``: `init` then ``steps`` calls of `step` give the same state eagerly, under
  `jax.jit` (twice, exactly; against eager integers exactly and floats to 1e-5) and in a lane of
  a `jax.vmap` over two keys, which must not depend on the other lane;
* ``plan``: for an `jaxbai.base.Episodic` algorithm, the pulls `plan` announces from each
  episode's first state are the ones `step` then makes, over the first ``steps`` pulls
  (whatever the rewards, Appendix H);
* ``privacy``: the `jaxbai.base.AlgorithmInfo` is coherent (its own validation: a private
  algorithm states its measure, a local one its mechanism's, Gaussian noise never claims pure
  ε-DP); for a global-DP algorithm whose state exposes its means (``state.estimate.means``,
  as Top Two algorithms do), the noise of its first release (Ñ = 1) has the law its
  `release_noise` and measure give (`jaxbai.base.privacy.release_scale`): one-sample
  Kolmogorov–Smirnov test at level 1e-3 on ``noise_draws`` draws;
* ``paths``: for an `jaxbai.base.Episodic` algorithm on an `jaxbai.base.ArmSums` instance, the
  per-sample and per-episode simulations have the same law of τ: two-sample KS test at level
  1e-3 on ``law_runs`` runs per path. By the Dvoretzky–Kiefer–Wolfowitz inequality, at 200 runs
  it rejects two laws whose CDFs are 0.39 apart somewhere with probability at least 0.9
  (``law_runs=0`` skips it);
* ``trial``: whether `jaxbai.Trial` can run it once registered: a global-DP algorithm must hand
  over releases whose noise a trial draws exactly (what `jaxbai.Trial.create` checks).

A part that does not apply (``plan`` of a fully sequential algorithm) is reported as such,
never as passed. `tests/test_conformance.py` runs the check on every registered algorithm and
shows it failing on planted defects; ``python -m jaxbai.conformance --plugin MODULE`` runs it
on the algorithms a plugin registers (`jaxbai.conformance.cli`).
"""

from __future__ import annotations

import dataclasses
import functools
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
from jaxbai.trial._algorithm import check_releases

__all__ = ["ConformanceError", "ConformanceReport", "Finding", "check"]

KS_LEVEL_FACTOR = 1.95
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
    """One part of the check: its name, ``True`` (passed), ``False`` (failed) or ``None`` (does
    not apply), and what was found."""

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
        mark = {True: "passed", False: "FAILED", None: "not applicable"}
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
    Bernoulli (0.7, 0.5, 0.3)) at ε = ``epsilon`` (ignored without privacy) and δ = ``delta``.

    Examples:
        >>> import jaxbai
        >>> report = jaxbai.check(jaxbai.ttucb(), law_runs=0)
        >>> report.ok, [f.part for f in report.findings]
        (True, ['members', 'purity', 'plan', 'privacy', 'trial', 'paths'])
    """
    instance = bernoulli([0.7, 0.5, 0.3]) if instance is None else instance
    name = str(getattr(alg, "name", type(alg).__name__))
    members = _members(alg)
    findings = [members]
    if members.passed:
        params = alg.params(epsilon=epsilon, delta=delta) if alg.info.takes_epsilon else None
        params = alg.params(delta=delta) if params is None else params
        run = functools.partial(_guarded, alg, instance, params, seed)
        findings += [
            run("purity", _purity, steps),
            run("plan", _plan, steps),
            run("privacy", _privacy, noise_draws),
            _trial_ready(alg),
            _paths(alg, instance, epsilon, delta, law_runs, seed),
        ]
    report = ConformanceReport(name, tuple(findings))
    return report.raise_for_failures() if raise_on_failure else report


def _guarded(alg, instance, params, seed, part: str, body: Callable, size: int) -> Finding:
    """``body(alg, instance, params, key, size)`` as a `Finding`; an exception is a failure
    that names it."""
    try:
        passed, detail = body(alg, instance, params, jax.random.key(seed), size)
    except Exception as err:  # any error of user code is the finding
        return Finding(part, False, f"raised {type(err).__name__}: {err}")
    return Finding(part, passed, detail)


def _members(alg: Any) -> Finding:
    missing = base.missing_members(alg, base.Algorithm)
    if missing:
        return Finding("members", False, f"lacks {', '.join(missing)} (jaxbai.base.Algorithm)")
    try:
        info = alg.info
    except ValueError as err:
        return Finding("members", False, f"its info is refused: {err}")
    if not isinstance(alg.name, str) or not isinstance(info, base.AlgorithmInfo):
        return Finding("members", False, "name must be a str and info a jaxbai.base.AlgorithmInfo")
    has = [c.__name__ for c in CAPABILITIES if isinstance(alg, c)]
    return Finding("members", True, f"capabilities: {', '.join(has) or 'none'}")


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


def _purity(alg, instance, params, key, steps: int) -> tuple[bool, str]:
    k = len(np.asarray(instance.means))
    start = alg.init(jax.random.fold_in(key, 0), params, k)
    eager = _states(alg.step, start, instance, params, _keys(key, steps))[-1]
    step = jax.jit(alg.step)
    jitted = _states(step, start, instance, params, _keys(key, steps))[-1]
    if not _same(eager, jitted, False):
        return False, (
            "step under jax.jit differs from step run eagerly: it reads something other than "
            "its arguments, or branches in Python on a value"
        )
    if not _same(jitted, _states(step, start, instance, params, _keys(key, steps))[-1], True):
        return False, "two runs of the jitted step with the same keys differ"
    other = jax.random.fold_in(key, 10**6)
    lanes = jax.vmap(lambda kk: alg.init(kk, params, k))(
        jnp.stack([jax.random.fold_in(key, 0), jax.random.fold_in(other, 0)])
    )
    vstep = jax.jit(jax.vmap(alg.step, in_axes=(0, 0, None, None)))
    keys = [jnp.stack(pair) for pair in zip(_keys(key, steps), _keys(other, steps), strict=True)]
    lane0 = jax.tree.map(lambda x: x[0], _states(vstep, lanes, instance, params, keys)[-1])
    if not _same(jitted, lane0, False):
        return False, "a lane of jax.vmap differs from the same run alone, or reads the other lane"
    return True, f"{steps} steps agree eagerly, under jax.jit and in a lane of jax.vmap"


def _plan(alg, instance, params, key, steps: int) -> tuple[bool | None, str]:
    """Every plan from the states of the first ``steps`` pulls against the pulls made."""
    if not isinstance(alg, base.Episodic):
        return None, "fully sequential: no plan"
    k = len(np.asarray(instance.means))
    states = _states(
        jax.jit(alg.step), alg.init(jax.random.fold_in(key, 0), params, k), instance, params,
        _keys(key, steps),
    )  # fmt: skip
    made = [
        int(np.argmax(np.asarray(b.counts) - np.asarray(a.counts)))
        for a, b in itertools.pairwise(states)
    ]
    n, plans = 0, 0
    while n < steps:
        arms, length = alg.plan(states[n], params, steps)
        announced = np.asarray(arms)[: min(int(length), steps - n)].tolist()
        if not announced or made[n : n + len(announced)] != announced:
            pulls = made[n : n + max(len(announced), 1)]
            return False, f"at pull {n} plan announced {announced}, step made {pulls}"
        n, plans = n + len(announced), plans + 1
    return True, f"{plans} plans announced the first {steps} pulls step made"


def _privacy(alg, instance, params, key, draws: int) -> tuple[bool | None, str]:
    info = alg.info
    if info.privacy != "global":
        return None if info.privacy == "none" else True, info.claim
    if info.release_noise is None:
        return None, f"{info.claim}; it states no release noise, so none is checked"
    k = len(np.asarray(instance.means))
    state = alg.init(jax.random.fold_in(key, 0), params, k)
    if not hasattr(getattr(state, "estimate", None), "means"):
        return None, f"{info.claim}; its state exposes no estimate means to check"
    ones = bernoulli([1.0] + [0.0] * (k - 1))

    def first(kk):
        return alg.step(kk, state, ones, params).estimate.means[0] - 1.0

    noise = np.asarray(jax.jit(jax.vmap(first))(jax.random.split(key, draws)), np.float64)
    scale = privacy.release_scale(info.release_noise, info.measure, float(params.epsilon), 1)
    cdf = _laplace_cdf if info.release_noise == "laplace" else _normal_cdf
    d = _ks_one(np.sort(noise / scale), cdf)
    if math.sqrt(draws) * d > KS_LEVEL_FACTOR:
        return False, (
            f"its first release's noise is not the {info.release_noise} noise of scale "
            f"{scale:g} that {info.claim} gives (KS D = {d:.3f} on {draws} draws)"
        )
    return True, f"{info.claim}; first release's noise has its {info.release_noise} law"


def _laplace_cdf(x: np.ndarray) -> np.ndarray:
    return np.where(x < 0, np.exp(np.minimum(x, 0)) / 2, 1 - np.exp(-np.maximum(x, 0)) / 2)


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    return np.array([math.erfc(-v / math.sqrt(2)) / 2 for v in x.tolist()])


def _ks_one(sorted_sample: np.ndarray, cdf: Callable) -> float:
    """sup |F_n − F| of a sorted sample against the CDF ``cdf``."""
    f = cdf(sorted_sample)
    n = len(f)
    return float(max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n)))


def _trial_ready(alg: Any) -> Finding:
    info = alg.info
    if info.privacy != "global":
        how = "participants privatise on their device" if info.privacy == "local" else "no noise"
        return Finding("trial", True, f"can run as a trial once registered ({how})")
    try:
        check_releases(alg.name, alg)
    except ValueError as err:
        return Finding("trial", False, str(err))
    return Finding("trial", True, f"releases exact discrete {info.release_noise} noise")


def _paths(alg, instance, epsilon, delta, runs: int, seed: int) -> Finding:
    if not isinstance(alg, base.Episodic) or not isinstance(instance, base.ArmSums):
        return Finding("paths", None, "one path only (per-episode draws need both capabilities)")
    if runs == 0:
        return Finding("paths", None, "skipped (law_runs=0)")
    taus = [
        np.sort(
            np.asarray(
                simulate(alg, instance, epsilon, delta, runs, seed + i, 10**6, draws=draws).tau
            )
        )
        for i, draws in enumerate(("per_sample", "per_episode"))
    ]
    d = _ks_two(*taus)
    if math.sqrt(runs / 2) * d > KS_LEVEL_FACTOR:
        return Finding("paths", False, f"per-sample and per-episode τ differ (KS D = {d:.3f})")
    return Finding("paths", True, f"same law of τ on {runs} runs per path (KS D = {d:.3f})")


def _ks_two(a: np.ndarray, b: np.ndarray) -> float:
    """sup |F_a − F_b| of two sorted samples."""
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / len(a)
    fb = np.searchsorted(b, grid, side="right") / len(b)
    return float(np.max(np.abs(fa - fb)))
