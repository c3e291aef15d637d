"""recall-kit-remote: evaluate a running memory system as a black box: `http` (a REST endpoint),
`command` (a program speaking JSON lines on stdin/stdout) and `mcp` (a tool on an MCP server)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recall_kit.plugin import Register, hookimpl, lazy_attributes

if TYPE_CHECKING:
    from recall_kit_remote.command import CommandRetriever
    from recall_kit_remote.http import HTTPRetriever
    from recall_kit_remote.mcp_tool import MCPRetriever
    from recall_kit_remote.snapshot import HTTPSnapshotImporter, MCPSnapshotImporter

__all__ = ["CommandRetriever", "HTTPRetriever", "HTTPSnapshotImporter", "MCPRetriever", "MCPSnapshotImporter",
           "register_importers", "register_retrievers"]

# Imported on first use: httpx and the mcp SDK load only when a run needs them.
_LAZY = {
    "CommandRetriever": "recall_kit_remote.command",
    "HTTPRetriever": "recall_kit_remote.http",
    "MCPRetriever": "recall_kit_remote.mcp_tool",
    "HTTPSnapshotImporter": "recall_kit_remote.snapshot",
    "MCPSnapshotImporter": "recall_kit_remote.snapshot",
}

__getattr__ = lazy_attributes(__name__, _LAZY)


@hookimpl
def register_retrievers(register: Register) -> None:
    """Register the `http`, `command` and `mcp` retrievers."""
    from recall_kit_remote.command import CommandRetriever
    from recall_kit_remote.http import HTTPRetriever
    from recall_kit_remote.mcp_tool import MCPRetriever

    register("http", HTTPRetriever)
    register("command", CommandRetriever)
    register("mcp", MCPRetriever)


@hookimpl
def register_importers(register: Register) -> None:
    """Register the `mcp` and `http` snapshot importers: a live system's own listing as the corpus."""
    from recall_kit_remote.snapshot import HTTPSnapshotImporter, MCPSnapshotImporter

    register("mcp", MCPSnapshotImporter)
    register("http", HTTPSnapshotImporter)


@hookimpl
def register_commands(app: Any) -> None:
    """Add `recall-kit remote probe`."""
    from recall_kit_remote.cli import remote_app

    app.add_typer(remote_app, name="remote")
