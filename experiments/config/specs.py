"""Instances and algorithms of a sweep as plain, validated specifications.

An `InstanceSpec` is a named instance of one family — Bernoulli (means in [0, 1]), Gaussian
(means, common σ) or Beta (shapes a, b, or means and a concentration a + b) — with any K ≥ 2 and a
unique best arm. An `AlgorithmSpec` is a registered algorithm (`jaxbai.ALGORITHMS`) under a label,
with options for its factory (threshold family, β, leader bonus, γ, episodes, …). Both are
checked here in numpy, before anything compiles; a problem is a `ConfigError` naming the key.
Importing this module imports `jaxbai` but starts no JAX backend (the sweep may still configure
the host devices or ``jax.distributed`` afterwards).

Examples:
    >>> spec = instance_from_mapping({"name": "b", "family": "beta", "means": [0.6, 0.4],
    ...                               "concentration": 10}, ("instances", 0))
    >>> spec.a, spec.b, spec.means
    ((6.0, 4.0), (4.0, 6.0), (0.6, 0.4))
    >>> try:
    ...     instance_from_mapping({"name": "t", "means": [0.9, 0.9, 0.1]}, ("instances", 2))
    ... except ConfigError as err:
    ...     print(err.path, err.message, sep="\\n")
    ('instances', 2, 'means')
    tied best arm: arms 0, 1 share the largest mean 0.9; the best arm must be unique
    >>> alg = AlgorithmSpec("adap_tt_b03", "adap_tt", (("beta", 0.3),))
    >>> alg.display_name(), alg.threshold_of("theory")
    ('AdaP-TT (β = 0.3)', 'theory')
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from experiments.config.errors import ConfigError
from experiments.config.values import choice, finite_number, number, string, vector
from jaxbai import ALGORITHMS, PAPER_INSTANCES
from jaxbai.checks import check_unique_best

if TYPE_CHECKING:
    from jaxbai.base import Algorithm, Instance

__all__ = [
    "FAMILIES",
    "INSTANCE_KEYS",
    "NAME_PATTERN",
    "AlgorithmSpec",
    "InstanceSpec",
    "algorithm_from_entry",
    "check_algorithm",
    "check_file_name",
    "derived_name",
    "display_name",
    "instance_from_entry",
    "instance_from_mapping",
    "instance_groups",
    "paper_instance",
    "registry",
]

FAMILIES = ("bernoulli", "gaussian", "beta")
"""Reward families of an instance."""

INSTANCE_KEYS: dict[str, tuple[str, ...]] = {
    "bernoulli": ("name", "family", "means"),
    "gaussian": ("name", "family", "means", "sigma"),
    "beta": ("name", "family", "means", "concentration", "a", "b"),
}
"""Keys of an instance table, by family."""
NAME_PATTERN = r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]{0,99}"
"""Instance names and algorithm labels: 1 to 100 letters, digits and ``_ . + -``, not starting
with a dot (a label names checkpoint files, so it must be a plain file name)."""
_ALGORITHM_KEYS = ("name", "algorithm")  # every other key of an algorithm table is an option
_OPTION_SYMBOLS = {"beta": "β", "gamma": "γ", "sigma": "σ"}


# ----------------------------------------------------------------------------- registry
def registry():
    """The algorithm registry `jaxbai.ALGORITHMS`."""
    return ALGORITHMS


def display_name(name: str) -> str:
    """The figure and report name of a registered algorithm (``name`` itself otherwise)."""
    entries = registry()
    return entries[name].display_name if name in entries else name


def instance_groups(instances: Sequence[InstanceSpec]) -> list[tuple[int, ...]]:
    """Indices of the instances that share one engine grid (same family and K), in order of
    first appearance.

    >>> from experiments.config.specs import paper_instance
    >>> g = InstanceSpec("g", "gaussian", (1.0, 0.0), sigma=1.0)
    >>> instance_groups([paper_instance("mu1"), g, paper_instance("mu2")])
    [(0, 2), (1,)]
    """
    groups: dict[tuple, list[int]] = {}
    for i, spec in enumerate(instances):
        groups.setdefault((spec.family, spec.num_arms), []).append(i)
    return [tuple(g) for g in groups.values()]


# ----------------------------------------------------------------------------- values
def check_file_name(value: str, path: tuple) -> str:
    """``value`` if it matches `NAME_PATTERN` (a file name in any directory, on any system).

    >>> check_file_name("adap_tt_b0.3", ("algorithms", 0, "name"))
    'adap_tt_b0.3'
    >>> try:
    ...     check_file_name("../evil", ("algorithms", 0, "name"))
    ... except ConfigError as err:
    ...     print(err.message)
    must be a file name: 1 to 100 of A-Z a-z 0-9 _ . + -, not starting with a dot; got '../evil'
    """
    if not re.fullmatch(NAME_PATTERN, value):
        raise ConfigError(
            path,
            "must be a file name: 1 to 100 of A-Z a-z 0-9 _ . + -, not starting with a dot; "
            f"got {value!r}",
        )
    return value


def _check_unique_best(means: tuple[float, ...], path: tuple) -> None:
    """`jaxbai`'s unique-best-arm check, as a `ConfigError` naming the tied arms."""
    try:
        check_unique_best(means)
    except ValueError:
        arr = np.asarray(means)
        arms = ", ".join(map(str, np.flatnonzero(arr == arr.max()).tolist()))
        raise ConfigError(
            path,
            f"tied best arm: arms {arms} share the largest mean {arr.max():g}; "
            "the best arm must be unique",
        ) from None


# ----------------------------------------------------------------------------- instances
@dataclasses.dataclass(frozen=True)
class InstanceSpec:
    """A named instance of one reward family.

    Attributes:
        name: the name in tables and figures.
        family: one of `FAMILIES`.
        means: the arms' means (for Beta, a / (a + b)).
        sigma: the Gaussian standard deviation (Gaussian only).
        a, b: the Beta shape parameters (Beta only).
    """

    name: str
    family: str
    means: tuple[float, ...]
    sigma: float | None = None
    a: tuple[float, ...] | None = None
    b: tuple[float, ...] | None = None

    @property
    def num_arms(self) -> int:
        """K."""
        return len(self.means)

    @property
    def unit_interval(self) -> bool:
        """Whether every reward lies in [0, 1] (Bernoulli, Beta)."""
        return self.family != "gaussian"

    def describe(self) -> str:
        """The family and its parameters in words, e.g. ``"Gaussian, σ = 0.3"``."""
        if self.family == "gaussian":
            return f"Gaussian, σ = {self.sigma:g}"
        if self.family == "beta":
            return f"Beta, a + b = {_format_list(np.add(self.a, self.b))}"
        return "Bernoulli"

    def build(self) -> Instance:
        """The `jaxbai` instance (creates JAX arrays)."""
        import jaxbai

        if self.family == "gaussian":
            return jaxbai.gaussian(self.means, self.sigma)
        if self.family == "beta":
            return jaxbai.beta(self.a, self.b)
        return jaxbai.bernoulli(self.means)

    def to_dict(self) -> dict[str, Any]:
        """The instance as a table of an experiment file (what `instance_from_mapping` reads)."""
        data: dict[str, Any] = {"name": self.name, "family": self.family}
        if self.family == "beta":
            return data | {"a": list(self.a), "b": list(self.b)}
        data["means"] = list(self.means)
        return data | ({"sigma": self.sigma} if self.family == "gaussian" else {})


def _format_list(values) -> str:
    values = [f"{v:g}" for v in values]
    return values[0] if len(set(values)) == 1 else "(" + ", ".join(values) + ")"


def paper_instance(name: str, path: tuple = ()) -> InstanceSpec:
    """The Bernoulli instance ``name`` of Appendix I (``"mu1"`` … ``"mu6"``).

    >>> paper_instance("mu1").means
    (0.95, 0.9, 0.9, 0.9, 0.5)
    """
    if name not in PAPER_INSTANCES:
        raise ConfigError(
            path,
            f"unknown instance {name!r}: a paper instance is one of {list(PAPER_INSTANCES)};"
            " define your own as a table with family and means",
        )
    return InstanceSpec(name, "bernoulli", tuple(float(m) for m in PAPER_INSTANCES[name]))


def _beta_shapes(data: Mapping, path: tuple) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(a, b) from ``a`` and ``b``, or from ``means`` and ``concentration`` (a + b)."""
    shapes = "a" in data or "b" in data
    moments = "means" in data or "concentration" in data
    if shapes == moments:
        raise ConfigError(
            path, "a Beta instance takes either a and b, or means and concentration (= a + b)"
        )
    if shapes:
        positive = "> 0"
        a = vector(data.get("a"), (*path, "a"), positive, lambda v: v > 0)
        b = vector(data.get("b"), (*path, "b"), positive, lambda v: v > 0)
        if len(a) != len(b):
            raise ConfigError((*path, "b"), f"must have as many entries as a ({len(a)})")
        return a, b
    means = vector(data.get("means"), (*path, "means"), "in (0, 1)", lambda v: 0 < v < 1)
    c = number(data.get("concentration"), (*path, "concentration"), "> 0", lambda v: v > 0)
    return tuple(m * c for m in means), tuple((1 - m) * c for m in means)


def instance_from_mapping(data: Mapping, path: tuple) -> InstanceSpec:
    """A checked `InstanceSpec` from a table of an experiment file.

    Keys: ``name``, ``family`` (default ``"bernoulli"``), and ``means`` (Bernoulli: in [0, 1];
    Gaussian: finite, with ``sigma`` > 0) or, for Beta, ``a`` and ``b`` (> 0) or ``means`` in
    (0, 1) and ``concentration`` (a + b > 0). The best arm must be unique; a paper instance's
    name (``"mu1"`` …) takes that instance's family and means only.

    Raises:
        ConfigError: naming the offending key and its valid range.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(path, f"must be a table or a paper instance name, got {data!r}")
    name = string(data.get("name"), (*path, "name"), non_empty=True)
    family = data.get("family", "bernoulli")
    choice(family, (*path, "family"), FAMILIES)
    for key in data:
        if key not in INSTANCE_KEYS[family]:
            valid = list(INSTANCE_KEYS[family])
            raise ConfigError((*path, key), f"unknown key for a {family} instance; valid: {valid}")
    sigma = a = b = None
    if family == "beta":
        a, b = _beta_shapes(data, path)
        means = tuple(x / (x + y) for x, y in zip(a, b, strict=True))
    elif family == "gaussian":
        means = vector(data.get("means"), (*path, "means"), "(finite)", lambda v: True)
        sigma = number(data.get("sigma"), (*path, "sigma"), "> 0", lambda v: v > 0)
    else:
        means = vector(data.get("means"), (*path, "means"), "in [0, 1]", lambda v: 0 <= v <= 1)
    _check_unique_best(means, (*path, "means" if "means" in data else "a"))
    spec = InstanceSpec(name, family, means, sigma, a, b)
    if name in PAPER_INSTANCES and spec != paper_instance(name):
        raise ConfigError(
            (*path, "name"),
            f"{name!r} is the paper's instance (Bernoulli, means "
            f"{list(paper_instance(name).means)}); give an instance of your own another name",
        )
    return spec


def instance_from_entry(entry: object, path: tuple) -> InstanceSpec:
    """An instance of an ``instances`` list: a paper instance name or a table."""
    if isinstance(entry, str):
        return paper_instance(entry, path)
    return instance_from_mapping(entry, path)


def derived_name(spec: InstanceSpec) -> str:
    """A readable name for an unnamed instance: family, K and its parameter.

    >>> derived_name(InstanceSpec("", "gaussian", (1.0, 0.5, 0.2), sigma=0.3))
    'gaussian_K3_sigma0.3'
    """
    extra = ""
    if spec.family == "gaussian":
        extra = f"_sigma{spec.sigma:g}"
    elif spec.family == "beta":
        concentration = {x + y for x, y in zip(spec.a, spec.b, strict=True)}
        extra = f"_c{concentration.pop():g}" if len(concentration) == 1 else ""
    return f"{spec.family}_K{spec.num_arms}{extra}"


# ----------------------------------------------------------------------------- algorithms
@dataclasses.dataclass(frozen=True)
class AlgorithmSpec:
    """A registered algorithm under a label, with options for its factory.

    Attributes:
        label: the ``algorithm`` column of the results (unique in a sweep).
        algorithm: the registry name (`jaxbai.ALGORITHMS`).
        options: (option, value) pairs passed to the factory, in the file's order.
    """

    label: str
    algorithm: str
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def option_dict(self) -> dict[str, Any]:
        """The options as a dictionary."""
        return dict(self.options)

    def threshold_of(self, default: str) -> str:
        """The stopping-threshold family it runs with (``"n/a"`` if it has none)."""
        entry = registry().get(self.algorithm)
        if entry is not None and not entry.thresholds:
            return "n/a"
        return self.option_dict.get("threshold", default)

    def build(self, threshold: str) -> Algorithm:
        """The algorithm, with ``threshold`` unless an option sets it or it has no families."""
        entry = registry().get_entry(self.algorithm)
        options = self.option_dict
        if entry.thresholds:
            options.setdefault("threshold", threshold)
        return entry(**options)

    def display_name(self) -> str:
        """The registry's display name, followed by the options, e.g. ``AdaP-TT (β = 0.3)``."""
        base = display_name(self.algorithm)
        if self.label != self.algorithm and not self.options:
            return f"{base} [{self.label}]"
        parts = [f"{_OPTION_SYMBOLS.get(k, k)} = {v}" for k, v in self.options]
        return f"{base} ({', '.join(parts)})" if parts else base

    def to_dict(self) -> dict[str, Any] | str:
        """An entry of an experiment file's ``algorithms`` list."""
        if self.label == self.algorithm and not self.options:
            return self.label
        return {"name": self.label, "algorithm": self.algorithm} | self.option_dict


def algorithm_from_entry(entry: object, path: tuple) -> AlgorithmSpec:
    """An algorithm of an ``algorithms`` list: a registry name, or a table with ``name``
    (the label), ``algorithm`` (registry name, default ``name``) and factory options."""
    if isinstance(entry, str):
        return AlgorithmSpec(string(entry, path, non_empty=True), entry)
    if not isinstance(entry, Mapping):
        raise ConfigError(path, f"must be an algorithm name or a table, got {entry!r}")
    label = string(entry.get("name"), (*path, "name"), non_empty=True)
    algorithm = string(entry.get("algorithm", label), (*path, "algorithm"), non_empty=True)
    options = tuple((k, v) for k, v in entry.items() if k not in _ALGORITHM_KEYS)
    return AlgorithmSpec(label, algorithm, options)


def _coerce_option(default: object, value: object, path: tuple) -> object:
    """``value`` with the type of the factory's default (int → float; no bool for numbers);
    anything for an option without a default or with default None."""
    if default is None or default is inspect.Parameter.empty:
        return value
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, (int, float)):
        ok = finite_number(value)
        value = float(value) if ok and isinstance(default, float) else value
    else:
        ok = isinstance(value, type(default))
    if not ok:
        raise ConfigError(path, f"must be a {type(default).__name__}, got {value!r}")
    return value


def check_algorithm(spec: AlgorithmSpec, index: int, threshold: str) -> AlgorithmSpec:
    """Check ``spec`` against its registry entry and build it once (nothing compiles).

    Returns the spec with option values coerced to the factory's types (an int β becomes a
    float), so that equal configurations build equal algorithms.

    Raises:
        ConfigError: an unregistered algorithm, an option its factory does not take, a
            threshold family it does not offer, or an option value its factory rejects (the
            factory's message, with the option's key).
    """
    path = ("algorithms", index)
    entries = registry()
    if spec.algorithm not in entries:
        raise ConfigError(
            (*path, "algorithm"),
            f"must be one of {list(entries)}, got {spec.algorithm!r} (a plugin's algorithm needs "
            "--plugin MODULE on the command line)",
        )
    entry = entries[spec.algorithm]
    if spec.label != spec.algorithm and spec.label in entries:
        raise ConfigError(
            (*path, "name"),
            f"{spec.label!r} is the registry name of another algorithm; choose another label",
        )
    defaults = inspect.signature(entry.factory).parameters
    options = []
    for key, value in spec.options:
        if key not in entry.options and "**" not in entry.options:
            raise ConfigError(
                (*path, key), f"{spec.algorithm} takes options {list(entry.options)}, not {key!r}"
            )
        default = defaults[key].default if key in defaults else None  # **options: any value
        options.append((key, _coerce_option(default, value, (*path, key))))
    spec = dataclasses.replace(spec, options=tuple(options))
    family = spec.threshold_of(threshold)
    if entry.thresholds and family not in entry.thresholds:
        key = (*path, "threshold") if "threshold" in spec.option_dict else ("threshold",)
        raise ConfigError(key, f"{spec.algorithm} takes {list(entry.thresholds)}, got {family!r}")
    try:
        spec.build(threshold)
    except ValueError as err:
        option = next((k for k, _ in spec.options if str(err).startswith(k)), None)
        raise ConfigError((*path, option) if option else path, str(err)) from None
    return spec
