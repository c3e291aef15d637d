"""The `mcp` retriever: a tool on an MCP server (stdio or streamable HTTP), called once per query
through the official `mcp` SDK; optionally an `add` tool called once per memory to fill the server."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import shlex
import threading
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from recall_kit.plugin import Corpus, Hit, Memory, PluginRunError, mask_secrets
from recall_kit_remote.base import (
    MEMORY_FIELDS,
    SEARCH_FIELDS,
    AnswerOptions,
    QueryFailed,
    RemoteRetriever,
    as_hit_id,
    fill_template,
    memory_values,
    parse_json_object,
    parse_template,
    read_hits,
    select,
    split_command_line,
)

#: Seconds to connect and initialise a session, by default (`mcp.connect_timeout`).
CONNECT_TIMEOUT_SECONDS = 60.0
#: Seconds to wait for a session's end: the SDK closes a stdio server's input, waits 2 s, sends
#: SIGTERM, waits 2 s more, then SIGKILL.
CLOSE_TIMEOUT_SECONDS = 15.0


def _field(result: Any, *names: str) -> Any:
    """An attribute of an SDK result under its current or its older (camelCase) name."""
    for name in names:
        if hasattr(result, name):
            return getattr(result, name)
    return None


def tool_payloads(result: Any) -> list[Any]:
    """What a tool call answered, in the order to read it: its structured content, then each text
    block that parses as JSON (a tool returning a JSON string may also wrap it as structured
    content, `{"result": "..."}`, which holds no hits)."""
    if _field(result, "is_error", "isError"):
        raise QueryFailed("the tool answered with an error")
    payloads = []
    structured = _field(result, "structured_content", "structuredContent")
    if structured is not None:
        payloads.append(structured)
    for block in _field(result, "content") or []:
        text = getattr(block, "text", None)
        if isinstance(text, str):
            try:
                payloads.append(json.loads(text))
            except json.JSONDecodeError:
                continue
    if not payloads:
        raise QueryFailed("the tool's answer holds neither structured content nor JSON text")
    return payloads


def read_tool_answer(result: Any, read: Any) -> Any:
    """`read(payload)` on the first payload of `result` it can read; else its first complaint."""
    complaint: QueryFailed | None = None
    for payload in tool_payloads(result):
        try:
            return read(payload)
        except QueryFailed as failure:
            complaint = complaint or failure
    assert complaint is not None  # noqa: S101 - tool_payloads returned at least one payload
    raise complaint


class MCPSession:
    """One MCP client session held open on a background event loop, so that synchronous code can
    call tools; connection and teardown happen inside one task, as the SDK's transports require."""

    def __init__(self, command: str, url: str, connect_timeout: float = CONNECT_TIMEOUT_SECONDS) -> None:
        # Quoted in messages: a password in the URL or an --api-key on the command line is masked.
        self.where = f"MCP server {mask_secrets(url)}" if url else f"MCP server command {mask_secrets(command)!r}"
        self._command, self._url = command, url
        #: The server's tool names (None: it would not list them).
        self.tools: list[str] | None = None
        _quiet_sdk_logs()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._stop: asyncio.Event | None = None
        self._session: Any = None
        # Set when the session's task has ended, its transports closed (a stdio server ended).
        self._finished = threading.Event()
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._held = asyncio.run_coroutine_threadsafe(self._hold(ready), self._loop)
        try:
            ready.result(timeout=connect_timeout)
        except concurrent.futures.TimeoutError:
            self.close()
            raise PluginRunError(f"Cannot connect to {self.where}: no answer to initialize within "
                                 f"{connect_timeout:g} s (mcp.connect_timeout).") from None
        except BaseException as error:
            self.close()
            raise PluginRunError(f"Cannot connect to {self.where}: {_describe(error)}.") from None

    async def _transport(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        if self._url:
            from mcp.client import streamable_http

            opener = getattr(streamable_http, "streamable_http_client", None) or streamable_http.streamablehttp_client
            streams = await stack.enter_async_context(opener(self._url))
        else:
            import os

            from mcp.client.stdio import StdioServerParameters, stdio_client

            argv = shlex.split(self._command)
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
            with open(os.devnull, "w") as quiet:  # noqa: PTH123 - the server's stderr is not ours to print
                streams = await stack.enter_async_context(stdio_client(params, errlog=quiet))
        return streams[0], streams[1]

    async def _hold(self, ready: concurrent.futures.Future[None]) -> None:
        from mcp import ClientSession

        self._stop = asyncio.Event()
        try:
            async with AsyncExitStack() as stack:
                read, write = await self._transport(stack)
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                self.tools = await _tool_names(session)
                self._session = session
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as error:
            if not ready.done():
                ready.set_exception(error)
            elif self._stop is not None and not self._stop.is_set():
                raise
        finally:
            self._finished.set()

    def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> Any:
        """Call `tool`; raise QueryFailed on a timeout or a failed call, PluginRunError when the
        session is gone."""
        if self._held.done():
            raise PluginRunError(f"The connection to {self.where} closed during the run.")
        future = asyncio.run_coroutine_threadsafe(self._session.call_tool(tool, arguments), self._loop)
        try:
            return future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise QueryFailed(f"no answer within {timeout:g} s") from None
        except Exception as error:
            if self._held.done():
                raise PluginRunError(f"The connection to {self.where} closed during the run.") from None
            raise QueryFailed(f"the call failed ({type(error).__name__})") from None

    def close(self) -> None:
        """End the session and, over stdio, the server process, however far it got: a session
        that is up is closed; one still connecting (a server hanging at initialize) is cancelled.
        Either way the SDK's transport ends the process (SIGKILL at last), and this waits for it."""
        if not self._finished.is_set():
            if self._session is not None and self._stop is not None:
                self._loop.call_soon_threadsafe(self._stop.set)
            else:
                self._held.cancel()
            self._finished.wait(timeout=CLOSE_TIMEOUT_SECONDS)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._loop.is_running():
            self._loop.close()


def _one_id(value: Any) -> str:
    """The server's id in an add call's answer (a one-element list, as `entities[].name` reads, is
    that element)."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    server_id = as_hit_id(value)
    if server_id is None:
        raise QueryFailed("the add tool's answer holds no string or integer id there")
    return server_id


async def _tool_names(session: Any) -> list[str] | None:
    """Every tool the server lists (all pages); None when it will not list them."""
    names: list[str] = []
    cursor = None
    try:
        while True:
            listed = await (session.list_tools(cursor=cursor) if cursor else session.list_tools())
            names += [tool.name for tool in listed.tools]
            cursor = _field(listed, "next_cursor", "nextCursor")
            if not cursor:
                return names
    except Exception:  # noqa: BLE001 - a server without tools/list: calls will say what is wrong
        return None


def _quiet_sdk_logs() -> None:
    """The SDK logs a server's garbage (a non-JSON-RPC line, a page that is not MCP) with a
    traceback and pydantic's many-line errors, which may quote what the server sent; the failure
    reaches the user as one line instead."""
    import logging

    logger = logging.getLogger("mcp")
    if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
        logger.addHandler(logging.NullHandler())
    logger.propagate = False


def _from_validation(error: BaseException) -> bool:
    """Whether pydantic's validation of what the server sent is behind `error` (its text lists
    every field the answer lacked, many lines of it)."""
    seen: BaseException | None = error
    for _ in range(8):
        if seen is None:
            return False
        if type(seen).__name__ == "ValidationError" or "validation error" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _describe(error: BaseException) -> str:
    """One line for a connection failure: the innermost exception's type and message (an
    ExceptionGroup from the SDK's task group is opened up); pydantic's errors, which list what
    the server sent, say only that the answer is not MCP."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if _from_validation(error):
        return f"its answer is not MCP (JSON-RPC) ({type(error).__name__})"
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class MCPRetriever(RemoteRetriever):
    """Calls the tool `tool` once per query, the query in `query_arg` (k in `k_arg`, the memory scope
    in `scope_arg`, and `arguments` added), and reads hits from its structured content or JSON text.

    The server either holds the user's store already (ids as in the dataset, e.g. `dataset import
    sqlite` of the same store), or, with `add_tool`, recall-kit fills it: one call per memory with
    its content in `add_content_arg` and its id in `add_id_arg`, or the arguments the JSON template
    `add_arguments` makes (`{"entities": [{"name": "{id}", "entityType": "memory", "observations":
    ["{content}"]}]}`). `search_arguments` is the search call's template the same way. When the add
    tool answers with an id of its own (at `add_result_id`), hits are mapped back to the dataset's ids.
    """

    description = "a tool on an MCP server (stdio or streamable HTTP), read as a black box"

    @dataclass(frozen=True)
    class Options(AnswerOptions):
        #: Start the server and speak stdio: the command line, e.g. "python server.py" ("{scope}" in it
        #: is the memory scope: one server per scope, each with its own store).
        command: str = ""
        #: Or connect over streamable HTTP, e.g. http://127.0.0.1:8000/mcp.
        url: str = ""
        #: The search tool (required).
        tool: str = "recall"
        #: The tool argument holding the query text.
        query_arg: str = "query"
        #: The tool argument holding k (empty: not sent).
        k_arg: str = "k"
        #: The tool argument holding the memory scope, when the dataset has scopes (empty: not sent).
        scope_arg: str = ""
        #: More arguments for every call, a JSON object, e.g. '{"user_id": "me"}'.
        arguments: str = ""
        #: The search call's arguments as a JSON template ({text}, {k}, {scope}); replaces query_arg and k_arg.
        search_arguments: str = ""
        #: A tool to call once per memory to fill the server (empty: the server holds the store).
        add_tool: str = ""
        #: The add tool's argument holding the memory's content.
        add_content_arg: str = "content"
        #: The add tool's argument holding the memory's id (empty: not sent).
        add_id_arg: str = "id"
        #: The add call's arguments as a JSON template ({id}, {content}, {scope}, {category}, {tags},
        #: {expanded_keywords}, {importance}, {created_at}); replaces add_content_arg and add_id_arg.
        add_arguments: str = ""
        #: Dotted path to the server's own id in the add tool's answer (empty: ids are the dataset's).
        add_result_id: str = ""
        #: Seconds to connect and initialise the session (a stdio server started then).
        connect_timeout: float = CONNECT_TIMEOUT_SECONDS

        def __post_init__(self) -> None:
            if bool(self.command) == bool(self.url):
                raise ValueError('give one of command (stdio, -o mcp.command="python server.py") '
                                 "or url (streamable HTTP, -o mcp.url=http://host:port/mcp)")
            if self.url and not self.url.startswith(("http://", "https://")):
                raise ValueError("url must be http://host:port/path or https://...")
            if self.command and not split_command_line(self.command, "mcp.command"):
                raise ValueError("command names no program")
            if not self.tool or not self.query_arg:
                raise ValueError("tool and query_arg must be given")
            if not self.connect_timeout > 0:
                raise ValueError("connect_timeout must be > 0")
            super().__post_init__()
            parse_json_object(self.arguments, "mcp.arguments")
            parse_template(self.search_arguments, "mcp.search_arguments", SEARCH_FIELDS)
            parse_template(self.add_arguments, "mcp.add_arguments", MEMORY_FIELDS)

    options: MCPRetriever.Options

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._session: MCPSession | None = None
        self._scope: str | None = None
        self._to_dataset: dict[str, str] = {}

    def build_index(self, corpus: Corpus) -> None:
        self.close()
        options = self.options
        self._scope = corpus[0].scope if len(corpus) else None
        # "{scope}" in the command: one server per scope, each on its own store (a memory file per scope).
        command = options.command
        if "{scope}" in command:  # filled in each word, so a scope needs no quoting of its own
            command = shlex.join(word.replace("{scope}", self._scope or "all") for word in shlex.split(command))
        self._session = MCPSession(command, options.url, options.connect_timeout)
        self._check_tools(self._session)
        if options.add_tool:
            for memory in corpus:
                self._add(memory)

    def _check_tools(self, session: MCPSession) -> None:
        """A tool the server does not list is one line naming the tools it has, before any call."""
        if session.tools is None:
            return
        for option, tool in (("mcp.tool", self.options.tool), ("mcp.add_tool", self.options.add_tool)):
            if tool and tool not in session.tools:
                listed = ", ".join(sorted(session.tools)) or "(none)"
                raise PluginRunError(f"{session.where} has no tool {tool!r} ({option}). Available: {listed}.")

    def _arguments(self) -> dict[str, Any]:
        arguments = parse_json_object(self.options.arguments, "mcp.arguments")
        if self.options.scope_arg and self._scope is not None:
            arguments[self.options.scope_arg] = self._scope
        return arguments

    def _add(self, memory: Memory) -> None:
        options, session = self.options, self._session
        assert session is not None  # noqa: S101 - build_index opened it
        if options.add_arguments:
            template = json.loads(options.add_arguments)
            arguments = {**self._arguments(), **fill_template(template, memory_values(memory))}
        else:
            arguments = {**self._arguments(), options.add_content_arg: memory.content}
            if options.add_id_arg:
                arguments[options.add_id_arg] = memory.id
        reason = ""
        for _ in range(options.tries):
            try:
                result = session.call(options.add_tool, arguments, options.timeout)
                if options.add_result_id:
                    server_id = read_tool_answer(result, lambda payload: _one_id(select(payload, options.add_result_id)))
                    self._to_dataset[server_id] = memory.id
                elif _field(result, "is_error", "isError"):
                    raise QueryFailed("the tool answered with an error")
                return
            except QueryFailed as failure:
                reason = str(failure)
        raise PluginRunError(f"{session.where}: tool {options.add_tool!r} failed to add memory {memory.id}: {reason}.")

    def ask(self, query: str, k: int) -> list[Hit]:
        options, session = self.options, self._session
        if session is None:
            raise PluginRunError("mcp: search before build_index.")
        if options.search_arguments:
            values = {"text": query, "k": k, "scope": self._scope}
            arguments = {**self._arguments(), **fill_template(json.loads(options.search_arguments), values)}
        else:
            arguments = {**self._arguments(), options.query_arg: query}
            if options.k_arg:
                arguments[options.k_arg] = k
        started = time.perf_counter()
        try:
            result = session.call(options.tool, arguments, options.timeout)
        finally:
            self.waited(started)
        hits = read_tool_answer(result, lambda payload: read_hits(payload, options.results, options.id, options.score))
        if self._to_dataset:
            hits = [Hit(self._to_dataset.get(hit.id, hit.id), hit.score) for hit in hits]
        return hits

    def empty_hint(self) -> str | None:
        options = self.options
        if self._scope is None or options.scope_arg or "{scope}" in options.search_arguments:
            return None
        return ("the dataset has scopes and mcp.scope_arg is unset, so the server was never told whose "
                "memories to search: name the tool's scope argument, e.g. -o mcp.scope_arg=user_id")

    def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            session.close()
