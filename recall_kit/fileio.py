"""Atomic file writes: a result, a run or a dataset file is whole or absent, never half-written."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import IO, Any

from recall_kit.errors import OutputError

#: Set inside `atomic_batch()`: finished temporaries wait there, (temporary, target), to be moved together.
_batch: ContextVar[list[tuple[str, Path]] | None] = ContextVar("recall_kit_atomic_batch", default=None)


def in_atomic_batch() -> bool:
    """Whether this code runs inside `atomic_batch()` (its writes wait for the batch to end)."""
    return _batch.get() is not None


@contextmanager
def atomic_batch() -> Iterator[None]:
    """Every `atomic_open` inside moves into place only when the block ends without error, so a
    command's outputs (a result JSON and its TREC run; an ablation's variants and its index) are
    all written or none is. On error or interrupt (Ctrl-C, SIGTERM) every temporary is removed."""
    if _batch.get() is not None:  # nested: the outer batch commits
        yield
        return
    pending: list[tuple[str, Path]] = []
    created: list[Path] = []
    token = _batch.set(pending)
    folders_token = _created_folders.set(created)
    try:
        yield
    except BaseException:
        for temporary, _ in pending:
            _unlink(temporary)
            _private_temporaries.discard(temporary)
        _remove_created(created)  # a full disk must not leave the output folder behind, empty
        raise
    finally:
        _batch.reset(token)
        _created_folders.reset(folders_token)
    moved = 0
    try:
        with _signals_held():  # a signal between two moves would leave some outputs without the others
            for temporary, target in pending:
                os.replace(temporary, target)
                moved += 1
                if temporary not in _private_temporaries:
                    _written.append(target)
                _private_temporaries.discard(temporary)
    finally:
        for temporary, _ in pending[moved:]:
            _unlink(temporary)


#: The signals held while a batch's temporaries move into place (delivered right after).
_HELD_SIGNALS = {signal.SIGINT, signal.SIGTERM, *((signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ())}


@contextmanager
def _signals_held() -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and SIGHUP for the few renames that commit a batch; they arrive after.

    Python-level handlers (not a thread's signal mask: a process-directed signal would go to any
    other thread, and Python would still raise in the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous: dict[int, Any] = {}
    for number in _HELD_SIGNALS:
        handler = signal.getsignal(number)
        if handler is None or handler is signal.SIG_IGN:
            continue  # set outside Python, or ignored: leave it alone
        previous[number] = signal.signal(number, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in dict.fromkeys(received):
            signal.raise_signal(number)  # now, to the handler that was there


#: What this command put in place (atomic writes; private caches left out) and what it keeps as it
#: goes (a judging journal, path -> what it holds): an interrupted command says what is on disk.
_written: list[Path] = []
_kept: dict[Path, str] = {}
#: Temporaries of private (cache) writes waiting in a batch: not outputs the user asked for.
_private_temporaries: set[str] = set()


def begin_command() -> None:
    """Forget what an earlier command in this process wrote (the CLI calls it as a command starts)."""
    _written.clear()
    _kept.clear()


def keep_on_interrupt(path: Path, holds: str) -> None:
    """`path` is written as the command goes (an append-only journal) and stays when it is
    interrupted: the interrupt's message names it and says what it `holds`."""
    _kept[Path(path)] = holds


def on_disk_so_far() -> tuple[list[Path], dict[Path, str]]:
    """The outputs this command finished that are still in place (not a step's folder since
    removed), and the files it keeps as it goes."""
    written = [path for path in dict.fromkeys(_written) if path.exists() and path not in _kept]
    return written, {path: holds for path, holds in _kept.items() if path.exists()}


#: Set inside `atomic_batch()`: the folders its writes created, removed again if the batch fails.
_created_folders: ContextVar[list[Path] | None] = ContextVar("recall_kit_created_folders", default=None)


def make_parents(target: Path) -> list[Path]:
    """Create `target`'s missing parent folders; return those created, outermost first."""
    missing = [folder for folder in (target.parent, *target.parent.parents) if not folder.exists()]
    target.parent.mkdir(parents=True, exist_ok=True)
    return missing[::-1]


def _remove_created(folders: list[Path]) -> None:
    """Remove the folders a failed write created, innermost first, if they are empty."""
    for folder in reversed(folders):
        try:
            folder.rmdir()
        except OSError:
            pass


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
def atomic_open(path: str | Path, mode: str = "w", private: bool = False,
                follow_links: bool = True) -> Iterator[IO[Any]]:
    """Open a temporary file beside `path`; on success move it into place, on error remove it.

    The file gets the user's umask (as `open` would), or stays 0600 with `private` (caches derived
    from memory text, such as embeddings). A symbolic link at `path` is followed to its target (a
    path the user typed: `--json latest.json` pointing at the run it names), unless `follow_links`
    is false: then the link itself is replaced by the file and its target is left as it was (what
    recall-kit writes under a folder it owns, such as a study folder, never leaves that folder)."""
    if str(path) == "-" or (follow_links or not Path(path).is_symlink()) and is_special_file(path):
        # `-`, a device (/dev/null, /dev/stdout), a named pipe: written straight through, never
        # replaced by a regular file (`--json /dev/null` as root must not replace the system's node).
        with _open_straight_through(path, mode) as stream:
            yield stream
        return
    target = _resolve_symlink(Path(path)) if follow_links else Path(path)
    if target.is_dir() and not target.is_symlink():
        raise OutputError(f"{target}: is a folder; give a file path to write.")
    batch_folders = _created_folders.get()
    created: list[Path] = []
    temporary: str | None = None
    try:
        created = make_parents(target)
        if batch_folders is not None:
            batch_folders.extend(created)
        with _signals_held():  # a Ctrl-C between the temporary's creation and its name kept here would leave it
            handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except BaseException as error:
        if temporary is not None:  # the held signal arrived as the block ended
            os.close(handle)
            _unlink(temporary)
        if batch_folders is None:
            _remove_created(created)
        if isinstance(error, OSError):
            raise OutputError(f"{target}: cannot write ({error.strerror or type(error).__name__}).") from None
        raise
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
            if not private:
                _written.append(target)
        else:
            if private:
                _private_temporaries.add(temporary)
            pending.append((temporary, target))
    except BaseException as error:
        _unlink(temporary)
        if batch_folders is None:
            _remove_created(created)
        if isinstance(error, OSError) and error.filename in (None, temporary, str(target)):
            # Disk full, quota, a folder in the way: name the file, not just the errno.
            raise OutputError(f"{target}: cannot write ({error.strerror or type(error).__name__}).") from error
        raise


def is_special_file(path: str | Path) -> bool:
    """Whether `path` exists and is neither a regular file nor a folder (following symlinks): a
    character or block device, a named pipe, a socket."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _resolve_symlink(target: Path) -> Path:
    """A symlink is followed to its target (the link stays a link); a dangling one to where it points."""
    if not target.is_symlink():
        return target
    try:
        return target.resolve(strict=False)
    except (OSError, RuntimeError):  # a symlink loop
        raise OutputError(f"{target}: a symbolic link that cannot be followed (a loop?).") from None


@contextmanager
def _open_straight_through(path: str | Path, mode: str) -> Iterator[IO[Any]]:
    if str(path) == "-":
        stream: IO[Any] = sys.stdout.buffer if "b" in mode else sys.stdout
        yield stream
        stream.flush()
        return
    encoding = None if "b" in mode else "utf-8"
    try:
        handle = open(path, mode, encoding=encoding)
    except OSError as error:
        raise OutputError(f"{path}: cannot write ({error.strerror or type(error).__name__}).") from None
    try:
        with handle as stream:
            yield stream
    except OSError as error:
        if error.filename in (None, str(path)):
            raise OutputError(f"{path}: cannot write ({error.strerror or type(error).__name__}).") from error
        raise


def write_text_atomic(path: str | Path, text: str, follow_links: bool = True) -> None:
    with atomic_open(path, follow_links=follow_links) as stream:
        stream.write(text)


def write_json_atomic(path: str | Path, data: Any, follow_links: bool = True) -> None:
    with atomic_open(path, follow_links=follow_links) as stream:
        json.dump(data, stream, indent=2, ensure_ascii=False, allow_nan=False)
        stream.write("\n")


class JsonChunks:
    """A JSON object too large to hold whole (``score --json``'s every query's every measure),
    written by `write_large_json_atomic` a chunk at a time: `chunks()` yields dicts whose items,
    in turn, are the object's."""

    def __init__(self, chunks: Callable[[], Iterable[Mapping[str, Any]]]) -> None:
        self.chunks = chunks


def write_large_json_atomic(path: str | Path, data: Any) -> None:
    """`write_json_atomic` for documents of millions of values (score --json: every query's every
    measure): serialised by orjson in C, not json's Python encoder (1.8 s of 4.1 s at 20,000
    queries x all_trec), and a `JsonChunks` anywhere in `data` a chunk at a time, so the whole
    document is never held. The same document, indented by 2, UTF-8; floats in their shortest
    form as orjson writes them (1e-05 reads 1e-5), numpy values as numbers, NaN as null."""
    with atomic_open(path, "wb") as stream:
        _write_json(stream.write, data, 0)
        stream.write(b"\n")


def _write_json(write: Callable[[bytes], Any], value: Any, depth: int) -> None:
    """`value` as orjson indents it at `depth` levels (its first line not indented): bytes
    identical to one orjson.dumps of the whole document, a `JsonChunks` written chunk by chunk."""
    import orjson

    newline = b"\n" + b"  " * depth
    if not _holds_chunks(value):
        text = orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY)
        write(text.replace(b"\n", newline) if depth else text)
        return
    if isinstance(value, JsonChunks):
        opened = False
        for chunk in value.chunks():
            if chunk:  # its items, each on its lines, without the braces around them
                body = orjson.dumps(chunk, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY)[2:-2]
                write((b",\n" if opened else b"{\n") + b"  " * depth + (body.replace(b"\n", newline) if depth else body))
                opened = True
        write(newline + b"}" if opened else b"{}")
        return
    is_dict = isinstance(value, Mapping)
    items = value.items() if is_dict else ((None, item) for item in value)
    write(b"{" if is_dict else b"[")
    for index, (key, item) in enumerate(items):
        write((b"," if index else b"") + newline + b"  " + (orjson.dumps(key) + b": " if is_dict else b""))
        _write_json(write, item, depth + 1)
    write(newline + (b"}" if is_dict else b"]"))


def _holds_chunks(value: Any) -> bool:
    if isinstance(value, JsonChunks):
        return True
    if isinstance(value, Mapping):
        return any(map(_holds_chunks, value.values()))
    if isinstance(value, (list, tuple)):
        return any(map(_holds_chunks, value))
    return False


def write_jsonl_atomic(path: str | Path, rows: Any, follow_links: bool = True) -> None:
    with atomic_open(path, follow_links=follow_links) as stream:
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
    Raises OutputError naming the flags. A file's missing folder is created when it is written, and
    said on stderr now."""
    seen: dict[Path, str] = {}
    for flag, given in (inputs or {}).items():
        if given is not None:
            seen[Path(given).resolve()] = flag
    for flag, given in [*files.items(), *(folders or {}).items()]:
        if given is None or str(given) == "-" or is_special_file(given):
            continue  # /dev/null twice is fine
        resolved = Path(given).resolve()
        if resolved in seen:
            raise OutputError(f"{seen[resolved]} and {flag} name the same path {given}; give each its own.")
        seen[resolved] = flag
    for flag, given in files.items():
        if given is None or str(given) == "-" or is_special_file(given):
            continue  # written straight through (see atomic_open)
        target = _resolve_symlink(Path(given))
        if target.is_dir():
            raise OutputError(f"{flag} {target}: is a folder; give a file path to write.")
        _probe_folder(flag, target.parent, target)
        if not target.parent.exists():  # made when the file is written; said now, so a typo shows
            print(f"{flag} {target}: the folder {target.parent} does not exist; it will be created.",
                  file=sys.stderr)
    for flag, given in (folders or {}).items():
        if given is None:
            continue
        folder = Path(given)
        if folder.exists() and not folder.is_dir():
            raise OutputError(f"{flag} {folder}: is a file; give a folder to write in.")
        _probe_folder(flag, folder, folder)


def user_cache_folder(name: str) -> Path:
    """`$RECALL_KIT_CACHE/NAME`, else the platform's user cache folder + `recall-kit/NAME`: where
    plugins keep what they can compute again (embeddings, model answers), never in a repository.

    Linux: `$XDG_CACHE_HOME` or `~/.cache`; macOS: `~/Library/Caches`; Windows: `%LOCALAPPDATA%`.
    """
    import sys

    override = os.environ.get("RECALL_KIT_CACHE")
    if override:
        return Path(override).expanduser() / name
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "recall-kit" / name


def file_name(name: str) -> str:
    """A result file name from a system's name such as `fts5+dense`: safe characters only."""
    return re.sub(r"[^A-Za-z0-9+=._,-]", "_", name) + ".json"


def check_run_folder(folder: str | Path, writes: Iterable[str], summary: str, force: bool = False,
                     flag: str = "--out-dir") -> list[Path]:
    """Before a run that writes the files `writes` (and `summary`, its index) into `folder`: refuse,
    in one line, a folder holding files this run would not write (another run's variants, so the
    two would mix), unless `force`. The same run again (its files only) is replaced. Returns the
    files to remove before writing (with `force`: the other run's files, as its summary lists
    them, and its summary); nothing is removed here, so an interrupted run leaves the old one."""
    root = Path(folder)
    if not root.is_dir():
        return []
    ours = {*writes, summary}
    present = sorted(p.name for p in root.iterdir() if not p.name.startswith("."))
    foreign = [name for name in present if name not in ours]
    if not foreign:
        return []
    if not force:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise OutputError(f"{flag} {folder} holds files of another run ({shown}): give an empty or new folder, "
                          "or --force to replace that run.")
    listed: set[str] = set()
    try:
        data = json.loads((root / summary).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    if isinstance(data, dict):  # a summary names each file of its run under "file"
        for entry in [*(data.get("points") or []), *(data.get("variants") or []), data.get("default") or {}]:
            if isinstance(entry, dict) and isinstance(entry.get("file"), str):
                listed.add(Path(entry["file"]).name)
    return [root / name for name in foreign if name in listed]
