"""The labelling page as a small closed server: 127.0.0.1 only, a random token in every path, a
strict Content-Security-Policy, and no asset from another host (the page is three package files).

Routes, all under ``/TOKEN/``: ``""`` the page, ``page.js`` and ``page.css``; ``api/state`` (GET);
``api/grade``, ``api/skip``, ``api/back``, ``api/open``, ``api/note`` (POST, JSON bodies); ``api/contrast``
(GET); ``api/memory`` (POST: one pair's memory whole). What they answer is `recall_kit.label.view`'s,
each memory cut to `MEMORY_SHOWN` characters (the pair's) or `SNIPPET_SHOWN` (the judged list's, the
contrast view's hits), with how many more there are: a study of 200 KB memories sends a few KB a pair,
and the page shows the rest when asked (`api/memory`, the "a" key).
Anything else, a wrong token, or a Host header other than this server's answers 404 or 403.

Hostile requests are answered, never crash a handler: a Content-Length that is not a whole number
of at most `MAX_BODY` bytes is 400 or 413 (the body unread, the connection closed); a body that is
not a JSON object (too deep, a number over 4,300 digits) is 400; a client that stops sending is
dropped after `READ_TIMEOUT` seconds; at most `MAX_CONNECTIONS` are served at once.
"""

from __future__ import annotations

import json
import re
import secrets
import socket
import sys
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from typing import Any

from recall_kit.errors import OptionError, RecallKitError
from recall_kit.label import view
from recall_kit.label.session import LabelSession, Pair

#: No script, style, connection, image or frame from anywhere but this server; no inline code.
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                           "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
STATIC = {"": ("page.html", "text/html; charset=utf-8"), "page.js": ("page.js", "text/javascript; charset=utf-8"),
          "page.css": ("page.css", "text/css; charset=utf-8")}
MAX_BODY = 64 * 1024
#: Seconds a connection may wait between two reads before it is dropped (a half-sent request).
READ_TIMEOUT = 10.0
#: Connections served at once; more are closed at once (each holds a thread).
MAX_CONNECTIONS = 32
_LENGTH = re.compile(r"^[0-9]{1,12}$")
#: Characters of the pair's memory sent and shown at first; the rest comes with `api/memory`.
MEMORY_SHOWN = 4000
#: Characters of each memory in the judged list and in the contrast view's hits (a snippet).
SNIPPET_SHOWN = 240


def cut(text: str, limit: int) -> tuple[str, int]:
    """`text` cut to at most `limit` characters (at a space in its last tenth, when there is one) and
    how many characters were left out."""
    if len(text) <= limit:
        return text, 0
    head = text[:limit]
    space = head.rfind(" ", limit - limit // 10)
    if space > 0:
        head = head[:space]
    return head, len(text) - len(head)


def bounded(data: dict[str, Any]) -> dict[str, Any]:
    """A `view.state` or `view.contrast` answer with every memory cut (`cut`): the pair's to
    `MEMORY_SHOWN` characters (`memory_more`: how many more), the judged list's and the contrast
    hits' to `SNIPPET_SHOWN` (`text_more`)."""
    for item in [data.get("item"), *data.get("upcoming", [])]:
        if item:
            item["memory"], item["memory_more"] = cut(item["memory"], MEMORY_SHOWN)
            for judged in item.get("judged", []):
                judged["text"], judged["text_more"] = cut(judged["text"], SNIPPET_SHOWN)
    for query in data.get("queries", []):
        for side in ("baseline", "challenger"):
            for hit in query.get(side, []):
                if isinstance(hit.get("text"), str):
                    hit["text"], hit["text_more"] = cut(hit["text"], SNIPPET_SHOWN)
    return data


class LabelServer(ThreadingHTTPServer):
    """An HTTP server on 127.0.0.1 over one `LabelSession`; `url` carries the token."""

    daemon_threads = True
    #: The listen backlog: a burst of connections waits in it, not for the client's SYN retries
    #: (the default of 5 held the 6th connection a second, later ones up to 8 s).
    request_queue_size = 2 * MAX_CONNECTIONS

    def __init__(self, session: LabelSession, port: int = 0, token: str | None = None,
                 read_timeout: float = READ_TIMEOUT) -> None:
        self.session = session
        self.read_timeout = read_timeout
        self.token = token or secrets.token_urlsafe(24)
        self.lock = threading.Lock()
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(("127.0.0.1", port), _Handler)

    def process_request(self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any) -> None:
        """Serve the connection on a thread of its own, or close it when `MAX_CONNECTIONS` are busy."""
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/{self.token}/"


class _Handler(BaseHTTPRequestHandler):
    server: LabelServer
    server_version = "recall-kit-label"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.read_timeout)  # every read: a stalled client is dropped

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (the base class's name)
        """Silent: a request line holds the token."""

    # -- plumbing ----------------------------------------------------------------------------------

    def _route(self) -> str | None:
        """The path after ``/TOKEN/``, or None (answered already) when the request is refused."""
        host = self.headers.get("Host", "")
        port = self.server.server_address[1]
        if host not in (f"127.0.0.1:{port}", f"localhost:{port}"):
            self._send(HTTPStatus.FORBIDDEN, b"wrong host\n", "text/plain; charset=utf-8")
            return None
        parts = self.path.split("?", 1)[0].split("/", 2)
        if len(parts) < 3 or not secrets.compare_digest(parts[1].encode(), self.server.token.encode()):
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8")
            return None
        return parts[2]

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        self.end_headers()
        self.wfile.write(body)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a bad request line, 414, 431, 501) with this server's headers
        and a short body that echoes nothing of the request."""
        status = HTTPStatus(code)
        self.close_connection = True
        self._send(status, f"{status.value} {status.phrase}\n".encode(), "text/plain; charset=utf-8")

    def _json(self, data: Any, status: HTTPStatus = HTTPStatus.OK) -> None:
        self._send(status, json.dumps(data, ensure_ascii=False).encode("utf-8"), "application/json; charset=utf-8")

    def _body(self) -> dict[str, Any] | None:
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
            self._json({"error": "expected application/json"}, HTTPStatus.UNSUPPORTED_MEDIA_TYPE)
            return None
        given = (self.headers.get("Content-Length") or "0").strip()
        if not _LENGTH.match(given):
            self.close_connection = True  # the body's end is unknown: nothing more is read from this connection
            self._json({"error": "Content-Length is not a whole number of bytes"}, HTTPStatus.BAD_REQUEST)
            return None
        length = int(given)
        if length > MAX_BODY:
            self.close_connection = True
            self._json({"error": "body too large"}, HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
            return None
        try:
            data = json.loads(self.rfile.read(length) or b"{}")
        except (ValueError, RecursionError):  # not JSON, too deep, a number of over 4,300 digits
            data = None
        if not isinstance(data, dict):
            self._json({"error": "expected a JSON object"}, HTTPStatus.BAD_REQUEST)
            return None
        return data

    # -- methods -----------------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802  (http.server's name)
        route = self._route()
        if route is None:
            return
        if route in STATIC:
            name, content_type = STATIC[route]
            self._send(HTTPStatus.OK, files("recall_kit.label").joinpath("static", name).read_bytes(), content_type)
        elif route == "api/state":
            with self.server.lock:
                self._json(bounded(view.state(self.server.session).to_json()))
        elif route == "api/contrast":
            with self.server.lock:
                self._json(bounded(view.contrast(self.server.session).to_json()))
        else:
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8")

    def do_POST(self) -> None:  # noqa: N802
        route = self._route()
        if route is None:
            return
        actions: dict[str, Callable[[LabelSession, dict[str, Any]], None]] = {
            "api/grade": lambda s, b: s.grade(_id(b.get("query_id")), _id(b.get("doc_id")), _grade(b.get("grade")),
                                              then=_pair(b.get("then"))),
            "api/skip": lambda s, b: s.skip(),
            "api/back": lambda s, b: s.back(),
            "api/open": lambda s, b: s.open(_id(b.get("query_id")), _id(b.get("doc_id"))),
            "api/note": lambda s, b: s.note(_id(b.get("query_id")), _id(b.get("doc_id")), _text(b.get("note")),
                                            b.get("flagged") is True),
        }
        if route not in actions and route != "api/memory":
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8")
            return
        body = self._body()
        if body is None:
            return
        if route == "api/memory":  # one pair's memory whole ("show all"): a pair the page offers only
            with self.server.lock:
                session, pair = self.server.session, (_id(body.get("query_id")), _id(body.get("doc_id")))
                if not session.on_page(*pair):
                    self._json({"error": "not a pair this page offers"}, HTTPStatus.BAD_REQUEST)
                else:
                    self._json({"query_id": pair[0], "doc_id": pair[1], "memory": session.memories[pair[1]].content})
            return
        with self.server.lock:
            try:
                actions[route](self.server.session, body)
            except RecallKitError as error:
                self._json({"error": str(error)}, HTTPStatus.BAD_REQUEST)
                return
            except Exception as error:  # a bug: answered, said in one line, never a traceback
                self._failed(route, error)
                return
            self._json(bounded(view.state(self.server.session).to_json()))

    def _failed(self, route: str, error: Exception) -> None:
        """Answer 500 and say on stderr which route failed, by the error's type alone (its message
        may quote memory text)."""
        print(f"label: {route} failed ({type(error).__name__}); the grades file holds every grade answered 200.",
              file=sys.stderr)
        self._json({"error": f"{route} failed ({type(error).__name__})"}, HTTPStatus.INTERNAL_SERVER_ERROR)


def _pair(value: Any) -> Pair | None:
    """The pair a grade's `then` names (the one the page shows next), or None."""
    if not isinstance(value, dict):
        return None
    return _id(value.get("query_id")), _id(value.get("doc_id"))


def _text(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise OptionError("a note is text")
    return value


def _id(value: Any) -> str:
    """An id from a request body: ids are at most 512 characters, so a longer value is no id (and is
    not echoed whole in the error)."""
    return str(value)[:513] if isinstance(value, (str, int)) and not isinstance(value, bool) else "(not an id)"


def check_port(port: int) -> int:
    """A port to listen on: 0 (any free one) to 65535."""
    if not 0 <= port <= 65535:
        raise OptionError(f"--port {port}: a port is 0 to 65535 (0: any free one).")
    return port


def _grade(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionError(f"grade {str(value)[:20]!r} is not a whole number")
    if not -1000 <= value <= 1000:
        raise OptionError("grade: a number far outside 0-3")
    return value


def serve(session: LabelSession, port: int = 0, announce: Callable[[str], None] = print) -> None:
    """Serve the page until Ctrl-C; every grade is already on disk, so stopping loses nothing."""
    try:
        server = LabelServer(session, port)
    except OSError as error:
        session.close()
        raise OptionError(f"--port {port}: cannot listen on 127.0.0.1 ({error.strerror or type(error).__name__}).") from None
    announce(f"Label at {server.url}  (Ctrl-C stops; grades go to {session.out.path} as you give them)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        with server.lock:  # a grade being written finishes (no temporary left); none starts after
            announce(f"Stopped: {len(session.out)} grades in {session.out.path}.")
    finally:
        server.server_close()
        session.close()
