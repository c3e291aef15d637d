"""A hand-written MCP server for the hostile tests: JSON-RPC over stdio (one message a line) or
over streamable HTTP (a JSON body or one SSE event per POST), answering `initialize`, `tools/list`
and `tools/call` with whatever a test asks for, including what no SDK server would send.

    python raw_mcp_server.py [--http PORT] [--sse] [--tools N] [--extra-tool NAME] [--list-mib M]
                             [--call-mib M] [--answer-file PATH] [--trickle SECONDS] [--slow-list]
                             [--exit-after-call] [--call-status N] [--gzip-bomb-mib M] [--endless-pages]
                             [--pid-file PATH] [--exit-at-eof]

`--tools N`: tools/list answers N tools (`tool000001`, ..., `search` and each `--extra-tool`) in
one message; `--list-mib M` / `--call-mib M`: tools/list / tools/call answers one message of M
MiB, written a chunk at a time (the server holds one chunk, never the message); `--answer-file`:
tools/call answers these bytes as they are (`__ID__` replaced by the request's id; over stdio the
server adds the newline that ends a message); `--trickle`: seconds between two bytes of a
tools/call answer (`--slow-list`: of the tools/list answer too, over stdio); `--exit-after-call`:
over stdio, exit once a tools/call answer is written, before its newline; `--call-status`: over
HTTP, the status a tools/call answer comes with; `--gzip-bomb-mib M`: over HTTP, tools/call
answers a gzip member that inflates to M MiB; `--endless-pages`: tools/list answers an empty page
with a cursor to the next, forever; `--exit-at-eof`: over stdio, exit once the input closes, even
mid-answer (as a stdio server should; without it, one writing an answer is ended by SIGTERM).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CHUNK = 1 << 16


def _tool(name: str) -> bytes:
    return json.dumps({"name": name, "inputSchema": {"type": "object"}}).encode()


def _huge(request_id: Any, key: bytes, mib: float, unit: bytes) -> Iterator[bytes]:
    """One JSON-RPC answer of about `mib` MiB: a list under `key` of `unit` repeated, a chunk at a time."""
    yield b'{"jsonrpc": "2.0", "id": ' + json.dumps(request_id).encode() + b', "result": {"' + key + b'": ['
    per_chunk = max(1, CHUNK // (len(unit) + 1))
    chunk = b",".join([unit] * per_chunk) + b","
    for _ in range(int(mib * (1 << 20)) // len(chunk) + 1):
        yield chunk
    yield _tool("search") + b"]}}"


class Answers:
    """What the server answers each request with, as chunks of bytes (None: no answer)."""

    def __init__(self, arguments: argparse.Namespace) -> None:
        self.arguments = arguments

    def __call__(self, message: dict[str, Any]) -> Iterator[bytes] | None:
        method, request_id, arguments = message.get("method"), message.get("id"), self.arguments
        if request_id is None:
            return None  # a notification
        if method == "initialize":
            version = message.get("params", {}).get("protocolVersion", "2025-06-18")
            return self._result(request_id, {"protocolVersion": version, "capabilities": {"tools": {}},
                                             "serverInfo": {"name": "raw", "version": "0"}})
        if method == "tools/list":
            if arguments.endless_pages:  # a page of no tools, and a cursor to the next, forever
                return self._result(request_id, {"tools": [], "nextCursor": "again"})
            if arguments.list_mib:
                return _huge(request_id, b"tools", arguments.list_mib, _tool("tool000000"))
            names = [f"tool{number:06d}" for number in range(arguments.tools)] + ["search", *arguments.extra_tool]
            return self._result(request_id, {"tools": [{"name": name, "inputSchema": {"type": "object"}}
                                                       for name in names]})
        if method == "tools/call":
            if arguments.call_mib:
                unit = b'{"type": "text", "text": "' + b"x" * 200 + b'"}'
                return _huge(request_id, b"content", arguments.call_mib, unit)
            if arguments.answer_file:
                return iter([Path(arguments.answer_file).read_bytes().replace(b"__ID__", json.dumps(request_id).encode())])
            return self._result(request_id, {"content": [], "structuredContent": {"results": [{"id": "m1"}]}})
        return self._result(request_id, {})

    @staticmethod
    def _result(request_id: Any, result: dict[str, Any]) -> Iterator[bytes]:
        return iter([json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()])


def _written(chunks: Iterator[bytes], write: Callable[[bytes], Any], trickle: float) -> None:
    for chunk in chunks:
        if not trickle:
            write(chunk)
            continue
        for byte in chunk:
            write(bytes([byte]))
            time.sleep(trickle)


def _lines_until_eof() -> Iterator[bytes]:
    """The input's lines, read by a thread that exits the process when the input closes, whatever
    the server is doing then (writing an answer the client no longer reads, say)."""
    import queue
    import threading

    lines: queue.Queue[bytes] = queue.Queue()

    def read() -> None:
        for line in sys.stdin.buffer:
            lines.put(line)
        os._exit(0)

    threading.Thread(target=read, daemon=True).start()
    while True:
        yield lines.get()


def serve_stdio(answers: Answers, trickle: float, cut: bool = False, slow_list: bool = False,
                exit_at_eof: bool = False) -> None:
    out = sys.stdout.buffer
    for line in _lines_until_eof() if exit_at_eof else sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        chunks = answers(message)
        if chunks is None:
            continue
        slow = trickle if message.get("method") in ("tools/call", *(["tools/list"] if slow_list else [])) else 0.0
        try:
            _written(chunks, lambda data: (out.write(data), out.flush()), slow)
            if cut and message.get("method") == "tools/call":
                os._exit(0)  # the answer as it is, no newline: the stream ends mid-message
            out.write(b"\n")
            out.flush()
        except (BrokenPipeError, ValueError):
            return


def _gzip_bomb(mib: float, start: bytes) -> bytes:
    """A gzip member that inflates to `start` and `mib` MiB of spaces. A MiB of spaces deflated
    after a full flush is the same bytes every time: deflated once and repeated, not deflated a
    thousand times (5 s of the server's CPU a bomb of 1,000 MiB)."""
    import struct
    import zlib

    spaces, count = b" " * (1 << 20), max(1, int(mib))
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)  # raw deflate: the gzip frame is written here
    first = packer.compress(start) + packer.compress(spaces) + packer.flush(zlib.Z_FULL_FLUSH)
    piece = packer.compress(spaces) + packer.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(start)
    for _ in range(count):
        crc = zlib.crc32(spaces, crc)
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + first + piece * (count - 1) + packer.flush()
            + struct.pack("<II", crc, (len(start) + count * len(spaces)) & 0xFFFFFFFF))


def serve_http(answers: Answers, port: int, sse: bool, trickle: float, call_status: int = 200,
               bomb: float = 0.0) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # the body is not held for the client's delayed ACK of the headers

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - no server-initiated stream
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_DELETE(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:  # noqa: N802
            message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            chunks = answers(message)
            if chunks is None:
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            is_call = message.get("method") == "tools/call"
            self.send_response(call_status if is_call else 200)
            self.send_header("Content-Type", "text/event-stream" if sse else "application/json")
            self.send_header("Connection", "close")
            if is_call and bomb:
                self.send_header("Content-Encoding", "gzip")
                chunks = iter([_gzip_bomb(bomb, b"event: message\ndata: " if sse else b"")])
            self.end_headers()
            slow = trickle if is_call else 0.0
            try:
                if sse and not (is_call and bomb):  # a bomb holds the event's start, compressed
                    self.wfile.write(b"event: message\ndata: ")
                _written(chunks, self.wfile.write, slow)
                if sse:
                    self.wfile.write(b"\n\n")
            except OSError:
                pass
            self.close_connection = True

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=0, help="serve streamable HTTP on this port (0: stdio)")
    parser.add_argument("--sse", action="store_true", help="over HTTP, answer each POST as one SSE event")
    parser.add_argument("--tools", type=int, default=0)
    parser.add_argument("--list-mib", type=float, default=0.0)
    parser.add_argument("--call-mib", type=float, default=0.0)
    parser.add_argument("--answer-file", default="")
    parser.add_argument("--trickle", type=float, default=0.0)
    parser.add_argument("--pid-file", default="")
    parser.add_argument("--gzip-bomb-mib", type=float, default=0.0, help="over HTTP, answer tools/call with a gzip bomb")
    parser.add_argument("--endless-pages", action="store_true", help="tools/list: empty pages, each with a next cursor")
    parser.add_argument("--extra-tool", action="append", default=[], help="one more tool of this name")
    parser.add_argument("--slow-list", action="store_true", help="over stdio, trickle the tools/list answer too")
    parser.add_argument("--exit-after-call", action="store_true", help="over stdio, exit after a tools/call answer, before its newline")
    parser.add_argument("--call-status", type=int, default=200, help="over HTTP, the status of a tools/call answer")
    parser.add_argument("--exit-at-eof", action="store_true", help="over stdio, exit once the input closes")
    arguments = parser.parse_args()
    if arguments.pid_file:
        Path(arguments.pid_file).write_text(str(os.getpid()))
    answers = Answers(arguments)
    if arguments.http:
        serve_http(answers, arguments.http, arguments.sse, arguments.trickle, arguments.call_status,
                   arguments.gzip_bomb_mib)
    else:
        serve_stdio(answers, arguments.trickle, arguments.exit_after_call, arguments.slow_list, arguments.exit_at_eof)


if __name__ == "__main__":
    main()
