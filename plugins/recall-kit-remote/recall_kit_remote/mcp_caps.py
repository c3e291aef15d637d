"""The cap on one message from an MCP server (`mcp.max_bytes`), applied to the bytes as they
arrive, before the SDK holds or parses them: over stdio each line of the server's stdout (a
JSON-RPC message), over streamable HTTP each JSON body and each SSE event. The SDK reads a
message whole and then validates it (a `tools/list` of 200,000 tools: 761 MiB in the probe; one of
100 MiB: 6.2 GB and no answer in 76 s); past the cap the message is never read further, the
request it answers fails, and the session says which."""

from __future__ import annotations

import re
import zlib
from collections.abc import AsyncIterator
from signal import Signals
from typing import Any

import anyio
import anyio.abc

from recall_kit_remote.base import QueryFailed

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
        self._why = ""  # what the last refused message did

    def trip(self, why: str = "") -> None:
        """A message refused: past the cap (`why` empty), or for the reason `why` gives."""
        self.trips += 1
        self._why = why or f"exceeds {size_text(self.limit)} ({self.option})"

    def reason(self, what: str) -> str:
        """`what` (the MCP server's tools/list answer) and why it was refused, in words."""
        return f"{what} {self._why}"


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


async def _decoded(raw: Any, encoding: str, limit: int) -> AsyncIterator[bytes]:
    """An answer's bytes as sent, decompressed (gzip or deflate, the encodings asked for) a
    piece at a time, never more than `limit` + 1 bytes from one piece of input: a small gzip
    member that inflates to gigabytes stops at the cap, never inflated whole."""
    from recall_kit_remote.http import ACCEPTED_ENCODINGS, content_decoder

    try:
        decoder = content_decoder(encoding)
    except QueryFailed:
        raise _Unreadable(f"comes in content-encoding {encoding!r}, not one recall-kit asked for "
                          f"({ACCEPTED_ENCODINGS})") from None
    try:
        async for chunk in raw:
            if decoder is None:
                yield chunk
                continue
            piece = decoder.decompress(chunk, limit + 1)
            while True:
                yield piece
                if not decoder.unconsumed_tail:
                    break
                piece = decoder.decompress(decoder.unconsumed_tail, limit + 1)
    except zlib.error:
        raise _Unreadable("is compressed and does not decompress") from None


class _Unreadable(Exception):
    """An answer that cannot be read at all, and why (completing "the answer ...")."""


def _capped_body(httpx: Any, cap: MessageCap) -> type:
    """A response body stream class of the SDK's httpx module that passes at most `cap.limit`
    bytes a message (a JSON body whole; each SSE event), decompressed here (the answer's
    content-encoding is taken off, so httpx does not inflate it whole after), then fails as a
    stream error does: the SDK then answers the request in flight with an error at once."""

    class Refused(httpx.StreamError):  # type: ignore[misc, name-defined]
        pass

    class Capped(httpx.AsyncByteStream):  # type: ignore[misc, name-defined]
        def __init__(self, inner: Any, events: bool, encoding: str) -> None:
            self._inner, self._events, self._encoding = inner, events, encoding

        async def __aiter__(self) -> AsyncIterator[bytes]:
            run, tail = 0, b""  # bytes of the message being received; the last 3 bytes seen
            try:
                async for chunk in _decoded(self._inner, self._encoding, cap.limit):
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
                        raise Refused(cap.reason("the answer"))
                    yield chunk
            except _Unreadable as why:  # an encoding not asked for, a body that does not decompress
                cap.trip(str(why))
                raise Refused(cap.reason("the answer")) from None

        async def aclose(self) -> None:
            await self._inner.aclose()

    return Capped


def capped_client(httpx: Any, cap: MessageCap, headers: Any = None, timeout: Any = None, auth: Any = None) -> Any:
    """An `AsyncClient` of the SDK's httpx module (httpx2 in mcp 2, httpx before) with the SDK's
    own timeouts (or those given), asking for gzip or deflate only, each answer's body capped as
    it streams in."""
    from recall_kit_remote.http import ACCEPTED_ENCODINGS

    capped = _capped_body(httpx, cap)

    async def cap_body(response: Any) -> None:
        events = response.headers.get("content-type", "").lower().startswith("text/event-stream")
        encoding = response.headers.pop("content-encoding", "")
        response.stream = capped(response.stream, events, encoding)

    extra = {"auth": auth} if auth is not None else {}
    return httpx.AsyncClient(timeout=timeout or httpx.Timeout(30.0, read=300.0),  # the SDK's defaults
                             headers={**(headers or {}), "Accept-Encoding": ACCEPTED_ENCODINGS},
                             event_hooks={"response": [cap_body]}, **extra)
