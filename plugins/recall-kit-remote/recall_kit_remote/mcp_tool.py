"""The `mcp` retriever: a tool on an MCP server (stdio or streamable HTTP), called once per query
through the official `mcp` SDK; optionally an `add` tool called once per memory to fill the server."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import json
import os
import shlex
import signal
import threading
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from recall_kit.plugin import Corpus, Hit, Memory, PluginRunError, RecallKitError, mask_secrets
from recall_kit_remote.base import (
    MAX_TIMEOUT,
    MEMORY_FIELDS,
    SEARCH_FIELDS,
    AnswerMisread,
    FillOptions,
    QueryFailed,
    RemoteRetriever,
    check_url,
    compile_pattern,
    fill_template,
    listing_request,
    memory_values,
    parse_json_object,
    parse_template,
    select,
    server_id,
    split_command_line,
)
from recall_kit_remote.mcp_caps import DEFAULT_MAX_BYTES, CappedProcess, MessageCap, capped_client

#: Seconds to connect and initialise a session, by default (`mcp.connect_timeout`).
CONNECT_TIMEOUT_SECONDS = 60.0
#: Seconds to wait for a session's end: the SDK closes a stdio server's input, waits 2 s, sends
#: SIGTERM, waits 2 s more, then SIGKILL.
CLOSE_TIMEOUT_SECONDS = 15.0


#: Seconds the tasks left on a session's loop get to end at its close, then again once cancelled.
DRAIN_SECONDS = 1.0

#: Seconds between SIGTERM and SIGKILL when a server is ended at once (a Ctrl-C during the close).
KILL_GRACE_SECONDS = 0.5
#: How often that grace checks whether the group has ended.
KILL_POLL_SECONDS = 0.02

#: Seconds a failed call waits for a stdio server's exit status (a dead server's is there at once).
EXIT_WAIT_SECONDS = 0.5
#: How often a call in flight checks whether a stdio server has exited.
EXIT_POLL_SECONDS = 0.25

#: The processes the SDK starts in this task (a stdio server), so a session learns its exit status,
#: and the cap on each message (a line) the process's stdout carries.
_SPAWNED: contextvars.ContextVar[tuple[list[Any], MessageCap] | None] = contextvars.ContextVar(
    "recall_kit_remote_spawned", default=None)


def _capture_processes() -> None:
    """Wrap the SDK's process creation (once) so that a session holds its stdio server's process:
    a server that exits mid-run is then reported by its exit status, at once; and its stdout is
    capped (`mcp.max_bytes` a line). An SDK without the function leaves the session without
    either (the run then reports the closed connection)."""
    from mcp.client import stdio

    create = getattr(stdio, "_create_platform_compatible_process", None)
    if create is None or getattr(create, "recall_kit_wrapped", False):
        return

    async def created(*args: Any, **kwargs: Any) -> Any:
        process = await create(*args, **kwargs)
        spawned = _SPAWNED.get()
        if spawned is not None:
            process = CappedProcess(process, spawned[1])
            spawned[0].append(process)
        return process

    created.recall_kit_wrapped = True  # type: ignore[attr-defined]
    stdio._create_platform_compatible_process = created


def _field(result: Any, *names: str) -> Any:
    """An attribute of an SDK result under its current or its older (camelCase) name."""
    for name in names:
        if hasattr(result, name):
            return getattr(result, name)
    return None


def _texts(result: Any) -> tuple[list[Any], list[str]]:
    """A tool answer's text blocks: those that parse as JSON (parsed), and the others."""
    parsed: list[Any] = []
    plain: list[str] = []
    for block in _field(result, "content") or []:
        text = getattr(block, "text", None)
        if isinstance(text, str):
            try:
                parsed.append(json.loads(text))
            except (ValueError, RecursionError):  # not JSON, or nested past what a reader goes
                plain.append(text)
    return parsed, plain


def _text_hint(option: str) -> str:
    return (f"the tool answered text, not JSON: give {option} (a regular expression with one group) to read "
            "ids from it ('recall-kit remote probe' shows candidates)")


def tool_payloads(result: Any, text: bool = False, pattern_option: str = "mcp.id_pattern") -> list[Any]:
    """What a tool call answered, in the order to read it: its structured content, then each text
    block that parses as JSON (a tool returning a JSON string may also wrap it as structured
    content, `{"result": "..."}`, which holds no hits); with `text` (an id pattern is given),
    the text blocks that are not JSON, joined, come first, as the text they are."""
    if _field(result, "is_error", "isError"):
        raise QueryFailed("the tool answered with an error")
    parsed, plain = _texts(result)
    structured = _field(result, "structured_content", "structuredContent")
    payloads = ([structured] if structured is not None else []) + parsed
    if text and plain:
        payloads.insert(0, "\n".join(plain))
    if not payloads:
        raise AnswerMisread(_text_hint(pattern_option) if plain else
                            "the tool's answer holds neither structured content nor JSON text")
    return payloads


def read_tool_answer(result: Any, read: Any, text: bool = False, pattern_option: str = "mcp.id_pattern") -> Any:
    """`read(payload)` on the first payload of `result` it can read; else, when the answer is
    text and no pattern reads it, a hint naming `pattern_option`; else the first complaint."""
    complaint: QueryFailed | None = None
    for payload in tool_payloads(result, text, pattern_option):
        try:
            return read(payload)
        except QueryFailed as failure:
            complaint = complaint or failure
    if not text and _texts(result)[1]:
        raise AnswerMisread(_text_hint(pattern_option))
    assert complaint is not None  # noqa: S101 - tool_payloads returned at least one payload
    raise complaint


class MCPSession:
    """One MCP client session held open on a background event loop, so that synchronous code can
    call tools; connection and teardown happen inside one task, as the SDK's transports require."""

    def __init__(self, command: str, url: str, connect_timeout: float = CONNECT_TIMEOUT_SECONDS,
                 max_bytes: int = DEFAULT_MAX_BYTES, cap_option: str = "mcp.max_bytes") -> None:
        # Quoted in messages: a password in the URL or an --api-key on the command line is masked.
        self.where = f"MCP server {mask_secrets(url)}" if url else f"MCP server command {mask_secrets(command)!r}"
        self._command, self._url = command, url
        #: The cap on each message the server sends, and what was being asked (named when it passes).
        self._cap, self._asking = MessageCap(max_bytes, cap_option), "initialize"
        #: Messages from the server that were not MCP (JSON-RPC) at all: named when a call times out.
        self._garbled = 0
        #: The server's tool names (None: it would not list them).
        self.tools: list[str] | None = None
        #: The stdio server's process (None over HTTP, or when the SDK hides it), and its process
        #: group when the SDK started it as one of its own (the SDK ends the group at close).
        self._process: Any = None
        self._group: int | None = None
        _quiet_sdk_logs()
        _import_sdk(bool(url))  # before the connect timeout starts: the import is not the server's time
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
        except KeyboardInterrupt:  # Ctrl-C while connecting: the server ended, and 130 as anywhere
            self.close()
            raise
        except BaseException as error:
            self.close()
            if self._cap.trips:
                raise PluginRunError(f"{self.where}: {self._cap.reason(self._what())}.") from None
            raise PluginRunError(f"Cannot connect to {self.where}: {_describe(error)}.") from None

    async def _transport(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        if self._url:
            from mcp.client import streamable_http

            streams = await stack.enter_async_context(_capped_http(streamable_http, self._url, self._cap, stack))
        else:
            import os

            from mcp.client.stdio import StdioServerParameters, stdio_client

            argv = shlex.split(self._command)
            # Bytes that are no UTF-8 read as U+FFFD, as over HTTP (strict, the SDK's reader died and
            # the call waited for its timeout).
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ),
                                           encoding_error_handler="replace")
            _capture_processes()
            spawned: list[Any] = []
            _SPAWNED.set((spawned, self._cap))
            with open(os.devnull, "w") as quiet:  # noqa: PTH123 - the server's stderr is not ours to print
                streams = await stack.enter_async_context(stdio_client(params, errlog=quiet))
            self._process = spawned[0] if spawned else None
            self._group = _own_group(self._process)
        return streams[0], streams[1]

    async def _hold(self, ready: concurrent.futures.Future[None]) -> None:
        from mcp import ClientSession

        self._stop = asyncio.Event()
        try:
            async with AsyncExitStack() as stack:
                read, write = await self._transport(stack)
                session = await stack.enter_async_context(ClientSession(read, write, message_handler=self._heard))
                await session.initialize()
                self._asking = "tools/list"
                self.tools = await _tool_names(session)
                if self._cap.trips:  # the listing passed the cap: said as such by __init__
                    raise ConnectionAbortedError
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

    async def _heard(self, message: Any) -> None:
        """The session's handler of what the server sends unasked: a transport's exception is a
        message that was not MCP (a line of garbage, JSON that is no JSON-RPC, text not UTF-8)."""
        if isinstance(message, Exception):
            self._garbled += 1

    def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> Any:
        """Call `tool`; raise QueryFailed on a timeout or a failed call, PluginRunError when the
        session is gone."""
        if self._held.done():
            raise self._gone()
        trips, garbled = self._cap.trips, self._garbled
        future = asyncio.run_coroutine_threadsafe(self._session.call_tool(tool, arguments), self._loop)
        deadline = time.monotonic() + timeout
        try:
            while True:  # in slices, so that a server that exits is noticed at once, not at the timeout
                try:
                    return future.result(timeout=max(0.0, min(EXIT_POLL_SECONDS, deadline - time.monotonic())))
                except concurrent.futures.TimeoutError:
                    if self.exit_status(wait=0.0) is not None:
                        future.cancel()
                        raise self._gone() from None
                    if time.monotonic() >= deadline:
                        future.cancel()
                        garbage = self._garbled - garbled
                        raise QueryFailed(f"no answer within {timeout:g} s" + (
                            f"; meanwhile the server sent {garbage} "
                            + ("message that is" if garbage == 1 else "messages that are") + " not MCP (JSON-RPC)"
                            if garbage else "")) from None
        except (QueryFailed, PluginRunError):
            raise
        except Exception as error:
            if self._cap.trips > trips and self._url:  # over HTTP only this request failed
                raise QueryFailed(self._cap.reason("the answer")) from None
            if self._cap.trips or self._held.done() or self.exit_status(wait=EXIT_WAIT_SECONDS) is not None:
                raise self._gone() from None
            raise QueryFailed(f"the call failed ({type(error).__name__})") from None

    def _what(self) -> str:
        return f"the MCP server's {self._asking} answer"

    def exit_status(self, wait: float) -> int | None:
        """The stdio server's exit status, waiting at most `wait` seconds for it; None while it
        runs (or over HTTP)."""
        process = self._process
        if process is None or self._loop.is_closed():
            return None
        if process.returncode is not None or wait <= 0:
            return process.returncode

        async def reaped() -> int | None:
            try:
                return await asyncio.wait_for(process.wait(), wait)
            except TimeoutError:
                return None

        try:
            return asyncio.run_coroutine_threadsafe(reaped(), self._loop).result(wait + 1.0)
        except Exception:  # noqa: BLE001 - the loop is going: no status to tell
            return None

    def _gone(self) -> PluginRunError:
        """The run's end when the server is gone: a message past the cap that ended it (stdio),
        its exit status when it exited."""
        if self._cap.trips and not self._url:
            return PluginRunError(f"{self.where}: {self._cap.reason('an answer')}; the session ended.")
        status = self.exit_status(wait=EXIT_WAIT_SECONDS)
        if status is not None:
            return PluginRunError(f"{self.where}: the server exited (status {status}) during the run.")
        return PluginRunError(f"The connection to {self.where} closed during the run.")

    def close(self) -> None:
        """End the session and, over stdio, the server process, however far it got: a session
        that is up is closed; one still connecting (a server hanging at initialize) is cancelled.
        Either way the SDK's transport ends the process (its input closed, 2 s, SIGTERM to its
        group, 2 s, SIGKILL), and this waits for it. A Ctrl-C (or SIGTERM) during that wait, as
        a second Ctrl-C after the one that began the close, ends the server's group at once and
        goes on up: before, the process exited without the SDK's end, and the server (in a
        session of its own, out of the terminal's reach) ran on until it next wrote."""
        if not self._finished.is_set():
            try:
                if self._session is not None and self._stop is not None:
                    self._loop.call_soon_threadsafe(self._stop.set)
                else:
                    self._held.cancel()
                if not self._finished.wait(timeout=CLOSE_TIMEOUT_SECONDS):
                    self._end_server()
            except KeyboardInterrupt:
                self._end_server()
                raise
        self._drain()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._loop.is_running():
            self._loop.close()

    def _drain(self) -> None:
        """Let the tasks still on the loop end and close the async generators it holds, as
        `asyncio.run` does before it closes its loop: the HTTP transport's generators are closed
        by tasks the loop schedules as they are collected, and a loop stopped with one pending
        printed "Task was destroyed but it is pending!" on stderr, beside the run's one line (seen
        in CI: `test_a_wrong_answer_path_stops_after_three_queries`). Tasks still running after
        DRAIN_SECONDS are cancelled."""
        if self._loop.is_closed() or not self._thread.is_alive():
            return

        async def drain() -> None:
            here = asyncio.current_task()
            pending = {task for task in asyncio.all_tasks() if task is not here}
            if pending:
                _, pending = await asyncio.wait(pending, timeout=DRAIN_SECONDS)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=DRAIN_SECONDS)
            await self._loop.shutdown_asyncgens()

        try:
            asyncio.run_coroutine_threadsafe(drain(), self._loop).result(timeout=3 * DRAIN_SECONDS)
        except Exception:  # noqa: BLE001 - the loop is going: what is left goes with it
            pass


    def _end_server(self) -> None:
        """End the stdio server now (over HTTP, nothing): its process group, as the SDK would, by
        SIGTERM and, after KILL_GRACE_SECONDS (or at another Ctrl-C), SIGKILL; the process alone
        (killed) when the SDK gave it no group of its own (Windows, an older SDK): never the
        group recall-kit itself is in."""
        process, group = self._process, self._group
        if process is None:
            return
        if group is None:
            if process.returncode is None:
                with contextlib.suppress(OSError):
                    process.kill()
            return
        try:
            os.killpg(group, signal.SIGTERM)
            deadline = time.monotonic() + KILL_GRACE_SECONDS
            while _group_left(group) and time.monotonic() < deadline:
                time.sleep(KILL_POLL_SECONDS)
        except KeyboardInterrupt:  # another Ctrl-C: no more grace
            pass
        except OSError:  # the group is gone already, or none of it is ours to signal
            return
        if _group_left(group):
            with contextlib.suppress(OSError):
                os.killpg(group, signal.SIGKILL)


def _own_group(process: Any) -> int | None:
    """The process group a stdio server leads (the SDK starts it in a session of its own), else None."""
    pid, getpgid = getattr(process, "pid", None), getattr(os, "getpgid", None)
    if pid is None or getpgid is None:
        return None
    try:
        return pid if getpgid(pid) == pid != getpgid(0) else None
    except OSError:
        return None


def _group_left(group: int) -> bool:
    """Whether any process of the group is left (a dead one not yet reaped counts)."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: a member is there, not ours to signal
        return True
    return True


#: Tools listed before the listing is given up (the calls then say what is wrong), and named in a message.
MAX_LISTED_TOOLS = 10_000
SHOWN_TOOLS = 30


async def _tool_names(session: Any) -> list[str] | None:
    """Every tool the server lists (all pages); None when it will not list them."""
    names: list[str] = []
    cursor, cursors = None, set()
    try:
        while True:
            listed = await (session.list_tools(cursor=cursor) if cursor else session.list_tools())
            names += [tool.name for tool in listed.tools]
            cursor = _field(listed, "next_cursor", "nextCursor")
            if len(names) > MAX_LISTED_TOOLS or cursor in cursors:  # no memory server lists this many,
                return None  # nor pages in a circle: no check, no more pages
            if not cursor:
                return names
            cursors.add(cursor)
    except Exception:  # noqa: BLE001 - a server without tools/list: calls will say what is wrong
        return None


def _capped_http(streamable_http: Any, url: str, cap: MessageCap, stack: AsyncExitStack) -> Any:
    """The SDK's streamable HTTP transport on a client whose answers are capped (`mcp.max_bytes`
    a JSON body or an SSE event): mcp 2 takes the client (httpx2), mcp 1 a factory (httpx)."""
    import inspect

    opener = getattr(streamable_http, "streamable_http_client", None)
    if opener is None:
        import httpx

        def factory(headers: Any = None, timeout: Any = None, auth: Any = None) -> Any:
            return capped_client(httpx, cap, headers, timeout, auth)

        return streamable_http.streamablehttp_client(url, httpx_client_factory=factory)
    httpx_module = getattr(streamable_http, "httpx2", None) or streamable_http.httpx
    client = capped_client(httpx_module, cap)
    stack.push_async_callback(client.aclose)
    extra = {"max_sse_event_size": cap.limit} if "max_sse_event_size" in inspect.signature(opener).parameters else {}
    return opener(url, http_client=client, **extra)


def _import_sdk(over_http: bool) -> None:
    """Import the parts of the SDK a session uses (1.3 s on a busy machine): before, they were
    imported inside `mcp.connect_timeout`, so a short one could end a session before its server
    was started."""
    import mcp  # noqa: F401 - imported for the session's task, which finds it loaded

    if over_http:
        import mcp.client.streamable_http
    else:
        import mcp.client.stdio  # noqa: F401


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
    text = str(error).splitlines()[0].rstrip(".") if str(error) else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class MCPRetriever(RemoteRetriever):
    """Calls the tool `tool` once per query, the query in `query_arg` (k in `k_arg`, the memory scope
    in `scope_arg`, and `arguments` added), and reads hits from its structured content or JSON text,
    or from its text by `id_pattern` (and `score_pattern`).

    The server either holds the user's store already (ids as in the dataset, e.g. `dataset import
    sqlite` of the same store), or, with `add_tool`, recall-kit fills it: one call per memory with
    its content in `add_content_arg` and its id in `add_id_arg`, or the arguments the JSON template
    `add_arguments` makes (`{"entities": [{"name": "{id}", "entityType": "memory", "observations":
    ["{content}"]}]}`). `search_arguments` is the search call's template the same way. When the add
    tool answers with an id of its own (at `add_result_id`, or read by `add_id_pattern`), hits are
    mapped back to the dataset's ids.
    """

    description = "a tool on an MCP server (stdio or streamable HTTP), read as a black box"

    @dataclass(frozen=True)
    class Options(FillOptions):
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
        #: Find the sensitive memories the server holds under its own ids in its listing, a JSON
        #: object: {"tool": "list_memories", "arguments": {}, "memories": "memories", "id": "hash",
        #: "flag": "metadata.sensitive"} (entries whose flag is true, "yes" or 1).
        sensitive_listing: str = ""
        #: Seconds to connect and initialise the session (a stdio server started then).
        connect_timeout: float = CONNECT_TIMEOUT_SECONDS
        #: The largest message read from the server, in bytes (a stdio line, an HTTP body, an SSE
        #: event), checked as it arrives: a larger one fails what it answers, never read whole.
        max_bytes: int = DEFAULT_MAX_BYTES

        def __post_init__(self) -> None:
            if bool(self.command) == bool(self.url):
                raise ValueError('give one of command (stdio, -o mcp.command="python server.py") '
                                 "or url (streamable HTTP, -o mcp.url=http://host:port/mcp)")
            check_url(self.url, "url", required=False)
            if self.command and not split_command_line(self.command, "mcp.command"):
                raise ValueError("command names no program")
            if not self.tool or not self.query_arg:
                raise ValueError("tool and query_arg must be given")
            if not 0 < self.connect_timeout <= MAX_TIMEOUT:  # nan: not in range
                raise ValueError(f"connect_timeout must be > 0 and at most {MAX_TIMEOUT:g} s")
            if self.max_bytes < 1:
                raise ValueError("max_bytes must be at least 1")
            super().__post_init__()
            parse_json_object(self.arguments, "mcp.arguments")
            parse_template(self.search_arguments, "mcp.search_arguments", SEARCH_FIELDS)
            parse_template(self.add_arguments, "mcp.add_arguments", MEMORY_FIELDS)
            listing_request(self.sensitive_listing, "mcp.sensitive_listing", "tool")

    options: MCPRetriever.Options

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._session: MCPSession | None = None
        self._scope: str | None = None
        self._reading = self.options.text_reading("mcp")

    def build_index(self, corpus: Corpus) -> None:
        self.close()
        options = self.options
        self._scope = corpus[0].scope if len(corpus) else None
        # "{scope}" in the command: one server per scope, each on its own store (a memory file per scope).
        command = options.command
        if "{scope}" in command:  # filled in each word, so a scope needs no quoting of its own
            command = shlex.join(word.replace("{scope}", self._scope or "all") for word in shlex.split(command))
        self._session = MCPSession(command, options.url, options.connect_timeout, options.max_bytes)
        self._check_tools(self._session)
        if options.add_tool:
            self.fill(corpus, self._add)
        if options.sensitive_listing:
            self._flagged = self._listed_sensitive()

    def _check_tools(self, session: MCPSession) -> None:
        """A tool the server does not list is one line naming the tools it has, before any call."""
        if session.tools is None:
            return
        listing = listing_request(self.options.sensitive_listing, "mcp.sensitive_listing", "tool")
        for option, tool in (("mcp.tool", self.options.tool), ("mcp.add_tool", self.options.add_tool),
                             ("mcp.sensitive_listing", listing.get("tool", ""))):
            if tool and tool not in session.tools:
                from recall_kit_remote.probe import name_like

                names = sorted(session.tools)
                listed = ", ".join(name if name_like(name) else f"<a {len(name)}-character name, not shown>"
                                   for name in names[:SHOWN_TOOLS]) + (f" and {len(names) - SHOWN_TOOLS} more"
                                                           if len(names) > SHOWN_TOOLS else "") or "(none)"
                raise PluginRunError(f"{session.where} has no tool {tool!r} ({option}). Available: {listed}.")

    def _listed_sensitive(self) -> set[str]:
        """The ids the server's listing flags sensitive (`sensitive_listing`)."""
        session = self._session
        assert session is not None  # noqa: S101 - build_index opened it
        from recall_kit_remote.listing import listed_flagged

        listing = listing_request(self.options.sensitive_listing, "mcp.sensitive_listing", "tool")
        memories = str(listing.get("memories", ""))

        def fetch(paging: dict[str, Any]) -> Any:
            result = session.call(listing["tool"], {**(listing.get("arguments") or {}), **paging}, 120.0)
            return read_tool_answer(result, lambda payload: (select(payload, memories), payload)[1])

        try:
            return listed_flagged(fetch, listing)
        except (QueryFailed, RecallKitError) as failure:
            raise PluginRunError(f"{session.where}: the sensitive listing (tool {listing['tool']!r}): "
                                 f"{str(failure).rstrip('.')}.") from None

    def _arguments(self) -> dict[str, Any]:
        arguments = parse_json_object(self.options.arguments, "mcp.arguments")
        if self.options.scope_arg and self._scope is not None:
            arguments[self.options.scope_arg] = self._scope
        return arguments

    def _add(self, memory: Memory) -> str | None:
        """One add call (sent again after a failure only when `add_idempotent`): the server's id
        when `add_result_id` or `add_id_pattern` reads one. The first failure's cause is the one
        reported: a retry's complaint (a duplicate the first call stored) would hide it."""
        options, session = self.options, self._session
        assert session is not None  # noqa: S101 - build_index opened it
        if options.add_arguments:
            template = json.loads(options.add_arguments)
            arguments = {**self._arguments(), **fill_template(template, memory_values(memory))}
        else:
            arguments = {**self._arguments(), options.add_content_arg: memory.content}
            if options.add_id_arg:
                arguments[options.add_id_arg] = memory.id
        pattern = compile_pattern(options.add_id_pattern, "mcp.add_id_pattern")
        first = ""
        for _ in range(options.tries if options.add_idempotent else 1):
            try:
                result = session.call(options.add_tool, arguments, options.timeout)
                if options.add_result_id or pattern is not None:
                    return read_tool_answer(result, lambda payload: server_id(payload, options.add_result_id, pattern),
                                            text=pattern is not None, pattern_option="mcp.add_id_pattern")
                if _field(result, "is_error", "isError"):
                    raise QueryFailed("the tool answered with an error")
                return None
            except AnswerMisread as misread:  # an answer came: the memory may be stored; never sent again
                first = first or str(misread)
                break
            except QueryFailed as failure:
                first = first or str(failure)
        raise PluginRunError(f"{session.where}: tool {options.add_tool!r} failed to add memory {memory.id}: {first}.")

    def raw_answers(self, query: str, k: int) -> list[Any]:
        """What one search call answers, every part (structured content, JSON text, plain text),
        for `recall-kit remote probe`."""
        return tool_payloads(self._call(query, k), text=True)

    def ask(self, query: str, k: int) -> list[Hit]:
        result = self._call(query, k)
        hits = read_tool_answer(result, lambda payload: self.options.read_answer(payload, "mcp", self._reading),
                                text=self._reading.id_pattern is not None)
        return self.mapped(hits)

    def _call(self, query: str, k: int) -> Any:
        """One call of the search tool, timed as the wait on the server."""
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
            return session.call(options.tool, arguments, options.timeout)
        finally:
            self.waited(started)

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
