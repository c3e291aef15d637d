"""The embedded server as root from a private folder: PostgreSQL refuses root, so the server runs
as another user, who cannot enter a `mktemp -d` folder (0700) holding the clone and its venv. The
package's installation is reached here through such a folder (a link inside a 0700 folder), as a
venv under it would be."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from recall_kit_postgres import server
from recall_kit_postgres.connection import PostgresError

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the server as another user")


@pytest.fixture
def private_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """pgserver's installation seen through a 0700 folder, as a venv inside a private clone."""
    real = server.binaries().parent
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "pginstall").symlink_to(real, target_is_directory=True)
    monkeypatch.setattr(server, "binaries", lambda package="pgserver": private / "pginstall" / "bin")
    return private


def test_root_starts_the_server_from_binaries_in_a_private_folder(private_install: Path) -> None:
    user = server._server_user()
    assert user is not None
    blocked = server.unreachable(private_install / "pginstall" / "bin", user)
    assert blocked is not None and private_install.is_relative_to(blocked)  # (pytest's own folder is 0700 too)
    embedded = server.EmbeddedServer()
    try:
        dsn = embedded.start()  # was: [Errno 13] Permission denied: .../pginstall/bin/initdb
        import psycopg

        with psycopg.connect(dsn) as connection:
            assert connection.execute("select 1").fetchone() == (1,)
    finally:
        embedded.stop()
    copy = server.reachable_binaries(private_install / "pginstall" / "bin", user)
    assert copy.parents[2].name.startswith(server.INSTALL_PREFIX) and server.unreachable(copy, user) is None
    assert server.reachable_binaries(private_install / "pginstall" / "bin", user) == copy  # made once, reused


def test_a_temporary_folder_the_server_user_cannot_enter_is_refused_in_one_line(
        private_install: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hidden = private_install / "tmp"
    hidden.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(hidden))
    with pytest.raises(PostgresError) as refused:
        server.EmbeddedServer().start()
    message = str(refused.value)
    assert "\n" not in message and str(private_install) in message and "TMPDIR" in message
    assert not list(hidden.iterdir())


def test_root_starts_the_server_from_a_venv_that_is_a_link_into_a_private_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 72: `.venv` a link (in an open folder) into a 0700 folder: `unreachable` walked the path
    as written, found every folder open, skipped the copy, and initdb was "Permission denied"."""
    open_folder = Path(tempfile.mkdtemp(prefix="recall-kit-open-"))
    try:
        open_folder.chmod(0o755)
        private = tmp_path / "private"
        private.mkdir(mode=0o700)
        inner = private / "venvs"  # open itself: only the folder above it is private
        inner.mkdir(mode=0o755)
        (inner / "pginstall").symlink_to(server.binaries().parent, target_is_directory=True)
        (open_folder / ".venv").symlink_to(inner, target_is_directory=True)
        bindir = open_folder / ".venv" / "pginstall" / "bin"
        monkeypatch.setattr(server, "binaries", lambda package="pgserver": bindir)
        user = server._server_user()
        assert user is not None and server.unreachable(bindir, user) is not None
        embedded = server.EmbeddedServer()
        try:
            import psycopg

            with psycopg.connect(embedded.start()) as connection:
                assert connection.execute("select 1").fetchone() == (1,)
        finally:
            embedded.stop()
    finally:
        for link in open_folder.iterdir():
            link.unlink()
        open_folder.rmdir()
