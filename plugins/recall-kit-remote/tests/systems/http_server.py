"""A search endpoint over HTTP (the standard library's server) in front of a MemoryStore.

GET /search?q=TEXT&k=N[&scope=S] or POST /search {"query": ..., "k": ..., "scope": ...} answers
{"results": [{"id": ..., "score": ...}]}. For the failure tests only (`faults=True`, `--faults`), a
query naming a behaviour gets it: "status500" (HTTP 500), "notjson" (a body that is not JSON),
"slow" (answers after 2 s), "closemid" (closes the connection halfway through the body), "nanscore"
(NaN scores), "badid" (an id that is an object), "endless" (a chunked body that never ends),
"trickle" (a byte every 0.5 s), "gzipbomb" (a gzip answer of 64 KB that inflates to 200 MB). GET
/search.txt answers in text, a hit a line: `- [id: ID] (score: SCORE)`. Requests may be required
to carry `Authorization: Bearer TOKEN`.

Like mem0's REST server, POST /memories `{"messages": [{"role": "user", "content": ...}],
"user_id": ...}` stores a memory under an id of the server's own (`srv-N`) and answers
`{"results": [{"id": "srv-N", "memory": ..., "event": "ADD"}]}`; GET /memories lists every memory
as `{"results": [{"id", "memory", "user_id"}]}` (mem0's `get_all`); with `?offset=N`, a page of at
most `limit` (at most 100) memories from the Nth.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from memory_store import MemoryStore

_BOMB: list[bytes] = []


def gzip_bomb(inflated: int = 200_000_000) -> bytes:
    """A gzip body that inflates to `inflated` bytes of "0", made a megabyte at a time (never held
    whole), once."""
    import zlib

    if not _BOMB:
        packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        block = b"0" * 1_000_000
        _BOMB.append(b"".join(packer.compress(block) for _ in range(inflated // len(block))) + packer.flush())
    return _BOMB[0]


class SearchServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, store: MemoryStore, token: str | None = None, port: int = 0, faults: bool = False) -> None:
        super().__init__(("127.0.0.1", port), SearchHandler)
        self.store = store
        self.token = token
        self.faults = faults
        self.added = 0
        self.lock = threading.Lock()
        self.requests_seen: list[dict[str, Any]] = []
        self.bodies_seen: list[dict[str, Any]] = []
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/search"

    def __enter__(self) -> SearchServer:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()
        self.server_close()


class SearchHandler(BaseHTTPRequestHandler):
    server: SearchServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Quiet: the tests read what was asked from `requests_seen`."""

    def do_HEAD(self) -> None:  # noqa: N802 - the standard library's naming
        self.send_response(200)
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        params = parse_qs(urlparse(self.path).query)
        if urlparse(self.path).path == "/memories":
            listed = [{"id": doc, "memory": text, "user_id": scope} for doc, text, scope in self.server.store.listing()]
            if "offset" in params:
                start = int(params["offset"][0])
                listed = listed[start:start + min(100, int(params.get("limit", ["100"])[0]))]
            self._send(200, json.dumps({"results": listed}).encode())
            return
        if urlparse(self.path).path == "/search.txt":
            hits = self.server.store.search(params.get("q", [""])[0], int(params.get("k", ["10"])[0]))
            text = "".join(f"- [id: {hit['id']}] (score: {hit['score']!r})\n" for hit in hits) or "nothing found\n"
            self._send(200, text.encode(), "text/plain")
            return
        self._answer(params.get("q", [""])[0], int(params.get("k", ["10"])[0]), params.get("scope", [None])[0])

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        self.server.bodies_seen.append(body)
        if urlparse(self.path).path == "/memories":
            content = " ".join(message["content"] for message in body["messages"])
            with self.server.lock:
                self.server.added += 1
                server_id = f"srv-{self.server.added}"
            self.server.store.add(server_id, content, body.get("user_id"))
            self._send(200, json.dumps({"results": [{"id": server_id, "memory": content, "event": "ADD"}]}).encode())
            return
        self._answer(str(body.get("query", "")), int(body.get("k", 10)), body.get("scope"))

    def _answer(self, query: str, k: int, scope: str | None) -> None:
        self.server.requests_seen.append({"query": query, "k": k, "scope": scope,
                                          "authorization": self.headers.get("Authorization")})
        if self.server.token is not None and self.headers.get("Authorization") != f"Bearer {self.server.token}":
            self._send(401, b'{"error": "unauthorized"}')
        elif self.server.faults and "status500" in query:
            self._send(500, b'{"error": "boom"}')
        elif self.server.faults and "notjson" in query:
            self._send(200, b"<html>not json</html>")
        elif self.server.faults and "closemid" in query:
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b'{"results": [')
            self.close_connection = True
        elif self.server.faults and "gzipbomb" in query:
            body = gzip_bomb()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.server.faults and ("endless" in query or "trickle" in query):
            self._send_forever(0.5 if "trickle" in query else 0.0)
        elif self.server.faults and ("nanscore" in query or "badid" in query):
            hits = self.server.store.search(query.replace("nanscore", "").replace("badid", ""), k, scope or None)
            entries = [{"id": {"nested": hit["id"]}, "score": hit["score"]} if "badid" in query
                       else {"id": hit["id"], "score": float("nan")} for hit in hits]
            self._send(200, json.dumps({"results": entries}).encode())
        else:
            if self.server.faults and "slow" in query:
                time.sleep(2.0)
            hits = self.server.store.search(query, k, scope or None)
            self._send(200, json.dumps({"results": hits}).encode())

    def _send_forever(self, pause: float) -> None:
        """A chunked JSON body that never ends: chunks as fast as the client reads, or one byte
        per `pause` seconds; stops when the client goes away."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b" " * (64 * 1024 if not pause else 1)
        try:
            self.wfile.write(b'1\r\n{\r\n')
            while True:
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
                if pause:
                    time.sleep(pause)
        except OSError:
            self.close_connection = True

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main() -> None:
    """Serve a dataset folder until stopped: `python http_server.py --dataset FOLDER --port N`."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--everything", action="store_true",
                        help="index every row of corpus.jsonl, sensitive ones too, as a production store does")
    parser.add_argument("--faults", action="store_true", help="answer the failure tests' trigger words")
    arguments = parser.parse_args()
    load = MemoryStore.from_store if arguments.everything else MemoryStore.from_dataset
    server = SearchServer(load(arguments.dataset), port=arguments.port, faults=arguments.faults)
    server.serve_forever()


if __name__ == "__main__":
    main()
