"""The `mcp` retriever against a real MCP memory server (the `mcp` SDK's MCPServer over the fts5
plugin's SQLite FTS5 query), over stdio and over streamable HTTP."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from recall_kit_remote import MCPRetriever
from remote_helpers import EXAMPLE, SERVERS, free_port, mcp_command, run_cli

from recall_kit import SystemSpec, load_dataset, run_benchmark
from recall_kit.testing import RetrieverConformance


class TestMCPStreamableHTTPConformance(RetrieverConformance):
    searches_own_store = True  # the server holds the sample store

    @staticmethod
    def retriever_factory() -> MCPRetriever:
        return MCPRetriever(MCPRetriever.Options(url=SERVERS["mcp_sample"]))


def test_stdio_same_rankings_and_metrics_as_the_fts5_leg() -> None:
    """Faithfulness: the server holds the same store (ids as in the dataset) and runs the same query."""
    dataset = load_dataset(str(EXAMPLE))
    local = run_benchmark(SystemSpec(retriever="fts5"), dataset, k=10, latency_sample=3, show_progress=False)
    remote = run_benchmark(SystemSpec(retriever="mcp", options={"mcp": {"command": mcp_command("--dataset", str(EXAMPLE))}}),
                           dataset, k=10, latency_sample=3, show_progress=False)
    assert remote.rankings() == local.rankings()
    assert remote.means() == local.means()
    wait = remote.latency.leg("mcp").wait
    assert wait is not None and wait.n == 3


def test_filled_through_add_tool_matches_fts5_over_content(tmp_path: Path) -> None:
    """Over stdio, with `add_tool`: each memory's content goes in one call and the server's ids
    ("m-<id>") map back; hits are read from the tool's JSON text. The server indexes content only,
    so the reference is the fts5 leg over the content column."""
    dataset = load_dataset(str(EXAMPLE))
    local = run_benchmark(SystemSpec(retriever="fts5", options={"fts5": {"columns": ("content",)}}), dataset,
                          k=10, latency_sample=0, show_progress=False)
    remote = run_benchmark(SystemSpec(retriever="mcp", options={"mcp": {
        "command": mcp_command(), "tool": "recall_text", "add_tool": "add", "add_result_id": "id"}}),
        dataset, k=10, latency_sample=0, show_progress=False)
    assert remote.rankings() == local.rankings()
    assert remote.overall == local.overall


def test_tool_error_is_retried_then_named(sample_folder: Path) -> None:
    dataset = load_dataset(str(sample_folder))
    failing = dataset.queries[4]
    dataset.queries[4] = replace(failing, text=failing.text + " toolerror")
    result = run_benchmark(SystemSpec(retriever="mcp", options={"mcp": {"url": SERVERS["mcp_sample"], "tries": 2}}),
                           dataset, k=10, latency_sample=0, show_progress=False, max_failed=1)
    assert result.rankings()[failing.query_id] == []
    assert any(f"failed on 1 of 6 queries, scored as empty rankings: {failing.query_id} "
               "(the tool answered with an error; 2 tries)" in warning for warning in result.warnings)
    assert not any("the tool failed" in warning for warning in result.warnings)


def test_unreachable_server_is_one_line_exit_2_no_file(tmp_path: Path, sample_folder: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    out = tmp_path / "never.json"
    result = run_cli("eval", "--dataset", str(sample_folder), "-r", "mcp", "-o", f"mcp.url={url}", "--json", str(out))
    assert result.returncode == 2
    assert "\n" not in result.stderr.strip() and url in result.stderr
    assert not out.exists()


def test_server_command_that_fails_is_one_line_exit_2(sample_folder: Path) -> None:
    result = run_cli("eval", "--dataset", str(sample_folder), "-r", "mcp", "-o", "mcp.command=no-such-mcp-server --stdio")
    assert result.returncode == 2
    assert "\n" not in result.stderr.strip() and "no-such-mcp-server" in result.stderr


def test_close_lets_the_tasks_on_its_loop_end_and_closes_its_async_generators() -> None:
    """The HTTP transport's async generators are closed by tasks the session's loop schedules as
    they are collected: a loop stopped with one pending printed "Task was destroyed but it is
    pending!" on stderr beside the run's one line. `close` now lets such a task end and closes a
    generator left open, as `asyncio.run` does."""
    import asyncio

    from recall_kit_remote.mcp_tool import MCPSession

    session = MCPSession("", SERVERS["mcp_sample"])
    loop = session._loop
    ended: list[str] = []

    async def generator():  # type: ignore[no-untyped-def]
        try:
            yield 1
        finally:
            ended.append("generator")

    async def open_generator():  # type: ignore[no-untyped-def]
        held = generator()
        await held.__anext__()
        return held

    async def closing() -> None:
        await asyncio.sleep(0.5)
        ended.append("task")

    held = asyncio.run_coroutine_threadsafe(open_generator(), loop).result(10)
    task = asyncio.run_coroutine_threadsafe(closing(), loop)
    session.close()
    assert sorted(ended) == ["generator", "task"] and task.done() and not task.cancelled()
    assert loop.is_closed()
    del held
