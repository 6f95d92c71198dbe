"""Cohorts with delayed outcomes (jaxbai.trial, Appendix H): equivalence, semantics, crashes, CLI.

Rewards are a fixed function of (participant, arm), so any order of recording gives every
participant the same outcome, and the rehearsal noise (``noise="prng"``) is seeded by the key
stream: recording a cohort in any order must give exactly the trial recorded one by one.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from scipy import stats

from jaxbai import trial
from jaxbai.trial import Trial, _release

MEANS = (0.9, 0.4, 0.2)


def outcome(participant: int, arm: int, binary: bool = True, means=MEANS) -> float:
    """A fixed pseudo-random outcome of ``participant`` on ``arm`` (mean ≈ means[arm])."""
    u = ((participant * 2654435761 + arm * 40503 + 12345) % 1_000_003) / 1_000_003
    if binary:
        return float(u < means[arm])
    return min(max(means[arm] + (u - 0.5) / 2, 0.0), 1.0)


def stored(path: Path) -> tuple[tuple, list]:
    """The store's snapshot row and applied assignments, read with sqlite3 directly."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        snapshot = db.execute("SELECT samples, data, windows FROM snapshot").fetchone()
        applied = db.execute(
            "SELECT participant, arm, outcome FROM assignments WHERE participant < ? "
            "ORDER BY participant",
            (snapshot[0],),
        ).fetchall()
    return snapshot, applied


def one_by_one(t: Trial, cap: int, binary: bool) -> None:
    while not t.status().stopped and t.status().samples < cap:
        arm = t.next_arm()
        t.record(arm, outcome(t.status().samples, arm, binary))


def in_cohorts(
    t: Trial, cap: int, binary: bool, order: random.Random | None
) -> tuple[list[int], Trial]:
    """Records cohorts (shuffled by ``order``, else in plan order).

    Halfway through every other shuffled cohort the trial is closed and reopened, so held
    outcomes must survive in the store.

    Returns:
      The cohort sizes and the (possibly reopened) trial.
    """
    sizes = []
    while not t.status().stopped and t.status().samples < cap:
        batch = t.next_batch(max_size=cap - t.status().samples)
        sizes.append(len(batch))
        if order is not None:
            order.shuffle(batch)
        for i, (p, arm) in enumerate(batch):
            if order is not None and len(sizes) % 2 and i == len(batch) // 2:
                t.close()
                t = Trial.open(t.path)
            t.record(arm, outcome(p, arm, binary), participant=p)
    return sizes, t


@pytest.mark.parametrize(
    ("algorithm", "outcomes"),
    [
        ("adap_tt", "unit"),
        ("adap_tt_star", "binary"),
        ("adap_tt_global", "binary"),
        ("adap_tt_star_global", "unit"),
    ],
)
def test_cohorts_in_any_order_equal_one_by_one(
    tmp_path, no_fsync, monkeypatch, algorithm, outcomes
):
    cap, binary = 700, outcomes == "binary"
    releases: list[list] = []
    noisy_mean = _release.discrete.noisy_mean

    def logged(total, count, resolution, noise):
        value = noisy_mean(total, count, resolution, noise)
        releases[-1].append((total, count, resolution, value))
        return value

    monkeypatch.setattr(_release.discrete, "noisy_mean", logged)
    results = []
    for name in ("single", "ordered", "shuffled"):
        releases.append([])
        path = tmp_path / f"{name}.trial"
        t = Trial.create(path, algorithm, 3, 2.0, 0.05, 3, noise="prng", outcomes=outcomes)
        if name == "single":
            one_by_one(t, cap, binary)
        else:
            sizes, t = in_cohorts(t, cap, binary, random.Random(4) if name == "shuffled" else None)
            assert max(sizes) >= 8, "cohorts must be non-trivial for the test to have power"
        status = t.status()
        assert status.open_assignments == () and status.held == 0
        results.append((t.publish(), jax.tree_util.tree_leaves(t._snap.state), stored(path)))
        t.close()
    (published, state, rows), *others = results
    assert published["stopped"], "the trials must reach the stopping rule"
    assert len(releases[0]) >= 5 and all(log == releases[0] for log in releases)
    for other_published, other_state, other_rows in others:
        assert other_published == published
        assert other_rows == rows
        for ours, theirs in zip(state, other_state, strict=True):
            np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


# ------------------------------------------------------------------------------ semantics
def test_open_cohort_semantics_and_validation(tmp_path):
    path = tmp_path / "t.trial"
    t = Trial.create(path, "adap_tt_global", 3, 1.0, 0.05, 0, noise="prng", outcomes="binary")
    with pytest.raises(ValueError, match="max_size"):
        t.next_batch(max_size=0)
    first = t.next_batch()
    assert first == [(0, 0)]  # arm 0's first pull closes its phase 0 (docs/semantics.md §18)
    assert t.next_batch() == first and t.next_arm() == 0  # still open: never new ones
    t.record(0, 1.0, participant=0)
    for _ in range(2):
        t.record(t.next_arm(), 0.0)
    assert sorted(arm for _, arm in t.next_batch()) == [0, 1, 2]  # every count doubles: 1 → 2
    for p, arm in t.next_batch():
        t.record(arm, 1.0, participant=p)
    cohort = t.next_batch(max_size=4)  # of the ≥ 6 pulls until every count doubles again
    assert [p for p, _ in cohort] == [6, 7, 8, 9]
    with pytest.raises(RuntimeError, match="cohort are open"):
        t.next_arm()
    (p0, a0), (p1, a1), (p2, a2), (p3, a3) = cohort
    before = stored(path)
    for kwargs, match in [
        ({}, "say whose outcome"),
        ({"participant": 5}, "already recorded"),
        ({"participant": 10}, "no open assignment"),
        ({"participant": -1}, "no open assignment"),
        ({"participant": True}, "integer id"),
        ({"participant": 3.0}, "integer id"),
    ]:
        with pytest.raises(ValueError, match=match):
            t.record(a0, 1.0, **kwargs)
    with pytest.raises(ValueError, match="not the arm"):
        t.record((a2 + 1) % 3, 1.0, participant=p2)
    with pytest.raises(ValueError, match="binary outcomes"):
        t.record(a2, 0.5, participant=p2)
    assert stored(path) == before
    t.record(a2, 1.0, participant=p2)  # early: held
    with pytest.raises(ValueError, match="already recorded"):
        t.record(a2, 1.0, participant=p2)
    status = t.status()
    assert status.samples == 6 and status.held == 1 and status.pending_arm is None
    assert status.open_assignments == ((p0, a0), (p1, a1), (p3, a3))
    assert t.next_batch() == [(p0, a0), (p1, a1), (p3, a3)]
    t.close()
    with Trial.open(path) as t:  # held outcomes are durable
        assert t.status().open_assignments == ((p0, a0), (p1, a1), (p3, a3))
        t.record(a1, 0.0, participant=p1)
        t.record(a0, 1.0, participant=p0)  # applies p0, p1 and the held p2
        assert t.status().samples == 9 and t.status().held == 0
        assert t.status().pending_arm == a3  # the only open one, but issued before opening:
        with pytest.raises(ValueError, match=f"participant={p3}"):  # whose outcome is it?
            t.record(a3, 0.0)
        t.record(a3, 0.0, participant=p3)
        assert t.status().samples == 10 and t.publish()["actions"][6:] == [a0, a1, a2, a3]
    with Trial.create(tmp_path / "s.trial", "ttucb", 3, None, 0.05, 0) as t:
        with pytest.raises(ValueError, match="fully sequential"):
            t.next_batch()


def test_stopped_trial_issues_no_cohort(tmp_path, no_fsync):
    with Trial.create(tmp_path / "t.trial", "ttucb_dpa", 2, None, 0.1, 0) as t:
        while not t.status().stopped:
            for p, arm in t.next_batch():
                t.record(arm, float(arm == 0), participant=p)
        with pytest.raises(RuntimeError, match="stopped"):
            t.next_batch()
        assert t.status().recommendation == 0


# ------------------------------------------------------------------------------ crashes
CHILD = f"""
import os, random, sys, time
from jaxbai.mechanisms import discrete
from jaxbai.trial import Trial
MEANS = {MEANS!r}
{inspect.getsource(outcome)}
path, stall = sys.argv[1], sys.argv[2] == "stall"
if stall:  # announce the first release, then hang inside it until killed
    inner = discrete.noisy_mean
    def hanging(*args):
        inner(*args)
        print("release", flush=True)
        time.sleep(600)
    discrete.noisy_mean = hanging
t = Trial.open(path)
order = random.Random(os.getpid())
while True:
    batch = t.next_batch()
    order.shuffle(batch)
    for p, arm in batch:
        t.record(arm, outcome(p, arm), participant=p)
        print(p, flush=True)
"""


def child_env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        # Children share compiled programs, so each kill costs little more than an import.
        "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "compiled"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
    }


@pytest.mark.integration
def test_killed_during_cohort_records_and_releases_continues_exactly(tmp_path):
    """SIGKILL inside a release (even rounds) or at a random instant of cohort records (odd
    rounds): every acknowledged outcome survives (applied or held), only the record being
    written can be added, none in a release; finishing the trial gives exactly the
    uninterrupted one."""
    path = tmp_path / "t.trial"
    config = ("adap_tt_global", 3, 0.1, 0.01, 5)  # stops after thousands of samples
    Trial.create(path, *config, noise="prng", outcomes="binary").close()
    rng = np.random.default_rng(0)
    for round_ in range(6):
        stall = round_ % 2 == 0
        with Trial.open(path) as t:
            before = set(range(t.status().samples)) | set(t._held)
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), "stall" if stall else "anywhere"],
            stdout=subprocess.PIPE, env=child_env(tmp_path), text=True,
        )  # fmt: skip
        acknowledged, target, released = [], int(rng.integers(3, 40)), False
        for line in child.stdout:
            if line.strip() == "release":
                released = True
                break
            acknowledged.append(int(line))
            if not stall and len(acknowledged) >= target:
                break
        assert released or (not stall and acknowledged), "child died unexpectedly"
        child.send_signal(signal.SIGKILL)
        child.wait()
        acknowledged += [int(line) for line in child.stdout if line.strip() != "release"]
        child.stdout.close()
        with Trial.open(path) as t:
            added = (set(range(t.status().samples)) | set(t._held)) - before
        assert set(acknowledged) <= added
        assert len(added) <= len(acknowledged) + (not stall)
    with Trial.open(path) as t:  # finish the open cohort in order
        for p, arm in t.next_batch():
            t.record(arm, outcome(p, arm), participant=p)
        samples = t.status().samples
    replay = tmp_path / "replay.trial"
    with Trial.create(replay, *config, noise="prng", outcomes="binary") as t:
        while t.status().samples < samples:
            arm = t.next_arm()
            t.record(arm, outcome(t.status().samples, arm))
    assert stored(path) == stored(replay)


# ------------------------------------------------------------------------------ δ-correctness
@pytest.mark.statistical
@pytest.mark.parametrize("outcomes", ["unit", "binary"])
def test_rehearsal_trials_are_delta_correct(tmp_path, no_fsync, outcomes):
    """30 rehearsal trials of AdaP-TT in cohorts, K = 2, means (0.9, 0.1), ε = 1, δ = 0.1.

    Under error rate δ the number of wrong recommendations is Binomial(30, 0.1), above 10 with
    probability 5·10⁻⁴: more than 10 errors refutes δ-correctness at that level.
    """
    runs, delta, means = 30, 0.1, (0.9, 0.1)
    errors = 0
    for seed in range(runs):
        path = tmp_path / f"{seed}.trial"
        with Trial.create(
            path, "adap_tt", 2, 1.0, delta, seed, noise="prng", outcomes=outcomes
        ) as t:
            while not t.status().stopped:
                for p, arm in t.next_batch():
                    t.record(
                        arm,
                        outcome(p + 1000 * seed, arm, outcomes == "binary", means),
                        participant=p,
                    )
            errors += t.status().recommendation != 0
    assert stats.binom.sf(10, runs, delta) < 1e-3
    assert errors <= 10


# ------------------------------------------------------------------------------ CLI
def test_command_line_cohort(tmp_path, no_fsync, capsys):
    path = str(tmp_path / "cli.trial")
    create = ["create", path, "--algorithm", "adap_tt_star_global", "--arms", "3",
              "--epsilon", "2", "--delta", "0.05", "--seed", "1", "--noise", "prng",
              "--outcomes", "binary"]  # fmt: skip
    assert trial.main(create) == 0
    assert json.loads(capsys.readouterr().out)["outcomes"] == "binary"
    order = random.Random(0)
    while True:
        assert trial.main(["status", path]) == 0
        status = json.loads(capsys.readouterr().out)
        if status["samples"] >= 40:
            break
        assert trial.main(["next-batch", path]) == 0
        batch = [tuple(map(int, line.split())) for line in capsys.readouterr().out.splitlines()]
        order.shuffle(batch)
        for p, arm in batch:
            reward = str(int(outcome(p, arm)))
            assert trial.main(["record", path, str(arm), reward, "--participant", str(p)]) == 0
            capsys.readouterr()
    assert trial.main(["record", path, "0", "1", "--participant", "0"]) == 2
    assert "already recorded" in capsys.readouterr().err
    assert trial.main(["publish", path]) == 0
    published = json.loads(capsys.readouterr().out)
    with Trial.create(tmp_path / "ref.trial", "adap_tt_star_global", 3, 2.0, 0.05, 1,
                      noise="prng", outcomes="binary") as t:  # fmt: skip
        one_by_one(t, status["samples"], binary=True)
        assert published == t.publish()
    assert published["resolution"] == 256 and published["release_epsilon"] == 2.0
