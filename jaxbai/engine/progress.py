"""Progress of engine grids: one bar with the stage, the runs done, samples/s and an ETA.

`Progress` is one `tqdm.auto` bar (one line in a terminal, one updating widget in a notebook)
over the runs of one grid (`jaxbai.engine.run_grid` with ``progress=True``) or of several (a
sweep passes its own bar to every grid). Its description names the stage: ``compiling``
until the first chunk of a grid returns, then ``running``; a caller may add its own (a sweep:
``writing figures and report``). "elapsed" counts from the bar's start, compilation included.

The rate is the samples the running jobs drew per second (idle lanes draw none), measured on the
chunks that ran without compiling (`Measured`). The ETA is the current grid's (`grid_eta`): the
samples still to draw at that rate, or the longest run left at one lane's rate if that is longer
(the tail of a grid; a lower bound on the tail, see `grid_eta`). Once the runs left have drawn
what was expected of them (a long tail: a few runs far beyond the others), the estimate says
nothing about when they stop, and the bar shows ``ETA unknown (tail past its estimate)`` rather
than a time. The samples still to draw
are estimated (`expected_samples`): each unfinished run's `jaxbai.engine.predicted_cost`
scaled by the samples per unit of cost of the runs already finished (restored ones included),
capped at the budget. Until a run has finished, and until a chunk has run after compilation,
there is no honest estimate and the bar shows none.
"""

from __future__ import annotations

import io
import math
import os
import sys
import time
import warnings
from types import TracebackType
from typing import NamedTuple

import numpy as np

__all__ = ["Measured", "Progress", "eta_seconds", "expected_samples", "grid_eta"]


def eta_seconds(
    samples_done: float, elapsed: float, samples_remaining: float | None
) -> float | None:
    """Seconds left: ``samples_remaining`` at the rate ``samples_done / elapsed`` (samples drawn
    in ``elapsed`` seconds since compilation ended); None without an honest estimate (nothing
    measured yet, or the remaining samples unknown).

    Examples:
        >>> eta_seconds(1e6, 2.0, 3e6), eta_seconds(0, 0.0, 3e6), eta_seconds(1e6, 2.0, None)
        (6.0, None, None)
    """
    if samples_remaining is None or not samples_done > 0 or not elapsed > 0:
        return None
    rate = samples_done / elapsed
    return max(float(samples_remaining), 0.0) / rate if math.isfinite(rate) else None


def expected_samples(
    cost: np.ndarray, tau: np.ndarray, done: np.ndarray, unfinished: np.ndarray, max_samples: int
) -> np.ndarray | None:
    """Expected samples of the ``unfinished`` runs (indices; a shared trajectory: its first
    run's): their predicted ``cost`` times the samples per unit of cost of the ``done`` runs
    (their ``tau``), at most ``max_samples``; None before a run has finished.

    Examples:
        >>> expected_samples(np.array([1.0, 4.0, 2.0]), np.array([50, 0, 0]),
        ...                  np.array([True, False, False]), np.array([1, 2]), 150).tolist()
        [150.0, 100.0]
    """
    cost = np.asarray(cost, np.float64)
    finished = float(cost[done].sum())
    if not finished > 0:
        return None
    per_cost = float(np.asarray(tau, np.float64)[done].sum()) / finished
    return np.minimum(cost[unfinished] * per_cost, float(max_samples))


class Measured(NamedTuple):
    """What the chunks that ran an already compiled program drew, and in how long.

    Attributes:
        seconds: their wall time.
        pool: samples drawn by the jobs running in the lane pool (idle lanes draw none).
        lane: samples one lane can draw (its steps).
    """

    seconds: float = 0.0
    pool: int = 0
    lane: int = 0

    def add(self, seconds: float, pool: int, lane: int) -> Measured:
        """These measures and one more chunk's."""
        return Measured(self.seconds + seconds, self.pool + pool, self.lane + lane)

    def rate(self) -> float | None:
        """Samples drawn by the running jobs per second (None: nothing measured yet)."""
        return self.pool / self.seconds if self.seconds > 0 and self.pool > 0 else None


def grid_eta(
    expected: np.ndarray | None, worked: tuple[float, float], measured: Measured
) -> float | None:
    """The grid's ETA: the larger of all the work left at the measured rate and the longest run
    left at one lane's rate (the tail, where few lanes are busy). None as `eta_seconds`, and
    when no run is left.

    The tail part is a lower bound for the expected longest run: it counts that run as having
    drawn ``worked[1]``, the steps of a lane since the grid started, and a run that started
    later has drawn fewer. Once the runs left have drawn all that was expected of them, together,
    the estimate is spent and the ETA unknown: ``inf`` (`Progress` says so), never 0 while runs
    remain. (The longest run alone is no such sign: a lane's steps count every job it ran.)

    Args:
        expected: `expected_samples` of the unfinished runs (None: unknown; empty: none left).
        worked: samples drawn so far by the unfinished runs (those in the lanes) and the steps of
            one lane: the part of ``expected`` already done, of all of it and of its longest.
        measured: the chunks that ran without compiling.

    Examples:
        >>> grid_eta(np.array([100.0, 300.0]), (50.0, 100.0), Measured(1.0, 200, 100))
        2.0
        >>> grid_eta(np.array([100.0, 300.0]), (450.0, 400.0), Measured(1.0, 200, 100))
        inf
    """
    if expected is None or not len(expected):
        return None
    left = (float(expected.sum()) - worked[0], float(expected.max()) - worked[1])
    pool = eta_seconds(measured.pool, measured.seconds, left[0])
    lane = eta_seconds(measured.lane, measured.seconds, left[1])
    if pool is None or lane is None:
        return None
    return math.inf if left[0] <= 0 else max(pool, lane)


def _shape() -> dict[str, object]:
    """tqdm's size options: the terminal's size, followed as it changes; 100 × 24 on a terminal
    that reports none (a bare pseudo-terminal, where tqdm would hide the bar)."""
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except Exception:  # not a terminal (a pipe, a notebook): tqdm's defaults
        return {"dynamic_ncols": True}
    return {"dynamic_ncols": True} if min(size) > 0 else {"ncols": 100, "nrows": 24}


def _in_kernel() -> bool:
    """Whether this runs in a Jupyter kernel (a notebook)."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def _tqdm():
    """`tqdm.auto`'s bar class (a widget in a notebook, a text line elsewhere); in a notebook
    without widgets, the text bar as one output updated in place."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from tqdm.auto import tqdm
        from tqdm.notebook import tqdm as widget_bar
    from tqdm.std import tqdm as text_bar

    if issubclass(tqdm, widget_bar) or not _in_kernel():
        return tqdm

    class OneOutput(text_bar):
        """tqdm's text bar shown in one notebook output (``display_id``), not one per write."""

        def __init__(self, *args: object, **kwargs: object) -> None:
            from IPython.display import display

            self._output = display({"text/plain": ""}, raw=True, display_id=True)
            super().__init__(*args, file=io.StringIO(), ascii=False, **kwargs)

        def display(self, msg: str | None = None, pos: int | None = None) -> bool:
            self._output.update({"text/plain": str(self) if msg is None else msg}, raw=True)
            return True

    return OneOutput


class Progress:
    """One progress bar over the runs of one or several grids (see the module's docstring).

    Args:
        total_runs: the runs of every grid this bar follows.
        enabled: False: a bar that shows nothing.
        label: the description's prefix (e.g. ``"process 1/4: "``).

    Use it as a context manager (or call `close`); `stage`, `note`, `start_grid` and `update`
    do nothing on a disabled bar.
    """

    def __init__(self, total_runs: int, *, enabled: bool = True, label: str = "") -> None:
        self.label, self.name = label, ""
        self._base = self._runs = 0
        self._bar = None
        if enabled:
            self._bar = _tqdm()(
                total=int(total_runs),
                bar_format="{desc} {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} runs "
                "[{elapsed}{postfix}]",
                desc=f"{label}starting",
                **_shape(),
            )

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, kind: type | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    @property
    def shown(self) -> bool:
        """Whether the bar shows anything (enabled and not closed)."""
        return self._bar is not None

    def stage(self, text: str, postfix: str | None = None) -> None:
        """Show ``text`` as the stage (after the grid's name, if one is set), and ``postfix``
        after the counts if given (``""``: none)."""
        if self._bar is None:
            return
        if postfix is not None:
            self._bar.set_postfix_str(postfix, refresh=False)
        self._bar.set_description_str(f"{self.label}{self.name}{': ' if self.name else ''}{text}")

    def note(self, text: str) -> None:
        """One line above the bar."""
        if self._bar is not None:
            type(self._bar).write(text, file=sys.stderr)

    def start_grid(self, runs: int, done: int) -> None:
        """A grid of ``runs`` runs, ``done`` of them restored (named by ``name``, if set)."""
        self._base, self._runs = self._runs, self._runs + int(runs)
        self.stage("compiling", postfix="")
        self.update(done)

    def update(self, done: int, samples: int = 0, rate: float | None = None, eta=None) -> None:
        """``done`` runs of the current grid finished; ``samples`` drawn in this call at
        ``rate`` samples/s (None: not measured yet); ``eta`` in seconds (None: not estimated
        yet, ``inf``: the runs left are past their estimate, `grid_eta`)."""
        if self._bar is None:
            return
        parts = [f"{samples:.3g} samples"] if samples else []
        if rate is not None:
            parts.append(f"{rate:.3g} samples/s")
        if eta == math.inf:
            parts.append("ETA unknown (tail past its estimate)")
        elif eta is not None:
            parts.append(f"ETA ~{self._bar.format_interval(eta)} (estimate)")
        self._bar.n = self._base + int(done)
        self._bar.set_postfix_str(", ".join(parts), refresh=False)
        now = time.time()
        if now - self._bar.last_print_t >= self._bar.mininterval or self._bar.n >= self._runs:
            self._bar.refresh()
            self._bar.last_print_t = now

    def close(self) -> None:
        """Leave the bar as it is (a line in a terminal) and stop updating it."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
