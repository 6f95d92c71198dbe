"""Tests for jaxbai.trial: equivalence with ask/tell, crash safety, validation, publication, CLI."""

from __future__ import annotations

import json
import math
import os
import signal
import stat
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxbai import trial
from jaxbai.trial import Trial, _trial, secure_noise

MEANS = (0.9, 0.4, 0.2)


@pytest.fixture
def no_fsync(monkeypatch):
    """For tests of decisions rather than durability: skip the (slow) fsyncs."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


def uniform_stream(seed: int):
    """Deterministic doubles in (0, 1): the injected noise source of the equivalence tests."""
    rng = np.random.default_rng(seed)
    return lambda: int(rng.integers(1, 2**53)) / 2**53


def bernoulli_rewards(seed: int, means=MEANS):
    rng = np.random.default_rng(seed)
    return lambda arm: float(rng.random() < means[arm])


def reference_run(alg, params, num_arms, seed, observe, max_samples, uniform=None, epsilon=None):
    """The algorithm's ask/tell API driven directly, with the trial's documented key stream.

    With ``uniform``, global-DP releases are computed from `pending_release` counts and exact
    per-arm sums of the unreleased observations, by `secure_noise.release_mean`.
    """
    select, stopping, pending, update = _trial._compiled(alg)  # the same jitted ask/tell
    key_init, key = jax.random.split(jax.random.key(seed))
    state = alg.init(key_init, params, num_arms)
    window = [[] for _ in range(num_arms)]
    actions = []
    while len(actions) < max_samples:
        stop, recommendation = stopping(state, params)
        if bool(stop):
            return actions, int(recommendation), state
        arm = int(select(state, params))
        z = observe(arm)
        key, key_update = jax.random.split(key)
        release = None
        if uniform is not None:
            window[arm].append(z)
            due, _, counts = pending(state, jnp.int32(arm), jnp.float32(z), params)
            release = np.full(num_arms, np.nan)
            for a, count in enumerate(np.asarray(counts).tolist()):
                if bool(due) and count:
                    assert len(window[a]) == count
                    total = sum((Fraction(x) for x in window[a]), Fraction(0))
                    release[a] = secure_noise.release_mean(total, count, epsilon, uniform)
                    window[a] = []
            release = jnp.asarray(release, jnp.float32)
        state = update(key_update, state, jnp.int32(arm), jnp.float32(z), params, release)
        actions.append(arm)
    return actions, None, state


def drive(t: Trial, observe, max_samples):
    while t.status().samples < max_samples and not t.status().stopped:
        arm = t.next_arm()
        t.record(arm, observe(arm))


@pytest.mark.parametrize(
    ("algorithm", "epsilon", "noise", "max_samples"),
    [
        ("adap_tt_star", 1.0, "prng", 400),
        ("adap_tt", 0.5, "secure", 400),
        ("ttucb", None, "secure", 400),
        ("ctb_tt", 2.0, "secure", 300),
    ],
)
def test_trial_matches_ask_tell(tmp_path, no_fsync, algorithm, epsilon, noise, max_samples):
    seed = 11
    observations = []
    if algorithm == "ctb_tt":  # the participant privatises; both sides receive the same bits
        raw, stream = bernoulli_rewards(5), uniform_stream(9)

        def observe_trial(arm):
            observations.append(secure_noise.privatize_locally(raw(arm), epsilon, uniform=stream))
            return observations[-1]

    else:
        observe_trial = bernoulli_rewards(5)
    uniform = uniform_stream(21) if noise == "secure" else None
    t = Trial.create(
        tmp_path / "t.trial", algorithm, len(MEANS), epsilon, 0.05, seed,
        noise=noise, uniform=uniform,
    )  # fmt: skip
    drive(t, observe_trial, max_samples)
    published = t.publish()
    t.close()

    alg, params = _trial._build(t.config)
    if algorithm == "ctb_tt":
        replay = iter(observations)
        observe_ref = lambda arm: next(replay)  # noqa: E731
    else:
        observe_ref = bernoulli_rewards(5)
    secure_global = noise == "secure" and alg.privacy == "global"
    actions, recommendation, state = reference_run(
        alg, params, len(MEANS), seed, observe_ref, max_samples,
        uniform=uniform_stream(21) if secure_global else None, epsilon=epsilon,
    )  # fmt: skip
    assert published["actions"] == actions
    assert published["recommendation"] == recommendation
    with Trial.open(tmp_path / "t.trial") as reopened:
        for ours, theirs in zip(
            jax.tree_util.tree_leaves(reopened._snap.state),
            jax.tree_util.tree_leaves(state),
            strict=True,
        ):
            np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_dp_se_secure_release_matches_ask_tell(tmp_path, no_fsync):
    """DP-SE releases a whole epoch's means at once (K = 2, δ = 0.5: 888 samples/epoch)."""
    max_samples = 900
    with Trial.create(
        tmp_path / "t.trial", "dp_se", 2, 1.0, 0.5, 4, uniform=uniform_stream(8)
    ) as t:
        drive(t, bernoulli_rewards(2), max_samples)
        published = t.publish()
        epoch = int(t._snap.state.epoch)
    assert epoch == 2, "the run must cross an epoch boundary to test the release"
    alg, params = _trial._build(t.config)
    actions, _, _ = reference_run(
        alg, params, 2, 4, bernoulli_rewards(2), max_samples, uniform=uniform_stream(8),
        epsilon=1.0,
    )  # fmt: skip
    assert published["actions"] == actions


# ------------------------------------------------------------------------------ durability
CHILD = """
import sys
from jaxbai.trial import Trial
path, = sys.argv[1:]
t = Trial.open(path)
while True:
    n = t.status().samples
    arm = t.next_arm()
    t.record(arm, ((7 * n) % 11) / 10)
    print(n + 1, flush=True)
"""


def reward_for(n: int) -> float:
    return ((7 * n) % 11) / 10


@pytest.mark.parametrize(
    "kills", [30, pytest.param(300, marks=pytest.mark.slow)], ids=["30kills", "300kills"]
)
def test_killed_during_record_never_corrupts(tmp_path, kills):
    path = tmp_path / "t.trial"
    Trial.create(path, "adap_tt", 3, 1.0, 0.05, 1, noise="prng").close()
    rng = np.random.default_rng(kills)
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        # Children share compiled programs, so each kill costs little more than an import.
        "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "compiled"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
    }
    actions: list[int] = []
    for _ in range(kills):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, env=env, text=True
        )
        acknowledged = len(actions)
        for _ in range(int(rng.integers(1, 3))):
            line = child.stdout.readline()
            assert line, "child died unexpectedly"
            acknowledged = int(line)
        time.sleep(float(rng.uniform(0, 0.03)))
        child.send_signal(signal.SIGKILL)
        child.wait()
        for line in child.stdout:  # acks the child printed before dying
            acknowledged = int(line)
        child.stdout.close()
        with Trial.open(path) as t:
            published = t.publish()
            samples = t.status().samples
            assert int(t._snap.state.n) == samples == len(published["actions"])
        assert acknowledged <= samples <= acknowledged + 1
        assert published["actions"][: len(actions)] == actions
        actions = published["actions"]
    assert len(actions) >= kills
    assert not list(tmp_path.glob(".t.trial.*.tmp"))  # stale temporaries are cleaned on open
    # Resuming after every crash gives exactly the uninterrupted trial, byte for byte.
    replay = tmp_path / "replay.trial"
    with Trial.create(replay, "adap_tt", 3, 1.0, 0.05, 1, noise="prng") as t:
        for n in range(len(actions)):
            arm = t.next_arm()
            t.record(arm, reward_for(n))
    resumed = json.loads(path.read_bytes())
    fresh = json.loads(replay.read_bytes())
    resumed.pop("pending_arm"), fresh.pop("pending_arm")
    assert resumed == fresh


@pytest.mark.parametrize("stage", ["write", "fsync", "rename"])
def test_failed_write_leaves_file_and_trial_unchanged(tmp_path, monkeypatch, stage):
    path = tmp_path / "t.trial"
    t = Trial.create(path, "adap_tt", 3, 1.0, 0.05, 2)
    arm = t.next_arm()
    before = path.read_bytes()
    target = {"write": (os, "fdopen"), "fsync": (os, "fsync"), "rename": (os, "replace")}[stage]

    def crash(*args, **kwargs):
        raise OSError("simulated crash")

    with monkeypatch.context() as patch:
        patch.setattr(*target, crash)
        with pytest.raises(OSError, match="simulated"):
            t.record(arm, 1.0)
    assert path.read_bytes() == before
    assert not list(tmp_path.glob(".t.trial.*.tmp"))
    assert t.status().pending_arm == arm and t.status().samples == 0
    t.record(arm, 1.0)
    assert t.status().samples == 1
    t.close()


def test_reopen_continues_with_pending_request(tmp_path, no_fsync):
    path = tmp_path / "t.trial"
    with Trial.create(path, "adap_tt_star", 3, 1.0, 0.05, 3, threshold="theory") as t:
        for _ in range(5):
            arm = t.next_arm()
            t.record(arm, 0.5)
        issued = t.next_arm()
        with pytest.raises(RuntimeError, match="another process"):
            Trial.open(path)
    with Trial.open(path) as t:
        assert t.config.options == {"threshold": "theory"}
        assert t.status().pending_arm == issued
        assert t.next_arm() == issued
        t.record(issued, 0.25)
        assert t.status().samples == 6


def test_unknown_schema_version_is_refused(tmp_path):
    path = tmp_path / "t.trial"
    Trial.create(path, "ttucb", 3, None, 0.05, 0).close()
    document = json.loads(path.read_bytes())
    document["schema_version"] = trial.SCHEMA_VERSION + 1
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match="schema version"):
        Trial.open(path)


# ------------------------------------------------------------------------------ validation
def assert_rejected(path: Path, call, match: str) -> None:
    before, info = path.read_bytes(), path.stat()
    with pytest.raises(ValueError, match=match):
        call()
    after = path.stat()
    assert path.read_bytes() == before
    assert (after.st_ino, after.st_mtime_ns) == (info.st_ino, info.st_mtime_ns)


def test_invalid_records_are_rejected_without_state_change(tmp_path):
    path = tmp_path / "t.trial"
    with Trial.create(path, "adap_tt", 3, 1.0, 0.05, 0) as t:
        assert_rejected(path, lambda: t.record(0, 0.5), "no open request")
        arm = t.next_arm()
        other = (arm + 1) % 3
        assert_rejected(path, lambda: t.record(other, 0.5), "not the arm")
        assert_rejected(path, lambda: t.record(True, 0.5), "not the arm")
        assert_rejected(path, lambda: t.record(float(arm), 0.5), "not the arm")
        for bad in (math.nan, math.inf, -math.inf, "0.5", None):
            assert_rejected(path, lambda bad=bad: t.record(arm, bad), "real number|finite")
        for outside in (1.5, -0.1):
            assert_rejected(path, lambda outside=outside: t.record(arm, outside), r"\[0, 1\]")
        t.record(arm, 0.5)
        assert_rejected(path, lambda: t.record(arm, 0.5), "no open request")
    with Trial.create(tmp_path / "ctb.trial", "ctb_tt", 3, 1.0, 0.05, 0) as t:
        arm = t.next_arm()
        assert_rejected(t.path, lambda: t.record(arm, 0.5), "randomised-response bits")
        t.record(arm, 1.0)


def test_invalid_configurations_are_rejected(tmp_path):
    path = tmp_path / "t.trial"
    for kwargs, match in [
        ({"algorithm": "nope", "epsilon": 1.0}, "algorithm must be"),
        ({"algorithm": "ttucb", "epsilon": 1.0}, "not private"),
        ({"algorithm": "adap_tt", "epsilon": math.inf}, "finite epsilon"),
        ({"algorithm": "adap_tt", "epsilon": None}, "finite epsilon"),
        ({"algorithm": "ctb_tt", "epsilon": 1.0, "clip": True}, "participants clip"),
        ({"algorithm": "adap_tt", "epsilon": 1.0, "noise": "fast"}, "noise must be"),
    ]:
        with pytest.raises(ValueError, match=match):
            Trial.create(path, num_arms=3, delta=0.05, **kwargs)
    assert not path.exists()
    Trial.create(path, "ttucb", 3, None, 0.05).close()
    with pytest.raises(FileExistsError):
        Trial.create(path, "ttucb", 3, None, 0.05)


def test_clip_opt_in_clips_and_is_published(tmp_path, no_fsync):
    clipped, exact = tmp_path / "clipped.trial", tmp_path / "exact.trial"
    with Trial.create(clipped, "adap_tt", 3, 1.0, 0.05, 6, clip=True, noise="prng") as t:
        for reward in (7.0, -3.0, 1.0):
            t.record(t.next_arm(), reward)
        assert t.publish()["clip"] is True
    with Trial.create(exact, "adap_tt", 3, 1.0, 0.05, 6, noise="prng") as t:
        for reward in (1.0, 0.0, 1.0):
            t.record(t.next_arm(), reward)
        assert t.publish()["clip"] is False
    strip = lambda p: {k: v for k, v in json.loads(p.read_bytes()).items() if k != "config"}  # noqa: E731
    assert strip(clipped) == strip(exact)


def test_stopped_trial_issues_no_more_arms(tmp_path, no_fsync):
    with Trial.create(tmp_path / "t.trial", "ttucb", 2, None, 0.1, 0) as t:
        drive(t, lambda arm: float(arm == 0), 500)
        status = t.status()
        assert status.stopped and status.recommendation == 0
        with pytest.raises(RuntimeError, match="stopped"):
            t.next_arm()
        published = t.publish()
        assert published["stopping_time"] == status.samples == len(published["actions"])


# ------------------------------------------------------------------------------ publication
def floats_in(value):
    if isinstance(value, float):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from floats_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from floats_in(item)


def test_publication_holds_only_protected_outputs(tmp_path, no_fsync):
    path = tmp_path / "t.trial"
    marker = 0.123456789  # a distinctive reward that must never surface
    with Trial.create(path, "adap_tt_star", 3, 2.0, 0.05, 1, threshold="heuristic") as t:
        running = t.publish()
        assert running["stopped"] is False
        assert running["stopping_time"] is None and running["recommendation"] is None
        drive(t, lambda arm: marker if arm else 1.0, 400)
        published = t.publish()
    assert set(published) == trial.PUBLISHED_FIELDS
    assert published["stopped"] and published["stopping_time"] == len(published["actions"])
    assert published["epsilon"] == 2.0 and published["delta"] == 0.05
    assert published["algorithm"] == "adap_tt_star" and published["privacy"] == "global"
    assert published["gamma"] is None
    assert all(isinstance(a, int) and 0 <= a < 3 for a in published["actions"])
    # Every float in the record is configuration (ε, δ); none derives from the rewards.
    assert set(floats_in(published)) <= {2.0, 0.05}
    assert "0.1234" not in json.dumps(published, allow_nan=False)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(Path(f"{path}.lock").stat().st_mode) == 0o600
    assert json.loads(path.read_bytes())["sensitive"] is True


def test_local_trial_receives_only_privatised_values(tmp_path):
    with Trial.create(tmp_path / "g.trial", "gauss_ldp_tt", 3, 1.0, 0.05, 0, gamma=0.01) as t:
        assert t.gamma == 0.01 and t.publish()["gamma"] == 0.01
        arm = t.next_arm()
        z = secure_noise.privatize_locally(0.8, 1.0, gamma=t.gamma)
        t.record(arm, z)  # any finite real: the Gaussian output is unbounded
        assert t.status().noise == "participant-side gaussian"
        assert json.loads(t.path.read_bytes())["sensitive"] is False


# ------------------------------------------------------------------------------ CLI
def test_command_line_round_trip(tmp_path, no_fsync, capsys):
    path = str(tmp_path / "cli.trial")
    create = ["create", path, "--algorithm", "adap_tt_star", "--arms", "3", "--epsilon", "1",
              "--delta", "0.05", "--seed", "0", "--option", "threshold=heuristic"]  # fmt: skip
    assert trial.main(create) == 0
    assert json.loads(capsys.readouterr().out)["samples"] == 0
    for _ in range(4):
        assert trial.main(["next", path]) == 0
        arm = int(capsys.readouterr().out)
        assert trial.main(["record", path, str(arm), "1"]) == 0
        capsys.readouterr()
    assert trial.main(["record", path, "0", "1"]) == 1
    assert "no open request" in capsys.readouterr().err
    assert trial.main(["status", path]) == 0
    assert json.loads(capsys.readouterr().out)["samples"] == 4
    assert trial.main(["publish", path]) == 0
    published = json.loads(capsys.readouterr().out)
    assert set(published) == trial.PUBLISHED_FIELDS
    assert len(published["actions"]) == 4 and published["actions"][:3] == [0, 1, 2]
    assert trial.main(["privatize", "0.7", "--epsilon", "1"]) == 0
    assert float(capsys.readouterr().out) in (0.0, 1.0)
    assert trial.main(["privatize", "1.7", "--epsilon", "1"]) == 1
    assert "outside [0, 1]" in capsys.readouterr().err
