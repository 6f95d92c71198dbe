"""A sweep's engine grids, built once: what every later step of the sweep reads.

`SweepGrids.of` resolves a validated configuration into what it runs: the groups of instances
that share an engine grid (same family and K, `experiments.config.specs.instance_groups`), the
algorithm of every label as the sweep runs it, and one `GridPlan` per (algorithm, group) with
its jobs (`jaxbai.engine.grid_jobs`), its name and its checkpoint. The runner, the run table,
the resume note, the fused-kernel check, the summary's allocation targets, the figures and the
claims all take it (or its ``algorithms``) instead of building these again. `jaxbai` is
imported when first needed.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from experiments.config import SweepConfig
from experiments.config.specs import AlgorithmSpec, instance_groups

if TYPE_CHECKING:  # at run time jaxbai is imported when first needed
    from jaxbai.base import Algorithm
    from jaxbai.engine import Jobs

__all__ = ["GridPlan", "SweepGrids"]


@dataclasses.dataclass(frozen=True, eq=False)
class GridPlan:
    """One engine grid of a sweep: one algorithm on one group of instances.

    Attributes:
        spec: the algorithm's entry of the configuration.
        group: indices of its instances in the configuration (same family and K).
        name: the algorithm's label; with several groups, ``<label>.<family>-K<K>`` (the
            progress bar's name and the checkpoint's).
        jobs: its jobs (order: instance, ε, δ, run).
        checkpoint: ``<out>/checkpoints/<name>.npz``, or None when the sweep writes nothing.
    """

    spec: AlgorithmSpec
    group: tuple[int, ...]
    name: str
    jobs: Jobs
    checkpoint: str | None


@dataclasses.dataclass(frozen=True, eq=False)
class SweepGrids:
    """A sweep's plan (`of`): its configuration, instance groups, built algorithms and grids.

    Attributes:
        config: the validated configuration.
        groups: `experiments.config.specs.instance_groups` of its instances.
        algorithms: label → the algorithm as the sweep runs it (built with the sweep's
            threshold family).
        grids: label → its `GridPlan` per group, in group order.
    """

    config: SweepConfig
    groups: tuple[tuple[int, ...], ...]
    algorithms: Mapping[str, Algorithm]
    grids: Mapping[str, tuple[GridPlan, ...]]

    @classmethod
    def of(cls, config: SweepConfig) -> SweepGrids:
        """Build the plan of a validated configuration (each algorithm, instance group and
        job table exactly once)."""
        from jaxbai import engine

        groups = tuple(instance_groups(config.instances))
        instances = [[config.instances[i].build() for i in group] for group in groups]
        algorithms = {spec.label: spec.build(config.threshold) for spec in config.algorithms}
        grids = {}
        for spec in config.algorithms:
            eps = config.epsilons_of(algorithms[spec.label].info.privacy)
            grids[spec.label] = tuple(
                GridPlan(
                    spec=spec,
                    group=group,
                    name=_grid_name(config, spec.label, group, len(groups)),
                    jobs=engine.grid_jobs(built, eps, config.deltas, config.runs),
                    checkpoint=None,
                )
                for group, built in zip(groups, instances, strict=True)
            )
        return cls(config, groups, algorithms, grids)

    def with_checkpoints(self) -> SweepGrids:
        """The same plan with every grid's checkpoint in ``config.out``."""
        where = os.path.join(os.fspath(self.config.out), "checkpoints")
        grids = {
            label: tuple(
                dataclasses.replace(g, checkpoint=os.path.join(where, f"{g.name}.npz"))
                for g in plans
            )
            for label, plans in self.grids.items()
        }
        return dataclasses.replace(self, grids=grids)

    @property
    def total_runs(self) -> int:
        """The runs of every grid (instances × the algorithm's ε × δ × runs, summed)."""
        return sum(len(g.jobs) for plans in self.grids.values() for g in plans)


def _grid_name(config: SweepConfig, label: str, group: tuple[int, ...], groups: int) -> str:
    """``<label>``; with several groups, ``<label>.<family>-K<K>``."""
    if groups == 1:
        return label
    first = config.instances[group[0]]
    return f"{label}.{first.family}-K{first.num_arms}"
