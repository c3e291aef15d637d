"""One progress display on stderr: a live line on a terminal, a plain line every few seconds elsewhere.

A run opens one display (`progress_display`); what happens next replaces the line in stages:
"dense: loading the model", "dense: embedding 5,000 memories" (a bar), "dense: searching 120
queries", "dense: timing 120 single queries". A plugin reports its own stages with `stage()` or
`progress_bar()`; outside a run's display, `progress_bar` draws a bar of its own and `stage` does
nothing.

Long work says where it is with `steps()`: a sweep's leg searches ("leg search 2 of 5: dense
(dense.model=x)"), a run's legs, a leg's scopes. Nested steps read left to right, and their
position gives the share done, from which the line shows the time elapsed and an estimate of the
time left. When stderr is not a terminal (CI, a log file, `2> log`), the same line is printed
plainly every RECALL_KIT_PROGRESS_INTERVAL seconds (default 10), as pip does; nothing is printed
by work that ends before the first interval.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from recall_kit.masking import mask_secrets

_DEFAULT_INTERVAL = 10.0
#: The display's clock (a test sets its own).
_clock = time.monotonic


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class _SmoothedRate:
    """The work's rate as tqdm measures it: exponential moving averages of the share done between
    two samples and of the seconds between them, their ratio the rate (tqdm's `smoothing`, 0.3:
    the newest sample weighs 30%). At a steady rate the estimate left only counts down; a change of
    pace moves it over a few samples instead of at once, and a burst of tiny samples (a bar's
    every step) cannot swing it, as one ratio of averages rather than an average of ratios."""

    SMOOTHING = 0.3
    #: Progress made sooner than this after the last sample waits for the next (tqdm's mininterval):
    #: a bar's steps a few microseconds apart are not samples of their own.
    MIN_SECONDS = 0.1

    def __init__(self) -> None:
        self.done: float | None = None
        self.seconds: float | None = None

    def sample(self, done: float, seconds: float) -> None:
        if done <= 0 or seconds < 0:  # no progress or a clock that went back: not a sample
            return
        weight = self.SMOOTHING
        self.done = done if self.done is None else weight * done + (1 - weight) * self.done
        self.seconds = seconds if self.seconds is None else weight * seconds + (1 - weight) * self.seconds

    def rate(self) -> float | None:
        """Share of the work per second (None before the first sample or when none took time)."""
        if self.done is None or not self.seconds:
            return None
        return self.done / self.seconds


class _Display:
    """The run's one progress line: where (nested steps), what (a stage), a count, and the time."""

    def __init__(self) -> None:
        self.started = _clock()
        self.levels: list[list[Any]] = []  # [label, number, total] per open steps() level
        self.description = "starting"
        self.total: float | None = None
        self.completed: float = 0
        self.reached: tuple[float, float] = (0.0, self.started)  # the share done, and when it was reached
        self.pace = _SmoothedRate()

    # -- the state -------------------------------------------------------------------------------

    def stage(self, description: str, total: int | None) -> Callable[[int], None]:
        # A stage or step may name a leg with its options: a secret in them is masked.
        self.description, self.total, self.completed = mask_secrets(description), total, 0
        self.changed()

        def advance(steps: int = 1) -> None:
            self.completed += steps
            self.changed()

        return advance

    def snapshot(self) -> tuple[str, float | None, float]:
        return self.description, self.total, self.completed

    def restore(self, snapshot: tuple[str, float | None, float]) -> None:
        self.description, self.total, self.completed = snapshot
        self.changed()

    def share_done(self) -> float:
        """The share of the work done, from the open steps' positions and the bar's count within
        the innermost one (0 when there are none)."""
        share, width = 0.0, 1.0
        for _, number, total in self.levels:
            if total <= 0:
                return share
            share += width * max(0, number - 1) / total  # a level opened, its first step not begun: 0
            width /= total
        if self.total:
            share += width * min(1.0, max(0.0, self.completed / self.total))
        return share

    def where(self) -> str:
        return " > ".join(f"{label}" for label, _, _ in self.levels if label)

    def note_progress(self) -> None:
        """Record the share done now, if it grew: one sample of the smoothed rate. (The share falls
        back for a moment when a bar ends and the stage before it comes back, or a nested level
        closes before the next step begins: not a sample, and the estimate does not jump up.)"""
        now = _clock()
        share = self.share_done()
        if share > self.reached[0] and now - self.reached[1] >= _SmoothedRate.MIN_SECONDS:
            self.pace.sample(share - self.reached[0], now - self.reached[1])
            self.reached = (share, now)

    def timing(self) -> str:
        """"1m10s elapsed, about 2m10s left": the time left is the share still to do at the smoothed
        rate (`_SmoothedRate`), less the time since that share was reached; while the rate holds it
        counts down, and a step slower than the ones before moves it by a part, not all at once."""
        now = _clock()
        text = f"{_duration(now - self.started)} elapsed"
        self.note_progress()
        share, when = self.reached
        rate = self.pace.rate()
        if share > 0 and rate:
            left = (1.0 - share) / rate - (now - when)
            if left >= 1.0 or share >= 1.0:  # no "about 0s left" while work remains: the pace is stale
                text += f", about {_duration(max(0.0, left))} left"
        return text

    def line(self) -> str:
        """The whole line as a plain display prints it."""
        where = self.where()
        text = f"{where} > {self.description}" if where else self.description
        if self.total:
            text += f" {int(self.completed):,}/{int(self.total):,}"
        return f"recall-kit: {text} ({self.timing()})"

    # -- drawing (a subclass draws; the base draws nothing) --------------------------------------

    def changed(self) -> None:
        """The state changed: redraw if the display draws on change."""

    def close(self) -> None:
        """Stop drawing."""


class _LiveDisplay(_Display):
    """rich's live line on a terminal: where and what, a bar with its count, elapsed and left."""

    def __init__(self, progress: Any) -> None:
        super().__init__()
        self.progress = progress
        self.task = progress.add_task("starting", total=None, timing="", count="")

    def changed(self) -> None:
        where = self.where()
        description = f"{where} > {self.description}" if where else self.description
        count = f"{int(self.completed):,}/{int(self.total):,}" if self.total else ""
        self.progress.update(self.task, description=description, total=self.total, completed=self.completed,
                             timing=self.timing(), count=count)


class _PlainDisplay(_Display):
    """A plain line to a stream every `interval` seconds, from a daemon thread: a log keeps a record
    and a CI job that kills silent jobs sees the run is alive."""

    def __init__(self, stream: TextIO, interval: float) -> None:
        super().__init__()
        self.stream = stream
        self.interval = interval
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._tick, name="recall-kit-progress", daemon=True)
        self.thread.start()

    def _tick(self) -> None:
        while not self.stopped.wait(self.interval):
            try:
                print(self.line(), file=self.stream, flush=True)
            except (OSError, ValueError):  # the stream was closed under us
                return

    def close(self) -> None:
        self.stopped.set()
        self.thread.join()


_current: _Display | None = None


def _interval() -> float:
    value = os.environ.get("RECALL_KIT_PROGRESS_INTERVAL", "")
    try:
        return max(0.05, float(value)) if value else _DEFAULT_INTERVAL
    except ValueError:
        return _DEFAULT_INTERVAL


def _columns(counted: bool = False) -> list[Any]:
    """The live line's columns; `counted`: the count is rich's own (a bar outside a run's display),
    else the display's `count` field, empty for a stage without a total (never "0/?")."""
    from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn

    count = MofNCompleteColumn() if counted else TextColumn("{task.fields[count]}")
    return [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=16), count,
            TextColumn("{task.fields[timing]}")]


@contextmanager
def progress_display(show: bool | None = None) -> Iterator[None]:
    """Open the run's one display (`show=None` or True): a live line when stderr is a terminal, a
    plain line every few seconds otherwise; `show=False`: nothing. Nested calls reuse the display
    already open."""
    global _current
    if show is False or _current is not None:
        yield
        return
    if not sys.stderr.isatty():  # a live line needs a terminal: print plain lines instead
        display: _Display = _PlainDisplay(sys.stderr, _interval())
        _current = display
        try:
            yield
        finally:
            _current = None
            display.close()
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(*_columns(), console=Console(stderr=True), transient=True) as progress:
        _current = _LiveDisplay(progress)
        try:
            yield
        finally:
            _current = None


@contextmanager
def steps(total: int, label: str = "") -> Iterator[Callable[..., None]]:
    """A level of "k of n" in the display: yields `begin(name="", number=None)`, called as each of
    the `total` steps starts ("leg search 2 of 5: dense (as given)"; `number`: this step's number,
    default the next). Does nothing without a display."""
    display = _current
    if display is None or total < 1:
        yield _ignore_label
        return
    level: list[Any] = ["", 0, total]
    display.levels.append(level)

    def begin(name: str = "", number: int | None = None) -> None:
        level[1] = level[1] + 1 if number is None else number
        count = f"{label} {level[1]} of {total}" if label else f"{level[1]} of {total}"
        level[0] = f"{count}: {mask_secrets(name)}" if name else count
        display.note_progress()
        display.changed()

    try:
        yield begin
    finally:
        display.levels.remove(level)
        display.changed()


def stage(description: str, total: int | None = None) -> Callable[[int], None]:
    """Say what the run is doing now (`total`: steps of a bar; None: a spinner only); return
    `advance(n)`. Does nothing when no display is open, so plugins may call it freely."""
    if _current is None:
        return _ignore
    return _current.stage(description, total)


@contextmanager
def progress_bar(total: int, description: str, show: bool | None = None) -> Iterator[Callable[[int], None]]:
    """Yield `advance(n)`. Inside a run's display this is one of its stages (the stage before it
    comes back after); otherwise a bar of its own, shown when `show` (None: when stderr is a
    terminal)."""
    if _current is not None:
        display = _current
        before = display.snapshot()
        yield display.stage(description, total)
        display.restore(before)
        return
    if show is None:
        show = sys.stderr.isatty()
    if not show or total <= 0:
        yield _ignore
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(*_columns(counted=True), console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(description, total=total, timing="")

        def advance(steps: int = 1) -> None:
            progress.advance(task, steps)

        yield advance


def _ignore(steps: int = 1) -> None:
    """advance() when no bar is shown."""


def _ignore_label(name: str = "", number: int | None = None) -> None:
    """begin() when no display is open."""
