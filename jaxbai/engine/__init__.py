"""High-throughput grid runner: lane refill, per-job randomness, sharding, progress, checkpoints.

A figure grid mixes runs that stop after 10³ samples with runs that need 10⁸, so a plain `vmap`
of a `while_loop` (which runs until its slowest member stops) leaves most lanes idle. The engine
keeps a fixed pool of lanes per device; every ``refill_every`` steps, each lane whose job has
stopped (or hit ``max_samples``) writes its result and loads the next pending job.

Determinism: job j's randomness depends only on (seed, run, ε, δ) — see `job_key` — and step n
of a job uses ``fold_in(stream_key, n)``. So a job's result does not depend on the number of
lanes, devices, chunk sizes, on which other jobs share the grid, or on interruption and resume.
(The instance is not part of the key: the same run index on two instances shares its random
stream, i.e. common random numbers across instances.)

The host advances the compiled loop in chunks of ``chunk_steps`` steps; between chunks it
updates the progress bar (``progress=True``) and writes an atomic checkpoint of the finished
jobs. On resume, finished jobs are kept and every other job is run from its start — which
gives bitwise the same result as an uninterrupted run, since a job's trajectory depends only on
its key.

Jobs are split over devices round-robin and each device runs its own lane pool under
`jax.shard_map` (no communication between devices inside a chunk). In the tail of a grid, when
few lanes are still busy, they are compacted into a smaller pool. Step n's key is computed by
`fold_in_step`, bit for bit ``fold_in``, in one fusion.

Several δ per trajectory (``share_deltas=True``, docs/semantics.md §31): the sampling rule of a
Top Two algorithm does not read δ, so one trajectory per (instance, ε, run) is tested against
every δ of the grid and records each δ's first stop; its key depends on (run, ε) only. DP-SE,
whose epochs depend on δ, runs each δ separately (`shares_deltas`).

The fused kernel (``kernel="fused"``, docs/semantics.md §32): the steps between two refills
run as one Pallas kernel over blocks of lanes instead of one XLA program per step, with the
same numbers; for GPUs (Triton), interpreted on a CPU. ``kernel="auto"`` is the XLA program.
`fused_unsupported` says what it does not run, and why (`fused_refusal`: for an algorithm).

Several processes (``jax.distributed.initialize()``, e.g. one per node of a cluster): every
process calls `run_grid` with the same grid; the jobs are split over the processes by
`predicted_cost`, each process runs its share on its own devices and writes its own checkpoint
shard (`shard_path`), and every process returns the whole grid, bitwise equal to one process's
result. See ``jaxbai.engine._distributed``.

Modules:
    `jaxbai.engine.jobs`: job lists (`Jobs`, `grid_jobs`) and per-job keys (`job_key`).
    `jaxbai.engine.prepare`: what a grid runs as: devices, lane pool size, checks, draws and
        shared δ (`select_devices`, `default_lanes`, `with_draws`, `with_shared_deltas`), the
        fused kernel's form of a grid (`fused_unsupported`).
    `jaxbai.engine.run`: the host loop (`run_grid`, `run_vmap`, `GridResult`).
    `jaxbai.engine.progress`: the progress bar (`Progress`: stage, runs, samples/s, ETA).
    `jaxbai.engine.recording`: chosen fields of chosen runs over time
        (`record_trajectories`, `TrajectoryRecord`).
    `jaxbai.engine.lane_program`: the on-device lane program, refill, tail compaction (its
        step, `lanes_step`, is what the benchmarks of `experiments.bench` take apart).
    ``jaxbai.engine._checkpoint`` (private): grid fingerprints and atomic checkpoint files.
    ``jaxbai.engine._distributed`` (private): the split over processes and the gather.
    ``jaxbai.engine._shared`` (private): trajectories shared by several δ (`SharedDeltas`).
    `jaxbai.engine.fused_kernel`: the fused lane kernel (Pallas) behind ``kernel="fused"``.

Examples:
    >>> import jaxbai
    >>> from jaxbai import engine
    >>> jobs = engine.grid_jobs(jaxbai.bernoulli([0.9, 0.5]), [1.0, 10.0], runs=2)
    >>> res = engine.run_grid(jaxbai.adap_tt(), jobs, seed=0)
    >>> res.tau.shape, bool(res.censored.any())
    ((4,), False)
"""

from jaxbai._devices import available_cores
from jaxbai.engine._checkpoint import (
    CHECKPOINT_VERSION,
    finished_jobs,
    read_checkpoint,
    shard_path,
    write_checkpoint,
)
from jaxbai.engine._distributed import predicted_cost
from jaxbai.engine._shared import (
    SharedDeltas,
    SharedDeltasPerEpisode,
    SharedParams,
    SharedState,
    shares_deltas,
)
from jaxbai.engine.fused_kernel import BLOCK_LANES, KERNELS
from jaxbai.engine.jobs import SHARED_DELTA, Jobs, fold_in_step, grid_jobs, job_key
from jaxbai.engine.prepare import (
    DRAWS,
    default_lanes,
    fused_refusal,
    fused_unsupported,
    select_devices,
    with_draws,
    with_shared_deltas,
)
from jaxbai.engine.progress import Progress
from jaxbai.engine.recording import TrajectoryRecord, record_trajectories
from jaxbai.engine.run import OUTCOMES, SHRINK_AFTER_S, GridResult, run_grid, run_vmap

__all__ = [
    "BLOCK_LANES",
    "CHECKPOINT_VERSION",
    "DRAWS",
    "KERNELS",
    "OUTCOMES",
    "SHARED_DELTA",
    "SHRINK_AFTER_S",
    "GridResult",
    "Jobs",
    "Progress",
    "SharedDeltas",
    "SharedDeltasPerEpisode",
    "SharedParams",
    "SharedState",
    "TrajectoryRecord",
    "available_cores",
    "default_lanes",
    "finished_jobs",
    "fold_in_step",
    "fused_refusal",
    "fused_unsupported",
    "grid_jobs",
    "job_key",
    "predicted_cost",
    "read_checkpoint",
    "record_trajectories",
    "run_grid",
    "run_vmap",
    "select_devices",
    "shard_path",
    "shares_deltas",
    "with_draws",
    "with_shared_deltas",
    "write_checkpoint",
]
