"""Real servers for the remote retrievers' tests, started and stopped by fixtures, bound to
127.0.0.1: search endpoints (the standard library's HTTP server) and an MCP memory server over
streamable HTTP."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parent / "systems")]

from remote_helpers import EXAMPLE, SERVERS, SYSTEMS, RawServer, free_port, wait_for_port  # noqa: E402

from recall_kit.testing import write_sample_dataset  # noqa: E402


@pytest.fixture(scope="session")
def sample_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The conformance suite's sample corpus as a dataset folder (what the servers hold)."""
    return write_sample_dataset(tmp_path_factory.mktemp("remote-sample") / "sample")


@pytest.fixture(scope="session", autouse=True)
def servers(sample_folder: Path) -> Iterator[dict[str, str]]:
    """An HTTP search endpoint over the sample corpus and one over the example dataset, and an
    MCP server (streamable HTTP) over the sample corpus, for the whole session."""
    from http_server import SearchServer
    from memory_store import MemoryStore

    port = free_port()
    mcp_process = subprocess.Popen(
        [sys.executable, str(SYSTEMS / "mcp_server.py"), "--dataset", str(sample_folder),
         "--transport", "streamable-http", "--port", str(port), "--faults"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    sample = SearchServer(MemoryStore.from_dataset(str(sample_folder)), faults=True)
    example = SearchServer(MemoryStore.from_dataset(str(EXAMPLE)))
    try:
        with sample, example:
            wait_for_port(port, mcp_process)
            SERVERS.update(http_sample=sample.url, http_example=example.url,
                           mcp_sample=f"http://127.0.0.1:{port}/mcp")
            yield SERVERS
    finally:
        mcp_process.terminate()
        mcp_process.wait(timeout=10)
        SERVERS.clear()


@pytest.fixture(autouse=True)
def remote_plugins() -> Iterator[None]:
    """The plugins the in-process runs use: this one, fts5 (the reference leg) and fusion."""
    import recall_kit_fts5
    import recall_kit_fusion
    import recall_kit_remote

    from recall_kit.testing import registered_plugin

    with registered_plugin(recall_kit_remote), registered_plugin(recall_kit_fts5), \
            registered_plugin(recall_kit_fusion):
        yield


@pytest.fixture()
def raw_mcp_http() -> Iterator[Callable[..., str]]:
    """Start `systems/raw_mcp_server.py` over streamable HTTP on a free port with these arguments
    (`--sse`, `--answer-file F`, ...); returns its URL. Every server started is ended after the test."""
    processes: list[subprocess.Popen[bytes]] = []

    def start(*arguments: str) -> str:
        port = free_port()
        processes.append(subprocess.Popen([sys.executable, str(SYSTEMS / "raw_mcp_server.py"), "--http", str(port),
                                           *arguments], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        wait_for_port(port, processes[-1])
        return f"http://127.0.0.1:{port}/mcp"

    yield start
    for process in processes:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture()
def serve() -> Iterator[Callable[..., RawServer]]:
    """Start `RawServer`s (each answering every request with the bytes given); closed after the test."""
    servers: list[RawServer] = []

    def start(answer: Callable[[], bytes], trickle: float = 0.0) -> RawServer:
        servers.append(RawServer(answer, trickle))
        return servers[-1]

    yield start
    for server in servers:
        server.close()
