"""The rows of the privacy audit: neighbouring inputs, planted bugs, the table and its plot.

The package docstring (`experiments.audit`) describes what is audited and how.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import jaxbai
from experiments.audit.planted import (
    Overspending,
    half_scale_laplace,
    remembering_adap_tt,
    renoising_dp_tt,
    tripled_randomised_response,
)
from jaxbai import audit, dpse, mechanisms
from jaxbai.base import Mechanism
from jaxbai.mechanisms import secure

__all__ = [
    "EPSILONS",
    "MECHANISMS",
    "PARTICIPANT_MECHANISMS",
    "REMEMBERING_HORIZON",
    "TOPTWO_HORIZON",
    "Row",
    "algorithm_rows",
    "audit_row",
    "dpse_tables",
    "markdown",
    "plot",
    "remembering_tables",
    "rows",
    "toptwo_tables",
]

EPSILONS = (0.1, 0.5, 1.0, 2.0)
PARTICIPANT_MECHANISMS: tuple[Mechanism, ...] = (
    mechanisms.RandomisedResponse(),
    mechanisms.GaussianNoise(),
    mechanisms.LaplaceNoise(),
)
"""The participant-side mechanisms audited on their own (the Gaussian at its default γ)."""
TOPTWO_HORIZON = 16
REMEMBERING_HORIZON = 64
_DPSE_TAIL = 4.0
_HOST_FRACTION = 50
"""Host-side mechanisms draw samples/50 (a Python loop per sample)."""
_DPSE_FRACTION = 10
"""DP-SE's epoch release draws samples/10 (each sample sums a whole table)."""


# --- neighbouring inputs ---------------------------------------------------------------------
def toptwo_tables(horizon: int = TOPTWO_HORIZON) -> tuple[np.ndarray, np.ndarray]:
    """Two arms, every reward 0; the neighbour gives participant 0 (arm 0's first pull) 1."""
    table = np.zeros((horizon, 2))
    table_prime = table.copy()
    table_prime[0, 0] = 1.0
    return table, table_prime


def remembering_tables(horizon: int = REMEMBERING_HORIZON) -> tuple[np.ndarray, np.ndarray]:
    """Two arms, every reward ½; participant 0 (arm 0's first pull) has 0, against 1. Both
    arms' all-time means stay close, so arm 0's releases keep deciding the pulls."""
    table = np.full((horizon, 2), 0.5)
    table[0, 0] = 0.0
    table_prime = table.copy()
    table_prime[0, 0] = 1.0
    return table, table_prime


def dpse_tables(
    epsilon: float, risk: float = 0.01, horizon: int | None = None
) -> tuple[np.ndarray, np.ndarray, int]:
    """DP-SE's tables at ε and the horizon 2R₁ (or ``horizon`` if larger).

    Round-robin from sample 0 gives arm 0 the even rows and arm 1 the odd ones; every row
    holds (v, 0), row 0 holds (0, 0) against (1, 0). With R₁, h₁, c₁ of epoch 1 (two arms,
    `jaxbai.dpse.epoch_constants`), θ = 2(h₁ + c₁) and b = 1/(εR₁),

        v = R₁(θ − 4b)/(R₁ − 1),

    so that arm 0's epoch-1 mean is (R₁ − 1)v/R₁ = θ − 4b (participant 0 at 0) or
    θ − 4b + 1/R₁ = θ − (4 − ε)b (at 1) and arm 1's is 0: the elimination test
    μ̃₀ − μ̃₁ > θ fires when the difference of the two Laplace draws exceeds 4b, against
    (4 − ε)b (docs/audits.md).

    Examples:
        >>> table, table_prime, horizon = dpse_tables(1.0)
        >>> horizon, float(table_prime[0, 0] - table[0, 0])
        (1890, 1.0)
    """
    constants = dpse.epoch_constants(2, 1, risk, epsilon)
    pulls = int(constants.pulls_per_arm)
    threshold = 2 * (float(constants.h) + float(constants.c))
    scale = 1.0 / (epsilon * pulls)
    value = pulls * (threshold - _DPSE_TAIL * scale) / (pulls - 1)
    horizon = max(2 * pulls, horizon or 0)
    table = np.zeros((horizon, 2))
    table[1:, 0] = value
    table_prime = table.copy()
    table_prime[0, 0] = 1.0
    return table, table_prime, horizon


# --- mechanisms ------------------------------------------------------------------------------
class _Case(NamedTuple):
    mechanism: audit.Mechanism
    x: Any
    x_prime: Any
    delta: float
    fraction: int = 1
    """The audit draws samples/fraction (host-side and whole-table mechanisms are slow)."""


def _daf_release(epsilon: float) -> _Case:
    alg = jaxbai.adap_tt()
    params = alg.params(epsilon=epsilon)

    def mechanism(key, rewards):
        state = alg.init(jax.random.key(0), params, 2)
        for i in range(8):
            state = alg.update(jax.random.fold_in(key, i), state, 0, rewards[i], params)
        return state.means[0]

    rewards = jnp.zeros(8)
    return _Case(mechanism, rewards, rewards.at[4].set(1.0), 0.0)


def _dpse_release(epsilon: float) -> _Case:
    alg = jaxbai.dp_se()
    params = alg.params(epsilon=epsilon)
    table, table_prime, _ = dpse_tables(epsilon)

    def mechanism(key, rows):
        state = alg.init(jax.random.key(0), params, 2)
        return alg.step(key, state, jaxbai.instances.reward_table(rows), params).means

    return _Case(mechanism, table, table_prime, 0.0, _DPSE_FRACTION)


def _scalar(mechanism: Callable, delta: float = 0.0, fraction: int = 1) -> _Case:
    return _Case(mechanism, 0.0, 1.0, delta, fraction)


def _delta(mechanism: Mechanism) -> float:
    """The δ a participant mechanism is audited with: δ_p of its (ε, δ_p)-DP (γ of the
    Gaussian mechanism), or 0 for pure ε-DP."""
    return mechanism.measure.delta or 0.0


def _simulated(mechanism: Mechanism, epsilon: float) -> _Case:
    """A participant mechanism's simulation sampler (`jaxbai.mechanisms.sample`) on the rewards
    0 against 1 (sensitivity 1)."""
    return _scalar(lambda key, x: mechanisms.sample(mechanism, key, x, epsilon), _delta(mechanism))


def _secure(mechanism: Mechanism, epsilon: float) -> _Case:
    """A participant mechanism's real trials' sampler, on the host with seeded uniforms."""
    sampler = audit.host_mechanism(lambda x, u: mechanism.secure_privatize(float(x), epsilon, u))
    return _scalar(sampler, _delta(mechanism), _HOST_FRACTION)


MECHANISMS: dict[str, Callable[[float], _Case]] = {
    **{m.name: functools.partial(_simulated, m) for m in PARTICIPANT_MECHANISMS},
    "daf_release": _daf_release,
    "dpse_release": _dpse_release,
    "secure_snapped_laplace": lambda eps: _scalar(
        audit.host_mechanism(lambda x, u: secure.release_mean(Fraction(float(x)), 1, eps, u)),
        fraction=_HOST_FRACTION,
    ),
    **{f"secure {m.name}": functools.partial(_secure, m) for m in PARTICIPANT_MECHANISMS},
}
"""Row name → (claimed ε → the mechanism and its neighbouring inputs)."""


# --- rows ------------------------------------------------------------------------------------
class Row(NamedTuple):
    """One line of the table: what was audited and how."""

    name: str
    kind: str  # "mechanism", "local algorithm", "global algorithm", "planted bug"
    run: Callable[[float, int, int, int, str | None], audit.AuditResult]
    """(ε, samples, runs, seed, device) → result."""


def _mechanism_row(name: str, case: Callable[[float], _Case], kind: str = "mechanism") -> Row:
    def run(eps, samples, runs, seed, device):
        del runs
        made = case(eps)
        size = max(2, samples // made.fraction)
        return audit.audit_mechanism(
            made.mechanism, made.x, made.x_prime, eps, samples=size, seed=seed,
            delta=made.delta, device=device,
        )  # fmt: skip

    return Row(name, kind, run)


Design = Callable[[float], tuple[np.ndarray, np.ndarray, int]]
"""ε → (table, neighbouring table, horizon)."""


def _toptwo_design(epsilon: float) -> tuple[np.ndarray, np.ndarray, int]:
    del epsilon
    return (*toptwo_tables(), TOPTWO_HORIZON)


def _dpse_design(epsilon: float) -> tuple[np.ndarray, np.ndarray, int]:
    """DP-SE's tables with one horizon (the largest 2R₁ of `EPSILONS`) for every ε, so that
    one compiled program serves the whole row."""
    return dpse_tables(epsilon, horizon=max(dpse_tables(eps)[2] for eps in EPSILONS))


def _remembering_design(epsilon: float) -> tuple[np.ndarray, np.ndarray, int]:
    del epsilon
    return (*remembering_tables(), REMEMBERING_HORIZON)


def _algorithm_row(
    name: str, alg: Any, design: Design | None, kind: str = "global algorithm"
) -> Row:
    """An algorithm's row: on ``design``'s tables, or (None) on the tables that
    `jaxbai.audit.neighbouring_tables` finds for it at each ε."""

    def run(eps, samples, runs, seed, device):
        del samples
        if design is None:
            return audit.audit_algorithm(alg, eps, runs=runs, seed=seed, device=device)
        table, table_prime, horizon = design(eps)
        return audit.audit_algorithm(
            alg, eps, table, table_prime, runs=runs, seed=seed, horizon=horizon, device=device
        )

    return Row(name, kind, run)


def _design(name: str, alg: Any) -> Design | None:
    """jaxbai's own algorithms run on their hand-made tables (DP-SE's at its elimination
    threshold, the Top Two ones otherwise); a plugin's, or one registered from Python, on
    searched tables (None)."""
    if jaxbai.ALGORITHMS[name].plugin_source is not None:  # not defined in jaxbai
        return None
    return _dpse_design if isinstance(alg, jaxbai.DPSE) else _toptwo_design


def algorithm_rows(names: Sequence[str]) -> list[Row]:
    """The rows of the registered algorithms ``names``: a global-DP one audited on its tables
    (`_design`), a local-DP one at its participant mechanism (its guarantee).

    Raises:
        ValueError: a name that is not registered, or an algorithm without privacy.
    """
    unknown = [name for name in names if name not in jaxbai.ALGORITHMS]
    if unknown:
        raise ValueError(
            f"unknown algorithms {', '.join(unknown)} (registered: "
            f"{', '.join(jaxbai.ALGORITHMS)}; a plugin's need --plugin MODULE)"
        )
    out = []
    for name in names:
        alg = jaxbai.ALGORITHMS[name]()
        mechanism = alg.info.participant_mechanism
        if mechanism is not None:
            case = functools.partial(_simulated, mechanism)
            out.append(_mechanism_row(f"{name} (at {mechanism.name})", case, "local algorithm"))
        elif alg.info.privacy == "global":
            out.append(_algorithm_row(name, alg, _design(name, alg)))
        else:
            raise ValueError(f"{name} is not private: there is no privacy claim to audit")
    return out


def rows(planted: bool = False, algorithms: Sequence[str] | None = None) -> list[Row]:
    """The table's rows: mechanisms, then every registered private algorithm; with
    ``algorithms``, only those algorithms (`algorithm_rows`); with ``planted``, the planted
    bugs instead."""
    if planted:
        return [
            Row("laplace at half scale", "planted bug", _planted_mechanism(half_scale_laplace)),
            Row(
                "randomised response at 3ε",
                "planted bug",
                _planted_mechanism(tripled_randomised_response),
            ),
            _algorithm_row(
                "adap_tt at 8ε", Overspending(jaxbai.adap_tt()), _toptwo_design, "planted bug"
            ),
            _algorithm_row(
                "adap_tt remembering", remembering_adap_tt(), _remembering_design, "planted bug"
            ),
            _algorithm_row(
                "dp_tt re-noising", renoising_dp_tt(), _remembering_design, "planted bug"
            ),
        ]
    if algorithms is not None:
        return algorithm_rows(algorithms)
    private = [n for n, entry in jaxbai.ALGORITHMS.items() if entry.info().privacy != "none"]
    return [_mechanism_row(name, case) for name, case in MECHANISMS.items()] + algorithm_rows(
        private
    )


def _planted_mechanism(factory: Callable[[float], audit.Mechanism]):
    def run(eps, samples, runs, seed, device):
        del runs
        return audit.audit_mechanism(
            factory(eps), 0.0, 1.0, eps, samples=samples, seed=seed, device=device
        )

    return run


def audit_row(row: Row, epsilon: float, samples: int, runs: int, seed: int, device=None) -> dict:
    """One audit as a table record (with its wall time): ``epsilon_lower`` is empty and
    ``verdict`` says "no evidence at these tables (N events tried)" where no event separated
    the inputs."""
    start = time.perf_counter()
    res = row.run(epsilon, samples, runs, seed, device)
    return {
        "name": row.name,
        "kind": row.kind,
        "epsilon": epsilon,
        "epsilon_lower": round(res.epsilon_lower, 4) if res.evidence else "",
        "verdict": res.verdict,
        "confidence": res.confidence,
        "delta": res.delta,
        "event": res.event if res.evidence else "",
        "events_tried": res.events_tried,
        "p": res.p,
        "p_prime": res.p_prime,
        "samples": res.samples,
        "violation": res.violation,
        "seconds": round(time.perf_counter() - start, 1),
    }


# --- output ----------------------------------------------------------------------------------
def markdown(records: Sequence[dict]) -> str:
    """The table as Markdown: one line per (row, ε)."""
    lines = [
        "| audited | kind | ε | ε_lower (95%) | event | samples/runs per input |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in records:
        if r["event"]:
            flag = " **violation**" if r["violation"] else ""
            bound = f"{r['epsilon_lower']:.3f}{flag}"
        else:
            bound = r["verdict"]
        lines.append(
            f"| {r['name']} | {r['kind']} | {r['epsilon']:g} | {bound} | {r['event']} "
            f"| {r['samples']:,} |"
        )
    return "\n".join(lines)


def plot(records: Sequence[dict], path: str) -> None:
    """ε_lower against the claimed ε, a panel per kind of row (local algorithms are left out:
    their rows repeat their participant mechanism's), with the diagonal ε_lower = ε; an audit
    with no evidence is a grey cross on the axis, not a bound of 0."""
    from matplotlib.figure import Figure

    kinds = [k for k in dict.fromkeys(r["kind"] for r in records) if k != "local algorithm"]
    fig = Figure(figsize=(5.5 * len(kinds), 4.5))
    axes = np.atleast_1d(fig.subplots(1, len(kinds), sharey=True))
    top = max(r["epsilon"] for r in records)
    for ax, kind in zip(axes, kinds, strict=True):
        mine = [r for r in records if r["kind"] == kind]
        for name in dict.fromkeys(r["name"] for r in mine):
            line = [r for r in mine if r["name"] == name and r["event"]]
            xs, ys = [r["epsilon"] for r in line], [r["epsilon_lower"] for r in line]
            ax.plot(xs, ys, "o-", label=name)
        nothing = [r["epsilon"] for r in mine if not r["event"]]
        if nothing:
            ax.plot(nothing, [0] * len(nothing), "x", color="grey", label="no evidence")
        ax.plot([0, top], [0, top], "k--", lw=1, label="ε_lower = ε")
        ax.set_title(f"{kind}s")
        ax.set_xlabel("claimed ε")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("certified ε_lower (95%)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
