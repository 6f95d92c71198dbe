"""The one registry of algorithms: name → factory, with the metadata every consumer reads.

`jaxbai.ALGORITHMS` is the registry. The trial (`jaxbai.trial`), the sweep CLI, the experiment
grids, plots and reports read an algorithm's display name, privacy model, participant-side
mechanism, whether it takes ε and which threshold families it offers from its entry, never
from lists of their own. Adding an algorithm is one `register` call with its factory:

Example:
    >>> import dataclasses
    >>> import jaxbai
    >>> def my_adap_tt(**options):
    ...     return dataclasses.replace(jaxbai.adap_tt(beta=0.3, **options), name="my_adap_tt")
    >>> entry = jaxbai.register("my_adap_tt", my_adap_tt, "AdaP-TT (β = 0.3)")
    >>> entry.privacy, entry.takes_epsilon, entry.thresholds
    ('global', True, ('heuristic', 'theory'))
    >>> jaxbai.ALGORITHMS["my_adap_tt"]().beta
    0.3
    >>> jaxbai.unregister("my_adap_tt")

Entries are callable like the factory they hold (``jaxbai.ALGORITHMS["ttucb"](threshold=…)``),
and reject an option the factory does not take. An entry's ``privacy``, ``participant_mechanism``
and ``takes_epsilon`` are those of the algorithm's `jaxbai.base.AlgorithmInfo`; ``episodic`` says
whether it is `jaxbai.base.Episodic`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from jaxbai import dpse, thresholds, toptwo
from jaxbai.base import Algorithm, Episodic

__all__ = [
    "ALGORITHMS",
    "PUBLISHED_VARIANTS",
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
        privacy: trust model, one of ``"none"``, ``"local"``, ``"global"``.
        participant_mechanism: the mechanism participants run (local DP), else None.
        takes_epsilon: whether ε is a parameter (False: the algorithm ignores it).
        thresholds: the stopping-threshold families the factory's ``threshold`` option takes
            (empty if it has none, e.g. DP-SE).
        options: the keyword options of the factory (``("**",)`` when it takes any: a factory
            with ``**options`` validates them itself).
        episodic: whether the algorithm is `jaxbai.base.Episodic` (plans its pulls by episodes,
            Appendix H).

    `fused_refusal` says whether the fused GPU kernel runs the algorithm (docs/semantics.md
    §32), and if not, why.
    """

    name: str
    factory: Callable[..., Algorithm]
    display_name: str
    privacy: str
    participant_mechanism: str | None
    takes_epsilon: bool
    thresholds: tuple[str, ...]
    options: tuple[str, ...]
    episodic: bool

    @functools.cached_property
    def fused_refusal(self) -> str | None:
        """None if ``run_grid(…, kernel="fused")`` runs the default algorithm on a GPU
        (per-sample draws, 4 arms, one δ), else the reason it is refused
        (`jaxbai.engine.fused_unsupported`; computed on first use, by tracing its step).

        Example:
            >>> import jaxbai
            >>> jaxbai.ALGORITHMS["adap_tt"].fused_refusal is None
            True
            >>> "gather" in jaxbai.ALGORITHMS["dp_se"].fused_refusal
            True
        """
        from jaxbai import engine, instances

        jobs = engine.grid_jobs(instances.bernoulli([0.8, 0.6, 0.4, 0.2]), [1.0], [0.01], 1)
        return engine.fused_unsupported(self.factory(), jobs, draws="per_sample")

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


def _entry(name: str, factory: Callable[..., Algorithm], display_name: str) -> AlgorithmEntry:
    """An entry whose metadata is read from the algorithm the factory builds by default."""
    parameters = inspect.signature(factory).parameters.values()
    options = tuple(
        "**" if p.kind is inspect.Parameter.VAR_KEYWORD else p.name
        for p in parameters
        if p.kind is not inspect.Parameter.VAR_POSITIONAL
    )
    alg = factory()
    if alg.name != name:
        raise ValueError(f"factory for {name!r} builds an algorithm named {alg.name!r}")
    return AlgorithmEntry(
        name=name,
        factory=factory,
        display_name=display_name,
        privacy=alg.info.privacy,
        participant_mechanism=alg.info.participant_mechanism,
        takes_epsilon=alg.info.takes_epsilon,
        thresholds=thresholds.THRESHOLD_FAMILIES if _takes_threshold(options, alg) else (),
        options=options,
        episodic=isinstance(alg, Episodic),
    )


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

    def register(
        self,
        name: str,
        factory: Callable[..., Algorithm],
        display_name: str | None = None,
        *,
        replace: bool = False,
    ) -> AlgorithmEntry:
        """Add ``factory`` under ``name`` (see `register`)."""
        if name in self._entries and not replace:
            raise ValueError(f"{name!r} is already registered (pass replace=True)")
        entry = _entry(name, factory, display_name or name)
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove ``name``."""
        self.get_entry(name)
        del self._entries[name]


ALGORITHMS = Registry()
"""Every algorithm jaxbai knows, by name (the paper's six, their one-global-episode forms,
TTUCB-DPA, the threshold-aware AdaP-TT* variant, the published code's TTUCB, AdaP-TT and DP-SE,
plus any a user registers)."""


PUBLISHED_VARIANTS = {
    "ttucb": "ttucb_published",
    "adap_tt": "adap_tt_published",
    "dp_se": "dp_se_published",
}
"""Each paper algorithm that the code published with the paper implements → the registered
variant that runs it as that code does (docs/published-code.md). The published code has no
CTB-TT, Gaussian-mechanism TTUCB or AdaP-TT*."""


def register(
    name: str,
    factory: Callable[..., Algorithm],
    display_name: str | None = None,
    *,
    replace: bool = False,
) -> AlgorithmEntry:
    """Register an algorithm in `ALGORITHMS`; its metadata is read from ``factory()``.

    Args:
        name: registry key; ``factory().name`` must equal it.
        factory: keyword options → algorithm (satisfying `jaxbai.base.Algorithm`); it must
            build with no arguments.
        display_name: name for figures and reports (default: ``name``).
        replace: allow replacing an existing entry.

    Raises:
        ValueError: the name is taken, or the factory's algorithm disagrees with it.
    """
    return ALGORITHMS.register(name, factory, display_name, replace=replace)


def unregister(name: str) -> None:
    """Remove ``name`` from `ALGORITHMS`."""
    ALGORITHMS.unregister(name)


for _name, _factory, _display in (
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
    # The algorithms of the paper's published code (docs/published-code.md).
    ("ttucb_published", toptwo.ttucb_published, "TTUCB (published code)"),
    ("adap_tt_published", toptwo.adap_tt_published, "AdaP-TT (published code)"),
    ("dp_se_published", dpse.dp_se_published, "DP-SE (published code)"),
):
    register(_name, _factory, _display)
