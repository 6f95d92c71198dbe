"""The checks of `Trial.record`: whose outcome it is, and which values a trial records.

Pure functions of the trial's configuration, its algorithm's `jaxbai.base.AlgorithmInfo` and
its open assignments; `jaxbai.trial._trial` calls them before anything changes.

Examples:
  >>> import jaxbai
  >>> config = TrialConfig("ctb_tt", {}, 3, 1.0, 0.05, clip=False, noise="secure")
  >>> check_observation(1, jaxbai.ctb_tt().info, config)
  1.0
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

import jax
import numpy as np

from jaxbai import checks
from jaxbai.base import AlgorithmInfo
from jaxbai.trial._config import TrialConfig

__all__ = [
    "BINARY",
    "check_finite_state",
    "check_observation",
    "check_participant",
    "is_index",
]

BINARY = (0.0, 1.0)
"""The values of ``outcomes="binary"``."""

MAX_OBSERVATION = checks.FLOAT32_MAX / 2**31
"""The largest |observation| a trial records (≈ 1.6e29): a sum of up to 2³¹ − 1 of them (the
int32 counts) stays finite in the algorithms' float32 states, so an outcome held for a later
participant can never make the queue it joins overflow when it is applied."""


def is_index(value: object) -> bool:
    """Whether ``value`` is an integer (an arm, a participant id, a size), not a bool."""
    return not isinstance(value, bool) and isinstance(value, (int, np.integer))


def check_participant(
    participant: int | None,
    issued: Mapping[int, int],
    issued_here: Set[int],
    held: Mapping[int, float],
    samples: int,
) -> int:
    """The participant whose outcome `Trial.record` records (see its docstring).

    Args:
      participant: the id given, or ``None``.
      issued: the open assignments, participant → arm.
      issued_here: those this trial object handed out.
      held: the outcomes received ahead of an earlier participant's, participant → value.
      samples: the outcomes applied so far (participants 0, …, samples − 1).

    Raises:
      ValueError: no such open assignment (nothing issued, or already recorded), or ``None``
        where the id is needed (several open, or one this object did not hand out).
    """
    if participant is None:
        if len(issued) == 1 and set(issued) == issued_here:
            return next(iter(issued))
        if not issued:
            raise ValueError(
                "no open request: call next_arm() first; each request takes exactly one record"
            )
        if len(issued) == 1:
            p = next(iter(issued))
            raise ValueError(
                f"participant {p}'s assignment was issued before this trial was opened (by "
                f"another operator, perhaps): say whose outcome this is (participant={p}, "
                "--participant on the command line)"
            )
        raise ValueError(
            f"{len(issued) - len(held)} assignments are open: say whose outcome this is "
            "(participant=)"
        )
    if not is_index(participant):
        raise ValueError(f"participant must be an integer id, got {participant!r}")
    if 0 <= participant < samples or participant in held:
        raise ValueError(f"participant {participant}'s outcome is already recorded")
    if participant not in issued:
        raise ValueError(f"participant {participant} has no open assignment")
    return int(participant)


def check_observation(reward: object, info: AlgorithmInfo, config: TrialConfig) -> float:
    """The value `Trial.record` records for ``reward``, as a float.

    Local DP: a value the participants' mechanism outputs (`jaxbai.base.Mechanism.outputs`:
    one of its finite set, else any finite real). Otherwise the raw reward: 0 or 1 for binary
    outcomes; in [0, 1] (or clipped there, with ``clip``) where the algorithm's privacy needs
    it (``info.unit_interval``) or ``clip`` asks for it; else any finite real. In every case
    at most `MAX_OBSERVATION` in magnitude.

    Raises:
      ValueError: a value the trial must refuse.
    """
    mechanism = info.participant_mechanism
    if mechanism is not None:
        made = f"outputs of the participants' {mechanism.name} (privatize_locally, on their device)"
        z = _one_of(reward, mechanism.outputs, f"{config.algorithm} records {made}")
    elif config.outcomes == "binary":
        z = _one_of(reward, BINARY, f"{config.algorithm} records binary outcomes")
    elif info.unit_interval or config.clip:
        z = checks.check_unit_reward(reward, config.clip)
    else:
        z = checks.check_finite_reward(reward)
    if abs(z) > MAX_OBSERVATION:
        raise ValueError(
            f"observation {z!r} is too large for the algorithm's float32 sums (|observation| ≤ "
            f"{MAX_OBSERVATION:.2g}, so that 2³¹ of them stay finite): record it in smaller units"
        )
    return z


def _one_of(reward: object, values: tuple[float, ...] | None, records: str) -> float:
    """``reward`` as a finite float, one of ``values`` unless that is None."""
    z = checks.check_finite_reward(reward)
    if values is not None and z not in values:
        allowed = " or ".join(f"{v:g}" for v in values)
        raise ValueError(f"{records}: {allowed}, got {z!r}")
    return z


def check_finite_state(state: Any, applied: list[int]) -> None:
    """ValueError if the outcomes of participants ``applied`` made a float of the algorithm's
    state non-finite: nothing is then written. `MAX_OBSERVATION` keeps the registered
    algorithms' sums finite; this guards states that hold more than sums (a plugin's squares)."""
    for leaf in jax.tree_util.tree_leaves(state):
        values = np.asarray(leaf)
        if np.issubdtype(values.dtype, np.floating) and not np.isfinite(values).all():
            raise ValueError(
                f"the outcomes of participants {applied} would make the algorithm's state "
                "non-finite (float32 overflow): nothing was recorded; record values of a "
                "magnitude the algorithm's float32 state can sum"
            )
