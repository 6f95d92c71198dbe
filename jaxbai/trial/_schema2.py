"""The schema-2 state layout, for migration to the current schema (`jaxbai.trial._migration`).

Schemas 1 and 2 stored a Top Two state as one flat record of 13 arrays, the estimator's fields
among the driver's (`TOP_TWO_FIELDS`). Schema 3 stores the state as the algorithm defines it —
a `jaxbai.toptwo.TopTwoState` nests its estimator's own state in ``estimate``, so an estimator
without episodes has no ``phase_start`` or ``phases`` — and records the path of every leaf.
Other states (DP-SE's) are unchanged.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from jaxbai.toptwo import TopTwoState

__all__ = ["TOP_TWO_FIELDS", "state_leaves"]

TOP_TWO_FIELDS = (
    "n", "counts", "sums", "sums_error", "means", "local_counts", "phase_start", "phases",
    "leader_counts", "leader_pulls", "priority", "stopped", "recommendation",
)  # fmt: skip
"""The fields of a schema-2 Top Two state, in the order of its leaves."""


def state_leaves(leaves: list[np.ndarray], template: Any) -> list[np.ndarray]:
    """The leaves of a schema-2 state in ``template``'s order (the store then checks them
    against the template's layout).

    A Top Two state's leaves are matched by field name (the last key of each leaf's path);
    fields the estimator does not have (``phase_start`` and ``phases`` of the MLE family) are
    dropped, as they were constant. Any other state keeps its leaves.

    Raises:
      ValueError: the template has a field the schema-2 state did not.
    """
    if not (isinstance(template, TopTwoState) and len(leaves) == len(TOP_TWO_FIELDS)):
        return leaves
    by_name = dict(zip(TOP_TWO_FIELDS, leaves, strict=True))
    names = [path[-1].name for path, _ in jax.tree_util.tree_flatten_with_path(template)[0]]
    if not set(names) <= set(by_name):
        raise ValueError("the trial store does not match the algorithm's state layout")
    return [by_name[name] for name in names]
