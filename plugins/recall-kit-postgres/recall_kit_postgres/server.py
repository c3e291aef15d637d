"""The embedded PostgreSQL server: pgserver's binaries (PostgreSQL 16 + pgvector), a throwaway
cluster in a temporary folder, stopped and deleted when the process ends (also on Ctrl-C, SIGTERM
and errors). As root it runs as `postgres` (or `nobody`): binaries in a folder that user cannot
enter are linked or copied once where it can (`reachable_binaries`)."""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from recall_kit_postgres.connection import PostgresError, first_line

#: Settings of every embedded server: nothing is worth keeping, so nothing is synced.
BASE_SETTINGS = {
    "listen_addresses": "",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "maintenance_work_mem": "256MB",
}
#: Folder name prefix of every embedded server's data (tests look for leftovers by it).
FOLDER_PREFIX = "recall-kit-pg-"
#: The file in a server's folder that holds the owning process's pid.
OWNER_FILE = "owner.pid"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
#: Unix socket paths are limited to 107 bytes; keep ours well below.
_SOCKET_PATH_LIMIT = 90


def binaries(package: str = "pgserver") -> Path:
    """The folder of a package's PostgreSQL binaries, found without importing it (pgserver's
    import touches the user's runtime folder and may warn)."""
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        folder = Path(location) / "pginstall" / "bin"
        if (folder / "postgres").exists():
            return folder
    distribution = package.replace("_", "-")
    raise PostgresError(
        f"The embedded PostgreSQL server needs the {distribution} package (pip install {distribution}); "
        "or pass a server with -o <leg>.dsn=postgresql://USER@HOST/DB or RECALL_KIT_PG_DSN."
    )


def _server_user() -> str | None:
    """PostgreSQL refuses to run as root: then run it as `postgres` if that user exists, else `nobody`."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise PostgresError("The embedded PostgreSQL server cannot run as root and no 'postgres' or 'nobody' user exists.")


#: Folder name prefix of a copy of a package's binaries that the server's user can reach.
INSTALL_PREFIX = "recall-kit-pginstall-"


def unreachable(path: Path, user: str, _links: int = 0) -> Path | None:
    """The first folder on the way to `path` that `user` may not enter (no search permission for
    it: owner, group or other, as the kernel decides, ACLs aside), or None. A link on the way is
    followed as the kernel follows it: the folders on the way to its target count too (a venv that
    is a link into a private folder is out of reach, though every folder of the path as written is
    open)."""
    entry = pwd.getpwnam(user)
    groups = set(os.getgrouplist(user, entry.pw_gid))
    for folder in [*reversed(path.parents), path]:
        if folder.is_symlink() and _links < 40:  # 40: the kernel's own limit on links in one path
            target = Path(os.readlink(folder))
            blocked = unreachable(target if target.is_absolute() else folder.parent / target, user, _links + 1)
            if blocked is not None:
                return blocked
        try:
            info = os.stat(folder)
        except OSError:
            return folder
        if not stat.S_ISDIR(info.st_mode):
            continue
        bit = stat.S_IXUSR if info.st_uid == entry.pw_uid else stat.S_IXGRP if info.st_gid in groups else stat.S_IXOTH
        if not info.st_mode & bit:
            return folder
    return None


def reachable_binaries(bindir: Path, user: str) -> Path:
    """`bindir`, or where `user` can run it from: root runs the server as another user (PostgreSQL
    refuses root), who cannot enter a private folder (a clone in a `mktemp -d` folder, /root). Then
    the installation (bin, lib, share) is linked or copied once into the temporary folder, owned by
    root and read-only to others, and reused while the original is unchanged."""
    blocked = unreachable(bindir, user)
    if blocked is None:
        return bindir
    install = bindir.parent.resolve()  # the wheel's layout, where a link led to it
    parent = Path(tempfile.gettempdir())
    fix = (f"chmod o+x {blocked}, or install recall-kit outside it, or pass a server with "
           "-o <leg>.dsn=postgresql://USER@HOST/DB or RECALL_KIT_PG_DSN")
    if unreachable(parent, user) is not None:
        raise PostgresError(f"The embedded PostgreSQL server runs as {user!r} (PostgreSQL refuses root), who cannot "
                            f"enter {blocked} nor the temporary folder {parent}: {fix}.")
    version = (install / "bin" / "postgres").stat()
    digest = hashlib.sha256(f"{install.resolve()}:{version.st_mtime_ns}:{version.st_size}".encode()).hexdigest()[:16]
    target = parent / f"{INSTALL_PREFIX}{digest}"
    if not _trusted_copy(target):
        try:
            _copy_install(install.parent, target)
        except OSError as error:
            raise PostgresError(f"The embedded PostgreSQL server runs as {user!r} (PostgreSQL refuses root), who cannot "
                                f"enter {blocked}; copying its binaries to {parent} failed ({first_line(error)}): "
                                f"{fix}.") from None
    return target / install.parent.name / install.name / "bin"


def _trusted_copy(target: Path) -> bool:
    """Whether `target` is a finished copy that only this user (root) could have written."""
    try:
        info = os.lstat(target)
    except OSError:
        return False
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022
            and (target / ".complete").is_file())


def _copy_install(package: Path, target: Path) -> None:
    """The package's installation into `target` as the wheel lays it out (hard links where one file
    system holds both, else copies): PACKAGE/pginstall/{bin,lib,share}, and PACKAGE.libs beside it,
    which the binaries' RPATH ($ORIGIN/../../../PACKAGE.libs) names. Made in a private folder beside
    `target` and renamed into place when whole."""
    building = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        for part in ("bin", "lib", "share"):
            if (package / "pginstall" / part).is_dir():
                shutil.copytree(package / "pginstall" / part, building / package.name / "pginstall" / part,
                                symlinks=True, copy_function=_link_or_copy)
        libraries = package.parent / f"{package.name}.libs"
        if libraries.is_dir():
            shutil.copytree(libraries, building / libraries.name, symlinks=True, copy_function=_link_or_copy)
        (building / ".complete").write_text("")
        for folder in [building, *(path for path in building.rglob("*") if path.is_dir() and not path.is_symlink())]:
            os.chmod(folder, 0o755)
        try:
            os.rename(building, target)
        except OSError:
            if not _trusted_copy(target):  # another process's copy won the race: use it, else fail
                shutil.rmtree(target, ignore_errors=True)
                os.rename(building, target)
    finally:
        shutil.rmtree(building, ignore_errors=True)


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


class EmbeddedServer:
    """One throwaway PostgreSQL cluster: `start()` runs initdb and the postmaster; `stop()` stops it
    and deletes its folder. The postmaster runs in a session of its own, so a Ctrl-C at the
    terminal reaches recall-kit (which stops it in order) and not the server."""

    def __init__(self, settings: Mapping[str, str] | None = None, package: str = "pgserver") -> None:
        self.settings = {**BASE_SETTINGS, **dict(settings or {})}
        self.package = package
        self.folder: Path | None = None
        self.sockets: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.dsn: str | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def start(self) -> str:
        """Start the server; return its DSN. On failure: one line, and nothing left behind."""
        bindir = binaries(self.package)
        user = _server_user()
        if user is not None:
            temporary = Path(tempfile.gettempdir())
            blocked = unreachable(temporary, user)
            if blocked is not None:
                raise PostgresError(f"The embedded PostgreSQL server runs as {user!r} (PostgreSQL refuses root), who "
                                    f"cannot enter {blocked}, on the way to its data folder in {temporary}: set TMPDIR "
                                    "to a folder it can enter (such as /tmp).")
            bindir = reachable_binaries(bindir, user)
        try:
            self._start(bindir, user)
        except PostgresError:
            self.stop()
            raise
        except (OSError, subprocess.SubprocessError) as error:
            self.stop()
            raise PostgresError(f"The embedded PostgreSQL server failed to start: {first_line(error)}") from None
        assert self.dsn is not None
        return self.dsn

    def _start(self, bindir: Path, user: str | None) -> None:
        remove_stale_servers(Path(tempfile.gettempdir()))
        self.folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
        # Who owns this server: a later run removes it if this process dies without stopping it.
        (self.folder / OWNER_FILE).write_text(str(os.getpid()))
        data = self.folder / "data"
        self.sockets = self.folder
        if len(str(self.folder / ".s.PGSQL.5432")) > _SOCKET_PATH_LIMIT:
            self.sockets = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX, dir="/tmp"))
            (self.sockets / OWNER_FILE).write_text(str(os.getpid()))
        if user is not None:
            for folder in {self.folder, self.sockets}:
                shutil.chown(folder, user)
                os.chmod(folder, 0o700)
        initdb = subprocess.run(
            [str(bindir / "initdb"), "-D", str(data), "-U", "recall", "--auth=trust", "--no-sync",
             "-E", "UTF8", "--locale=C"],
            capture_output=True, text=True, user=user, timeout=START_TIMEOUT_S,
        )
        if initdb.returncode != 0:
            raise PostgresError(f"The embedded PostgreSQL server failed to start: initdb: {_last_line(initdb.stderr)}")
        log = self.folder / "server.log"
        command = [str(bindir / "postgres"), "-D", str(data), "-k", str(self.sockets)]
        for key, value in self.settings.items():
            command += ["-c", f"{key}={value}"]
        with open(log, "wb") as handle:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT, user=user,
                start_new_session=True,
            )
        self.dsn = f"postgresql://recall@/postgres?host={self.sockets}"
        self._wait_ready(log)

    def _wait_ready(self, log: Path) -> None:
        import psycopg

        assert self.process is not None and self.dsn is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                reason = _failure_line(log.read_text(errors="replace")) if log.exists() else "no log"
                raise PostgresError(f"The embedded PostgreSQL server failed to start: {reason}{self._given()}")
            try:
                psycopg.connect(self.dsn, connect_timeout=2).close()
                return
            except psycopg.Error:
                if time.monotonic() > deadline:
                    raise PostgresError(
                        f"The embedded PostgreSQL server failed to start within {START_TIMEOUT_S:.0f} s."
                    ) from None
                time.sleep(0.05)

    def _given(self) -> str:
        """The server_settings the user gave, to name with a start failure (a shared_buffers of
        1TB failed with only "database system is shut down")."""
        given = {key: value for key, value in self.settings.items() if BASE_SETTINGS.get(key) != value}
        return f" (server_settings: {', '.join(f'{k}={v}' for k, v in given.items())})" if given else ""

    def stop(self) -> None:
        """Stop the server (fast shutdown, then kill) and delete its folders. Safe to call twice."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            try:
                process.send_signal(signal.SIGINT)  # fast shutdown: disconnect clients, stop
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for folder in (self.sockets, self.folder):
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        self.sockets = self.folder = None
        self.dsn = None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_servers(parent: Path) -> list[Path]:
    """Stop and delete embedded servers under `parent` whose owning recall-kit process is gone
    (killed with SIGKILL, which nothing can catch). Returns the folders removed."""
    removed = []
    for folder in parent.glob(FOLDER_PREFIX + "*"):
        try:
            owner = int((folder / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            continue  # not ours, or still being created
        if _alive(owner):
            continue
        try:
            postmaster = int((folder / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            postmaster = None
        if postmaster is not None and _alive(postmaster):
            try:
                os.kill(postmaster, signal.SIGQUIT)  # immediate shutdown: nothing in it is kept
                deadline = time.monotonic() + STOP_TIMEOUT_S
                while _alive(postmaster) and time.monotonic() < deadline:
                    time.sleep(0.05)
            except OSError:
                continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _failure_line(text: str) -> str:
    """The server log's first FATAL or PANIC line (the reason, naming the setting at fault), else
    its last line."""
    for line in text.splitlines():
        if "FATAL:" in line or "PANIC:" in line:
            return _last_line(line)
    return _last_line(text)


def _last_line(text: str) -> str:
    """The last line of a server log or tool output, without the log line's time and pid prefix."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return "no message"
    return re.sub(r"^\d{4}-\d\d-\d\d [\d:.]+ \S+ \[\d+\] ", "", lines[-1])


# --- one shared server per process ---------------------------------------------------------------

_servers: dict[tuple[str, tuple[tuple[str, str], ...]], EmbeddedServer] = {}
_lock = threading.Lock()
_stopping = False
_hooks_installed = False


def embedded_dsn(settings: Mapping[str, str] | None = None, package: str = "pgserver") -> str:
    """The DSN of this process's embedded server with these settings, started on first use.

    Every pg leg (and every scope's index) of a run shares it; it is stopped and deleted at exit,
    on SIGTERM/SIGHUP (turned into an orderly exit) and on Ctrl-C.
    """
    key = (package, tuple(sorted(dict(settings or {}).items())))
    with _lock:
        server = _servers.get(key)
        if server is not None and server.dsn is not None and server.process is not None \
                and server.process.poll() is None:
            return server.dsn
        _install_hooks()
        server = EmbeddedServer(dict(settings or {}), package)
        _servers[key] = server
        return server.start()


def running_servers() -> list[EmbeddedServer]:
    """The embedded servers this process has running (for tests and diagnostics)."""
    return [server for server in _servers.values() if server.process is not None]


def stop_embedded_servers() -> None:
    """Stop and delete every embedded server of this process (run at exit, and callable directly).

    Ctrl-C while it runs is held until every server is stopped and its folder deleted, then
    delivered (a Ctrl-C in the middle left a `recall-kit-pg-*` folder and a traceback)."""
    global _stopping
    _stopping = True
    try:
        with _lock:
            servers = list(_servers.values())
            _servers.clear()
        with _ctrl_c_held():
            for server in servers:
                server.stop()
    finally:
        _stopping = False


@contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """Hold SIGINT for the block (in the main thread), then deliver it to the handler that was there."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.getsignal(signal.SIGINT)
    if previous in (None, signal.SIG_IGN):
        yield
        return
    signal.signal(signal.SIGINT, lambda number, frame: received.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            signal.raise_signal(signal.SIGINT)


def _on_signal(number: int, frame: Any) -> None:
    if _stopping:
        return  # already cleaning up: let it finish
    # An orderly exit: `finally` blocks close the retrievers (dropping their tables), then atexit
    # stops the servers. 128 + the signal number, as a shell reports it.
    raise SystemExit(128 + number)


def _install_hooks() -> None:
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(stop_embedded_servers)
    if threading.current_thread() is not threading.main_thread():
        return
    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) in (signal.SIG_DFL, None):
            signal.signal(number, _on_signal)
