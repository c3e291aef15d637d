"""Where a run's independent work goes: serially in this process (the default) or as Ray tasks.

A sweep, an ablation or an eval of several systems is a set of independent tasks (one search per
distinct leg configuration, then one fusion-and-scoring per setting). An executor runs such a set
and returns every task's result by key; the local one is a plain loop, the Ray one submits tasks to
a local or remote Ray cluster (`ray.init()` here, or `address` / `RAY_ADDRESS`). With a checkpoint
folder each finished task's result is kept there, so a rerun after an interruption or a failure
runs only what is missing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recall_kit.errors import RecallKitError, describe_plugin_exception
from recall_kit.fileio import atomic_open, user_cache_folder
from recall_kit.progress import stage

#: The executors `--executor` takes.
EXECUTORS = ("local", "ray")

#: How many failed tasks a failure message names (the error's `failures` has them all).
LISTED_FAILURES = 5

#: Seconds to wait for a Ray address to accept a connection before `ray.init` (which, given an
#: address where nothing answers, retries for half a minute or more).
RAY_REACH_SECONDS = 3.0

#: The longest path a Unix domain socket may have on Linux (sun_path: 108 bytes with its NUL).
UNIX_SOCKET_PATH_LIMIT = 107

#: The folder of the user's cache (`user_cache_folder()`) that holds, per output folder, finished tasks'
#: results until the run has written its results.
CHECKPOINT_FOLDER = "tasks"


class ExtraMissingError(RecallKitError):
    """An optional dependency is not installed; the message names the extra that brings it."""


class TaskFailedError(RecallKitError):
    """Some tasks of a distributed run raised; the others' results are kept. `failures` maps each
    failed task's label to its one-line error."""

    def __init__(self, message: str, failures: dict[str, str]) -> None:
        super().__init__(message)
        self.failures = failures


@dataclass(frozen=True)
class Task:
    """One independent piece of work: `function(*args)`.

    `key` names it stably across runs (the checkpoint file); `label` is the setting a person reads
    in a progress line or an error. Arguments made with `Executor.share` are sent once and shared.
    `gpus` is the share of a GPU the task asks for where the cluster has one.
    """

    key: str
    label: str
    function: Callable[..., Any]
    args: tuple[Any, ...] = ()
    gpus: float = 0.0


def task_key(*parts: Any) -> str:
    """A stable file-safe key from the parts that decide a task's result."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:24]


def _one_line(error: BaseException) -> str:
    if isinstance(error, RecallKitError):
        return str(error)
    return describe_plugin_exception(error)


class Checkpoint:
    """Finished tasks' results, one JSON file per task key (ids, scores and timings: no memory text).

    JSON (`recall_kit.measure.run.task_results`), never a pickle: the folder may be shared
    (RECALL_KIT_CACHE on several nodes), and a file someone else wrote there is only data. A file
    that is not a task result this version wrote is said once and its task runs again.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def load(self, key: str) -> tuple[bool, Any]:
        from recall_kit.measure.run.task_results import NotATaskResult, decode

        path = self._path(key)
        if not path.is_file():
            return False, None
        try:
            with path.open("rb") as handle:
                return True, decode(json.loads(handle.read()))
        except (OSError, ValueError, RecursionError) as error:  # NotATaskResult and bad JSON are ValueErrors
            reason = str(error) if isinstance(error, NotATaskResult) else type(error).__name__
            print(f"recall-kit: the checkpoint {path} is not a task result this version wrote ({reason}); "
                  "running its task again.", file=sys.stderr)
            return False, None

    def save(self, key: str, value: Any) -> None:
        from recall_kit.measure.run.task_results import encode

        try:
            text = json.dumps(encode(value), separators=(",", ":"))
        except (TypeError, ValueError):  # a plugin's index stats that JSON cannot hold: not kept
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        with atomic_open(self._path(key), "w", private=True) as handle:
            handle.write(text)

    def split(self, tasks: Sequence[Task]) -> tuple[dict[str, Any], list[Task]]:
        """The results of the tasks finished before, by key, and the tasks still to run."""
        found: dict[str, Any] = {}
        missing: list[Task] = []
        for task in tasks:
            done, value = self.load(task.key)
            if done:
                found[task.key] = value
            else:
                missing.append(task)
        return found, missing

    def forget(self, key: str) -> None:
        """Drop one task's kept result (a leg run with failed queries: a rerun asks again)."""
        self._path(key).unlink(missing_ok=True)

    def clear(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def checkpoint_for(out: str | Path | None) -> Checkpoint | None:
    """The checkpoint of a run that writes to the folder `out` (none without one): in the user's
    cache folder, never in `out`, which holds a complete set of results or nothing."""
    if out is None:
        return None
    digest = hashlib.sha256(str(Path(out).resolve()).encode()).hexdigest()[:24]
    return Checkpoint(user_cache_folder(CHECKPOINT_FOLDER) / digest)


class LocalExecutor:
    """Every task in turn, in this process: the default, and exactly what a run did before
    executors existed. The first task that raises stops the run (its error as it was raised);
    the tasks finished before it are kept in the checkpoint."""

    name = "local"
    #: Whether a task may show its own progress display (only in the driving process).
    inline = True

    def share(self, value: Any) -> Any:
        return value

    def run(self, tasks: Sequence[Task], what: str, checkpoint: Checkpoint | None = None) -> dict[str, Any]:
        results, missing = checkpoint.split(tasks) if checkpoint is not None else ({}, list(tasks))
        for task in missing:
            value = task.function(*task.args)
            if checkpoint is not None:
                checkpoint.save(task.key, value)
            results[task.key] = value
        return results


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ExtraMissingError(
            "--executor ray needs Ray, which is not installed: pip install 'recall-kit[ray]'"
        ) from None
    return ray


class RayExecutor:
    """Tasks on a Ray cluster: this machine's (started on first use) or the one at `address`
    (`ray://HOST:10001`, or `RAY_ADDRESS`). Shared arguments go to the object store once. Every
    task runs to its end: the failures are reported together, with their settings, and the
    others' results are kept."""

    name = "ray"
    inline = False

    def __init__(self, address: str | None = None) -> None:
        #: Whether the address came from RAY_ADDRESS (an error says so: the user may not know it is set).
        self.from_environment = not address and bool(os.environ.get("RAY_ADDRESS"))
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self._ray: Any = None
        self._remote: dict[float, Any] = {}
        self._shared: dict[int, tuple[Any, _Shared]] = {}

    def where(self) -> str:
        """The cluster as an error names it, and where its address came from."""
        if not self.address:
            return "a local Ray cluster"
        return f"the Ray cluster at {self.address}" + (" (from RAY_ADDRESS)" if self.from_environment else "")

    def _ensure(self) -> Any:
        if self._ray is None:
            ray = _import_ray()
            if not ray.is_initialized():
                self._check_reachable()
                try:
                    with _quiet_ray_notices():
                        ray.init(address=self.address, include_dashboard=False, log_to_driver=False,
                                 configure_logging=False)
                except (ConnectionError, RuntimeError, ValueError, TimeoutError) as error:
                    raise RecallKitError(f"Cannot start or reach {self.where()}: {type(error).__name__}: "
                                         f"{str(error).splitlines()[0] if str(error) else ''}") from None
                except OSError as error:  # a socket path too long for AF_UNIX, above all
                    raise RecallKitError(_ray_os_error(self.where(), error)) from None
            self._ray = ray
        return self._ray

    def _check_reachable(self) -> None:
        """A HOST:PORT address (`ray://` or a GCS address) must accept a connection within
        RAY_REACH_SECONDS: else one line now, not Ray's half a minute of retries."""
        import socket

        address = (self.address or "").strip()
        if address.lower() in ("", "auto", "local"):
            return
        scheme, _, rest = address.rpartition("://")
        host, colon, port = rest.rstrip("/").rpartition(":")
        if not colon and scheme == "ray":
            host, port = rest.rstrip("/"), "10001"  # Ray Client's default port
        if not host or not port.isdigit() or any(character.isspace() for character in host):
            raise RecallKitError(f"Bad address for {self.where()}: expected HOST:PORT, ray://HOST[:PORT], auto or local.")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=RAY_REACH_SECONDS).close()
        except OSError as error:
            reason = (f"no answer within {RAY_REACH_SECONDS:g} s" if isinstance(error, TimeoutError)
                      else (error.strerror or type(error).__name__).lower())
            raise RecallKitError(f"Cannot reach {self.where()}: {host}:{port}: {reason}.") from None

    def share(self, value: Any) -> Any:
        """`value` in the object store, once however often it is shared (the dataset of a sweep's
        leg searches and of its scoring)."""
        known = self._shared.get(id(value))
        if known is None or known[0] is not value:
            known = (value, _Shared(self._ensure().put(value)))
            self._shared[id(value)] = known
        return known[1]

    def _remote_for(self, gpus: float) -> Any:
        ray = self._ensure()
        if gpus not in self._remote:
            has_gpu = ray.cluster_resources().get("GPU", 0) > 0
            self._remote[gpus] = ray.remote(num_cpus=1, num_gpus=gpus if has_gpu else 0, max_retries=0)(_call)
        return self._remote[gpus]

    def run(self, tasks: Sequence[Task], what: str, checkpoint: Checkpoint | None = None) -> dict[str, Any]:
        ray = self._ensure()
        results, missing = checkpoint.split(tasks) if checkpoint is not None else ({}, list(tasks))
        pending = {self._remote_for(task.gpus).remote(task.function, *task.args): task for task in missing}
        failures: dict[str, str] = {}
        advance = stage(f"{what}: {len(pending)} tasks on ray", total=len(pending)) if pending else None
        waiting = list(pending)
        while waiting:
            done, waiting = ray.wait(waiting, num_returns=1)
            for ref in done:
                task = pending[ref]
                try:
                    value = ray.get(ref)
                except Exception as error:  # the task's own exception, as Ray wraps it
                    cause = getattr(error, "cause", None)
                    failures[task.label] = _one_line(cause if isinstance(cause, BaseException) else error)
                else:
                    if checkpoint is not None:
                        checkpoint.save(task.key, value)
                    results[task.key] = value
                if advance is not None:
                    advance(1)
        if failures:
            kept = (f"the other {len(tasks) - len(failures)} are kept in {checkpoint.folder}: rerun the same "
                    "command to run only what is missing" if checkpoint is not None
                    else "give an output folder (--out-dir) to keep the others' results for a rerun")
            shown = list(failures.items())[:LISTED_FAILURES]
            listing = "; ".join(f"{label}: {message}" for label, message in shown)
            if len(failures) > len(shown):
                listing += f"; and {len(failures) - len(shown)} more"
            raise TaskFailedError(f"{len(failures)} of {len(tasks)} tasks ({what}) failed, {kept}. {listing}",
                                  failures)
        return results


def _ray_os_error(where: str, error: OSError) -> str:
    """One line for an OSError from `ray.init`: a socket path past the AF_UNIX limit names the
    folder it is under (Ray's RAY_TMPDIR, else TMPDIR) and the limit."""
    import tempfile

    if "AF_UNIX" in str(error) or "socket" in str(error).lower():
        variable = "RAY_TMPDIR" if os.environ.get("RAY_TMPDIR") else "TMPDIR"
        folder = os.environ.get("RAY_TMPDIR") or tempfile.gettempdir()
        return (f"Cannot start {where}: its socket paths under {variable} ({folder}, {len(folder)} characters) "
                f"pass the {UNIX_SOCKET_PATH_LIMIT}-byte limit of a Unix socket path (AF_UNIX); set {variable} "
                "to a shorter folder, e.g. /tmp.")
    return f"Cannot start or reach {where}: {type(error).__name__}: {error.strerror or str(error).splitlines()[0]}"


class _quiet_ray_notices:  # noqa: N801 - used as a context manager, like contextlib's
    """Ray's notices on starting a cluster (its token-authentication banner) kept off stderr:
    they go through the standard logging module with no handler of Ray's (configure_logging=False),
    so Python's last-resort handler would print them."""

    LOGGERS = ("ray._private.authentication",)

    def __enter__(self) -> None:
        import logging

        self.levels = [(logging.getLogger(name), logging.getLogger(name).level) for name in self.LOGGERS]
        for logger, _ in self.levels:
            logger.setLevel(logging.ERROR)

    def __exit__(self, *exc: object) -> None:
        for logger, level in self.levels:
            logger.setLevel(level)


@dataclass(frozen=True)
class _Shared:
    """An object in Ray's object store, fetched and unpickled once per worker process (a task
    argument that is a bare reference would be unpickled again for every task)."""

    ref: Any


#: In a worker: shared objects already fetched, by reference, the most recent last.
_FETCHED: dict[str, Any] = {}
#: How many shared objects a worker keeps (a dataset and the leg runs of a sweep's settings).
FETCHED_LIMIT = 256


def _resolve(value: Any) -> Any:
    if not isinstance(value, _Shared):
        return value
    key = value.ref.hex()
    if key not in _FETCHED:
        import ray

        _FETCHED[key] = ray.get(value.ref)
        while len(_FETCHED) > FETCHED_LIMIT:
            _FETCHED.pop(next(iter(_FETCHED)))
    return _FETCHED[key]


def _call(function: Callable[..., Any], *args: Any) -> Any:
    """A task in a Ray worker: shared arguments resolved, then the work."""
    return function(*(_resolve(arg) for arg in args))


Executor = LocalExecutor | RayExecutor


def make_executor(name: str | None = None, address: str | None = None) -> Executor:
    """The executor `--executor NAME [--address ADDRESS]` asks for (default: local)."""
    if name in (None, "local"):
        if address is not None:
            raise RecallKitError("--address is for --executor ray.")
        return LocalExecutor()
    if name == "ray":
        _import_ray()
        return RayExecutor(address)
    raise RecallKitError(f"Unknown executor {name!r}. Available: {', '.join(EXECUTORS)}.")


__all__ = ["CHECKPOINT_FOLDER", "EXECUTORS", "Checkpoint", "Executor", "ExtraMissingError", "LocalExecutor",
           "RayExecutor", "Task", "TaskFailedError", "checkpoint_for", "make_executor", "task_key"]
