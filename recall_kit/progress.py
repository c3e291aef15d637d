"""One progress display on stderr, shown only when stderr is a terminal (rich comes with typer).

A run opens one display (`progress_display`); what happens next replaces the line in stages:
"dense: loading the model", "dense: embedding 5,000 memories" (a bar), "dense: searching 120
queries", "dense: timing 120 single queries". A plugin reports its own stages with `stage()` or
`progress_bar()`; outside a run's display, `progress_bar` draws a bar of its own and `stage` does
nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class _Display:
    """The run's one progress line: a description, and a bar when the stage has a total."""

    def __init__(self, progress: Any) -> None:
        self.progress = progress
        self.task = progress.add_task("Starting", total=None)

    def stage(self, description: str, total: int | None) -> Callable[[int], None]:
        self.progress.reset(self.task, total=total, description=description)

        def advance(steps: int = 1) -> None:
            self.progress.advance(self.task, steps)

        return advance

    def snapshot(self) -> tuple[str, float | None, float]:
        task = self.progress.tasks[0]
        return task.description, task.total, task.completed

    def restore(self, snapshot: tuple[str, float | None, float]) -> None:
        description, total, completed = snapshot
        self.progress.reset(self.task, total=total, description=description)
        self.progress.update(self.task, completed=completed)


_current: _Display | None = None


def _columns() -> list[Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn

    return [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn()]


@contextmanager
def progress_display(show: bool | None = None) -> Iterator[None]:
    """Open the run's one display (`show=None`: only when stderr is a terminal). Nested calls reuse
    the display already open."""
    global _current
    if show is None:
        show = sys.stderr.isatty()
    if not show or _current is not None:
        yield
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(*_columns(), console=Console(stderr=True), transient=True) as progress:
        _current = _Display(progress)
        try:
            yield
        finally:
            _current = None


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

    with Progress(*_columns(), console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(description, total=total)

        def advance(steps: int = 1) -> None:
            progress.advance(task, steps)

        yield advance


def _ignore(steps: int = 1) -> None:
    """advance() when no bar is shown."""
