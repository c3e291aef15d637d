"""Atomic file writes: a result, a run or a dataset file is whole or absent, never half-written."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any

from recall_kit.errors import OutputError

#: Set inside `atomic_batch()`: finished temporaries wait there, (temporary, target), to be moved together.
_batch: ContextVar[list[tuple[str, Path]] | None] = ContextVar("recall_kit_atomic_batch", default=None)


@contextmanager
def atomic_batch() -> Iterator[None]:
    """Every `atomic_open` inside moves into place only when the block ends without error, so a
    command's outputs (a result JSON and its TREC run; an ablation's variants and its index) are
    all written or none is. On error or interrupt (Ctrl-C, SIGTERM) every temporary is removed."""
    if _batch.get() is not None:  # nested: the outer batch commits
        yield
        return
    pending: list[tuple[str, Path]] = []
    token = _batch.set(pending)
    try:
        yield
    except BaseException:
        for temporary, _ in pending:
            _unlink(temporary)
        raise
    finally:
        _batch.reset(token)
    moved = 0
    try:
        for temporary, target in pending:
            os.replace(temporary, target)
            moved += 1
    finally:
        for temporary, _ in pending[moved:]:
            _unlink(temporary)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


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
    if target.is_dir():
        raise OutputError(f"{target}: is a folder; give a file path to write.")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as error:
        raise OutputError(f"{target}: cannot write ({error.strerror or type(error).__name__}).") from None
    try:
        if not private:
            os.chmod(temporary, user_mode())
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(handle, mode, encoding=encoding) as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        pending = _batch.get()
        if pending is None:
            os.replace(temporary, target)
        else:
            pending.append((temporary, target))
    except BaseException as error:
        _unlink(temporary)
        if isinstance(error, OSError) and error.filename in (None, temporary, str(target)):
            # Disk full, quota, a folder in the way: name the file, not just the errno.
            raise OutputError(f"{target}: cannot write ({error.strerror or type(error).__name__}).") from error
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


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(".")


def _probe_folder(flag: str, folder: Path, target: Path) -> None:
    """Fail now, not after the run, when `target` cannot be created under `folder`."""
    existing = _nearest_existing(folder)
    if not existing.is_dir():
        raise OutputError(f"{flag} {target}: {existing} is a file, not a folder.")
    try:
        handle, probe = tempfile.mkstemp(prefix=".recall-kit-probe.", suffix=".tmp", dir=existing)
    except OSError as error:
        raise OutputError(f"{flag} {target}: cannot write in {existing} ({error.strerror}).") from None
    os.close(handle)
    _unlink(probe)


def check_outputs(
    files: Mapping[str, str | Path | None],
    folders: Mapping[str, str | Path | None] | None = None,
    inputs: Mapping[str, str | Path | None] | None = None,
) -> None:
    """Before any work: every output file (by flag) is not a folder and can be written; every output
    folder is not a file and can be written in; no two outputs, and no output and input, are one path.
    Raises OutputError naming the flags."""
    seen: dict[Path, str] = {}
    for flag, given in (inputs or {}).items():
        if given is not None:
            seen[Path(given).resolve()] = flag
    for flag, given in [*files.items(), *(folders or {}).items()]:
        if given is None:
            continue
        resolved = Path(given).resolve()
        if resolved in seen:
            raise OutputError(f"{seen[resolved]} and {flag} name the same path {given}; give each its own.")
        seen[resolved] = flag
    for flag, given in files.items():
        if given is None:
            continue
        target = Path(given)
        if target.is_dir():
            raise OutputError(f"{flag} {target}: is a folder; give a file path to write.")
        _probe_folder(flag, target.parent, target)
    for flag, given in (folders or {}).items():
        if given is None:
            continue
        folder = Path(given)
        if folder.exists() and not folder.is_dir():
            raise OutputError(f"{flag} {folder}: is a file; give a folder to write in.")
        _probe_folder(flag, folder, folder)


def cache_root() -> Path:
    """The user's recall-kit cache folder: `$RECALL_KIT_CACHE`, else the platform's user cache
    folder + `recall-kit` (Linux: `$XDG_CACHE_HOME` or `~/.cache`; macOS: `~/Library/Caches`;
    Windows: `%LOCALAPPDATA%`). Caches live there, never inside a repository."""
    override = os.environ.get("RECALL_KIT_CACHE")
    if override:
        return Path(override).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "recall-kit"
