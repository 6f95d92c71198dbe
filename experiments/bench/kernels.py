"""The two lane programs side by side (`jaxbai.engine.KERNELS`, docs/semantics.md §32).

``launch``: the cost of one step of a pool of lanes, in µs, for each lane program (``xla``: a
`fori_loop` of the vmapped step, one program per step; ``fused``: one Pallas kernel running
all the steps), at 128 and 32 768 lanes of TTUCB on a Bernoulli instance of K = 8 arms (a power
of two, which the fused kernel needs on a GPU), with every lane running throughout (budget and
instance keep them from stopping). Steps per call: ``--steps``. Compilation is excluded.

``op_counts``: the operations of one lane-step of each algorithm the fused kernel covers
(`op_counts`), the input of the performance model in docs/benchmarks.md.

``tail``: the grid's tail, 64 runs of CTB-TT at ε = 0.1 on mu1 with ``max_samples`` 10⁹, run
for ``--tail-seconds`` per lane program (the first chunk, which compiles, is not timed): its
lane-steps per second per lane, and the hours 10⁹ steps would take at that rate. A lane
program that refuses the grid reports its reason instead.

Usage:
    python -m experiments.bench kernels [--device cpu|gpu] [--out FILE.json]
        [--preset quick|full]

On a CPU the fused kernel runs in Pallas' interpret mode: a check that it runs, not a speed.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["lane_pool", "launch_cost", "main", "markdown", "op_counts", "tail_rate"]

LAUNCH_LANES = (128, 32768)
TAIL_RUNS, TAIL_EPSILON, TAIL_BUDGET = 64, 0.1, 10**9


def lane_pool(alg: Any, jobs: Any, num_arms: int) -> tuple[Any, Any]:
    """A lane pool of ``alg`` with one job of ``jobs`` per lane (each as `load_job` starts
    it, seed 0), and its block step (`jaxbai.engine.lane_program.block_step`)."""
    from functools import partial

    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxbai.engine import lane_program

    table, _ = lane_program.device_tables(jobs, np.arange(len(jobs)), 1)
    load = jax.jit(jax.vmap(lambda j: lane_program.load_job(alg, num_arms, jnp.int32(0), table, j)))
    index = jnp.arange(len(jobs), dtype=jnp.int32)
    return lane_program.Lanes(index, *load(index)), partial(lane_program.block_step, alg)


def _pool(num_lanes: int, num_arms: int) -> tuple[Any, Any, Any]:
    """TTUCB lanes on a K-arm Bernoulli instance (per-sample draws), its block step and
    algorithm; the arms are close, so that no lane stops within the measured steps."""
    import numpy as np

    import jaxbai
    from jaxbai import engine

    alg = jaxbai.ttucb()
    inst = jaxbai.bernoulli(np.linspace(0.51, 0.49, num_arms))
    jobs = engine.grid_jobs(inst, [float("inf")], 1e-6, num_lanes)
    return (*lane_pool(alg, jobs, num_arms), alg)


def launch_cost(kernel: str, num_lanes: int, steps: int, device: str, num_arms: int = 8) -> dict:
    """µs per step and lane-steps per second of ``steps`` steps of ``num_lanes`` lanes."""
    import jax
    import jax.numpy as jnp

    from jaxbai import engine
    from jaxbai.engine import fused_kernel, lane_program

    with jax.default_device(engine.select_devices(device)[0]):
        lanes, step, alg = _pool(num_lanes, num_arms)
        budget = jnp.int32(2**30)
        if kernel == "fused":
            interpret = jax.devices(device)[0].platform == "cpu"
            reason = fused_kernel.unsupported(alg, step, lanes, "cpu" if interpret else "gpu")
            if reason is not None:
                return {"refused": reason}
            run = jax.jit(lambda p: fused_kernel.fused_steps(step, budget, steps, p, interpret))
        else:
            one = lane_program.lanes_step(alg, budget, lambda ln: ln)
            run = jax.jit(lambda p: jax.lax.fori_loop(0, steps, lambda _, ln: one(ln), p))
        jax.block_until_ready(run(lanes))  # compile
        start = time.perf_counter()
        out = jax.block_until_ready(run(lanes))
        wall = time.perf_counter() - start
    moved = int(jnp.sum(out.state.n - lanes.state.n))
    return {
        "us_per_step": wall / steps * 1e6,
        "lane_steps_per_s": moved / wall,
        "lanes": num_lanes,
        "steps": steps,
    }


def tail_rate(kernel: str, device: str, seconds: float) -> dict:
    """Lane-steps per second per lane of the paper grid's tail (`TAIL_RUNS` runs of CTB-TT at
    ε = `TAIL_EPSILON` on mu1, budget `TAIL_BUDGET`), over about ``seconds`` of running."""
    import jaxbai
    from jaxbai import engine

    alg = jaxbai.ctb_tt()
    inst = jaxbai.bernoulli(jaxbai.PAPER_INSTANCES["mu1"])
    jobs = engine.grid_jobs(inst, [TAIL_EPSILON], 0.01, TAIL_RUNS)
    if kernel == "fused":
        platform = engine.select_devices(device)[0].platform
        reason = engine.fused_unsupported(alg, jobs, platform=platform, lanes_per_device=TAIL_RUNS)
        if reason is not None:
            return {"refused": reason}
    options = dict(
        max_samples=TAIL_BUDGET,
        lanes_per_device=TAIL_RUNS,
        device=device,
        kernel=kernel,
        shrink_after=float("inf"),
    )
    chunk = 1 << 12
    engine.run_grid(alg, jobs, chunk_steps=chunk, max_chunks=1, **options)  # compile
    chunks, lane_steps, wall = 1, 0, 0.0
    while wall < seconds:
        chunks *= 2
        res = engine.run_grid(alg, jobs, chunk_steps=chunk, max_chunks=chunks, **options)
        lane_steps, wall = res.lane_steps, res.wall_time
    per_lane = lane_steps / TAIL_RUNS / wall
    return {
        "steps_per_s_per_lane": per_lane,
        "hours_for_1e9_steps": TAIL_BUDGET / per_lane / 3600,
        "wall_s": wall,
    }


def markdown(report: dict[str, Any]) -> str:
    """One Markdown table of the report: a row per measurement, a column per lane program."""
    rows = ["| measurement | xla | fused |", "| --- | --- | --- |"]
    for name, per_kernel in report["measurements"].items():
        cells = []
        for kernel in ("xla", "fused"):
            result = per_kernel[kernel]
            if "refused" in result:
                cells.append("refused: " + result["refused"].replace("|", "/"))
            else:
                numbers = (f"{k} {v:.4g}" for k, v in result.items() if isinstance(v, float))
                cells.append("; ".join(numbers))
        rows.append(f"| {name} | {' | '.join(cells)} |")
    counts = report.get("op_counts", {})
    if counts:
        kinds = list(next(iter(counts.values())))
        rows += ["", f"| ops per lane-step (K = 8) | {' | '.join(kinds)} |"]
        rows.append("| --- |" + " --- |" * len(kinds))
        rows += [f"| {n} | {' | '.join(str(c[k]) for k in kinds)} |" for n, c in counts.items()]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Measure both lane programs; print a Markdown table, write JSON."""
    from experiments.bench.cli import parser_for, write_report
    from jaxbai import compilation

    out = "results/bench_kernels.json"
    parser = parser_for("kernels", out)
    parser.add_argument("--steps", type=int, default=256, help="steps per timed call")
    parser.add_argument("--tail-seconds", type=float, default=60.0, help="tail run per program")
    args = parser.parse_args(argv)
    compilation.from_arguments(args)

    import jax

    import jaxbai
    from jaxbai import engine

    quick = args.preset == "quick"
    lanes = (128, 1024) if quick else LAUNCH_LANES
    steps = min(args.steps, 32) if quick else args.steps
    seconds = min(args.tail_seconds, 2.0) if quick else args.tail_seconds
    measurements: dict[str, dict[str, Any]] = {}
    for num_lanes in lanes:
        measurements[f"launch, {num_lanes} lanes"] = {
            k: launch_cost(k, num_lanes, steps, args.device) for k in ("xla", "fused")
        }
    measurements["tail: 64 runs of CTB-TT, ε = 0.1, mu1"] = {
        k: tail_rate(k, args.device, seconds) for k in ("xla", "fused")
    }
    covered = [n for n, e in jaxbai.ALGORITHMS.items() if engine.fused_refusal(e()) is None]
    report = {
        "devices": [str(d) for d in jax.devices()],
        "measurements": measurements,
        "op_counts": {name: op_counts(name) for name in covered},
    }
    return write_report(report, args.out, markdown(report))


TRANSCENDENTAL = frozenset({"exp", "log", "log1p", "pow", "logistic", "sqrt", "rsqrt", "exp2"})
DIVISION = frozenset({"div", "rem"})
FREE = frozenset(
    {"broadcast_in_dim", "convert_element_type", "squeeze", "reshape", "split", "stack",
     "concatenate", "transpose", "iota", "jit", "closed_call", "pjit", "scan", "while", "cond"}
)  # fmt: skip
"""Primitives that move or rename values (or wrap sub-programs, counted through): 0 ops."""


def _count(jaxpr: Any, counts: dict[str, int]) -> None:
    import math

    for eqn in jaxpr.eqns:
        name = str(eqn.primitive)
        for value in eqn.params.values():
            inner = getattr(value, "jaxpr", value)
            if hasattr(inner, "eqns"):
                _count(inner, counts)
        if name in FREE:
            continue
        shapes = [v.aval.shape for v in (eqn.invars if "reduce" in name else eqn.outvars)]
        size = max(math.prod(s) for s in shapes)
        kind = (
            "transcendental"
            if name in TRANSCENDENTAL
            else "division"
            if name in DIVISION
            else "reduction"
            if "reduce" in name or name in ("argmax", "argmin")
            else "other"
        )
        counts[kind] += size


def op_counts(name: str, num_arms: int = 8) -> dict[str, int]:
    """Elementwise operations of one lane-step of ``name`` (per-sample draws, K arms), by
    kind: transcendental calls, divisions, elements reduced, and the other arithmetic,
    comparisons and selects; moves and reshapes count 0, a loop body once."""
    import jax
    import jax.numpy as jnp

    import jaxbai
    from jaxbai import engine
    from jaxbai.engine import lane_program

    alg = engine.with_draws(jaxbai.ALGORITHMS[name](), jaxbai.bernoulli([0.5] * 2), "per_sample")
    jobs = engine.grid_jobs(jaxbai.bernoulli([0.5] * num_arms), [1.0], 0.01, 1)
    table, _ = lane_program.device_tables(jobs, jobs.run[:1] * 0, 1)
    loaded = jax.eval_shape(lambda: lane_program.load_job(alg, num_arms, jnp.int32(0), table, 0))
    lane = lane_program.Lanes(jax.ShapeDtypeStruct((), jnp.int32), *loaded)
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    traced = jax.make_jaxpr(lambda ln, k: lane_program.step_lane(alg, jnp.int32(2**30), ln, k))
    counts = dict.fromkeys(("transcendental", "division", "reduction", "other"), 0)
    _count(traced(lane, key).jaxpr, counts)
    return counts
