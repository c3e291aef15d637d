"""Large numpy jobs cut into independent pieces and run on every CPU, in threads.

numpy releases the GIL inside its loops (sorting, gathering, comparing), so pieces of one job
(parts of a run file, groups of queries) overlap on several cores without copying anything
between processes. Results come back in the pieces' order; an exception in a piece is raised
in the caller.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

#: At most this many threads: past it the pieces wait on memory bandwidth, not on CPUs.
MAX_THREADS = 4


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the platform says, else all)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def in_threads(work: Callable[[Item], Result], pieces: Sequence[Item]) -> list[Result]:
    """`[work(piece) for piece in pieces]`, the pieces spread over up to `MAX_THREADS` threads
    (one per usable CPU); in the caller's thread when there is one piece or one CPU."""
    threads = min(usable_cpus(), MAX_THREADS, len(pieces))
    if threads <= 1:
        return [work(piece) for piece in pieces]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(work, pieces))
