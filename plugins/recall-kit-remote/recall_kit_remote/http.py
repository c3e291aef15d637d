"""The `http` retriever: one request per query to a search endpoint you run, hits read from its
JSON answer."""

from __future__ import annotations

import json
import os
import time
import zlib
from dataclasses import dataclass
from typing import Any, Literal

from recall_kit.plugin import Corpus, Hit, Memory, OptionError, PluginRunError, RecallKitError, mask_secrets
from recall_kit_remote.base import (
    MEMORY_FIELDS,
    SEARCH_FIELDS,
    AnswerMisread,
    AnswerOptions,
    FillOptions,
    QueryFailed,
    RemoteRetriever,
    TextReading,
    check_url,
    compile_pattern,
    fill_template,
    listing_request,
    memory_values,
    parse_template,
    server_id,
)

#: The largest answer body read by default (8 MB): far above any ranking's JSON.
DEFAULT_MAX_BYTES = 8_000_000

#: The POST body when none is given: `{text}`, `{k}` and `{scope}` are filled per query.
DEFAULT_BODY = '{"query": "{text}", "k": "{k}"}'
#: The add request's body when none is given: one memory's fields fill it.
DEFAULT_ADD_BODY = '{"id": "{id}", "content": "{content}"}'


class HTTPRetriever(RemoteRetriever):
    """One request per query to `url`: GET with the query in `query_param` (and k in `k_param`),
    or POST with the JSON `body` template. Hits are read from the JSON answer at `results`, each
    id at `id` and score at `score`. The server holds the corpus already (the same ids as the
    dataset, e.g. `dataset import sqlite` of its store), or, with `add_url`, recall-kit fills it:
    one POST of the `add_body` template per memory (the server's own id read at `add_result_id`
    and hits mapped back). An auth header's value is read from the environment variable
    `auth_env` and is never written anywhere.
    """

    description = "a running search endpoint over HTTP (GET or POST JSON), read as a black box"

    @dataclass(frozen=True)
    class Options(FillOptions):
        #: The search endpoint (required), e.g. http://127.0.0.1:8000/search.
        url: str = ""
        #: GET (the query in a URL parameter) or POST (a JSON body).
        method: Literal["GET", "POST"] = "GET"
        #: GET: the parameter holding the query text.
        query_param: str = "q"
        #: GET: the parameter holding k (empty: not sent).
        k_param: str = "k"
        #: GET: the parameter holding the memory scope, when the dataset has scopes (empty: not sent).
        scope_param: str = ""
        #: POST: the JSON body; "{text}", "{k}" and "{scope}" are filled per query.
        body: str = DEFAULT_BODY
        #: Name of the environment variable holding the auth header's value (never written out).
        auth_env: str = ""
        #: The header the value goes in.
        auth_header: str = "Authorization"
        #: Put before the value, e.g. "Bearer " (empty: the value as it is).
        auth_prefix: str = "Bearer "
        #: POST each memory here before searching (empty: the server holds its store).
        add_url: str = ""
        #: The add request's JSON body template ({id}, {content}, {scope}, {category}, {tags},
        #: {expanded_keywords}, {importance}, {created_at}).
        add_body: str = DEFAULT_ADD_BODY
        #: Find the sensitive memories the server holds under its own ids in its listing (GET), a
        #: JSON object: {"url": "http://host/memories", "memories": "results", "id": "id",
        #: "flag": "metadata.sensitive"} (entries whose flag is true, "yes" or 1).
        sensitive_listing: str = ""
        #: The largest answer body read, in bytes, decompressed; a larger one is a failed query
        #: (never read whole: a compressed answer is cut off while it is decompressed).
        max_bytes: int = DEFAULT_MAX_BYTES

        def __post_init__(self) -> None:
            check_url(self.url, "url")
            if self.max_bytes < 1:
                raise ValueError("max_bytes must be at least 1")
            super().__post_init__()
            if self.method == "POST":
                parse_template(self.body, "http.body", SEARCH_FIELDS)
            check_url(self.add_url, "add_url", required=False)
            parse_template(self.add_body, "http.add_body", MEMORY_FIELDS)
            check_url(listing_request(self.sensitive_listing, "http.sensitive_listing", "url").get("url", ""),
                      "http.sensitive_listing's url", required=False)

    options: HTTPRetriever.Options

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._client: Any = None
        self._scope: str | None = None
        self._reading = self.options.text_reading("http")

    def build_index(self, corpus: Corpus) -> None:
        """Nothing is sent: the server holds its store. Checks that the server answers at all."""
        import httpx

        self.close()
        options = self.options
        headers = {"Accept-Encoding": ACCEPTED_ENCODINGS}
        if options.auth_env:
            value = os.environ.get(options.auth_env)
            if not value:
                raise OptionError(f"http.auth_env names {options.auth_env!r}, which is not set in the environment.")
            headers[options.auth_header] = options.auth_prefix + value
        self._scope = corpus[0].scope if len(corpus) else None
        limits = httpx.Limits(max_connections=options.concurrency, max_keepalive_connections=options.concurrency)
        from recall_kit_remote.deadline import with_deadline

        transport = with_deadline(httpx.HTTPTransport(limits=limits))  # headers and body within http.timeout
        self._client = httpx.Client(headers=headers, timeout=options.timeout, transport=transport)
        from recall_kit_remote.deadline import within

        try:
            with within(options.timeout):
                self._client.request("HEAD", options.url)
        except (httpx.HTTPError, httpx.InvalidURL) as error:
            self.close()
            raise PluginRunError(f"Cannot reach {mask_secrets(options.url)}: {type(error).__name__}.") from None
        if options.add_url:
            self.fill(corpus, self._add)
        if options.sensitive_listing:
            self._flagged = self._listed_sensitive()

    def _listed_sensitive(self) -> set[str]:
        """The ids the server's listing flags sensitive (`sensitive_listing`)."""
        from recall_kit_remote.listing import listed_flagged

        listing = listing_request(self.options.sensitive_listing, "http.sensitive_listing", "url")
        where = mask_secrets(listing["url"])

        def fetch(paging: dict[str, Any]) -> Any:
            params = {**(listing.get("arguments") or {}), **paging}
            return json.loads(self._read("GET", {"url": listing["url"], "params": params}, time.perf_counter() + 120.0))

        try:
            return listed_flagged(fetch, listing)
        except (QueryFailed, ValueError, RecallKitError) as failure:
            raise PluginRunError(f"The sensitive listing {where}: {str(failure).rstrip('.') or 'not JSON'}.") from None
        except Exception as error:  # noqa: BLE001 - httpx's errors: one line, the type
            raise PluginRunError(f"Cannot list {where} (http.sensitive_listing): {type(error).__name__}.") from None

    def _add(self, memory: Memory) -> str | None:
        """POST one memory to `add_url` (sent again after a failure only when `add_idempotent`): the
        server's id when `add_result_id` or `add_id_pattern` reads one. The first cause is the one
        reported: a retry's complaint (the duplicate the first call stored) would hide it."""
        import httpx

        options = self.options
        body = fill_template(json.loads(options.add_body), memory_values(memory))
        pattern = compile_pattern(options.add_id_pattern, "http.add_id_pattern")
        first = ""
        for _ in range(options.tries if options.add_idempotent else 1):
            try:
                response = self._client.post(options.add_url, json=body)
            except httpx.HTTPError as error:
                first = first or type(error).__name__
                continue
            if response.status_code >= 400:
                first = first or f"HTTP {response.status_code}"
                continue
            if not options.add_result_id and pattern is None:
                return None
            try:
                return server_id(_parsed(response.text, pattern is not None), options.add_result_id, pattern)
            except QueryFailed as failure:  # an answer came: the memory may be stored; never sent again
                first = first or str(failure)
                break
        raise PluginRunError(f"{mask_secrets(options.add_url)}: adding memory {memory.id} failed: {first}.")

    def empty_hint(self) -> str | None:
        options = self.options
        if self._scope is None:
            return None
        if options.method == "GET" and not options.scope_param:
            return ("the dataset has scopes and http.scope_param is unset, so the server was never told "
                    "whose memories to search: name its scope parameter, e.g. -o http.scope_param=user_id")
        if options.method == "POST" and "{scope}" not in options.body:
            return ('the dataset has scopes and http.body has no "{scope}", so the server was never told '
                    'whose memories to search: add it, e.g. "user_id": "{scope}"')
        return None

    def raw_answers(self, query: str, k: int) -> list[Any]:
        """What one search request answers (JSON, or the text it is), for `recall-kit remote probe`."""
        return [_parsed(self._request(query, k).decode("utf-8", "replace"), as_text=True)]

    def ask(self, query: str, k: int) -> list[Hit]:
        return self.mapped(answer_hits(self._request(query, k), self.options, self._reading))

    def _request(self, query: str, k: int) -> bytes:
        """One search request's answer body, timed as the wait on the server."""
        import httpx

        options = self.options
        if self._client is None:
            raise PluginRunError("http: search before build_index.")
        values = {"text": query, "k": k, "scope": self._scope}
        request: dict[str, Any] = {}
        if options.method == "GET":
            params: dict[str, Any] = {options.query_param: query}
            if options.k_param:
                params[options.k_param] = k
            if options.scope_param and self._scope is not None:
                params[options.scope_param] = self._scope
            request["params"] = params
        else:
            request["json"] = fill_template(json.loads(options.body), values)
        from recall_kit_remote.deadline import within

        started = time.perf_counter()
        try:
            with within(options.timeout):
                body: bytes = self._read(options.method, request, started + options.timeout)
        except httpx.TimeoutException:
            raise QueryFailed(f"no answer within {options.timeout:g} s") from None
        except httpx.TransportError as error:
            raise QueryFailed(f"{type(error).__name__} from {mask_secrets(options.url)}") from None
        except httpx.InvalidURL as error:  # a query too long for a URL, a port out of range
            raise QueryFailed(f"the request's URL is not one httpx can send ({_first_line(error)})") from None
        except zlib.error:
            raise QueryFailed(DAMAGED) from None
        finally:
            self.waited(started)
        return body

    def _read(self, method: str, request: dict[str, Any], deadline: float) -> bytes:
        """The answer's body, read as it streams in: at most `max_bytes` of it, decompressed (a
        gzip or deflate answer is cut off while it is decompressed, never inflated whole), and all
        of it by `deadline` (each read waits at most `timeout`, so a server trickling a byte at a
        time is cut off at the deadline, not held by a per-read timeout that each byte resets)."""
        options = self.options
        request = {"url": options.url, **request}
        with self._client.stream(method, **request) as response:
            if response.status_code >= 400:
                raise QueryFailed(f"HTTP {response.status_code}")
            if response.status_code in REDIRECTS:  # its body is no answer to the query
                where = response.headers.get("location", "")
                raise QueryFailed(f"HTTP {response.status_code}, a redirect" + (f" to {mask_secrets(where)}" if where else "")
                                  + ", not followed: give the URL that answers as http.url")
            limit = options.max_bytes
            declared = response.headers.get("content-length", "")
            too_large = QueryFailed(f"the answer is larger than http.max_bytes ({limit})")
            decoder = content_decoder(response.headers.get("content-encoding", ""))
            if decoder is None and declared.isdigit() and int(declared) > limit:
                raise too_large
            body = bytearray()
            received = 0
            for chunk in response.iter_raw():
                received += len(chunk)
                if received > limit:  # compressed bytes count too: bytes after a gzip member are kept, not inflated
                    raise too_large
                if decoder is None:
                    body += chunk
                else:  # never more than what is left below the cap (+1 to see it crossed)
                    body += decoder.decompress(chunk, limit + 1 - len(body))
                    while decoder.unconsumed_tail and len(body) <= limit:
                        body += decoder.decompress(decoder.unconsumed_tail, limit + 1 - len(body))
                if len(body) > limit:
                    raise too_large
                if time.perf_counter() > deadline:
                    raise QueryFailed(f"no answer within {options.timeout:g} s")
        return bytes(body)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


#: The statuses whose answer is a redirect (and 304, which has no body): never read as hits.
REDIRECTS = frozenset({300, 301, 302, 303, 304, 305, 307, 308})


def _first_line(error: BaseException) -> str:
    return (str(error).splitlines() or [type(error).__name__])[0]


#: A compressed body that does not decompress.
DAMAGED = "the answer's compressed body is damaged (it does not decompress)"

#: The encodings asked for, and read with a cap while they are decompressed.
ACCEPTED_ENCODINGS = "gzip, deflate"


def content_decoder(encoding: str) -> Any:
    """A decompressor for an answer's `Content-Encoding` (None: identity); an encoding that was
    not asked for is a failed query, not a body read whole."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj()
    raise QueryFailed(f"the answer's content-encoding {encoding!r} is not one recall-kit asked for ({ACCEPTED_ENCODINGS})")


def answer_hits(body: bytes, options: AnswerOptions, reading: TextReading) -> list[Hit]:
    """The hits of one answer's body (bytes that are no UTF-8 read as U+FFFD): JSON, or text that
    `reading`'s id pattern reads; an answer that cannot be read is `AnswerMisread`."""
    payload = _parsed(body.decode("utf-8", "replace"), reading.id_pattern is not None)
    return options.read_answer(payload, "http", reading)


def _parsed(text: str, as_text: bool) -> Any:
    """An answer's body as JSON, or as the text it is when an id pattern reads it."""
    try:
        return json.loads(text)
    except RecursionError:
        if as_text:
            return text
        raise AnswerMisread("the answer is JSON nested deeper than recall-kit reads") from None
    except ValueError:
        if as_text:
            return text
        raise AnswerMisread("the answer is not valid JSON (http.id_pattern reads text)") from None
