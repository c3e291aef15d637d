"""A throwaway PostgreSQL cluster in a temporary folder, started by the tests themselves."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest


def _bindir() -> Path | None:
    found = shutil.which("pg_config")
    if found:
        out = subprocess.run([found, "--bindir"], capture_output=True, text=True)
        candidate = Path(out.stdout.strip())
        if (candidate / "initdb").exists():
            return candidate
    for path in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(path, "initdb").exists():
            return Path(path)
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _as_server_user(command: list[str]) -> list[str]:
    """initdb and postgres refuse to run as root: run them as the `postgres` system user then."""
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--", *command]


@pytest.fixture(scope="session")
def pg_dsn():
    """Start a cluster listening only on a Unix socket in a temp folder; yield its DSN; stop it."""
    bindir = _bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed; .ci/run installs them")
    # Not pytest's tmp_path: its folders are private to root, and the server runs as `postgres`.
    root = Path(tempfile.mkdtemp(prefix="recall-kit-pg-"))
    data, sockets = root / "data", root / "sock"
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sockets, "postgres")
        os.chmod(root, 0o755)
    subprocess.run(
        _as_server_user([str(bindir / "initdb"), "-D", str(data), "-U", "recall", "--auth=trust",
                         "--no-sync", "-E", "UTF8", "--locale=C"]),
        check=True, capture_output=True,
    )
    log = root / "server.log"
    subprocess.run(
        _as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60", "start",
                         "-o", f"-c listen_addresses='' -c unix_socket_directories={sockets} -c fsync=off"]),
        check=True, capture_output=True,
    )
    try:
        yield f"postgresql://recall@/postgres?host={sockets}"
    finally:
        subprocess.run(_as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
