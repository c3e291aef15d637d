"""The `http` retriever: one request per query to a search endpoint you run, hits read from its
JSON answer."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any, Literal

from recall_kit.plugin import Corpus, Hit, Memory, OptionError, PluginRunError, mask_secrets
from recall_kit_remote.base import (
    MEMORY_FIELDS,
    SEARCH_FIELDS,
    AnswerOptions,
    QueryFailed,
    RemoteRetriever,
    as_hit_id,
    fill_template,
    memory_values,
    parse_template,
    read_hits,
    select,
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
    class Options(AnswerOptions):
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
        #: Path to the server's own id in the add answer (empty: ids are the dataset's).
        add_result_id: str = ""
        #: The largest answer body read, in bytes; a larger one is a failed query (never read whole).
        max_bytes: int = DEFAULT_MAX_BYTES

        def __post_init__(self) -> None:
            if not self.url.startswith(("http://", "https://")):
                raise ValueError("url must be given, as http://host:port/path or https://...")
            if self.max_bytes < 1:
                raise ValueError("max_bytes must be at least 1")
            super().__post_init__()
            if self.method == "POST":
                parse_template(self.body, "http.body", SEARCH_FIELDS)
            if self.add_url and not self.add_url.startswith(("http://", "https://")):
                raise ValueError("add_url must be http://host:port/path or https://...")
            parse_template(self.add_body, "http.add_body", MEMORY_FIELDS)

    options: HTTPRetriever.Options

    def __init__(self, options: Any = None) -> None:
        super().__init__(options)
        self._client: Any = None
        self._scope: str | None = None
        self._to_dataset: dict[str, str] = {}

    def build_index(self, corpus: Corpus) -> None:
        """Nothing is sent: the server holds its store. Checks that the server answers at all."""
        import httpx

        self.close()
        options = self.options
        headers = {}
        if options.auth_env:
            value = os.environ.get(options.auth_env)
            if not value:
                raise OptionError(f"http.auth_env names {options.auth_env!r}, which is not set in the environment.")
            headers[options.auth_header] = options.auth_prefix + value
        self._scope = corpus[0].scope if len(corpus) else None
        limits = httpx.Limits(max_connections=options.concurrency, max_keepalive_connections=options.concurrency)
        self._client = httpx.Client(headers=headers, timeout=options.timeout, limits=limits)
        try:
            self._client.request("HEAD", options.url)
        except httpx.HTTPError as error:
            self.close()
            raise PluginRunError(f"Cannot reach {mask_secrets(options.url)}: {type(error).__name__}.") from None
        self._to_dataset = {}
        if options.add_url:
            for memory in corpus:
                self._add(memory)

    def _add(self, memory: Memory) -> None:
        """POST one memory to `add_url`, tried `tries` times; its server id kept for mapping back."""
        import httpx

        options = self.options
        body = fill_template(json.loads(options.add_body), memory_values(memory))
        reason = ""
        for _ in range(options.tries):
            try:
                response = self._client.post(options.add_url, json=body)
            except httpx.HTTPError as error:
                reason = type(error).__name__
                continue
            if response.status_code >= 400:
                reason = f"HTTP {response.status_code}"
                continue
            if not options.add_result_id:
                return
            try:
                found = select(response.json(), options.add_result_id)
            except (ValueError, QueryFailed):
                reason = f"the answer holds no {options.add_result_id!r}"
                continue
            server_id = as_hit_id(found[0] if isinstance(found, list) and len(found) == 1 else found)
            if server_id is not None:
                self._to_dataset[server_id] = memory.id
                return
            reason = f"{options.add_result_id!r} is not a string or integer id"
        raise PluginRunError(f"{mask_secrets(options.add_url)}: adding memory {memory.id} failed: {reason}.")

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

    def ask(self, query: str, k: int) -> list[Hit]:
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
        started = time.perf_counter()
        try:
            body = self._read(options.method, request, started + options.timeout)
        except httpx.TimeoutException:
            raise QueryFailed(f"no answer within {options.timeout:g} s") from None
        except httpx.TransportError as error:
            raise QueryFailed(f"{type(error).__name__} from {mask_secrets(options.url)}") from None
        finally:
            self.waited(started)
        try:
            payload = json.loads(body)
        except ValueError:
            raise QueryFailed("the answer is not valid JSON") from None
        hits = read_hits(payload, options.results, options.id, options.score)
        if self._to_dataset:
            hits = [Hit(self._to_dataset.get(hit.id, hit.id), hit.score) for hit in hits]
        return hits

    def _read(self, method: str, request: dict[str, Any], deadline: float) -> bytes:
        """The answer's body, read as it streams in: at most `max_bytes` of it, and all of it by
        `deadline` (each read waits at most `timeout`, so a server trickling a byte at a time is
        cut off at the deadline, not held by a per-read timeout that each byte resets)."""
        options = self.options
        with self._client.stream(method, options.url, **request) as response:
            if response.status_code >= 400:
                raise QueryFailed(f"HTTP {response.status_code}")
            declared = response.headers.get("content-length", "")
            too_large = QueryFailed(f"the answer is larger than http.max_bytes ({options.max_bytes})")
            if declared.isdigit() and int(declared) > options.max_bytes:
                raise too_large
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > options.max_bytes:
                    raise too_large
                if time.perf_counter() > deadline:
                    raise QueryFailed(f"no answer within {options.timeout:g} s")
        return bytes(body)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
