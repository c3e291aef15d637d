"""Atomic file writes: a result, a run or a dataset file is whole or absent, never half-written."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def user_mode(folder: bool = False) -> int:
    """The permissions a new file (0666) or folder (0777) gets under the user's umask. Temporary
    files and folders start private (0600/0700); outputs get these before they are moved into place."""
    umask = os.umask(0)
    os.umask(umask)
    return (0o777 if folder else 0o666) & ~umask


@contextmanager
def atomic_open(path: str | Path, mode: str = "w", private: bool = False) -> Iterator[IO[Any]]:
    """Open a temporary file beside `path`; on success move it into place, on error remove it.

    The file gets the user's umask (as `open` would), or stays 0600 with `private` (caches derived
    from memory text, such as embeddings)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        if not private:
            os.chmod(temporary, user_mode())
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(handle, mode, encoding=encoding) as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_open(path) as stream:
        stream.write(text)


def write_json_atomic(path: str | Path, data: Any) -> None:
    with atomic_open(path) as stream:
        json.dump(data, stream, indent=2, ensure_ascii=False, allow_nan=False)
        stream.write("\n")


def write_jsonl_atomic(path: str | Path, rows: Any) -> None:
    with atomic_open(path) as stream:
        for row in rows:
            stream.write(json.dumps(row, ensure_ascii=False) + "\n")
