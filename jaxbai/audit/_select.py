"""Choose output events on the selection half, certify them on the held-out half.

Both audits draw their samples (or runs) in two independent halves. Every candidate event is
counted on the first half under both inputs and scored in both directions with a cheap
stand-in for the certified bound (`score_epsilon`); the `CERTIFIED_EVENTS` best (event,
direction) pairs are then counted afresh on the second half and certified with exact
Clopper–Pearson limits, Bonferroni-corrected over those pairs. Selection never sees the
samples the bound is computed from, so it cannot bias the bound.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from jaxbai import checks
from jaxbai.audit._bounds import certified_epsilon, score_epsilon

__all__ = [
    "CERTIFIED_EVENTS",
    "NONE",
    "AuditResult",
    "Choice",
    "certify",
    "check_count",
    "check_epsilon",
    "check_level",
    "choose",
    "pilot_score",
]

CERTIFIED_EVENTS = 4
"""How many (event, direction) pairs are certified on the held-out half (the Bonferroni m)."""
NONE = "(none)"
"""`AuditResult.event` when no event certifies an ε > 0 (then ``p`` and ``p_prime`` are NaN):
no evidence at these inputs, which is not a lower bound of 0 (`AuditResult.verdict`)."""


class AuditResult(NamedTuple):
    """A certified lower bound on the ε of a mechanism or algorithm.

    Attributes:
        epsilon_claimed: the ε the mechanism or algorithm claims.
        epsilon_lower: with probability ≥ ``confidence``, the true ε is at least this (≥ 0):
            log((p_lower − δ)/p′_upper) for the best certified event.
        event: the output event that achieved it and the input under which it is more likely
            (``x`` is the first input or table, ``x′`` its neighbour); `NONE` if no event
            certifies an ε > 0.
        p: that event's frequency under the first input (``x`` or ``table``) on the held-out
            half (NaN with `NONE`).
        p_prime: its frequency under the neighbouring input (NaN with `NONE`).
        samples: samples (mechanism) or runs (algorithm) per input, both halves.
        confidence: the confidence of the bound, after the Bonferroni correction.
        delta: the δ of the (ε, δ) claim the bound is computed for (hockey-stick form).
        events_certified: the number of (event, direction) pairs certified (Bonferroni m).
        events_tried: the number of candidate events scored (in both directions) on the
            selection half.
        inputs: what the two neighbouring inputs were, for the `verdict`: ``"tables"`` (an
            algorithm's reward tables) or ``"inputs"`` (a mechanism's).

    ``epsilon_lower`` is 0 when no event certifies an ε > 0, for programs; what is shown to
    people is `verdict` (or ``str(result)``), which then says "no evidence at these tables (N
    events tried)": the audit found nothing on these inputs, not that ε ≥ 0 was measured.
    """

    epsilon_claimed: float
    epsilon_lower: float
    event: str
    p: float
    p_prime: float
    samples: int
    confidence: float
    delta: float
    events_certified: int
    events_tried: int
    inputs: str = "inputs"

    @property
    def violation(self) -> bool:
        """Whether the audit certifies a larger ε than the one claimed."""
        return self.epsilon_lower > self.epsilon_claimed

    @property
    def evidence(self) -> bool:
        """Whether some event separated the two inputs (certified an ε > 0)."""
        return self.event != NONE

    @property
    def verdict(self) -> str:
        """One line for people: the certified bound against the claim, or "no evidence at
        these tables (N events tried)" (never a bound of 0)."""
        if not self.evidence:
            return f"no evidence at these {self.inputs} ({self.events_tried} events tried)"
        bound = f"ε ≥ {self.epsilon_lower:.3f} at {self.confidence:.0%} confidence"
        if self.violation:
            return f"{bound}: privacy violation (claimed ε = {self.epsilon_claimed:g})"
        return f"{bound} (claimed ε = {self.epsilon_claimed:g})"

    def __str__(self) -> str:
        """The `verdict`, with the event and its frequencies when there is one."""
        if not self.evidence:
            return self.verdict
        return (
            f"{self.verdict}; event: {self.event} (p = {self.p:.4g}, p′ = {self.p_prime:.4g} "
            f"on {self.samples:,} per input)"
        )


class Choice(NamedTuple):
    """A candidate event (index into the candidate list) and the input in the numerator."""

    index: int
    forward: bool
    """True: P(E | x)/P(E | x′); False: P(E | x′)/P(E | x)."""


def check_epsilon(epsilon: object) -> float:
    """The claimed ε: a finite number > 0."""
    eps = float(checks.check_epsilon(epsilon))
    if not math.isfinite(eps):
        raise ValueError(f"the claimed epsilon must be finite, got {epsilon!r}")
    return eps


def check_count(name: str, value: object, minimum: int = 2) -> int:
    """An integer ≥ ``minimum``: samples or runs per input (≥ 2: one half chooses, the other
    certifies), a horizon (≥ 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_level(confidence: float, delta: float) -> tuple[float, float]:
    """Validated (confidence, δ) as floats."""
    confidence, delta = float(confidence), float(delta)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must lie in [0, 1), got {delta!r}")
    return confidence, delta


def _alpha(confidence: float, pairs: int) -> float:
    """One-sided level of each Clopper–Pearson limit: two limits per certified pair."""
    return (1.0 - confidence) / (2 * pairs)


def _scores(
    counts: np.ndarray,
    counts_prime: np.ndarray,
    trials: int,
    trials_prime: int,
    confidence: float,
    delta: float,
) -> np.ndarray:
    """Wilson-score stand-ins for the certified bound of every event, forward then backward,
    at the level the certification will use."""
    z = statistics.NormalDist().inv_cdf(1.0 - _alpha(confidence, CERTIFIED_EVENTS))
    forward = score_epsilon(counts, trials, counts_prime, trials_prime, z, delta)
    backward = score_epsilon(counts_prime, trials_prime, counts, trials, z, delta)
    return np.concatenate([forward, backward])


def choose(
    counts: np.ndarray,
    counts_prime: np.ndarray,
    trials: int,
    trials_prime: int,
    confidence: float,
    delta: float,
) -> list[Choice]:
    """The `CERTIFIED_EVENTS` best (event, direction) pairs on the selection half (`_scores`);
    pairs scoring −inf are kept only if nothing scores better (one pair at least)."""
    scores = _scores(counts, counts_prime, trials, trials_prime, confidence, delta)
    order = np.argsort(-scores, kind="stable")[:CERTIFIED_EVENTS]
    finite = [i for i in order if np.isfinite(scores[i])] or [int(order[0])]
    size = len(counts)
    return [Choice(int(i % size), bool(i < size)) for i in finite]


def pilot_score(
    counts: np.ndarray, counts_prime: np.ndarray, trials: int, confidence: float, delta: float
) -> float:
    """A pilot audit's score of two inputs: the best stand-in bound over every event, in both
    directions, on ``trials`` runs of each (−inf where no event separates them)."""
    return float(np.max(_scores(counts, counts_prime, trials, trials, confidence, delta)))


def _describe(label: str, forward: bool) -> str:
    return f"{label}, more likely under {'x' if forward else 'x′'}"


def certify(
    choices: Sequence[Choice],
    labels: Sequence[str],
    counts: np.ndarray,
    counts_prime: np.ndarray,
    trials: int,
    trials_prime: int,
    epsilon: float,
    confidence: float,
    delta: float,
    samples: int,
    inputs: str = "inputs",
) -> AuditResult:
    """The best certified bound over ``choices``, counted on the held-out half.

    ``counts[i]`` and ``counts_prime[i]`` count the i-th chosen event under each input, in
    ``trials`` and ``trials_prime`` held-out samples; ``samples`` is the total per input;
    ``labels`` names every candidate event (their number is `AuditResult.events_tried`).
    """
    alpha = _alpha(confidence, len(choices))
    best, best_eps = 0, -math.inf
    for i, choice in enumerate(choices):
        k, k_prime = int(counts[i]), int(counts_prime[i])
        if choice.forward:
            eps = certified_epsilon(k, trials, k_prime, trials_prime, alpha, delta)
        else:
            eps = certified_epsilon(k_prime, trials_prime, k, trials, alpha, delta)
        if eps > best_eps:
            best, best_eps = i, eps
    found = best_eps > 0.0
    return AuditResult(
        epsilon_claimed=float(epsilon),
        epsilon_lower=best_eps if found else 0.0,
        event=_describe(labels[choices[best].index], choices[best].forward) if found else NONE,
        p=int(counts[best]) / trials if found else math.nan,
        p_prime=int(counts_prime[best]) / trials_prime if found else math.nan,
        samples=samples,
        confidence=confidence,
        delta=delta,
        events_certified=len(choices),
        events_tried=len(labels),
        inputs=inputs,
    )
