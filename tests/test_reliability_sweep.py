"""Hostile input to sweeps and the engine: every user error is one line naming the input.

The first tests pin one finding each (duplicate grid values, unsafe labels, damaged
checkpoints, unwritable outputs, a grid too big for memory, floats for integers, a paper
instance's name with other means). The property-based tests then try 460 generated inputs,
derandomized so that every run tries the same ones: 150 experiment files built from the
schema's keys with valid and invalid values, 60 valid ones, 100 arbitrary TOML texts and 150
sweep command lines. Each is only parsed and validated (nothing compiles): it must give the
configuration of the values it sets, or the project's own error with a one-line message that
names a key or flag it was given (a `ConfigError`; a `ValueError` of the distributed options;
`SystemExit(2)` from argparse), never another exception.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import io
import json
import math
import os
import re
import sys

import pytest
from _algorithms import ALL
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments import config, sweep
from experiments.config.errors import ConfigError, format_key
from experiments.sweep import cli, distributed
from jaxbai import PAPER_INSTANCES, engine

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def _grid(instances: str = '["mu1"]', algorithms: str = '["ttucb"]', extra: str = "") -> str:
    return f"instances = {instances}\nalgorithms = {algorithms}\n{extra}"


def _refused(text: str) -> str:
    """The one-line message with which ``text`` is refused."""
    with pytest.raises(ConfigError) as err:
        config.loads(text, source="grid.toml")
    message = str(err.value)
    assert "\n" not in message, message
    return message


def _cli_error(capsys, argv: list[str]) -> str:
    """The one-line error of ``cli.main(argv)``, which must exit with status 2."""
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == cli.EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err, err
    return err


# ----------------------------------------------------------------------------- grid values
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (_grid(algorithms='["adap_tt"]', extra="global_epsilons = [1.0, 1.0]\nruns = 3\n"),
         "grid.toml:3: global_epsilons: 1.0 appears twice"),
        (_grid(extra="epsilons = [0.5, 2, 2.0]\n"), "epsilons: 2.0 appears twice"),
        (_grid(extra="local_epsilons = [1, 1]\n"), "local_epsilons: 1 appears twice"),
        (_grid(extra="deltas = [0.01, 0.1, 0.01]\n"), "deltas: 0.01 appears twice"),
        (_grid('["mu1", "mu2", "mu1"]'), "instances[2].name: 'mu1' appears twice"),
        (_grid('[{name = "a", means = [0.5, 0.2]}, {name = "a", means = [0.6, 0.1]}]'),
         "instances[1].name: 'a' appears twice"),
        (_grid(algorithms='["ttucb", {name = "ttucb", algorithm = "ttucb"}]'),
         "algorithms[1].name: 'ttucb' appears twice"),
        (_grid(algorithms='[{name = "a", algorithm = "adap_tt"}, {name = "A", algorithm = '
                          '"dp_se"}]'), "algorithms[1].name: 'A' differs from 'a' only in case"),
    ],
)  # fmt: skip
def test_duplicate_values_and_names_are_refused(text, expected):
    """A value or name given twice would run (or overwrite) the same cells twice and count
    them as more runs: refused with the duplicate named, never merged silently."""
    assert expected in _refused(text)


def test_duplicate_epsilons_on_the_command_line_name_the_flag():
    args = cli.build_parser().parse_args(["--algorithms", "adap_tt", "--epsilons", "1", "1"])
    with pytest.raises(ConfigError, match=r"^--epsilons: 1.0 appears twice"):
        cli.config_from_args(args)


@pytest.mark.parametrize(
    "label", ["../../evil", "a/b", "a\\b", ".hidden", "..", "", " ", "a b", "x" * 101, "é"]
)
def test_labels_and_instance_names_must_be_file_names(label):
    """A label names checkpoint files (``checkpoints/<label>.npz``): a path separator, a
    leading dot or any character outside [A-Za-z0-9_.+-] could write outside --out."""
    name = json.dumps(label)
    algorithm = _refused(_grid(algorithms=f'[{{name = {name}, algorithm = "ttucb"}}]'))
    assert "algorithms[0].name: must" in algorithm
    instance = _refused(_grid(f"[{{name = {name}, means = [0.5, 0.2]}}]"))
    assert "instances[0].name: must" in instance
    if label.strip():
        assert "must be a file name" in algorithm and repr(label) in algorithm


def test_a_label_outside_out_is_refused_before_anything_runs(tmp_path, capsys):
    path = tmp_path / "grid.toml"
    path.write_text(_grid(algorithms='[{name = "../../evil", algorithm = "ttucb"}]'))
    out = tmp_path / "a" / "b" / "out"
    err = _cli_error(capsys, ["--config", str(path), "--out", str(out), "--quiet"])
    assert f"{path}:2: algorithms[0].name: must be a file name" in err
    assert not list(tmp_path.rglob("*.npz")) and not out.exists()


def test_safe_labels_are_accepted():
    cfg = config.loads(_grid(algorithms='[{name = "ttucb-b0.3+x_2", algorithm = "ttucb"}]'))
    assert cfg.algorithm_labels == ("ttucb-b0.3+x_2",)


@pytest.mark.parametrize(
    ("extra", "key"),
    [("runs = 5.0\n", "runs"), ("runs = true\n", "runs"), ("max_samples = 1e6\n", "max_samples"),
     ("seed = 1.0\n", "seed"), ("[plot]\ndpi = 100.0\n", "plot.dpi")],
)  # fmt: skip
def test_integers_refuse_floats_and_bools(extra, key):
    message = _refused(_grid(extra=extra))
    assert f"{key}: must be an integer in [" in message


def test_a_paper_instance_name_takes_only_the_papers_means():
    """``{name = "mu1", means = …}`` with other means would be reported as mu1: refused; the
    paper's own means (a sweep.json's resolved mu1) are accepted."""
    message = _refused(_grid('[{name = "mu1", means = [0.6, 0.5]}]'))
    assert "instances[0].name: 'mu1' is the paper's instance" in message
    assert "[0.95, 0.9, 0.9, 0.9, 0.5]" in message
    gaussian = '[{name = "mu2", family = "gaussian", means = [0.5, 0.4], sigma = 1}]'
    assert "instances[0].name: 'mu2' is the paper's" in _refused(_grid(gaussian))
    same = config.loads(_grid('[{name = "mu1", means = [0.95, 0.9, 0.9, 0.9, 0.5]}]'))
    assert same.instances == config.loads(_grid()).instances


# ----------------------------------------------------------------------------- grid size
def test_a_grid_too_big_for_memory_is_refused_with_its_size():
    message = _refused(_grid(extra="runs = 2_000_000_000\n"))
    assert message.startswith("grid.toml:3: runs: the grid has 2,000,000,000 runs")
    assert "GiB" in message and "of memory" in message


def test_the_size_bound_is_runs_times_bytes_per_run(monkeypatch):
    """Two instances × (7 ε of AdaP-TT + ε = ∞ of TTUCB) × 2 δ × 10 runs = 320 runs."""
    text = _grid('["mu1", "mu2"]', '["adap_tt", "ttucb"]', "deltas = [0.1, 0.01]\nruns = 10\n")
    text += "global_epsilons = [0.1, 0.2, 0.5, 1, 2, 5, 10]\n"
    assert config.grid_runs(config.loads(text)) == 320
    monkeypatch.setattr(config.validation, "memory_bytes", lambda: 320 * config.RUN_BYTES)
    config.loads(text)
    monkeypatch.setattr(config.validation, "memory_bytes", lambda: 320 * config.RUN_BYTES - 1)
    assert "the grid has 320 runs" in _refused(text)
    monkeypatch.setattr(config.validation, "memory_bytes", lambda: None)  # unknown: no bound
    config.loads(text)


# ----------------------------------------------------------------------------- checkpoints
def _damaged(data: bytes) -> dict[str, bytes]:
    """An empty, a truncated and a corrupted (bad CRC-32) copy of the checkpoint ``data``."""
    corrupted = bytearray(data)
    corrupted[data.find(b"\x93NUMPY", 200) + 130] ^= 0xFF
    return {"empty": b"", "truncated": data[: len(data) // 2], "crc": bytes(corrupted)}


@pytest.mark.parametrize("damage", ["empty", "truncated", "crc"])
def test_a_damaged_checkpoint_is_named_with_what_to_do(tmp_path, damage):
    path = str(tmp_path / "grid.npz")
    engine.write_checkpoint(path, "f", engine.read_checkpoint(path, "f", 64, 3))
    with open(path, "rb") as f:
        data = _damaged(f.read())[damage]
    with open(path, "wb") as f:
        f.write(data)
    with pytest.raises(ValueError) as err:
        engine.read_checkpoint(path, "f", 64, 3)
    message = str(err.value)
    assert message.startswith(f"checkpoint {path} is damaged (") and "delete it" in message
    assert "\n" not in message


def test_a_checkpoint_of_another_size_is_another_grid_not_damaged(tmp_path):
    """Changing --runs and resuming said the checkpoint "is damaged"; it is a whole checkpoint
    of another grid."""
    path = str(tmp_path / "grid.npz")
    engine.write_checkpoint(path, "f", engine.read_checkpoint(path, "f", 64, 3))
    with pytest.raises(ValueError, match=r"different grid \(64 jobs of 3 arms, not 32 of 3"):
        engine.read_checkpoint(path, "f", 32, 3)
    with pytest.raises(ValueError, match="not 64 of 5"):
        engine.read_checkpoint(path, "f", 64, 5)


def test_resuming_from_a_truncated_checkpoint_is_one_line(tmp_path, capsys):
    out = tmp_path / "out"
    (out / "checkpoints").mkdir(parents=True)
    (out / "checkpoints" / "ttucb.npz").write_bytes(b"PK\x03\x04truncated")
    argv = ["--instances", "mu1", "--algorithms", "ttucb", "--runs", "2", "--out", str(out)]
    err = _cli_error(capsys, [*argv, "--resume", "--quiet"])
    assert f"checkpoint {out / 'checkpoints' / 'ttucb.npz'} is damaged" in err
    assert "delete it" in err and "without resuming" in err


def test_a_failed_checkpoint_write_raises_the_original_error(tmp_path, monkeypatch):
    """The temporary file is removed, and a failure to remove it does not mask the error."""
    path = str(tmp_path / "grid.npz")
    full = OSError(errno.ENOSPC, "No space left on device", path)

    def replace(src, dst):
        raise full

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(OSError) as err:
        engine.write_checkpoint(path, "f", engine.read_checkpoint(path, "f", 4, 3))
    assert err.value is full and not os.listdir(tmp_path)

    def remove(path):
        raise PermissionError(errno.EACCES, "Permission denied", path)

    monkeypatch.setattr(os, "remove", remove)
    with pytest.raises(OSError) as err:
        engine.write_checkpoint(path, "f", engine.read_checkpoint(path, "f", 4, 3))
    assert err.value is full


# ----------------------------------------------------------------------------- outputs
# no figures: these tests are about --out, and drawing is most of a tiny sweep's time
TINY = ["--instances", "mu1", "--algorithms", "ttucb", "--runs", "2", "--quiet", "--no-figures"]


def test_out_naming_a_file_is_one_line(tmp_path, capsys):
    out = tmp_path / "results.txt"
    out.write_text("not a directory")
    err = _cli_error(capsys, [*TINY, "--out", str(out)])
    assert f"output directory {out}: {out}: Not a directory" in err


def test_a_read_only_out_is_one_line(tmp_path, capsys, monkeypatch):
    """A directory that takes no files (read-only, or a read-only file system: simulated, as
    permissions do not bind the root user) is named before anything compiles."""

    def mkstemp(dir, prefix):
        raise PermissionError(errno.EROFS, "Read-only file system", os.path.join(dir, prefix))

    monkeypatch.setattr(sweep.outputs.tempfile, "mkstemp", mkstemp)
    err = _cli_error(capsys, [*TINY, "--out", str(tmp_path / "out")])
    assert f"output directory {tmp_path / 'out'}: " in err
    assert err.endswith(": Read-only file system")


def test_an_os_error_while_writing_is_one_line(tmp_path, capsys, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", "out/runs.csv")

    monkeypatch.setattr(sweep, "run", full)
    err = _cli_error(capsys, [*TINY, "--out", str(tmp_path / "out")])
    assert err.endswith("error: out/runs.csv: No space left on device")


def _runs_csv(out) -> str:
    return (out / "runs.csv").read_text()


def test_a_second_sweep_on_a_held_out_is_refused_naming_the_first(tmp_path):
    """Two sweeps with different grids on one fresh --out both exited 0 and only the second's
    results were there: a running sweep holds its --out."""
    from experiments.sweep import outputs

    out = tmp_path / "out"
    with outputs.holding_out(str(out), ["python", "-m", "experiments.sweep", "--runs", "9"]):
        with pytest.raises(ValueError, match=r"is in use by process \d+ \(python -m exp"):
            sweep.run(
                config.loads("instances = ['mu1']\nalgorithms = ['ttucb']\nruns = 2\n"), out=out
            )
    assert not (out / "runs.csv").exists()


def test_a_used_out_is_refused_unless_resumed_or_overwritten(tmp_path, capsys):
    """Another grid into an --out an earlier sweep wrote used to replace its runs.csv silently
    and leave the old grid's checkpoints beside the new ones."""
    out = tmp_path / "out"
    assert cli.main([*TINY, "--out", str(out)]) == 0
    first = _runs_csv(out)
    other = ["--instances", "mu1", "--algorithms", "ctb_tt", "--epsilons", "5", "--runs", "3"]
    other += TINY[-2:]  # one large ε: CTB-TT's default grid took 80 s of the fast tier
    err = _cli_error(capsys, [*other, "--out", str(out)])
    assert f"output directory {out} holds an earlier sweep's results (sweep.json)" in err
    assert "--resume" in err and "--overwrite" in err
    assert _runs_csv(out) == first and os.listdir(out / "checkpoints") == ["ttucb.npz"]
    err = _cli_error(capsys, [*other, "--out", str(out), "--resume", "--overwrite"])
    assert "not both" in err
    assert cli.main([*other, "--out", str(out), "--overwrite"]) == 0
    assert os.listdir(out / "checkpoints") == ["ctb_tt.npz"]
    assert {line.split(",")[0] for line in _runs_csv(out).splitlines()[1:]} == {"ctb_tt"}


def test_an_unfinished_sweeps_checkpoints_are_not_silently_reused(tmp_path, capsys):
    out = tmp_path / "out"
    (out / "checkpoints").mkdir(parents=True)
    (out / "checkpoints" / "ttucb.npz").write_bytes(b"an earlier run's")
    err = _cli_error(capsys, [*TINY, "--out", str(out)])
    assert "holds an earlier sweep's results (checkpoints/)" in err


@pytest.mark.parametrize("name", ["../../evil", "a/b", ".hidden", "a b"])
def test_a_grid_name_must_be_a_file_name(name):
    """The name is the default --out (results/<name>): ``../../evil`` wrote outside results/."""
    message = _refused(f"name = {json.dumps(name)}\n" + _grid())
    assert "name: must be a file name" in message


# ----------------------------------------------------------------------------- properties
ALGORITHMS = ("ttucb", "ctb_tt", "adap_tt", "adap_tt_star", "dp_se", "ttucb_dpa", "magic")
NAMES = st.one_of(
    st.sampled_from([*PAPER_INSTANCES, "a", "A", "b_1", "../x", ".h", "a b", ""]),
    st.text(max_size=8),
)
NUMBERS = st.one_of(
    st.integers(-3, 3),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.01, 0.1, 0.5, 1.0, 10.0, 1e-40, 2.5e9]),
    st.booleans(),
)
VALUES = st.one_of(NUMBERS, st.text(max_size=6), st.lists(NUMBERS, max_size=3))


def _means() -> st.SearchStrategy:
    return st.lists(st.one_of(st.floats(0, 1), NUMBERS), min_size=0, max_size=5)


INSTANCE = st.one_of(
    st.sampled_from([*PAPER_INSTANCES, "mu7"]),
    st.fixed_dictionaries(
        {"name": NAMES, "means": _means()},
        optional={
            "family": st.sampled_from(["bernoulli", "gaussian", "beta", "poisson"]),
            "sigma": NUMBERS,
            "concentration": NUMBERS,
            "a": _means(),
            "b": _means(),
            "extra": VALUES,
        },
    ),
)
ALGORITHM = st.one_of(
    st.sampled_from(ALGORITHMS),
    st.fixed_dictionaries(
        {"name": NAMES},
        optional={
            "algorithm": st.sampled_from(ALGORITHMS),
            "beta": VALUES,
            "threshold": st.sampled_from(["heuristic", "theory", "magic"]),
            "episodes": st.sampled_from(["per_arm", "global", "all"]),
            "gamma": VALUES,
        },
    ),
)
GRID = st.lists(st.one_of(st.sampled_from([0.01, 0.1, 1.0, 10.0]), NUMBERS), max_size=4)
FILES = st.fixed_dictionaries(
    {
        "instances": st.lists(INSTANCE, min_size=0, max_size=3),
        "algorithms": st.lists(ALGORITHM, min_size=0, max_size=3),
    },
    optional={
        "runs": st.one_of(st.integers(-1, 5), st.sampled_from([10**9, 2**31, 5.0]), NUMBERS),
        "max_samples": NUMBERS,
        "seed": NUMBERS,
        "epsilons": GRID,
        "global_epsilons": GRID,
        "local_epsilons": GRID,
        "deltas": GRID,
        "threshold": st.sampled_from(["heuristic", "theory", "magic"]),
        "draws": st.sampled_from(["auto", "per_sample", "per_episode", "never"]),
        "device": st.sampled_from(["cpu", "gpu", "tpu"]),
        "name": VALUES,
        "description": VALUES,
        "plot": st.one_of(VALUES, st.fixed_dictionaries({}, optional={"dpi": NUMBERS})),
        "runz": VALUES,
    },
)


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string: JSON's, with the characters outside the BMP as they
    are (JSON's surrogate-pair escapes are no TOML) and DEL escaped (JSON leaves it raw)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml(value: object) -> str:
    """``value`` as a TOML value (inline tables and arrays)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{_toml_string(k)} = {_toml(v)}" for k, v in value.items()) + "}"


DEFAULTS = {f.name: f.default for f in dataclasses.fields(config.SweepConfig)}
"""The value of each configuration field that a file leaves out."""


def _entry_name(entry: object) -> object:
    """The name an instances or algorithms entry gives: itself, or its table's ``name``."""
    return entry["name"] if isinstance(entry, dict) else entry


def _assert_loaded_as_given(cfg: config.SweepConfig, data: dict) -> None:
    """``cfg`` holds the values that the file's ``data`` sets, and the defaults elsewhere."""
    for key in ("runs", "max_samples", "seed", "threshold", "draws", "device", "description"):
        assert getattr(cfg, key) == data.get(key, DEFAULTS[key]), key
    assert cfg.name == data.get("name", "config")
    grids = {"local_epsilons": cfg.local_epsilons, "global_epsilons": cfg.global_epsilons}
    for key, grid in grids.items():
        assert grid == tuple(data.get("epsilons", data.get(key, DEFAULTS[key]))), key
    assert cfg.deltas == tuple(data.get("deltas", DEFAULTS["deltas"]))
    assert cfg.instance_names == tuple(map(_entry_name, data["instances"]))
    assert cfg.algorithm_labels == tuple(map(_entry_name, data["algorithms"]))


def _assert_names_a_key(err: ConfigError, data: dict | None) -> None:
    """``err`` is one line, located in grid.toml, naming a key of the file's ``data`` (a key
    every file needs, if left out), or the whole file when it is not TOML (``data`` None)."""
    message = str(err)
    assert "\n" not in message and err.source == "grid.toml", message
    if data is None:
        assert err.path == () and message.startswith("grid.toml: invalid TOML: "), message
        return
    assert err.path and err.path[0] in {*data, "instances", "algorithms"}, message
    assert f"{format_key(err.path)}: " in message, message


def _loads_as_given_or_names_a_key(text: str) -> None:
    """`config.loads` gives the configuration of what ``text`` sets, or a `ConfigError`
    naming one of its keys (`_assert_names_a_key`); any other exception fails the test."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        data = None
    try:
        cfg = config.loads(text, source="grid.toml")
    except ConfigError as err:
        _assert_names_a_key(err, data)
    else:
        assert data is not None, "a text that is not TOML was accepted"
        _assert_loaded_as_given(cfg, data)


def _assert_flags_applied(cfg: config.SweepConfig, args) -> None:
    """Each grid flag given on the command line sets its field of ``cfg``."""
    for key in ("runs", "max_samples", "seed", "threshold", "draws"):
        if getattr(args, key) is not None:
            assert getattr(cfg, key) == getattr(args, key), key
    for key, value in (
        ("deltas", cli._flat(args.deltas)),
        ("algorithm_labels", cli._flat(args.algorithms)),
    ):
        if value is not None:
            assert getattr(cfg, key) == value, key
    if args.epsilons is not None:
        assert cfg.local_epsilons == cfg.global_epsilons == cli._flat(args.epsilons)
    if args.instances is not None:
        given = cli._flat(args.instances)
        assert cfg.instance_names[: len(given)] == given


def _config_from_flags_or_names_a_flag(args, argv: list[str]) -> None:
    """`cli.config_from_args` applies the flags, or raises a one-line `ConfigError` whose key
    is a flag of ``argv`` (``--instances/--means``: either)."""
    try:
        cfg = cli.config_from_args(args)
    except ConfigError as err:
        flags = err.path[0].split("/") if err.path else []
        assert "\n" not in str(err) and any(flag in argv for flag in flags), (str(err), argv)
    else:
        _assert_flags_applied(cfg, args)


DISTRIBUTED_FLAGS = ("--distributed", "--coordinator", "--num-processes", "--process-id")


def _initialize_options_or_names_a_flag(args, argv: list[str]) -> None:
    """`distributed.initialize_options` gives None exactly when no flag of a jax.distributed
    run is given, else the options the flags set; or a one-line `ValueError` naming a flag of
    ``argv``."""
    try:
        options = distributed.initialize_options(args)
    except ValueError as err:
        named = re.findall(r"--[a-z-]+", str(err))
        assert "\n" not in str(err) and set(named) & set(argv), (str(err), argv)
        return
    assert (options is None) == (not set(DISTRIBUTED_FLAGS) & set(argv))
    if options is not None:
        assert options["heartbeat_timeout_seconds"] == args.heartbeat_timeout
        assert options["initialization_timeout"] == args.startup_timeout
        assert options.get("coordinator_address") == args.coordinator


PROPERTY = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@PROPERTY
@given(FILES)
def test_generated_experiment_files_validate_or_name_the_error(data):
    _loads_as_given_or_names_a_key("\n".join(f"{key} = {_toml(v)}" for key, v in data.items()))


VALID_GRID = st.lists(st.floats(1e-3, 0.5), min_size=1, max_size=4, unique=True)
VALID_FILES = st.fixed_dictionaries(
    {
        "instances": st.lists(st.sampled_from(sorted(PAPER_INSTANCES)), min_size=1, max_size=3,
                              unique=True),
        "algorithms": st.lists(st.sampled_from(ALL), min_size=1, max_size=3, unique=True),
    },
    optional={
        "runs": st.integers(1, 100),
        "max_samples": st.integers(1, 2**31 - 1),
        "seed": st.integers(0, 2**32 - 1),
        "local_epsilons": VALID_GRID,
        "global_epsilons": VALID_GRID,
        "deltas": VALID_GRID,
        "threshold": st.sampled_from(["heuristic", "theory"]),
        "draws": st.sampled_from(engine.DRAWS),
        "device": st.sampled_from(["cpu", "gpu"]),
        "name": st.from_regex(r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]{0,7}", fullmatch=True),
        "description": st.text(max_size=12),
    },
)  # fmt: skip
"""Experiment files that are valid by construction: paper instances, registered algorithms."""


@settings(PROPERTY, max_examples=60)
@given(VALID_FILES)
def test_valid_experiment_files_load_as_given(data):
    """The configuration of a valid file holds its values (the generated files above are
    nearly all refused, so this is where loading them is checked)."""
    text = "\n".join(f"{key} = {_toml(value)}" for key, value in data.items())
    _assert_loaded_as_given(config.loads(text, source="grid.toml"), data)


@settings(PROPERTY, max_examples=100)
@given(st.text(alphabet='[]{}=",.#\n\t -_abceilmnrsu0123456789', max_size=60))
def test_arbitrary_toml_texts_validate_or_name_the_error(text):
    _loads_as_given_or_names_a_key(text)


FLAG_VALUES = {
    "--runs": ["1", "0", "-5", "5.0", "2000000000", "x"],
    "--epsilons": ["1", "1 1", "0.5,2", "-1", "nan", "inf", "x"],
    "--deltas": ["0.01", "0.01 0.01", "1", "0"],
    "--max-samples": ["1000", "0", "1e6", "99999999999"],
    "--seed": ["0", "-1", "4294967296"],
    "--instances": ["mu1", "mu1 mu1", "mu9", "../x"],
    "--algorithms": ["ttucb", "ttucb ttucb", "../evil", "magic", "adap_tt"],
    "--means": ["0.5 0.2", "0.5", "1.5 0.2", "0.5 0.5", "nan 0.1"],
    "--family": ["bernoulli", "gaussian", "beta", "poisson"],
    "--sigma": ["0.3", "0", "-1", "inf"],
    "--concentration": ["10", "0"],
    "--threshold": ["heuristic", "theory", "magic"],
    "--draws": ["auto", "per_episode", "never"],
    "--preset": ["quick", "paper", "nope"],
    "--heartbeat-timeout": ["5", "0", "-5", "inf", "1.5", "100000"],
    "--startup-timeout": ["5", "0", "-5", "nan"],
    "--num-processes": ["2", "0", "-1"],
    "--process-id": ["0", "1", "2", "-1"],
    "--coordinator": ["localhost:1234", "localhost", ":12", "host:x"],
}
FLAGS = st.lists(
    st.one_of(
        st.sampled_from(sorted(FLAG_VALUES)).flatmap(
            lambda flag: st.sampled_from(FLAG_VALUES[flag]).map(lambda v: [flag, *v.split()])
        ),
        st.sampled_from([["--distributed"], ["--resume"], ["--bogus"], ["--runs"]]),
    ),
    max_size=5,
)


@PROPERTY
@given(FLAGS)
def test_generated_command_lines_parse_or_exit_2(flags):
    """Parsing, the configuration and the distributed options: what `cli.main` checks
    before anything runs (argparse errors are `SystemExit(2)` with one line)."""
    argv = [token for flag in flags for token in flag]
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            args = cli.build_parser().parse_args(argv)
    except SystemExit as exit_:
        assert exit_.code == cli.EXIT_USAGE
        assert stderr.getvalue().strip().count("\n") == 0, stderr.getvalue()
        return
    _config_from_flags_or_names_a_flag(args, argv)
    _initialize_options_or_names_a_flag(args, argv)
