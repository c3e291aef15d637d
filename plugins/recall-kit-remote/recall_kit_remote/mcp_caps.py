"""The cap on one message from an MCP server (`mcp.max_bytes`), applied to the bytes as they
arrive, before the SDK holds or parses them: over stdio each line of the server's stdout (a
JSON-RPC message), over streamable HTTP each JSON body and each SSE event. The SDK reads a
message whole and then validates it (a `tools/list` of 200,000 tools: 761 MiB in the probe; one of
100 MiB: 6.2 GB and no answer in 76 s); past the cap the message is never read further, the
request it answers fails, and the session says which."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from signal import Signals
from typing import Any

import anyio
import anyio.abc

#: The largest message read from an MCP server by default (8 MiB): a search answer of 100 hits
#: with their text is a few hundred KiB; the largest real tools/list, a few MiB.
DEFAULT_MAX_BYTES = 8 << 20


def size_text(count: int) -> str:
    """`8 MiB` for whole mebibytes, else the byte count (`1,000 bytes`)."""
    return f"{count >> 20} MiB" if count >= 1 << 20 and count % (1 << 20) == 0 else f"{count:,} bytes"


class MessageCap:
    """A session's cap: the limit, and how many messages from the server passed it (a stdio
    session ends at the first; over HTTP only the request it answered fails)."""

    def __init__(self, limit: int, option: str = "mcp.max_bytes") -> None:
        self.limit, self.option = limit, option
        self.trips = 0

    def trip(self) -> None:
        self.trips += 1

    def reason(self, what: str) -> str:
        """`what` (the MCP server's tools/list answer) exceeds the cap, in words."""
        return f"{what} exceeds {size_text(self.limit)} ({self.option})"


class _CappedLines(anyio.abc.ByteReceiveStream):
    """A stdio server's stdout, ended where a line (one JSON-RPC message) passes the cap: the
    lines before it are delivered, then the end of the stream, and the pipe is closed (the
    server's next write fails; the SDK's drain reads nothing more), so the session ends at once
    and the request in flight fails."""

    def __init__(self, inner: anyio.abc.ByteReceiveStream, cap: MessageCap) -> None:
        self._inner, self._cap = inner, cap
        self._line = 0  # bytes of the line being received
        self._ended = False  # past the cap: the lines before it delivered, the end of the stream next

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._ended:
            data = await self._inner.receive(max_bytes)
            whole = self._whole_lines(data)
            if whole is None:
                return data
            self._ended = True
            self._cap.trip()
            if whole:
                return whole
        await self._inner.aclose()
        raise anyio.EndOfStream

    def _whole_lines(self, data: bytes) -> bytes | None:
        """None while every line in `data` is within the cap; else the complete lines before
        the first that is not."""
        start = 0  # where the line being received began in `data`
        while (newline := data.find(b"\n", start)) >= 0:
            if self._line + newline - start > self._cap.limit:
                return data[:start]
            self._line, start = 0, newline + 1
        self._line += len(data) - start
        return data[:start] if self._line > self._cap.limit else None

    async def aclose(self) -> None:
        await self._inner.aclose()


class CappedProcess(anyio.abc.Process):
    """A stdio server's process whose stdout is capped: everything else is the process's own."""

    def __init__(self, process: anyio.abc.Process, cap: MessageCap) -> None:
        self._inner = process
        self._stdout = _CappedLines(process.stdout, cap) if process.stdout is not None else None

    def __getattr__(self, name: str) -> Any:  # the SDK's teardown reads the transport under it
        return getattr(self._inner, name)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def wait(self) -> int:
        return await self._inner.wait()

    def terminate(self) -> None:
        self._inner.terminate()

    def kill(self) -> None:
        self._inner.kill()

    def send_signal(self, signal: Signals) -> None:
        self._inner.send_signal(signal)

    @property
    def pid(self) -> int:
        return self._inner.pid

    @property
    def returncode(self) -> int | None:
        return self._inner.returncode

    @property
    def stdin(self) -> anyio.abc.ByteSendStream | None:
        return self._inner.stdin

    @property
    def stdout(self) -> anyio.abc.ByteReceiveStream | None:
        return self._stdout

    @property
    def stderr(self) -> anyio.abc.ByteReceiveStream | None:
        return self._inner.stderr


#: The end of an SSE event (a blank line), in the line endings the format allows.
_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


def _capped_body(httpx: Any, cap: MessageCap) -> type:
    """A response body stream class of the SDK's httpx module that passes at most `cap.limit`
    bytes a message (a JSON body whole; each SSE event), then fails as a stream error does:
    the SDK then answers the request in flight with an error at once."""

    class TooLarge(httpx.StreamError):  # type: ignore[misc, name-defined]
        pass

    class Capped(httpx.AsyncByteStream):  # type: ignore[misc, name-defined]
        def __init__(self, inner: Any, events: bool) -> None:
            self._inner, self._events = inner, events

        async def __aiter__(self) -> AsyncIterator[bytes]:
            run, tail = 0, b""  # bytes of the message being received; the last 3 bytes seen
            async for chunk in self._inner:
                seen = tail + chunk
                begin = len(tail) - run  # where that message began in `seen` (negative: before it)
                for end in _EVENT_END.finditer(seen) if self._events else ():
                    if end.start() >= begin:
                        if end.start() - begin > cap.limit:
                            break
                        begin = end.end()
                run, tail = len(seen) - begin, seen[-3:]
                if run > cap.limit:
                    cap.trip()
                    raise TooLarge(cap.reason("the answer"))
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    return Capped


def capped_client(httpx: Any, cap: MessageCap, headers: Any = None, timeout: Any = None, auth: Any = None) -> Any:
    """An `AsyncClient` of the SDK's httpx module (httpx2 in mcp 2, httpx before) with the SDK's
    own timeouts (or those given), each answer's body capped as it streams in."""
    capped = _capped_body(httpx, cap)

    async def cap_body(response: Any) -> None:
        events = response.headers.get("content-type", "").lower().startswith("text/event-stream")
        response.stream = capped(response.stream, events)

    extra = {"auth": auth} if auth is not None else {}
    return httpx.AsyncClient(timeout=timeout or httpx.Timeout(30.0, read=300.0),  # the SDK's defaults
                             headers=headers, event_hooks={"response": [cap_body]}, **extra)
