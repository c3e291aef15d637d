"""An MCP memory server for the tests, written with the `mcp` SDK (MCPServer, FastMCP before v2),
over a MemoryStore (the `fts5` plugin's SQLite FTS5 search).

    python mcp_server.py [--dataset FOLDER] [--transport stdio|streamable-http] [--port N] [--faults]

Tools: `recall(query, k, user_id)` answers `{"results": [{"id", "score"}]}` as structured content;
`recall_text` answers the same as JSON text only; `add(content, id, user_id)` stores a memory and
answers `{"id": "m-<id>"}`, the server's own id (recall-kit maps it back).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from mcp.server.mcpserver import MCPServer
from memory_store import MemoryStore


def build_server(store: MemoryStore, faults: bool = False) -> MCPServer:
    server = MCPServer("recall-kit test memory")

    @server.tool()
    def recall(query: str, k: int = 10, user_id: str | None = None) -> dict[str, Any]:
        """Search the stored memories (with --faults, "toolerror" in the query: the tool raises)."""
        if faults and "toolerror" in query:
            raise ValueError("the tool failed")
        return {"results": store.search(query, k, user_id)}

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
    arguments = parser.parse_args()
    store = MemoryStore.from_dataset(arguments.dataset) if arguments.dataset else MemoryStore()
    server = build_server(store, faults=arguments.faults)
    if arguments.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=arguments.port)


if __name__ == "__main__":
    main()
