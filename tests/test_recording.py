"""Recorded trajectories (`jaxbai.record_trajectories`): a recorded run is the run `simulate`
reported, its points are what an eager loop of `init` and `step` passes through, a small buffer
keeps exactly every stride-th point of a large one, episode points land where the rounds grow,
and bad input is refused before anything compiles."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jaxbai
from jaxbai.engine import job_key, recording

TWO_ARMS = jaxbai.bernoulli([0.9, 0.5])


@pytest.mark.parametrize(
    ("factory", "means", "epsilon"),
    [
        (jaxbai.ttucb, [0.9, 0.5], None),
        (jaxbai.adap_tt, [0.9, 0.5], 1.0),  # per-episode draws (draws="auto")
        pytest.param(jaxbai.dp_tt, [0.9, 0.6, 0.5], 1.0, marks=pytest.mark.integration),
    ],
)
def test_a_recorded_run_is_the_simulated_run(factory, means, epsilon):
    """The final point of each recorded run is `simulate`'s outcome of that run: τ, counts,
    â, censoring; and its counts sum to n at every point. (DP-TT's simulate compiles for
    15 s: an integration test.)"""
    alg, inst = factory(), jaxbai.bernoulli(means)
    sim = jaxbai.simulate(alg, inst, epsilon, runs=4, max_samples=10**5)
    runs = [3, 1]
    rec = jaxbai.record_trajectories(
        alg, inst, epsilon, runs=runs, fields=("counts", "means"), points=16, max_samples=10**5
    )
    assert rec.n[:, -1].tolist() == sim.tau[runs].tolist() == rec.tau.tolist()
    assert rec.values["counts"][:, -1].tolist() == sim.counts[runs].tolist()
    assert rec.recommendation.tolist() == sim.recommendation[runs].tolist()
    assert rec.censored.tolist() == sim.censored[runs].tolist()
    assert rec.run.tolist() == runs
    for i in range(2):
        points = rec.trajectory(i)
        assert (points["counts"].sum(axis=1) == points["n"]).all()
        assert (np.diff(points["n"]) >= 0).all() and points["n"][-1] == rec.tau[i]


@pytest.fixture(scope="module")
def full() -> jaxbai.TrajectoryRecord:
    """Every step of three TTUCB runs at a small δ (a few hundred steps each)."""
    return jaxbai.record_trajectories(
        jaxbai.ttucb(), TWO_ARMS, delta=1e-4, runs=[0, 1, 2], points=4096
    )


def test_points_are_the_states_an_eager_loop_passes_through(full):
    """Point t of run 0 (every=1) is the state after step t + 1 of an eager loop of
    `init` and `step` with the engine's keys (`job_key`, then fold_in(stream, n)); each step
    pulls one arm once, but the last, which stops."""
    alg = jaxbai.ttucb()
    params = alg.params(delta=1e-4)
    key = job_key(jax.random.key(0, impl="threefry2x32"), 0, np.inf, 1e-4)
    init_key, stream = jax.random.split(key)
    state = alg.init(init_key, params, 2)
    step = jax.jit(alg.step)
    counts, n = [], []
    while not state.stopped:
        state = step(jax.random.fold_in(stream, state.n), state, TWO_ARMS, params)
        counts.append(np.asarray(state.counts))
        n.append(int(state.n))
    steps = int(full.ticks[0])
    assert steps == len(n) and (full.stride == 1).all()  # every run: every step recorded
    assert full.n[0, :steps].tolist() == n
    assert (full.values["counts"][0, :steps] == np.array(counts)).all()
    pulls = np.diff(full.values["counts"][0, :steps], axis=0).sum(axis=1)
    assert pulls[:-1].tolist() == [1] * (steps - 2) and pulls[-1] == 0


def test_the_frame_has_a_row_per_point(full):
    """`to_frame`: every run's points, its final state last, counts as counts_0, counts_1."""
    frame = full.to_frame()
    assert len(frame) == int((full.n[:, :-1] >= 0).sum()) + 3
    assert list(frame.columns) == [
        "run",
        "epsilon",
        "delta",
        "point",
        "final",
        "n",
        "counts_0",
        "counts_1",
    ]
    last = frame[frame["final"]]
    assert last["run"].tolist() == [0, 1, 2] and last["n"].tolist() == full.tau.tolist()
    assert (last[["counts_0", "counts_1"]].sum(axis=1) == last["n"]).all()


@pytest.mark.parametrize("every", [1, 3])
def test_a_small_buffer_keeps_every_stride_th_point(full, every):
    """With 4 points, each run keeps exactly the points of the full recording at ticks
    stride, 2·stride, …, the stride the least every·2^j that leaves at most 4; the final
    state is the same."""
    small = jaxbai.record_trajectories(
        jaxbai.ttucb(), TWO_ARMS, delta=1e-4, runs=[0, 1, 2], points=4, every=every
    )
    assert small.ticks.tolist() == full.ticks.tolist()
    for i, (ticks, stride) in enumerate(zip(small.ticks, small.stride, strict=True)):
        kept = ticks // stride
        assert kept <= 4 and stride % every == 0 and (stride == every or ticks // (stride // 2) > 4)
        chosen = np.arange(1, kept + 1) * stride - 1
        assert (small.n[i, :kept] == full.n[i, chosen]).all() and (small.n[i, kept:-1] == -1).all()
        assert (small.values["counts"][i, :kept] == full.values["counts"][i, chosen]).all()
        assert small.n[i, -1] == full.n[i, -1]
    assert small.nbytes == 3 * 5 * (4 + 2 * 4)


def test_episode_points_land_where_the_rounds_grow():
    """at="episodes" records the steps at which the rounds grew: those of a recording of
    every step, with their rounds 1, 2, 3, …"""
    alg, inst = jaxbai.adap_tt(), jaxbai.bernoulli([0.9, 0.6, 0.5])
    fields = {"rounds": lambda state, params: alg.rounds(state), "counts": "counts"}
    options = dict(epsilon=1.0, fields=fields, draws="per_sample", max_samples=10**5)
    episodes = jaxbai.record_trajectories(alg, inst, at="episodes", **options)
    steps = jaxbai.record_trajectories(alg, inst, points=1 << 14, **options)
    used = steps.n[0, :-1] >= 0
    rounds = steps.values["rounds"][0, :-1][used]
    grew = np.diff(np.concatenate([[0], rounds])) > 0
    kept = int(episodes.ticks[0])
    assert kept == grew.sum() and int(episodes.stride[0]) == 1
    assert episodes.n[0, :kept].tolist() == steps.n[0, :-1][used][grew].tolist()
    assert episodes.values["rounds"][0, :kept].tolist() == list(range(1, kept + 1))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"fields": ("counts", "mu_tilde")}, "no 'mu_tilde' \\(n, counts"),
        ({"fields": {"x": "estimate.nothing"}}, "estimate.phases"),
        ({"fields": {"pair": lambda s, p: (s.n, s.n)}}, "not one array"),
        ({"fields": {"n": "counts"}}, "other than n, run"),
        ({"fields": {"run": "counts"}}, "other than n, run"),
        ({"fields": {"counts": "counts", "counts_0": "n"}}, "clash"),
        ({"fields": {"f": lambda state: state.n}}, "fails on the state"),
        ({"runs": 16}, "a sequence, e.g. range\\(16\\)"),
        ({"points": 7}, "even"),
        ({"points": 0}, "positive"),
        ({"every": 0}, "positive"),
        ({"runs": [2, -1]}, "run indices"),
        ({"runs": 1.5}, "run indices"),
        ({"at": "rounds"}, "at must be"),
        ({"points": 2**40}, "points must be a positive integer below"),
    ],
)
def test_bad_input_is_refused_before_compiling(options, message, monkeypatch):
    """Each bad option is a ValueError that says what is wrong, raised before the recording
    program is built."""
    monkeypatch.setattr(recording, "_record", None)  # calling it would be a TypeError
    with pytest.raises(ValueError, match=message):
        jaxbai.record_trajectories(jaxbai.dp_tt(), TWO_ARMS, epsilon=1.0, **options)


def test_episodes_need_rounds(monkeypatch):
    """TTUCB counts no rounds: at="episodes" is refused."""
    monkeypatch.setattr(recording, "_record", None)
    with pytest.raises(ValueError, match="needs an algorithm with rounds"):
        jaxbai.record_trajectories(jaxbai.ttucb(), TWO_ARMS, at="episodes")


def test_buffers_larger_than_the_memory_are_refused(monkeypatch):
    """The buffers' size, R · (points + 1) · (4 + field bytes), is checked against the
    machine's memory before anything compiles."""
    monkeypatch.setattr(recording, "_record", None)
    monkeypatch.setattr(recording.checks, "memory_bytes", lambda: 24_000)
    with pytest.raises(ValueError, match="recording 2 runs of 1,024 points needs"):
        jaxbai.record_trajectories(jaxbai.ttucb(), TWO_ARMS, runs=[0, 1], fields=("counts",))
