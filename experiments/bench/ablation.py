"""What each part of the Top Two step costs in the XLA lane program on a CPU.

TTUCB on mu1 (K = 5), a pool of ``--lanes`` lanes laid out as the grid engine lays them out on
a CPU (lane axis innermost), ``--steps`` steps per call of a `fori_loop` of the lane step,
compilation excluded; every variant is timed ``--repeats`` times, the variants alternating, and
the best time is reported in ns per lane-step (one core). The variants remove parts of the
step (Alg. 1) with `dataclasses.replace`, so the difference to ``full`` is what a part costs:

- ``full``: `jaxbai.ttucb()` as the engine runs it;
- ``no stopping``: the GLR test (Eq. 2) never runs;
- ``fixed challenger``: C = B + 1 mod K instead of the TC challenger (Eq. 3);
- ``no bonus``: the UCB leader without its bonus b^G;
- ``lowest-index ties``: every argmax without the random tie priority;
- ``floor``: neither sampling rule nor stopping test, arm n mod K pulled: what is left is the
  step's key (`fold_in(stream, n)`), the reward draw, the counts, the estimator's update and the
  selects that keep a stopped or budgeted lane unchanged;
- ``floor + stopping``: the floor with the GLR test.

Then ``ns per planned pull``: `pull_costs`, one planned pull of DP-TT, EB-TCI's cost in DP-TT's
step, AdaP-TT and AdaP-TT* (the per-episode path's inner loop), in ns per lane.

Beside them, ``3x scalar``: the ns per sample and core at which the engine would run at three
times the scalar numba loop measured in the same process (W1's loop, 4096 runs on all cores;
omitted without numba), the target of the lean-step work. Usage:

    python -m experiments.bench ablation [--lanes 256] [--steps 2048] [--repeats 5]
        [--out results/bench_ablation.json] [--preset quick|full]
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

__all__ = ["PULLED", "VARIANTS", "main", "pull_costs", "step_costs", "variants"]

VARIANTS = (
    "full",
    "no stopping",
    "fixed challenger",
    "no bonus",
    "lowest-index ties",
    "floor",
    "floor + stopping",
)


def _never_stop(alg: Any, state: Any, params: Any) -> tuple[Any, Any]:
    import jax.numpy as jnp

    del alg, state, params
    return jnp.bool_(False), jnp.int32(0)


def _next_arm(alg: Any, state: Any, leader: Any, params: Any) -> Any:
    del params
    return (leader + 1) % alg.num_arms(state)


def _no_bonus(state: Any, params: Any) -> Any:
    import jax.numpy as jnp

    del params
    return jnp.zeros_like(state.means)


def variants() -> dict[str, Any]:
    """The algorithms of `VARIANTS`, by name."""
    import jax.numpy as jnp

    import jaxbai
    from jaxbai.toptwo import TopTwo

    @dataclasses.dataclass(frozen=True)
    class RoundRobin(TopTwo):
        """No sampling rule: arm n mod K, its own leader."""

        def sampling_rule(self, state: Any, params: Any) -> tuple[Any, Any]:
            arm = (state.n % self.num_arms(state)).astype(jnp.int32)
            return arm, arm

    full = jaxbai.ttucb()
    fields = {f.name: getattr(full, f.name) for f in dataclasses.fields(full)}
    floor = dataclasses.replace(RoundRobin(**fields), stopping_rule=_never_stop)
    return {
        "full": full,
        "no stopping": dataclasses.replace(full, stopping_rule=_never_stop),
        "fixed challenger": dataclasses.replace(full, challenger=_next_arm),
        "no bonus": dataclasses.replace(full, bonus=_no_bonus),
        "lowest-index ties": dataclasses.replace(full, ties="lowest_index"),
        "floor": floor,
        "floor + stopping": dataclasses.replace(floor, stopping_rule=full.stopping_rule),
    }


def step_costs(num_lanes: int, steps: int, repeats: int) -> dict[str, float]:
    """Best ns per lane-step of each of `VARIANTS` (see the module docstring)."""
    import jax.numpy as jnp

    import jaxbai
    from jaxbai import engine
    from jaxbai.engine import lane_program

    means = jaxbai.PAPER_INSTANCES["mu1"]
    # δ small enough that no lane stops within the measured steps
    jobs = engine.grid_jobs(jaxbai.bernoulli(means), [float("inf")], 1e-6, num_lanes)
    steppers = {
        name: (alg, lane_program.lanes_step(alg, jnp.int32(2**30), lane_program.lanes_minor))
        for name, alg in variants().items()
    }
    return _best_ns(steppers, jobs, len(means), steps, repeats)


PULLED = ("dp_tt", "eb_tci", "adap_tt", "adap_tt_star")
"""The algorithms whose planned pull `pull_costs` times."""


def pull_costs(num_lanes: int, pulls: int, repeats: int) -> dict[str, float]:
    """Best ns per lane and planned pull (`jaxbai.toptwo.PerEpisode.planned_pull`: the leader,
    the challenger and the tracking rule, no reward) of each of `PULLED` on mu1 at ε = 0.1, in
    the engine's lane layout; what DP-TT's private costs weigh against AdaP-TT's step. EB-TCI
    is not episodic: its pulls are timed as `jaxbai.toptwo.EpisodicTopTwo.planned_pull` of DP-TT
    with EB-TCI's cost (C*_∞, the Bernoulli KL)."""
    import dataclasses

    import jax
    import jax.numpy as jnp

    import jaxbai
    from jaxbai import engine
    from jaxbai.engine import lane_program
    from jaxbai.toptwo import PerEpisode

    means = jaxbai.PAPER_INSTANCES["mu1"]
    jobs = engine.grid_jobs(jaxbai.bernoulli(means), [0.1], 1e-6, num_lanes)
    algorithms = {name: jaxbai.ALGORITHMS[name]() for name in PULLED if name != "eb_tci"}
    algorithms["eb_tci"] = dataclasses.replace(algorithms["dp_tt"], cost=jaxbai.eb_tci().cost)
    steppers = {}
    for name in PULLED:
        alg = PerEpisode(algorithms[name])
        pull = jax.vmap(lambda s, p, alg=alg: alg.planned_pull(s, p, jnp.int32(2**30)))

        def one(lanes: Any, pull: Any = pull) -> Any:
            state = pull(lanes.state, lanes.params)
            return lane_program.lanes_minor(lanes._replace(state=state))

        steppers[name] = (alg, one)
    return _best_ns(steppers, jobs, len(means), pulls, repeats)


def _best_ns(
    steppers: dict[str, tuple[Any, Any]], jobs: Any, num_arms: int, steps: int, repeats: int
) -> dict[str, float]:
    """Best ns per lane and step of each (algorithm, lanes → lanes step), ``steps`` steps per
    timed call of a `fori_loop` over a pool of one lane per job, compilation excluded, the
    programs timed in turn ``repeats`` times."""
    import jax

    from experiments.bench.kernels import lane_pool

    programs = {}
    with jax.default_device(jax.devices("cpu")[0]):
        for name, (alg, one) in steppers.items():
            lanes, _ = lane_pool(alg, jobs, num_arms)

            def run(pool: Any, one: Any = one) -> Any:
                return jax.lax.fori_loop(0, steps, lambda _, ln: one(ln), pool)

            compiled = jax.jit(run).lower(lanes).compile()
            programs[name] = (compiled, jax.block_until_ready(compiled(lanes)))
        best = dict.fromkeys(programs, float("inf"))
        for _ in range(repeats):
            for name, (compiled, start) in programs.items():
                begin = time.perf_counter()
                jax.block_until_ready(compiled(start))
                best[name] = min(best[name], time.perf_counter() - begin)
    return {name: wall / (len(jobs) * steps) * 1e9 for name, wall in best.items()}


def _three_times_scalar() -> float | None:
    """ns per sample and core at 3× the scalar numba loop's samples/s (None without numba)."""
    import jaxbai
    from experiments.bench.workloads import numba_rate

    rate = numba_rate(jaxbai.PAPER_INSTANCES["mu1"], 4096, 0.01)
    if rate is None:
        return None
    return rate["threads"] / (3 * rate["samples_per_s"]) * 1e9


def main(argv: list[str] | None = None) -> int:
    """Measure the variants; print a Markdown table, write JSON."""
    from experiments.bench.cli import parser_for, write_report
    from jaxbai import compilation

    out = "results/bench_ablation.json"
    parser = parser_for("ablation", out)
    parser.add_argument("--lanes", type=int, default=256, help="lanes in the pool")
    parser.add_argument("--steps", type=int, default=2048, help="steps per timed call")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per variant")
    args = parser.parse_args(argv)
    compilation.from_arguments(args)
    if args.device != "cpu":
        parser.error("the ablation measures the CPU lane program")
    quick = args.preset == "quick"
    steps, repeats = (16, 1) if quick else (args.steps, args.repeats)
    report: dict[str, Any] = {"lanes": args.lanes, "steps": steps, "repeats": repeats}
    report["ns_per_lane_step"] = step_costs(args.lanes, steps, repeats)
    report["ns_per_planned_pull"] = pull_costs(args.lanes, steps, repeats)
    if not quick:
        report["three_times_scalar_ns_per_sample"] = _three_times_scalar()
    rows = ["| variant | ns per lane-step |", "| --- | --- |"]
    rows += [f"| {k} | {v:.1f} |" for k, v in report["ns_per_lane_step"].items()]
    target = report.get("three_times_scalar_ns_per_sample")
    if target is not None:
        rows.append(f"| 3x scalar (ns per sample and core) | {target:.1f} |")
    rows += ["", "| algorithm (mu1, ε = 0.1) | ns per planned pull |", "| --- | --- |"]
    rows += [f"| {k} | {v:.1f} |" for k, v in report["ns_per_planned_pull"].items()]
    return write_report(report, args.out, "\n".join(rows))
