"""Plugins reach every command line: ``--plugin``, an experiment file's ``plugins`` and installed
entry points register a user algorithm for the sweep and the trial, and a trial file names the
plugin it needs when it is reopened without it (`jaxbai.plugins`)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap

import pytest
from _commands import run_module

import jaxbai
from experiments import config
from experiments.analysis import results
from experiments.config import ConfigError
from jaxbai import plugins
from jaxbai.trial import PLUGIN_PRIVACY_CLAIM

FACTORIES = textwrap.dedent(
    """
    import dataclasses
    import jaxbai

    def plug_tt(**options):
        return dataclasses.replace(jaxbai.adap_tt(beta=0.4, **options), name="plug_tt")
    """
)
PLUGIN = textwrap.dedent(
    """
    import jaxbai
    import plug_factories

    jaxbai.register("plug_tt", plug_factories.plug_tt, "Plugged AdaP-TT")
    """
)
"""The plugin registers a factory defined in another module: the entry's plugin must be the
module that was loaded (the one a trial can name), not the factory's."""


@pytest.fixture
def plugin_dir(tmp_path):
    """A directory holding the plugin module ``plug_mod`` (registers ``plug_tt``)."""
    (tmp_path / "plug_factories.py").write_text(FACTORIES)
    (tmp_path / "plug_mod.py").write_text(PLUGIN)
    return tmp_path


def _run(args: list[str], path: pathlib.Path) -> subprocess.CompletedProcess:
    """``python -m *args`` in ``path``, its modules importable."""
    return run_module(path, args, (path,))


def test_load_names_a_module_that_cannot_be_imported():
    with pytest.raises(ValueError, match="plugin 'no_such_plugin_here' cannot be imported"):
        plugins.load(["no_such_plugin_here"])
    with pytest.raises(ValueError, match="a plugin is a module name"):
        plugins.load([""])


def test_repeated_plugin_options_accumulate_in_their_own_list():
    import argparse

    parser = argparse.ArgumentParser()
    plugins.add_argument(parser)
    assert parser.parse_args(["--plugin", "math", "--plugin", "json"]).plugin == ["math", "json"]
    assert parser.parse_args([]).plugin == [], "the default is never appended to"


def test_the_missing_algorithm_message_names_the_plugin():
    text = plugins.missing_algorithm("plug_tt", "plug_mod")
    assert "plug_mod" in text and "--plugin plug_mod" in text
    assert "register it before opening" in plugins.missing_algorithm("plug_tt", None)


def test_an_experiment_file_names_plugins_but_never_imports_them(plugin_dir, monkeypatch):
    monkeypatch.syspath_prepend(str(plugin_dir))
    grid = "instances = ['mu2']\nalgorithms = ['plug_tt']\nglobal_epsilons = [1.0]\nruns = 2\n"
    with pytest.raises(ConfigError, match="must be one of"):
        config.loads(grid, source="grid.toml")  # not registered without the plugin
    with pytest.raises(ConfigError, match="pass --plugin plug_mod to import"):
        config.loads(f"plugins = ['plug_mod']\n{grid}", source="grid.toml")
    assert "plug_mod" not in sys.modules, "a file imports no code"
    try:
        plugins.load(["plug_mod"])  # what --plugin plug_mod does
        loaded = config.loads(f"plugins = ['plug_mod']\n{grid}", source="grid.toml")
        assert loaded.plugins == ("plug_mod",)
        assert loaded.epsilons_for("plug_tt") == (1.0,)
        assert jaxbai.ALGORITHMS["plug_tt"].plugin == "plug_mod"
        assert config.parse(loaded.to_dict()).plugins == ("plug_mod",), "recorded in sweep.json"
    finally:
        if "plug_tt" in jaxbai.ALGORITHMS:
            jaxbai.unregister("plug_tt")
    with pytest.raises(ConfigError, match="plugins"):
        config.loads(f"plugins = 'plug_mod'\n{grid}", source="grid.toml")


def test_plugin_names_and_failures_are_one_value_error(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "raising_plugin.py").write_text("raise RuntimeError('no licence server')\n")
    (tmp_path / "broken_plugin.py").write_text("def f(:\n")
    with pytest.raises(ValueError, match=r"'\.foo': a plugin is an absolute module name"):
        plugins.load([".foo"])
    with pytest.raises(ValueError, match="failed while being imported: RuntimeError: no lic"):
        plugins.load(["raising_plugin"])
    with pytest.raises(ValueError, match="failed while being imported: SyntaxError"):
        plugins.load(["broken_plugin"])


@pytest.mark.integration
def test_the_sweep_command_runs_a_plugin_algorithm(plugin_dir):
    out = plugin_dir / "out"
    args = ["experiments.sweep", "--plugin", "plug_mod", "--algorithms", "plug_tt"]
    args += ["--instances", "mu2", "--epsilons", "2", "--runs", "2", "--max-samples", "20000"]
    done = _run([*args, "--quiet", "--out", str(out)], plugin_dir)
    assert done.returncode == 0, done.stderr[-2000:]
    table = results.read_csv(str(out / "runs.csv"))
    assert set(table["algorithm"]) == {"plug_tt"} and set(table["privacy"]) == {"global"}
    sidecar = json.loads((out / "sweep.json").read_text())
    assert sidecar["config"]["plugins"] == ["plug_mod"]
    without = _run(["experiments.sweep", "--algorithms", "plug_tt", "--plan"], plugin_dir)
    assert without.returncode == 2 and "plug_tt" in without.stderr


@pytest.mark.integration
def test_a_trial_records_its_plugin_and_names_it_when_missing(plugin_dir):
    path = str(plugin_dir / "x.trial")
    create = ["jaxbai.trial", "create", path, "--algorithm", "plug_tt", "--arms", "2"]
    create += ["--epsilon", "1", "--delta", "0.1", "--noise", "prng", "--plugin", "plug_mod"]
    done = _run(create, plugin_dir)
    assert done.returncode == 0, done.stderr
    missing = _run(["jaxbai.trial", "status", path], plugin_dir)
    assert missing.returncode == 2
    assert "--plugin plug_mod" in missing.stderr and len(missing.stderr.splitlines()) == 1
    status = _run(["jaxbai.trial", "status", path, "--plugin", "plug_mod"], plugin_dir)
    assert status.returncode == 0 and json.loads(status.stdout)["algorithm"] == "plug_tt"


REPLACING = textwrap.dedent(
    """
    import dataclasses
    import jaxbai

    def adap_tt(**options):  # passes as the built-in: the same name, other code
        return dataclasses.replace(jaxbai.adap_tt(beta=0.2, **options), name="adap_tt")

    jaxbai.register("adap_tt", adap_tt, "AdaP-TT", replace=True)
    """
)


def _trial_create(path: pathlib.Path, algorithm: str, *plugin: str) -> list[str]:
    create = ["jaxbai.trial", "create", str(path), "--algorithm", algorithm, "--arms", "2"]
    return [*create, "--epsilon", "1", "--delta", "0.1", "--noise", "prng", *plugin]


@pytest.mark.integration
def test_a_trial_runs_only_the_code_it_was_created_with(plugin_dir):
    """A replaced built-in, a plugin's algorithm under the built-in, and a plugin whose source
    changed are each refused by every command, in one line naming what differs; status and the
    publication name a plugin and say its privacy is the plugin's own claim."""
    (plugin_dir / "replacing.py").write_text(REPLACING)
    replacing = ["--plugin", "replacing"]
    builtin, under_plugin = plugin_dir / "builtin.trial", plugin_dir / "replaced.trial"
    assert _run(_trial_create(builtin, "adap_tt"), plugin_dir).returncode == 0
    assert _run(_trial_create(under_plugin, "adap_tt", *replacing), plugin_dir).returncode == 0
    refusals = {
        (builtin, "created with jaxbai's own, and here the plugin 'replacing' replaces"): replacing,
        (under_plugin, "created with the plugin 'replacing', and here jaxbai's own"): [],
    }
    for (path, message), options in refusals.items():
        for command in (["status"], ["next"], ["publish"]):
            done = _run(["jaxbai.trial", *command, str(path), *options], plugin_dir)
            assert done.returncode == 2, done.stdout
            assert message in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    status = _run(["jaxbai.trial", "status", str(under_plugin), *replacing], plugin_dir)
    assert json.loads(status.stdout)["plugin"] == "replacing"
    published = _run(["jaxbai.trial", "publish", str(under_plugin), *replacing], plugin_dir)
    plugin = json.loads(published.stdout)["plugin"]
    assert plugin["module"] == "replacing" and plugin["privacy_claim"] == PLUGIN_PRIVACY_CLAIM
    assert len(plugin["source"]) == 64
    status = _run(["jaxbai.trial", "status", str(builtin)], plugin_dir)
    assert json.loads(status.stdout)["plugin"] is None

    plugged = plugin_dir / "plugged.trial"
    assert (
        _run(_trial_create(plugged, "plug_tt", "--plugin", "plug_mod"), plugin_dir).returncode == 0
    )
    factories = plugin_dir / "plug_factories.py"  # the factory's module, not the plugin's
    # the same code imported another way (not through --plugin: the entry names the factory's
    # module) reopens it
    reopen = "import sys\nimport plug_mod\nfrom jaxbai.trial import Trial\n"
    reopen += "with Trial.open(sys.argv[1]) as t:\n    print(t.next_arm())\n"
    (plugin_dir / "plug_reopen.py").write_text(reopen)
    reopened = _run(["plug_reopen", str(plugged)], plugin_dir)
    assert reopened.returncode == 0, reopened.stderr
    factories.write_text(factories.read_text().replace("beta=0.4", "beta=0.45"))
    changed = _run(["jaxbai.trial", "next", str(plugged), "--plugin", "plug_mod"], plugin_dir)
    assert changed.returncode == 2
    assert "the code of the trial's algorithm changed" in changed.stderr, changed.stderr


@pytest.mark.integration
def test_an_installed_entry_point_registers_without_a_flag(plugin_dir):
    info = plugin_dir / "plug_dist-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plug-dist\nVersion: 0.1\n")
    group = plugins.ENTRY_POINT_GROUP
    (info / "entry_points.txt").write_text(f"[{group}]\nplug = plug_mod\n")
    path = str(plugin_dir / "y.trial")
    create = ["jaxbai.trial", "create", path, "--algorithm", "plug_tt", "--arms", "2"]
    done = _run([*create, "--epsilon", "1", "--delta", "0.1", "--noise", "prng"], plugin_dir)
    assert done.returncode == 0, done.stderr
    status = _run(["jaxbai.trial", "status", path], plugin_dir)
    assert status.returncode == 0 and json.loads(status.stdout)["privacy"] == "global"
