"""The embedded server's life: started when no DSN is given, stopped and deleted when the run ends
normally, on an error, on SIGTERM and on Ctrl-C; temporary tables on an external server vanish even
when recall-kit is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import psycopg
import pytest
from recall_kit_postgres.server import FOLDER_PREFIX, EmbeddedServer

from recall_kit import RecallKitError

REPO = Path(__file__).resolve().parents[3]
PLUGINS = "recall-kit-postgres,recall-kit-dense,recall-kit-fusion"

# Builds one pg leg, says so, then waits to be signalled.
SCRIPT = """
import sys, time
from recall_kit import Corpus, Memory
from recall_kit.plugin import build_options
from recall_kit_postgres import PostgresFTS
from recall_kit_postgres.server import running_servers
options = dict(arg.split("=", 1) for arg in sys.argv[1:])
leg = PostgresFTS(build_options("pg-fts", PostgresFTS.Options, options))
leg.build_index(Corpus([Memory("1", "kestrel dashboard")]))
servers = running_servers()
print("ready", leg.table, servers[0].pid if servers else 0, flush=True)
try:
    time.sleep(120)
finally:
    leg.close()
"""


@pytest.fixture
def tmpdir_env():
    """A TMPDIR of the test's own (traversable by the server user when running as root)."""
    folder = Path(tempfile.mkdtemp(prefix="rk-tmp-", dir="/tmp"))
    folder.chmod(0o755)
    env = dict(os.environ, TMPDIR=str(folder), RECALL_KIT_LOAD_PLUGINS=PLUGINS)
    env.pop("RECALL_KIT_PG_DSN", None)
    yield folder, env
    subprocess.run(["rm", "-rf", str(folder)], check=False)


def leftovers(folder: Path) -> tuple[list[str], list[int]]:
    """Server folders left in `folder`, and postgres processes whose command line names it."""
    folders = [path.name for path in folder.iterdir() if path.name.startswith(FOLDER_PREFIX)]
    processes = []
    for process in psutil.process_iter(["name", "cmdline"]):
        try:
            if process.info["name"] == "postgres" and str(folder) in " ".join(process.info["cmdline"] or []):
                processes.append(process.pid)
        except psutil.Error:
            continue
    return folders, processes


def _default_signals() -> None:
    """Ctrl-C as a terminal delivers it, even where the test run was started with SIGINT ignored
    (`cmd &`), which a child inherits."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_script(env: dict[str, str], *options: str) -> tuple[subprocess.Popen[str], list[str]]:
    process = subprocess.Popen([sys.executable, "-c", SCRIPT, *options], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env, cwd=REPO, preexec_fn=_default_signals)
    assert process.stdout is not None
    line = process.stdout.readline().split()
    assert line and line[0] == "ready", process.stderr.read() if process.stderr else ""
    return process, line


@pytest.mark.parametrize(("sent", "status"), [(signal.SIGTERM, 128 + signal.SIGTERM), (signal.SIGINT, None)])
def test_a_signal_stops_and_deletes_the_embedded_server(tmpdir_env, sent, status):
    folder, env = tmpdir_env
    process, line = start_script(env)
    pid = int(line[2])
    assert psutil.pid_exists(pid)
    assert leftovers(folder)[0]  # the data folder is there while it runs
    process.send_signal(sent)
    code = process.wait(60)
    assert code != 0 and (status is None or code == status)
    assert leftovers(folder) == ([], [])
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_server_orphaned_by_sigkill_is_removed_by_the_next_run(tmpdir_env, monkeypatch):
    folder, env = tmpdir_env
    process, line = start_script(env)
    pid = int(line[2])
    process.send_signal(signal.SIGKILL)  # nothing can catch it: the server outlives the run
    process.wait(60)
    assert psutil.pid_exists(pid) and leftovers(folder)[0]
    monkeypatch.setenv("TMPDIR", str(folder))
    tempfile.tempdir = None
    try:
        server = EmbeddedServer()
        server.start()  # finds the folder whose owner is gone: stops its server, deletes it
        try:
            names, processes = leftovers(folder)
            assert names == [server.folder.name] and processes == [server.pid]
        finally:
            server.stop()
    finally:
        monkeypatch.undo()
        tempfile.tempdir = None
    deadline = time.monotonic() + 10
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert leftovers(folder) == ([], [])


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGKILL])
def test_external_server_keeps_no_table_when_recall_kit_is_killed(pg_dsn, tmpdir_env, sent):
    _, env = tmpdir_env
    process, line = start_script(env, f"dsn={pg_dsn}", "allow_write=true")
    table = line[1]
    with psycopg.connect(pg_dsn) as connection:
        assert connection.execute("SELECT count(*) FROM pg_class WHERE relname = %s", (table,)).fetchone()[0] == 1
    process.send_signal(sent)
    process.wait(60)
    deadline = time.monotonic() + 20
    while True:  # the server drops a temporary table when the session ends
        with psycopg.connect(pg_dsn) as connection:
            count = connection.execute("SELECT count(*) FROM pg_class WHERE relname = %s", (table,)).fetchone()[0]
        if count == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert count == 0


def run_cli(env: dict[str, str], *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "recall_kit", *arguments], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=600)


def test_cli_run_leaves_no_server_after_success_and_after_errors(tmpdir_env):
    folder, env = tmpdir_env
    done = run_cli(env, "eval", "-d", "examples/memories", "-r", "pg-fts", "-o", "pg-fts.parser=or")
    assert done.returncode == 0, done.stderr
    assert leftovers(folder) == ([], [])
    # The first leg starts the server; the second fails: one line, exit 2, nothing left behind.
    done = run_cli(env, "eval", "-d", "examples/memories", "-r", "pg-fts+pgvector", "--fusion", "rrf",
                   "-o", "pgvector.vector_type=halfvec")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
    assert "halfvec needs pgvector 0.7 or later" in done.stderr
    assert leftovers(folder) == ([], [])


def test_server_failing_to_start_is_one_line_and_leaves_nothing(tmpdir_env, monkeypatch):
    folder, env = tmpdir_env
    done = run_cli(env, "eval", "-d", "examples/memories", "-r", "pg-fts",
                   "-o", "pg-fts.server_settings=shared_buffers:nonsense")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == ('Error: The embedded PostgreSQL server failed to start: FATAL: invalid value '
                                   'for parameter "shared_buffers": "nonsense" (server_settings: shared_buffers=nonsense)')
    assert leftovers(folder) == ([], [])
    # Issue 32: a failure whose last log line is "database system is shut down" named no setting.
    done = run_cli(env, "eval", "-d", "examples/memories", "-r", "pg-fts",
                   "-o", "pg-fts.server_settings=shared_buffers:4000GB")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().endswith("(server_settings: shared_buffers=4000GB)")
    assert "FATAL:" in done.stderr and "shut down" not in done.stderr
    assert leftovers(folder) == ([], [])
    monkeypatch.setenv("TMPDIR", str(folder))
    tempfile.tempdir = None  # re-read TMPDIR
    try:
        server = EmbeddedServer({"max_connections": "-5"})
        with pytest.raises(RecallKitError, match="failed to start") as error:
            server.start()
        assert "\n" not in str(error.value)
        assert server.process is None and server.folder is None
        assert leftovers(folder) == ([], [])
    finally:
        monkeypatch.undo()
        tempfile.tempdir = None


# Starts the embedded server inside a recall-kit command, as a pg leg would, and makes Ctrl-C
# arrive just as the server shuts down at exit (issue 46); `host` runs it under recall-kit's main.
CTRL_C_AT_STOP = """
import os, signal, sys
from recall_kit_postgres import server
host = sys.argv[1] == "host"

def command():
    server.embedded_dsn()
    print("ready", server.running_servers()[0].pid, flush=True)
    original = server.EmbeddedServer.stop

    def stop(self):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C as the shutdown begins
        original(self)

    server.EmbeddedServer.stop = stop
    print("Wrote out.json", file=sys.stderr, flush=True)

if host:
    import recall_kit.cli as cli
    cli._main = command
    cli.main()
else:
    command()
"""


@pytest.mark.parametrize("host", ["host", "library"])
def test_ctrl_c_while_the_embedded_server_stops_leaves_nothing(tmpdir_env, host):
    folder, env = tmpdir_env
    process = subprocess.Popen([sys.executable, "-c", CTRL_C_AT_STOP, host], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env, cwd=REPO, preexec_fn=_default_signals)
    out, err = process.communicate(timeout=120)
    assert out.startswith("ready"), err
    assert leftovers(folder) == ([], [])
    if host == "host":  # recall-kit's own exit: no traceback, and the exit says it was interrupted
        assert process.returncode == 130, err
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err


def test_a_folder_out_of_reach_behind_a_link_is_found(tmp_path: Path) -> None:
    """Issue 72: a link in an open folder into a 0700 one: the folders on the way to the link's target
    count, as the kernel follows it (the path as written is open everywhere)."""
    import pwd

    from recall_kit_postgres.server import unreachable

    other = next((entry.pw_name for entry in pwd.getpwall() if entry.pw_uid not in (0, os.geteuid())), None)
    if other is None:
        pytest.skip("no second user on this machine")
    open_folder = Path(tempfile.mkdtemp(prefix="recall-kit-open-"))
    try:
        open_folder.chmod(0o755)
        private = open_folder / "private"
        (private / "venv" / "bin").mkdir(parents=True)
        private.chmod(0o700)
        (open_folder / "link").symlink_to(private / "venv", target_is_directory=True)
        (open_folder / "relative").symlink_to("private/venv", target_is_directory=True)
        (open_folder / "chain").symlink_to(open_folder / "relative", target_is_directory=True)
        for name in ("link", "relative", "chain"):
            assert unreachable(open_folder / name / "bin", other) == private, name
        private.chmod(0o755)
        assert unreachable(open_folder / "link" / "bin", other) is None
    finally:
        private.chmod(0o700)
        for entry in open_folder.iterdir():
            if entry.is_symlink():
                entry.unlink()
        (private / "venv" / "bin").rmdir()
        (private / "venv").rmdir()
        private.rmdir()
        open_folder.rmdir()
