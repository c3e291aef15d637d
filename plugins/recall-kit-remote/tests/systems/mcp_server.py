"""An MCP memory server for the tests, written with the `mcp` SDK (MCPServer, FastMCP before v2),
over a MemoryStore (the `fts5` plugin's SQLite FTS5 search).

    python mcp_server.py [--dataset FOLDER] [--transport stdio|streamable-http] [--port N] [--faults]
                         [--crash-on-call N] [--hang-at-initialize] [--garbage-on-stdout] [--pid-file PATH]
                         [--hang-stamp PATH]

Tools: `recall(query, k, user_id)` answers `{"results": [{"id", "score"}]}` as structured content;
`recall_text` answers the same as JSON text only; `add(content, id, user_id)` stores a memory and
answers `{"id": "m-<id>"}`, the server's own id (recall-kit maps it back).

Faults for the failure tests: with `--faults`, a query naming one gets it ("toolerror": the tool raises; "hangforever":
no answer, `--hang-stamp PATH` written when such a call begins; "nanscore": a NaN score; "schemalie": `results` is an
object, not the list the tool promises); `--crash-on-call N` exits the process on the Nth `recall` call (`--crash-stamp PATH`: writing the time first); `--hang-at-initialize`
never answers the client's `initialize` (and ignores SIGTERM); `--garbage-on-stdout` writes a line
that is not JSON-RPC first; `--pid-file` records the server's process id (to check it is ended).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when a server is built: a hang at initialize begins at once
    from mcp.server.mcpserver import MCPServer
    from memory_store import MemoryStore


def build_server(store: MemoryStore, faults: bool = False, crash_on_call: int = 0, crash_stamp: str = "",
                 hang_stamp: str = "") -> MCPServer:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("recall-kit test memory")
    calls = [0]

    @server.tool()
    async def recall(query: str, k: int = 10, user_id: str | None = None) -> dict[str, Any]:
        """Search the stored memories (with --faults, a fault named in the query gets it, for the
        tests; async, so that a hanging call holds only itself, not the server)."""
        calls[0] += 1
        if crash_on_call and calls[0] >= crash_on_call:
            if crash_stamp:  # when it died, for the test that times what follows
                Path(crash_stamp).write_text(repr(time.time()))
            os._exit(1)  # the server process dies mid-run, as a crash would
        if faults and "toolerror" in query:
            raise ValueError("the tool failed")
        if faults and "hangforever" in query:
            if hang_stamp:  # the hanging call has begun: for the test that signals recall-kit meanwhile
                Path(hang_stamp).write_text(repr(time.time()))
            await asyncio.sleep(60)  # longer than any test waits
        hits = store.search(query, k, user_id)
        if faults and "nanscore" in query:
            return {"results": [{"id": hit["id"], "score": math.nan} for hit in hits]}
        if faults and "schemalie" in query:
            return {"results": {"id": "not a list"}}
        return {"results": hits}

    @server.tool()
    def recall_text(query: str, k: int = 10) -> str:
        """Search the stored memories; the answer as JSON text."""
        return json.dumps({"results": store.search(query, k)})

    @server.tool()
    def add(content: str, id: str, user_id: str | None = None) -> dict[str, Any]:  # noqa: A002 - the tool's argument name
        """Store one memory; answer the server's id for it."""
        store.add(f"m-{id}", content, user_id)
        return {"id": f"m-{id}"}

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset")
    parser.add_argument("--transport", default="stdio", choices=["stdio", "streamable-http"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--faults", action="store_true", help="answer the failure tests' trigger word")
    parser.add_argument("--crash-on-call", type=int, default=0)
    parser.add_argument("--hang-at-initialize", action="store_true")
    parser.add_argument("--garbage-on-stdout", action="store_true")
    parser.add_argument("--pid-file")
    parser.add_argument("--crash-stamp", default="", help="write the time of the crash here (--crash-on-call)")
    parser.add_argument("--hang-stamp", default="", help="write the time here when a hanging call begins (--faults)")
    arguments = parser.parse_args()
    if arguments.pid_file:
        Path(arguments.pid_file).write_text(str(os.getpid()))
    if arguments.hang_at_initialize:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # as stubborn as a hung server gets: only SIGKILL ends it
        while True:
            time.sleep(3600)
    if arguments.garbage_on_stdout:
        print("this line is not JSON-RPC", flush=True)
    from memory_store import MemoryStore

    store = MemoryStore.from_dataset(arguments.dataset) if arguments.dataset else MemoryStore()
    server = build_server(store, faults=arguments.faults, crash_on_call=arguments.crash_on_call,
                          crash_stamp=arguments.crash_stamp, hang_stamp=arguments.hang_stamp)
    if arguments.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=arguments.port)


if __name__ == "__main__":
    main()
