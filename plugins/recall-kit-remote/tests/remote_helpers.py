"""What the remote retrievers' tests share: where the test systems are, where the session's
servers listen, and recall-kit run as a real subprocess."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
SYSTEMS = HERE / "systems"
ROOT = HERE.parents[2]
#: The example dataset shipped in the repository (340 memories, 120 queries).
EXAMPLE = ROOT / "examples" / "memories"

#: Where the session's servers listen, filled by the `servers` fixture.
SERVERS: dict[str, str] = {}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with status {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {seconds:g} s")


def dataset_with(tmp_path: Path, sample_folder: Path, suffixes: dict[int, str]) -> Path:
    """The sample dataset with words appended to some queries (the test systems' fault triggers)."""
    folder = tmp_path / "altered"
    folder.mkdir()
    for name in ("corpus.jsonl", "qrels.jsonl"):
        (folder / name).write_text((sample_folder / name).read_text())
    queries = [json.loads(line) for line in (sample_folder / "queries.jsonl").read_text().splitlines()]
    for index, suffix in suffixes.items():
        queries[index]["text"] += " " + suffix
    (folder / "queries.jsonl").write_text("".join(json.dumps(query) + "\n" for query in queries))
    return folder


def mcp_command(*arguments: str) -> str:
    """The command line that starts the test MCP server over stdio."""
    return " ".join([sys.executable, str(SYSTEMS / "mcp_server.py"), *arguments])


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """recall-kit as a real subprocess, with only the plugins these tests need."""
    environment = dict(os.environ, RECALL_KIT_LOAD_PLUGINS="recall-kit-remote,recall-kit-fts5,recall-kit-fusion",
                       **(env or {}))
    return subprocess.run([sys.executable, "-m", "recall_kit", *args], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=300, check=False)



#: The reference MCP memory server (@modelcontextprotocol/server-memory), as `make` installs it.
REFERENCE_MEMORY_SERVER = ROOT / ".node" / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"


def reference_server_missing() -> str | None:
    """Why the reference MCP memory server cannot run here (None: it can)."""
    import shutil

    if shutil.which("node") is None:
        return "node is not installed: the reference MCP memory server needs it"
    if not REFERENCE_MEMORY_SERVER.is_file():
        return "@modelcontextprotocol/server-memory is not installed: run make (it installs it when npm exists)"
    return None


def reference_server_command(memory_file: Path) -> str:
    """The command line that starts the reference MCP memory server over stdio on `memory_file`."""
    import shlex

    return f"env MEMORY_FILE_PATH={shlex.quote(str(memory_file))} node {shlex.quote(str(REFERENCE_MEMORY_SERVER))}"


#: Secrets a hostile test puts in URLs and headers: never printed.
PASSWORD = "hunter2-secret"
API_KEY = "sk-live-0123456789"


class RawServer:
    """A real HTTP server on 127.0.0.1 that answers every request with `answer()`'s bytes, as given."""

    def __init__(self, answer: Callable[[], bytes], trickle: float = 0.0) -> None:
        self.answer = answer
        self.trickle = trickle  # seconds between two bytes of the search's answer (0: all at once)
        self.answering = threading.Event()  # set as the search's answer begins
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = connection.recv(65536)
                if not chunk:
                    return
                data += chunk
            if data.startswith(b"HEAD"):
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                data = data.split(b"\r\n\r\n", 1)[1]
                while b"\r\n\r\n" not in data:
                    chunk = connection.recv(65536)
                    if not chunk:
                        return
                    data += chunk
            self.answering.set()
            try:
                if not self.trickle:
                    connection.sendall(self.answer())
                    return
                for byte in self.answer():
                    connection.sendall(bytes([byte]))
                    time.sleep(self.trickle)
            except OSError:
                pass

    def url(self, secrets: bool = True) -> str:
        auth = f"alice:{PASSWORD}@" if secrets else ""
        return f"http://{auth}127.0.0.1:{self.port}/search" + (f"?api_key={API_KEY}" if secrets else "")

    def close(self) -> None:
        self.socket.close()
