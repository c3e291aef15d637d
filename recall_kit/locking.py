"""One writer at a time: an advisory lock on a small file beside what a command writes.

`exclusive_lock` takes `flock` on a plain lock file (never through a link) and writes who holds
it; the system releases it when its process ends however it ends, so a lock left by a killed
process is simply taken. A lock a live process holds is refused naming that process. Where the
system has no `fcntl` (Windows) no lock is taken. The study's run and the label server use it.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def _holder(handle: int) -> str:
    """Who holds the lock, as its holder wrote it ("process 123 on host, since ..."), read from `handle`."""
    for _ in range(20):  # the holder writes its line just after it takes the lock
        os.lseek(handle, 0, os.SEEK_SET)
        text = os.read(handle, 4096).decode("utf-8", "replace")
        try:
            data = json.loads(text)
        except ValueError:
            time.sleep(0.05)
            continue
        if isinstance(data, dict):
            return f"process {data.get('pid')} on {data.get('host')}, since {data.get('started')}"
    return "a process that has not said which"


class HeldLock:
    """A lock taken by `take_lock`, held until `release` (or its process ends)."""

    def __init__(self, handle: int | None) -> None:
        self.handle = handle

    def release(self) -> None:
        if self.handle is None:
            return
        handle, self.handle = self.handle, None
        try:
            os.ftruncate(handle, 0)
        finally:
            os.close(handle)  # closing releases the lock


def take_lock(path: Path, refuse: Callable[[str], Exception]) -> HeldLock:
    """Take the lock on `path` now, or raise ``refuse(holder)`` (holder: "process 123 on host,
    since ...") when a live process holds it, or ``refuse("a link")`` when `path` is a link; a lock
    file that cannot be made (a read-only folder) is an `OutputError` naming the folder."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return HeldLock(None)
    if path.is_symlink():
        raise refuse("a link")
    try:
        handle = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as error:  # a read-only folder or disk, a full one: no other process is named
        from recall_kit.errors import OutputError

        raise OutputError(f"{path.parent}: cannot make the lock file {path.name} there "
                          f"({error.strerror or type(error).__name__}); make the folder writable, or choose "
                          "another.") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = _holder(handle)
        os.close(handle)
        raise refuse(holder) from None
    os.ftruncate(handle, 0)
    os.write(handle, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "started": time.strftime("%Y-%m-%dT%H:%M:%S")}).encode())
    return HeldLock(handle)


@contextmanager
def exclusive_lock(path: Path, refuse: Callable[[str], Exception]) -> Iterator[None]:
    """Hold the lock on `path` for the block (see `take_lock`)."""
    held = take_lock(path, refuse)
    try:
        yield
    finally:
        held.release()
