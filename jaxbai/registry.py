"""The one registry of algorithms: name → factory, with the metadata every consumer reads.

`jaxbai.ALGORITHMS` is the registry, and the one place every per-algorithm fact is read from:
the trial (`jaxbai.trial`), the sweep, the experiment grids, plots and reports keep no lists of
algorithm facts of their own (how figures draw jaxbai's algorithms is presentation, kept in
`experiments.analysis.styles`). An entry holds the factory, the display name, the threshold
families and whether it runs the paper's published code; everything that can depend on the
options — privacy model, whether ε is used, the participant mechanism, the allocation target and the
asymptotic bound — is the `jaxbai.base.AlgorithmInfo` of the algorithm built with those
options (`AlgorithmEntry.info`), never of the factory's defaults. Adding an algorithm is one
`register` call with its factory:

Examples:
    >>> import dataclasses
    >>> import jaxbai
    >>> def my_adap_tt(**options):
    ...     return dataclasses.replace(jaxbai.adap_tt(beta=0.3, **options), name="my_adap_tt")
    >>> entry = jaxbai.register("my_adap_tt", my_adap_tt, "AdaP-TT (β = 0.3)")
    >>> entry.info().privacy, entry.thresholds, entry.display_name
    ('global', ('heuristic', 'theory'), 'AdaP-TT (β = 0.3)')
    >>> entry.info().asymptotic_bound is not None  # Theorem 22 at β = 0.3
    True
    >>> jaxbai.ALGORITHMS["my_adap_tt"]().beta
    0.3
    >>> jaxbai.unregister("my_adap_tt")

Entries are callable like the factory they hold (``jaxbai.ALGORITHMS["ttucb"](threshold=…)``),
and reject an option the factory does not take; ``episodic`` says whether the default build is
`jaxbai.base.Episodic`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from jaxbai import dpse, plugins, thresholds, toptwo
from jaxbai.base import Algorithm, AlgorithmInfo, Episodic

__all__ = [
    "ALGORITHMS",
    "BUILT_IN_NAMES",
    "AlgorithmEntry",
    "Registry",
    "register",
    "unregister",
]


@dataclasses.dataclass(frozen=True)
class AlgorithmEntry:
    """One registered algorithm.

    Attributes:
        name: registry key (also ``factory().name``).
        factory: builds the algorithm from keyword options (static configuration).
        display_name: name used in figures and reports.
        thresholds: the stopping-threshold families the factory's ``threshold`` option takes
            (empty if it has none, e.g. DP-SE).
        options: the keyword options of the factory (``("**",)`` when it takes any: a factory
            with ``**options`` validates them itself).
        episodic: whether the algorithm is `jaxbai.base.Episodic` (plans its pulls by episodes,
            Appendix H).
        published_code_of: the registry name of the paper's algorithm that this entry runs as
            the paper's published code does (docs/published-code.md), else None.
        plugin: the module whose import registers it (`jaxbai.plugins`: the plugin being
            loaded, else the factory's module), None for jaxbai's own and for one registered
            in ``__main__``; a trial records it.
        plugin_source: what identifies the code of an algorithm that is not jaxbai's own:
            the SHA-256 of the source of the module that defines the factory
            (`jaxbai.plugins.source_digest`, taken when it was registered; ``"__main__"`` for
            a factory defined in a script or notebook), whoever imported it; None for jaxbai's
            own. A trial records it and refuses a changed one.
    """

    name: str
    factory: Callable[..., Algorithm]
    display_name: str
    thresholds: tuple[str, ...]
    options: tuple[str, ...]
    episodic: bool
    published_code_of: str | None = None
    plugin: str | None = None
    plugin_source: str | None = None

    def info(self, **options: Any) -> AlgorithmInfo:
        """The `jaxbai.base.AlgorithmInfo` of the algorithm built with ``options``: privacy
        model, ε, participant mechanism, allocation target and asymptotic bound.

        Raises:
            ValueError: as `__call__`.
        """
        return self(**options).info

    def __call__(self, **options: Any) -> Algorithm:
        """Build the algorithm.

        Raises:
          ValueError: an option the factory does not take, a value whose type differs from
            the option's default (a number for ``beta``, a string for ``threshold``), or one
            the factory rejects.
        """
        unknown = sorted(set(options) - set(self.options))
        if unknown and "**" not in self.options:
            raise ValueError(
                f"{self.name} takes options {list(self.options)}, not {', '.join(unknown)}"
            )
        defaults = _defaults(self.factory)
        for name, value in options.items():
            if name in defaults and not _same_kind(value, defaults[name]):
                kind = type(defaults[name]).__name__
                raise ValueError(f"option {name} of {self.name} must be a {kind}, got {value!r}")
        try:
            return self.factory(**options)
        except TypeError as err:
            raise ValueError(f"invalid options for {self.name} {options}: {err}") from err


_KINDS = (bool, int, float, str)
"""Types of option defaults whose values are checked (an int is accepted for a float)."""


def _defaults(factory: Callable[..., Algorithm]) -> dict[str, Any]:
    """The factory's options whose default is a bool, int, float or str."""
    parameters = inspect.signature(factory).parameters.values()
    return {p.name: p.default for p in parameters if type(p.default) in _KINDS}


def _same_kind(value: Any, default: Any) -> bool:
    if isinstance(default, bool) or isinstance(value, bool):
        return type(value) is type(default)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    return type(value) is type(default)


def _takes_threshold(options: tuple[str, ...], alg: Algorithm) -> bool:
    """Whether the factory takes a ``threshold`` family: named, or through ``**options`` of a
    Top Two algorithm (which has a stopping-threshold component)."""
    return "threshold" in options or ("**" in options and hasattr(alg, "threshold"))


def _entry(
    name: str,
    factory: Callable[..., Algorithm],
    display_name: str,
    published_code_of: str | None,
) -> AlgorithmEntry:
    """An entry whose threshold families and episodic flag are read from the algorithm the
    factory builds by default."""
    parameters = inspect.signature(factory).parameters.values()
    options = tuple(
        "**" if p.kind is inspect.Parameter.VAR_KEYWORD else p.name
        for p in parameters
        if p.kind is not inspect.Parameter.VAR_POSITIONAL
    )
    alg = factory()
    plugin = _plugin_of(factory)
    if alg.name != name:
        raise ValueError(f"factory for {name!r} builds an algorithm named {alg.name!r}")
    return AlgorithmEntry(
        name=name,
        factory=factory,
        display_name=display_name,
        thresholds=thresholds.THRESHOLD_FAMILIES if _takes_threshold(options, alg) else (),
        options=options,
        episodic=isinstance(alg, Episodic),
        published_code_of=published_code_of,
        plugin=plugin,
        plugin_source=_plugin_source(factory),
    )


def _factory_module(factory: Callable[..., Algorithm]) -> str | None:
    """The module that defines ``factory`` (a `functools.partial`'s function)."""
    target = factory.func if isinstance(factory, functools.partial) else factory
    return getattr(target, "__module__", None)


def _plugin_of(factory: Callable[..., Algorithm]) -> str | None:
    """The plugin being loaded, else the module that defines ``factory`` (None for jaxbai's
    own and for ``__main__``)."""
    module = plugins.loading() or _factory_module(factory)
    if module is None or module == "__main__" or module.split(".")[0] == "jaxbai":
        return None
    return module


def _plugin_source(factory: Callable[..., Algorithm]) -> str | None:
    """`AlgorithmEntry.plugin_source` of ``factory``."""
    module = _factory_module(factory)
    if module is not None and module.split(".")[0] == "jaxbai":
        return None
    if module is None or module == "__main__":
        return "__main__"
    return plugins.source_digest([module]) or f"{module} (no source file)"


class Registry(Mapping[str, AlgorithmEntry]):
    """Name → `AlgorithmEntry`, in registration order."""

    def __init__(self) -> None:
        self._entries: dict[str, AlgorithmEntry] = {}

    def __getitem__(self, name: str) -> AlgorithmEntry:
        try:
            return self._entries[name]
        except KeyError:
            known = list(self._entries)
            raise KeyError(f"unknown algorithm {name!r}; registered: {known}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def get_entry(self, name: str) -> AlgorithmEntry:
        """The entry of ``name``; ValueError naming the registered algorithms otherwise."""
        if name not in self._entries:
            raise ValueError(f"algorithm must be one of {list(self._entries)}, got {name!r}")
        return self._entries[name]

    def _add(self, entry: AlgorithmEntry) -> None:
        self._entries[entry.name] = entry

    def _remove(self, name: str) -> None:
        self.get_entry(name)
        del self._entries[name]


ALGORITHMS = Registry()
"""Every algorithm jaxbai knows, by name (the paper's six, their one-global-episode forms,
TTUCB-DPA, the threshold-aware AdaP-TT* variant, the published code's TTUCB, AdaP-TT and DP-SE,
plus any a user registers)."""


def register(
    name: str,
    factory: Callable[..., Algorithm],
    display_name: str | None = None,
    *,
    published_code_of: str | None = None,
    replace: bool = False,
) -> AlgorithmEntry:
    """Register an algorithm in `ALGORITHMS` (the one way to add an entry).

    Args:
        name: registry key; ``factory().name`` must equal it.
        factory: keyword options → algorithm (satisfying `jaxbai.base.Algorithm`); it must
            build with no arguments. What depends on the options (privacy, ε, bounds) is read
            from the algorithm it builds with them (`AlgorithmEntry.info`).
        display_name: name for figures and reports (default: ``name``).
        published_code_of: the registered paper algorithm it runs as the paper's published
            code does, if it is such a variant.
        replace: allow replacing an existing entry.

    Raises:
        ValueError: the name is taken, the factory's algorithm disagrees with it, or
            ``published_code_of`` is not registered.
    """
    if name in ALGORITHMS and not replace:
        raise ValueError(f"{name!r} is already registered (pass replace=True)")
    if published_code_of is not None:
        ALGORITHMS.get_entry(published_code_of)
    entry = _entry(name, factory, display_name or name, published_code_of)
    ALGORITHMS._add(entry)
    return entry


def unregister(name: str) -> None:
    """Remove ``name`` from `ALGORITHMS`."""
    ALGORITHMS._remove(name)


_BUILT_IN = (
    ("ttucb", toptwo.ttucb, "TTUCB"),
    ("ctb_tt", toptwo.ctb_tt, "CTB-TT"),
    ("gauss_ldp_tt", toptwo.gauss_ldp_tt, "Gauss-LDP-TT"),
    ("adap_tt", toptwo.adap_tt, "AdaP-TT"),
    ("adap_tt_star", toptwo.adap_tt_star, "AdaP-TT*"),
    ("dp_se", dpse.dp_se, "DP-SE"),
    ("ttucb_dpa", toptwo.ttucb_dpa, "TTUCB-DPA"),
    (
        "ttucb_dpa_global",
        functools.partial(toptwo.ttucb_dpa, episodes="global"),
        "TTUCB-DPA (global)",
    ),
    ("adap_tt_global", functools.partial(toptwo.adap_tt, episodes="global"), "AdaP-TT (global)"),
    (
        "adap_tt_star_global",
        functools.partial(toptwo.adap_tt_star, episodes="global"),
        "AdaP-TT* (global)",
    ),
    # A variant beyond the paper (docs/threshold-aware-challenger.md).
    ("adap_tt_star_ratio", toptwo.adap_tt_star_ratio, "AdaP-TT* (W/c challenger)"),
    # Jourdan & Azize (2025): DP-TT and its non-private reference (docs/dp-tt.md).
    ("dp_tt", toptwo.dp_tt, "DP-TT"),
    ("eb_tci", toptwo.eb_tci, "EB-TCI"),
)
_PUBLISHED_CODE = (
    ("ttucb_published", toptwo.ttucb_published, "TTUCB (published code)", "ttucb"),
    ("adap_tt_published", toptwo.adap_tt_published, "AdaP-TT (published code)", "adap_tt"),
    ("dp_se_published", dpse.dp_se_published, "DP-SE (published code)", "dp_se"),
)
for _name, _factory, _display in _BUILT_IN:
    register(_name, _factory, _display)
for _name, _factory, _display, _paper in _PUBLISHED_CODE:
    register(_name, _factory, _display, published_code_of=_paper)
BUILT_IN_NAMES = frozenset(ALGORITHMS)
"""The names of jaxbai's own algorithms (a trial created with one refuses a replacement)."""
