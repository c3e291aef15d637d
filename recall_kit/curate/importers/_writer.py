"""Shared plumbing for importers and exports: atomic dataset folders, JSONL rows, drop counts."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from recall_kit.dataset import CORPUS_FILE, QRELS_FILE, QUERIES_FILE, has_lone_surrogate
from recall_kit.dataset import as_id as dataset_id
from recall_kit.errors import DatasetError, RecallKitError
from recall_kit.fileio import is_special_file, user_mode, write_jsonl_atomic

#: How many folders `--force` looks through under OUT for a dataset it would delete.
_FORCE_SCAN_FOLDERS = 2000


def check_not_an_input(target: Path, inputs: Sequence[str | Path], replacing: bool = True) -> None:
    """Refuse an output folder that is an input or holds one, and, when it would be replaced
    (`--force` on a non-empty OUT), one that sits inside an input: replacing it would delete what
    is being read (`import beir B B/qrels --force`)."""
    resolved = target.resolve()
    for given in inputs:
        source = Path(given).resolve()
        if resolved == source:
            relation = "is"
        elif resolved in source.parents:
            relation = "holds"
        elif source in resolved.parents and replacing:
            relation = "sits inside"
        else:
            continue
        raise RecallKitError(f"OUT {target} {relation} the input {given}; give an OUT of its own.")


def _check_holds_no_dataset(target: Path) -> None:
    """`--force` replaces a dataset folder, never a folder that holds other datasets (or a home
    folder): refuse when a folder below `target` holds a corpus.jsonl, or when there are too many
    folders to look through."""
    seen = 0
    for folder, _subfolders, files in os.walk(target):
        seen += 1
        if folder != str(target) and CORPUS_FILE in files:
            raise RecallKitError(
                f"OUT {target} holds another dataset ({Path(folder).relative_to(target)}); "
                "--force replaces a dataset folder, not a folder of datasets. Give an OUT of its own."
            )
        if seen > _FORCE_SCAN_FOLDERS:
            raise RecallKitError(
                f"OUT {target} holds more than {_FORCE_SCAN_FOLDERS} folders: not a dataset folder; "
                "--force will not replace it. Give an OUT of its own."
            )


@contextmanager
def atomic_folder(destination: str | Path, force: bool = False,
                  inputs: Sequence[str | Path] = ()) -> Iterator[Path]:
    """Yield an empty temporary folder beside `destination`; on success it becomes `destination`.

    A non-empty `destination` is refused unless `force`; with `force` it is replaced only once
    the new folder is complete, and never when it is, holds or sits inside one of `inputs`, or
    holds another dataset in a subfolder. On any error the temporary folder is removed and
    `destination` is left as it was.
    """
    target = Path(destination)
    if target.exists() and not target.is_dir():
        raise RecallKitError(f"{target} exists and is not a folder.")
    replacing = target.is_dir() and any(target.iterdir())
    check_not_an_input(target, inputs, replacing)
    if replacing:
        if not force:
            raise RecallKitError(f"{target} is not empty; pass --force to replace it.")
        _check_holds_no_dataset(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield temporary
        os.chmod(temporary, user_mode(folder=True))  # mkdtemp makes 0700; a dataset is an ordinary folder
        if target.is_dir():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
            os.rename(target, old / "previous")
            try:
                os.rename(temporary, target)
            except BaseException:
                os.rename(old / "previous", target)
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(temporary, target)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def check_regular(path: Path) -> None:
    """A named pipe or a device given as input would block for ever (or never end): refused."""
    if is_special_file(path):
        raise DatasetError(f"{path}: not a regular file (a named pipe or a device); give a file or a folder")


def check_source(source: Path) -> None:
    """The source of an import, and the entries of a source folder two levels down, are regular
    files or folders."""
    check_regular(source)
    if source.is_dir():
        for entry in [*source.iterdir(), *(e for d in source.iterdir() if d.is_dir() for e in d.iterdir())][:10_000]:
            check_regular(entry)


def write_dataset_files(
    destination: Path,
    memories: list[dict[str, Any]],
    queries: list[dict[str, Any]],
    qrels: list[dict[str, Any]],
) -> None:
    """Write corpus.jsonl, queries.jsonl and qrels.jsonl under `destination`."""
    destination.mkdir(parents=True, exist_ok=True)
    write_jsonl_atomic(destination / CORPUS_FILE, memories)
    write_jsonl_atomic(destination / QUERIES_FILE, queries)
    write_jsonl_atomic(destination / QRELS_FILE, qrels)


def qrels_row(query_id: str, judgments: dict[str, int], graded: bool = False) -> dict[str, Any]:
    """One qrels line: `relevant_ids` when every grade is 1 (and not `graded`), else `relevance`."""
    if not graded and all(grade == 1 for grade in judgments.values()):
        return {"query_id": query_id, "relevant_ids": list(judgments)}
    return {"query_id": query_id, "relevance": dict(judgments)}


class Counts:
    """What an importer wrote and what it dropped, by reason: aggregate numbers only, never text."""

    def __init__(self) -> None:
        self.dropped: Counter[str] = Counter()
        self.notes: Counter[str] = Counter()

    def drop(self, reason: str, count: int = 1) -> None:
        """Count `count` rows (or ids) left out, for `reason`."""
        self.dropped[reason] += count

    def note(self, what: str, count: int = 1) -> None:
        """Count rows kept but changed or defaulted (an unparsed date kept as text)."""
        self.notes[what] += count

    def result(self, memories: int, queries: int, judgments: int, **extra: Any) -> dict[str, Any]:
        return {
            "memories": memories,
            "queries": queries,
            "judgments": judgments,
            **extra,
            "dropped": dict(sorted((reason, n) for reason, n in self.dropped.items() if n)),
            **({"notes": dict(sorted(self.notes.items()))} if self.notes else {}),
        }


def read_json(path: Path) -> Any:
    """A whole JSON file; a missing or malformed file is one line naming it."""
    if path.is_dir():
        raise DatasetError(f"{path}: is a folder; this importer reads one JSON file")
    check_regular(path)
    try:
        with path.open(encoding="utf-8") as handle:
            text = handle.read()
        data = json.loads(text)
    except FileNotFoundError:
        raise DatasetError(f"{path}: not found") from None
    except OSError as error:
        raise DatasetError(f"{path}: cannot read ({error.strerror})") from None
    except json.JSONDecodeError as error:
        raise DatasetError(f"{path.name}:{error.lineno}: not valid JSON ({error.msg})") from None
    except UnicodeDecodeError:
        raise DatasetError(f"{path.name}: not UTF-8 text") from None
    except RecursionError:
        raise DatasetError(f"{path.name}: not valid JSON (nested too deeply)") from None
    except ValueError as error:  # an integer of more than 4300 digits
        raise DatasetError(f"{path.name}: not valid JSON ({str(error).split(';')[0]})") from None
    if "\\u" in text and has_lone_surrogate(data):
        raise DatasetError(f"{path.name}: holds a lone surrogate escape (\\ud800-\\udfff): not text")
    return data


def as_id(value: Any) -> str | None:
    """An id from a foreign file as text (surrounding whitespace dropped), or None when it is
    missing, empty, a bool or not a string or integer."""
    return dataset_id(value.strip() if isinstance(value, str) else value)


def one_line(text: str) -> str:
    """Text with every run of whitespace (tabs and newlines included) as one space."""
    return " ".join(text.split())
