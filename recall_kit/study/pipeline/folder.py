"""The study folder is the study's alone: which folder a run may write in, and one run at a time.

A study folder is new, empty, or one recall-kit made (its manifest says so, and names this study
file or one that no longer exists); it never holds the study file itself, and it is never the
filesystem's root. What a run writes there (manifest.json, steps/, study.md, study.html,
study.json) replaces a symbolic link standing at that name rather than writing through it, and a
link on the way into the steps (steps/, steps/run/) is refused: nothing is written outside the
folder. A lock on `.recall-kit-study.lock` lets one `study run` at a time write the folder; a
second names the process that holds it, and a lock whose process is gone is taken over. Every
check raises `StudyFolderError` with one line naming the folder.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from recall_kit.errors import OutputError

MANIFEST_FILE = "manifest.json"
MANIFEST_SCHEMA = "recall-kit/study-manifest/1"
LOCK_FILE = ".recall-kit-study.lock"
#: The files a run writes at the top of the folder, beside the steps.
DOCUMENT_FILES = ("study.md", "study.html", "study.json")


class StudyFolderError(OutputError):
    """A study folder recall-kit may not write in (or that another run is writing)."""


def read_manifest_data(folder: Path) -> dict[str, Any] | None:
    """The folder's manifest.json as data when it is a recall-kit study manifest (a plain file of
    the study schema), else None (absent, a link, not JSON, another schema)."""
    path = folder / MANIFEST_FILE
    if path.is_symlink() or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested too deeply
        return None
    return data if isinstance(data, dict) and data.get("schema") == MANIFEST_SCHEMA else None


def check_study_folder(folder: Path, study_file: Path) -> None:
    """Refuse, in one line, a folder this study's run may not write in (see the module's rules)."""
    where = f"{study_file.name}: [study] folder {str(folder)!r}"
    resolved = folder.resolve()
    if resolved == Path(resolved.anchor):
        raise StudyFolderError(f"{where} is the filesystem's root; name a folder of the study's own, "
                               f"such as \"{study_file.stem}-out\".")
    if study_file.resolve().is_relative_to(resolved):
        raise StudyFolderError(f"{where} holds the study file itself, so the study's outputs could replace "
                               f"it; name a folder of the study's own, such as \"{study_file.stem}-out\".")
    if not folder.exists():
        if folder.is_symlink():
            raise StudyFolderError(f"{where} is a link to nowhere; remove it or name another folder.")
        return
    if not folder.is_dir():
        raise StudyFolderError(f"{where} is a file, not a folder; name a new folder.")
    present = sorted(entry.name for entry in folder.iterdir() if entry.name != LOCK_FILE)
    if not present:
        return
    data = read_manifest_data(folder)
    if data is None:
        shown = ", ".join(present[:3]) + (f" and {len(present) - 3} more" if len(present) > 3 else "")
        raise StudyFolderError(f"{where} holds files recall-kit did not make ({shown}): a study folder is new, "
                               "empty or one a study run made; name a new folder.")
    owner = data.get("study")
    if isinstance(owner, str) and owner:
        recorded = (resolved / owner).resolve()
        if recorded != study_file.resolve() and recorded.is_file():
            raise StudyFolderError(f"{where} is the folder of another study file ({recorded.name}); two studies "
                                   "must not share a folder: name a folder of this study's own.")


def study_reference(folder: Path, study_file: Path) -> str:
    """The study file as the manifest records it: relative to the folder, so both can move together."""
    return os.path.relpath(study_file.resolve(), folder.resolve())


# -- the lock ---------------------------------------------------------------------------------------


@contextmanager
def study_lock(folder: Path) -> Iterator[None]:
    """Hold the folder's lock for the block: one `study run` writes a study folder at a time
    (`recall_kit.locking`: released when its process ends however it ends; a live holder is named)."""
    from recall_kit.locking import exclusive_lock

    def refuse(holder: str) -> StudyFolderError:
        if holder == "a link":
            return StudyFolderError(f"{folder / LOCK_FILE}: is a link; remove it (the study's lock is a plain file "
                                    "in its folder).")
        return StudyFolderError(f"{folder}: another study run ({holder}) is writing this study folder; wait for it "
                                "to finish, or stop it.")

    with exclusive_lock(folder / LOCK_FILE, refuse):
        yield
