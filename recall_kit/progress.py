"""Progress bars on stderr, only when stderr is a terminal (rich comes with typer)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(total: int, description: str, show: bool | None = None) -> Iterator[Callable[[int], None]]:
    """Yield `advance(n)`. `show=None` shows the bar only when stderr is a terminal."""
    if show is None:
        show = sys.stderr.isatty()
    if not show or total <= 0:
        yield _ignore
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=Console(stderr=True), transient=True,
    ) as progress:
        task = progress.add_task(description, total=total)

        def advance(steps: int = 1) -> None:
            progress.advance(task, steps)

        yield advance


def _ignore(steps: int = 1) -> None:
    """advance() when no bar is shown."""
