"""One DP-TT run over time: its noisy means μ̃_a and counts N_a against n, recorded with
`jaxbai.record_trajectories` (docs/engine.md, recorded trajectories).

Simulates ``runs`` runs of DP-TT on a paper instance at one ε (δ = 0.01, a sample budget),
picks its median run and its longest (largest τ, the lowest index on a tie; a censored run
counts its budget), replays both recording N_a, μ̃_a and Ñ_a, and draws them side by side:
μ̃_a (top) and N_a (bottom) against n, log x. The choice is by τ alone, stated in the title.

Usage:
    python -m experiments.studies dp-tt-trajectory [--out DIR] [--seed 0] [--instance mu1]
        [--epsilon 0.1] [--runs 16] [--max-samples 200000]

Draws ``DIR/dp_tt_trajectory.png`` and prints the summary of `record` as JSON (every run's τ,
the chosen runs, their final counts and strides, and each chosen run's best-arm releases: the
first recorded point with each new Ñ_0, as (n, Ñ_0, μ̃_0, N_0)).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["DELTA", "POINTS", "best_arm_releases", "chosen_runs", "figure", "record"]

DELTA = 0.01
POINTS = 512
"""Recorded points per run (each ``(4 + 3 · 4 K)`` bytes for n, N_a, μ̃_a and Ñ_a)."""


def chosen_runs(tau: np.ndarray) -> tuple[int, int]:
    """(the median run, the longest run) of stopping times ``tau`` ``(runs,)``: the run at the
    middle of a stable sort by τ, and the first run of largest τ.

    Examples:
        >>> chosen_runs(np.array([5, 9, 1, 9, 3]))
        (0, 1)
    """
    order = np.argsort(tau, kind="stable")
    return int(order[len(order) // 2]), int(np.argmax(tau))


def best_arm_releases(points: dict[str, np.ndarray]) -> list[tuple[int, int, float, int]]:
    """(n, Ñ_0, μ̃_0, N_0) at the first recorded point of each new Ñ_0 of one run's points
    (`jaxbai.TrajectoryRecord.trajectory`): arm 0's releases, as far as the points resolve
    them (a decimated recording sees a release at the next point it kept).

    Examples:
        >>> pts = {"n": np.array([2, 3, 4]), "local_counts": np.array([[1, 1], [1, 1], [2, 1]]),
        ...        "means": np.array([[0.5, 0.1], [0.5, 0.2], [0.75, 0.2]]),
        ...        "counts": np.array([[1, 1], [2, 1], [2, 2]])}
        >>> best_arm_releases(pts)
        [(2, 1, 0.5, 1), (4, 2, 0.75, 2)]
    """
    local = points["local_counts"][:, 0]
    new = np.concatenate([[True], np.diff(local) != 0])
    return [
        (int(n), int(k), round(float(mu), 4), int(c))
        for n, k, mu, c in zip(
            points["n"][new],
            local[new],
            points["means"][new, 0],
            points["counts"][new, 0],
            strict=True,
        )
    ]


def record(
    instance: str, epsilon: float, runs: int, seed: int, max_samples: int
) -> tuple[Any, dict[str, Any]]:
    """Simulate the runs, pick `chosen_runs`, replay them recording N_a, μ̃_a and Ñ_a; returns the
    `jaxbai.TrajectoryRecord` and a summary (instance, ε, the runs' τ, the chosen ones, their
    best arm's releases)."""
    import jaxbai

    alg = jaxbai.dp_tt()
    inst = jaxbai.bernoulli(jaxbai.PAPER_INSTANCES[instance])
    sim = jaxbai.simulate(alg, inst, epsilon, DELTA, runs, seed, max_samples)
    chosen = chosen_runs(sim.tau)
    rec = jaxbai.record_trajectories(
        alg,
        inst,
        epsilon,
        DELTA,
        runs=chosen,
        seed=seed,
        fields={"counts": "counts", "means": "means", "local_counts": "local_counts"},
        points=POINTS,
        max_samples=max_samples,
    )
    summary = {
        "instance": instance,
        "means": list(jaxbai.PAPER_INSTANCES[instance]),
        "epsilon": epsilon,
        "delta": DELTA,
        "seed": seed,
        "max_samples": max_samples,
        "tau": sim.tau.tolist(),
        "chosen": list(chosen),
        "chosen_tau": rec.tau.tolist(),
        "chosen_censored": rec.censored.tolist(),
        "chosen_counts": rec.values["counts"][:, -1].tolist(),
        "stride": rec.stride.tolist(),
        "best_arm_releases": [best_arm_releases(rec.trajectory(i)) for i in range(len(chosen))],
        "nbytes": rec.nbytes,
    }
    return rec, summary


def figure(rec: Any, summary: dict[str, Any], path: str) -> None:
    """μ̃_a (top) and N_a (bottom) against n of the two recorded runs (columns), one colour per
    arm, the true means dashed; the μ̃ axis spans the final μ̃ and the true means (the first
    releases, at ε small, lie far outside)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    means = summary["means"]
    fig, axes = plt.subplots(2, 2, figsize=(9, 5.6), sharex="col")
    for column, label in enumerate(("median run", "longest run")):
        points = rec.trajectory(column)
        n = points["n"]
        end = "cut" if rec.censored[column] else "stopped"
        top, bottom = axes[0, column], axes[1, column]
        for arm, mu in enumerate(means):
            line = top.plot(n, points["means"][:, arm], lw=1)
            top.axhline(mu, color=line[0].get_color(), ls="--", lw=0.7)
            bottom.plot(n, points["counts"][:, arm], lw=1, label=f"arm {arm} (μ = {mu})")
        final = [*points["means"][-1], *means]
        top.set(
            xscale="log",
            ylim=(min(-0.2, min(final) - 0.2), max(1.2, max(final) + 0.2)),
            ylabel="μ̃_a",
            title=f"{label}: run {rec.run[column]}, {end} at n = {rec.tau[column]}",
        )
        bottom.set(xscale="log", yscale="log", xlabel="n (samples)", ylabel="N_a")
        for ax in (top, bottom):
            ax.grid(alpha=0.3, which="both")
    axes[1, 0].legend(fontsize=7, loc="upper left")
    fig.suptitle(
        f"DP-TT on {summary['instance']}, ε = {summary['epsilon']}, δ = {summary['delta']}: "
        f"median and longest of {len(summary['tau'])} runs (seed {summary['seed']})",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=72)
    plt.close(fig)
