"""The study's build graph: steps, their artefact folders, fingerprints and the one JSON manifest.

A step reads the artefacts of the steps it `needs` and writes its own files into a fresh folder;
the folder replaces the step's old one by a rename and the manifest records it only after that, so
an interrupted run leaves each step either done or not done, never half-written. A step's
fingerprint is a sha256 over its own inputs (data hashes, options, plugin versions, model ids,
seeds) and the content hashes of what its needs wrote; a step whose fingerprint is the one
recorded, with every file it recorded still in place, is not run again (as make or a build cache
decides). Nothing in the graph is a pickle: the manifest and the artefacts are JSON and JSONL.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recall_kit.errors import OutputError, RecallKitError
from recall_kit.fileio import write_json_atomic
from recall_kit.fingerprint import canonical_json
from recall_kit.study.pipeline.folder import MANIFEST_FILE, MANIFEST_SCHEMA, StudyFolderError

STEPS_FOLDER = "steps"


@dataclass
class Step:
    """One node: `make(folder, inputs)` writes the step's files into `folder`.

    `inputs` is called once the needs are done (a step may choose what it runs from what they
    wrote, as the ablation chooses the best hybrid from the comparison): its value, JSON, is what
    the fingerprint covers besides the needs' outputs, and what `make` receives."""

    name: str
    needs: list[str]
    inputs: Callable[[], dict[str, Any]]
    make: Callable[[Path, dict[str, Any]], None]
    #: Steps that must be done first but whose files the fingerprint does not cover (what `inputs`
    #: reads from them, the choice it makes, is in the inputs instead).
    after: list[str] = field(default_factory=list)
    #: The one recall-kit command that reproduces the step's numbers, from its inputs (None: none does).
    reproduce: Callable[[dict[str, Any]], str | None] | None = None


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def folder_hashes(folder: Path) -> dict[str, str]:
    """Every file under `folder` (relative POSIX path -> sha256), sorted."""
    return {path.relative_to(folder).as_posix(): file_hash(path)
            for path in sorted(folder.rglob("*")) if path.is_file()}


@dataclass
class StepRecord:
    """What the manifest holds of one finished step."""

    fingerprint: str
    files: dict[str, str]
    seconds: float
    #: The machine that computed it (`recall_kit.machine.machine_key`; "" in older manifests).
    machine: str = ""

    @property
    def output(self) -> str:
        """One hash over the step's files: what its dependents' fingerprints include."""
        return hashlib.sha256(canonical_json(self.files)).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint, "output": self.output, "files": self.files,
                "seconds": round(self.seconds, 3), **({"machine": self.machine} if self.machine else {})}


def _step_record(entry: Any) -> StepRecord:
    """One step's entry of a manifest: a text fingerprint, text hashes by text path, a finite
    non-negative number of seconds and a text machine key; ValueError for anything else (a manifest
    recall-kit did not write, which the caller refuses whole)."""
    import math

    fingerprint, files = entry["fingerprint"], entry["files"]
    seconds, machine = entry.get("seconds", 0), entry.get("machine", "")
    if not (isinstance(fingerprint, str) and isinstance(files, dict) and isinstance(machine, str)
            and all(isinstance(path, str) and isinstance(digest, str) for path, digest in files.items())
            and isinstance(seconds, int | float) and not isinstance(seconds, bool)
            and math.isfinite(seconds) and seconds >= 0):
        raise ValueError("not a step record")
    return StepRecord(fingerprint, dict(files), float(seconds), machine)


@dataclass
class StepState:
    """A step as `study status` reports it."""

    name: str
    state: str  # "done", "stale" or "missing"
    why: str = ""


@dataclass
class BuildLog:
    """What a run did, step by step: computed or up to date."""

    computed: list[str] = field(default_factory=list)
    up_to_date: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


#: Seconds between two "still computing" lines of a long step when no terminal shows progress.
HEARTBEAT_SECONDS = 10.0


@contextmanager
def heartbeat(name: str, log: Callable[[str], None], every: float = HEARTBEAT_SECONDS,
              terminal: bool | None = None) -> Iterator[None]:
    """While the block runs, log "still computing" every `every` seconds, unless stderr is a terminal
    (where the steps' own progress shows): a log file or a CI job sees that a long step is alive."""
    import sys
    import threading

    if terminal is None:
        terminal = sys.stderr.isatty()
    if terminal:
        yield
        return
    stop = threading.Event()
    started = time.perf_counter()

    def beat() -> None:
        while not stop.wait(every):
            log(f"study: {name}: still computing ({time.perf_counter() - started:.0f} s)")

    thread = threading.Thread(target=beat, name=f"study-heartbeat-{name}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


class StudyGraph:
    """The steps of one study folder, run in order; the manifest says what is done."""

    def __init__(self, folder: Path, steps: Iterable[Step]) -> None:
        self.folder = Path(folder)
        self.steps = list(steps)
        self.by_name = {step.name: step for step in self.steps}
        for step in self.steps:
            for need in [*step.needs, *step.after]:
                if need not in self.by_name or self.steps.index(self.by_name[need]) >= self.steps.index(step):
                    raise RecallKitError(f"study step {step.name!r} needs {need!r}, which does not come before it.")
        #: The study file, relative to the folder, as the manifest records it ("" before `claim`).
        self.study = ""
        #: The machines that computed the recorded steps, by key (`recall_kit.machine.machine`).
        self.machines: dict[str, dict[str, str]] = {}
        self._here: str | None = None
        self.records = self._read_manifest()

    # -- where things are ---------------------------------------------------------------------

    def path(self, name: str) -> Path:
        """The folder holding step `name`'s artefacts."""
        return self.folder / STEPS_FOLDER / name

    def _read_manifest(self) -> dict[str, StepRecord]:
        import json

        path = self.folder / MANIFEST_FILE
        if not path.exists() and not path.is_symlink():
            return {}
        refused = (f"{path}: not a recall-kit study manifest; move it away or choose another "
                   "[study] folder.")
        if path.is_symlink():
            raise RecallKitError(refused)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            steps = data["steps"] if data.get("schema") == MANIFEST_SCHEMA else None
            if not isinstance(steps, dict):
                raise ValueError("not a study manifest")
            records = {name: _step_record(entry) for name, entry in steps.items()}
            self.study = data.get("study") if isinstance(data.get("study"), str) else ""
            machines = data.get("machines", {})
            self.machines = {str(key): {str(k): str(v) for k, v in value.items()}
                             for key, value in (machines.items() if isinstance(machines, dict) else ())
                             if isinstance(value, dict)}
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):  # RecursionError: nested too deeply
            raise RecallKitError(refused) from None
        for name, record in records.items():
            outside = [rel for rel in [name, *(f"{name}/{file}" for file in record.files)] if not _inside(rel)]
            if outside:
                raise RecallKitError(f"{path}: names {outside[0]!r}, a path outside the study folder; the manifest "
                                     "was not made by recall-kit. Move the folder away or choose another [study] "
                                     "folder.")
        return records

    def claim(self, study: str) -> None:
        """Record the study file (relative to the folder) as the folder's owner: the manifest is
        written now, before any step, so an interrupted first run leaves a folder recall-kit made."""
        self.study = study
        self._write_manifest()

    def _write_manifest(self) -> None:
        order = [step.name for step in self.steps if step.name in self.records]
        write_json_atomic(self.folder / MANIFEST_FILE, {
            "schema": MANIFEST_SCHEMA,
            **({"study": self.study} if self.study else {}),
            "steps": {name: self.records[name].to_dict() for name in order},
            "machines": {key: self.machines[key] for key in sorted({self.records[name].machine for name in order})
                         if key in self.machines},
        }, follow_links=False)

    # -- fingerprints -------------------------------------------------------------------------

    def fingerprint(self, step: Step, inputs: dict[str, Any]) -> str:
        needs = {need: self.records[need].output for need in step.needs}
        return hashlib.sha256(canonical_json({"step": step.name, "inputs": inputs, "needs": needs})).hexdigest()

    def _intact(self, name: str) -> bool:
        record = self.records.get(name)
        if record is None:
            return False
        folder = self.path(name)
        root = self.folder.resolve()
        if not record.files or not folder.is_dir():  # a step writes files: none recorded is a forged record
            return False
        # A file reached through a link out of the study folder is never opened: not intact.
        return all((folder / rel).resolve().is_relative_to(root) and (folder / rel).is_file()
                   and file_hash(folder / rel) == digest for rel, digest in record.files.items())

    def state(self, step: Step, done: set[str]) -> StepState:
        """Done (recorded, intact, fingerprint unchanged), stale or missing; `done` holds the steps
        before it found done."""
        if step.name not in self.records:
            return StepState(step.name, "missing", "never run")
        unrecorded = [need for need in step.needs if need not in self.records]
        if unrecorded:
            return StepState(step.name, "stale", f"waits on {', '.join(unrecorded)} (never run)")
        if not self._intact(step.name):
            return StepState(step.name, "stale", "its files changed or went missing")
        try:
            inputs = step.inputs()
        except RecallKitError as error:
            return StepState(step.name, "stale", str(error))
        if self.fingerprint(step, inputs) != self.records[step.name].fingerprint:
            return StepState(step.name, "stale", "its inputs changed")
        waiting = [need for need in [*step.needs, *step.after] if need not in done]
        if waiting:  # a run recomputes it only if what it reads comes out different
            return StepState(step.name, "pending", f"recomputed only if what {', '.join(waiting)} writes comes out different")
        return StepState(step.name, "done", self._elsewhere(self.records[step.name]))

    def here(self) -> str:
        """This machine's key, its description kept in `machines` (described once per graph)."""
        if self._here is None:
            from recall_kit.machine import machine, machine_key

            described = machine()
            self._here = machine_key(described)
            self.machines.setdefault(self._here, described)
        return self._here

    def _elsewhere(self, record: StepRecord) -> str:
        """For a step computed on another machine: which, and what that means for its numbers."""
        if not record.machine or record.machine == self.here():
            return ""
        from recall_kit.machine import machine_summary

        other = self.machines.get(record.machine)
        where = machine_summary(other) if other else "a machine the manifest does not describe"
        return (f"computed on another machine ({where}); its numbers are expected to match this machine's "
                "to the grid (docs/study.md, \"Which numbers reproduce where\")")

    def status(self) -> list[StepState]:
        done: set[str] = set()
        states = []
        for step in self.steps:
            state = self.state(step, done)
            if state.state == "done":
                done.add(step.name)
            states.append(state)
        return states

    def commands(self) -> dict[str, str]:
        """Each step that one recall-kit command reproduces -> that command (from its declared reads)."""
        out = {}
        for step in self.steps:
            line = step.reproduce(step.inputs()) if step.reproduce is not None else None
            if line:
                out[step.name] = line
        return out

    # -- running ------------------------------------------------------------------------------

    def _clear_leftovers(self) -> None:
        """Folders an interrupted run was writing (and a replaced step folder's link): never
        recorded, so removed; a link is removed itself, never what it points at."""
        steps = self.folder / STEPS_FOLDER
        if steps.is_dir() and not steps.is_symlink():
            for root, folders, files in os.walk(steps):  # links to folders are listed, not entered
                for name in [*folders, *files]:
                    if name.startswith(".") and ".partial" in name:
                        _remove(Path(root) / name)

    def _check_containers(self, final: Path) -> None:
        """Refuse a link on the way from the study folder to a step's folder (steps/, steps/run/):
        the step would be written outside the folder."""
        for container in [final.parent, *final.parent.parents]:
            if container == self.folder:
                return
            if container.is_symlink():
                raise StudyFolderError(f"{container}: is a link; a study writes only inside its own folder. "
                                       "Replace the link by a folder.")

    def run(self, log: Callable[[str], None] = lambda line: None) -> BuildLog:
        """Run every step whose fingerprint changed (and what depends on it); skip the rest."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self._check_containers(self.path("any"))  # steps/ itself is no link
        (self.folder / STEPS_FOLDER).mkdir(exist_ok=True)
        self._clear_leftovers()
        build = BuildLog()
        for step in self.steps:
            inputs = step.inputs()
            fingerprint = self.fingerprint(step, inputs)
            record = self.records.get(step.name)
            if record is not None and record.fingerprint == fingerprint and self._intact(step.name):
                build.up_to_date.append(step.name)
                continue
            log(f"study: {step.name}: computing ({'inputs changed' if record else 'not yet run'})")
            started = time.perf_counter()
            with heartbeat(step.name, log):
                self._build(step, inputs)
            seconds = time.perf_counter() - started
            self.records[step.name] = StepRecord(fingerprint, folder_hashes(self.path(step.name)), seconds,
                                                 self.here())
            self._write_manifest()
            build.computed.append(step.name)
            build.seconds[step.name] = seconds
            log(f"study: {step.name}: done in {seconds:.1f} s")
        if build.computed:
            log(f"study: computed {len(build.computed)} step(s), {len(build.up_to_date)} up to date.")
        else:
            log(f"study: nothing to do: all {len(build.up_to_date)} steps are up to date (computed nothing).")
        return build

    def _build(self, step: Step, inputs: dict[str, Any]) -> None:
        """Write the step into a hidden folder, then swap it in by renames."""
        final = self.path(step.name)
        self._check_containers(final)
        final.parent.mkdir(parents=True, exist_ok=True)
        partial = final.parent / f".{final.name}.partial{os.getpid()}"
        _remove(partial)
        partial.mkdir()
        try:
            try:
                step.make(partial, inputs)
            except OSError as error:
                if error.filename is None and error.errno in (errno.ENOSPC, errno.EDQUOT):
                    # a writer that names no file (a database, a stream): the step's folder is where it wrote
                    raise OutputError(f"{final}: cannot write the step {step.name!r} there ({error.strerror}); "
                                      "free some space and run again (the steps done are kept).") from error
                raise
            self.records.pop(step.name, None)  # from here until the manifest is written, not done
            self._write_manifest()
            if final.exists() or final.is_symlink():  # a link is replaced, never followed
                old = final.parent / f".{final.name}.partial{os.getpid()}-old"
                final.rename(old)
                _remove(old)
            partial.rename(final)
        finally:
            shutil.rmtree(partial, ignore_errors=True)


def _inside(relative: str) -> bool:
    """Whether a manifest's path stays inside the folder it is relative to (no root, no `..`)."""
    from pathlib import PurePosixPath, PureWindowsPath

    path = PurePosixPath(relative)
    return (bool(relative) and not path.is_absolute() and not PureWindowsPath(relative).drive
            and "\\" not in relative and all(part not in ("..", ".", "") for part in relative.split("/")))


def _remove(path: Path) -> None:
    """Remove a leftover: a link (to a folder or not) itself, a folder with what it holds."""
    if path.is_symlink() or path.is_file():
        try:
            path.unlink()
        except FileNotFoundError:
            pass
    else:
        shutil.rmtree(path, ignore_errors=True)
