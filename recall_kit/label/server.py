"""The labelling page as a small closed server: 127.0.0.1 only, a random token in every path, a
strict Content-Security-Policy, and no asset from another host (the page is three package files).

Routes, all under ``/TOKEN/``: ``""`` the page, ``page.js`` and ``page.css``; ``api/state`` (GET);
``api/grade``, ``api/skip``, ``api/back``, ``api/open``, ``api/note`` (POST, JSON bodies); ``api/contrast``
(GET). What they answer is `recall_kit.label.view`'s.
Anything else, a wrong token, or a Host header other than this server's answers 404 or 403.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from typing import Any

from recall_kit.errors import RecallKitError
from recall_kit.label import view
from recall_kit.label.session import LabelSession, Pair

#: No script, style, connection, image or frame from anywhere but this server; no inline code.
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                           "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
STATIC = {"": ("page.html", "text/html; charset=utf-8"), "page.js": ("page.js", "text/javascript; charset=utf-8"),
          "page.css": ("page.css", "text/css; charset=utf-8")}
MAX_BODY = 64 * 1024


class LabelServer(ThreadingHTTPServer):
    """An HTTP server on 127.0.0.1 over one `LabelSession`; `url` carries the token."""

    daemon_threads = True

    def __init__(self, session: LabelSession, port: int = 0, token: str | None = None) -> None:
        self.session = session
        self.token = token or secrets.token_urlsafe(24)
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", port), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/{self.token}/"


class _Handler(BaseHTTPRequestHandler):
    server: LabelServer
    server_version = "recall-kit-label"
    sys_version = ""

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

    def _json(self, data: Any, status: HTTPStatus = HTTPStatus.OK) -> None:
        self._send(status, json.dumps(data, ensure_ascii=False).encode("utf-8"), "application/json; charset=utf-8")

    def _body(self) -> dict[str, Any] | None:
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
            self._json({"error": "expected application/json"}, HTTPStatus.UNSUPPORTED_MEDIA_TYPE)
            return None
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._json({"error": "body too large"}, HTTPStatus.REQUEST_ENTITY_TOO_LARGE)
            return None
        try:
            data = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
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
                self._json(view.state(self.server.session))
        elif route == "api/contrast":
            with self.server.lock:
                self._json(view.contrast(self.server.session))
        else:
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8")

    def do_POST(self) -> None:  # noqa: N802
        route = self._route()
        if route is None:
            return
        actions: dict[str, Callable[[LabelSession, dict[str, Any]], None]] = {
            "api/grade": lambda s, b: s.grade(str(b.get("query_id")), str(b.get("doc_id")), _grade(b.get("grade")),
                                              then=_pair(b.get("then"))),
            "api/skip": lambda s, b: s.skip(),
            "api/back": lambda s, b: s.back(),
            "api/open": lambda s, b: s.open(str(b.get("query_id")), str(b.get("doc_id"))),
            "api/note": lambda s, b: s.note(str(b.get("query_id")), str(b.get("doc_id")), _text(b.get("note")),
                                            b.get("flagged") is True),
        }
        if route not in actions:
            self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8")
            return
        body = self._body()
        if body is None:
            return
        with self.server.lock:
            try:
                actions[route](self.server.session, body)
            except RecallKitError as error:
                self._json({"error": str(error)}, HTTPStatus.BAD_REQUEST)
                return
            self._json(view.state(self.server.session))


def _pair(value: Any) -> Pair | None:
    """The pair a grade's `then` names (the one the page shows next), or None."""
    if not isinstance(value, dict):
        return None
    return str(value.get("query_id")), str(value.get("doc_id"))


def _text(value: Any) -> str:
    from recall_kit.errors import OptionError

    if value is None:
        return ""
    if not isinstance(value, str):
        raise OptionError("a note is text")
    return value


def _grade(value: Any) -> int:
    from recall_kit.errors import OptionError

    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionError(f"grade {value!r} is not a whole number")
    return value


def serve(session: LabelSession, port: int = 0, announce: Callable[[str], None] = print) -> None:
    """Serve the page until Ctrl-C; every grade is already on disk, so stopping loses nothing."""
    server = LabelServer(session, port)
    announce(f"Label at {server.url}  (Ctrl-C stops; grades go to {session.out.path} as you give them)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        announce(f"Stopped: {len(session.out)} grades in {session.out.path}.")
    finally:
        server.server_close()
