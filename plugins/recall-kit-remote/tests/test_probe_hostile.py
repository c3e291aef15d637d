"""`recall-kit remote probe http` against a hostile or careless server: a URL carrying a password
and an api key, one-word memories, failed answers (HTTP errors, oversize, a closed connection, an
encoding not asked for), JSON nested past any reader, bytes after a gzip member. Nothing printed
carries a secret or a memory's text; every failure is one line naming it, exit 2."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable

import pytest
from recall_kit_remote.probe import describe_json, describe_text, report
from remote_helpers import API_KEY, PASSWORD, run_cli

#: One-word memories: a text an id-reader could take for an id.
MEMORIES = ["grandma", "divorce", "chemotherapy"]


def _http(status: str, body: bytes, headers: str = "Content-Type: application/json\r\n") -> bytes:
    return (f"HTTP/1.1 {status}\r\n{headers}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


def _probe(url: str, *options: str) -> tuple[int, str, str]:
    done = run_cli("remote", "probe", "http", "--query", "coffee", "-o", f"http.url={url}", *options)
    return done.returncode, done.stdout, done.stderr


def _hits(name: str = "content") -> bytes:
    return json.dumps({"results": [{"id": f"m{i}", name: text, "score": 1.0 - i / 10}
                                   for i, text in enumerate(MEMORIES)]}).encode()


def test_the_url_s_password_and_api_key_are_never_printed(serve) -> None:
    """Before: the first line was 'http http://alice:hunter2-secret@...?api_key=sk-live-... answered 1 part.'"""
    server = serve(lambda: _http("200 OK", _hits()))
    code, out, err = _probe(server.url())
    assert code == 0, err
    assert PASSWORD not in out + err and API_KEY not in out + err
    assert "options: " in out


@pytest.mark.parametrize("name", ["content", "note", "label"])
def test_a_one_word_memory_is_never_printed_as_an_example(serve, name: str) -> None:
    """Before: a hit whose text is one token was offered as an id, its text printed '(e.g. 'grandma')'."""
    server = serve(lambda: _http("200 OK", _hits(name)))
    code, out, err = _probe(server.url(secrets=False))
    assert code == 0, err
    assert not any(memory in out + err for memory in MEMORIES), out
    assert "id paths:    id (e.g. 'm0')" in out  # an id's example still shows


def test_one_word_memories_in_a_text_answer_and_in_structured_content_are_not_printed() -> None:
    text = "\n".join(f"id: m{i} memory: {memory} score: {1 - i / 10}" for i, memory in enumerate(MEMORIES))
    lines, _ = report("test", [text], "mcp")
    structured = {"structuredContent": {"hits": [{"uuid": f"u{i}", "fact": memory} for i, memory in enumerate(MEMORIES)]}}
    lines += report("test", [structured], "mcp")[0]
    shown = "\n".join(lines)
    assert not any(memory in shown for memory in MEMORIES), shown
    assert describe_text(text).ids[0][1] == "'m0'"
    assert [shown for path, shown in describe_json(structured).ids if path.endswith("fact")] == \
        ["a 7-character value, not shown: 'fact' is no id's name"]


@pytest.mark.parametrize(("answer", "says"), [
    (lambda: _http("503 Service Unavailable", b"{}"), "HTTP 503"),
    (lambda: _http("401 Unauthorized", b'{"error": "bad key"}'), "HTTP 401"),
    (lambda: _http("200 OK", b"x" * 2000), "larger than http.max_bytes (1000)"),
    (lambda: _http("200 OK", b"{}", "Content-Encoding: br\r\n"), "content-encoding 'br' is not one recall-kit asked for"),
    (lambda: b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{\"res", "RemoteProtocolError"),
])
def test_a_failed_probe_query_names_its_failure_in_one_line(serve, answer: Callable[[], bytes], says: str) -> None:
    """Before: every one ended 'Error: unexpected QueryFailed'."""
    server = serve(answer)
    code, out, err = _probe(server.url(), "-o", "http.max_bytes=1000", "-o", "http.tries=1")
    assert code == 2 and err.count("\n") == 1, err
    assert "unexpected" not in err and says in err and "the search failed" in err
    assert PASSWORD not in err and API_KEY not in err


def test_json_nested_past_any_reader_is_read_as_text_not_a_recursion_error(serve) -> None:
    """Before: 'Error: unexpected RecursionError'."""
    server = serve(lambda: _http("200 OK", b'{"a": ' * 100_000 + b"1" + b"}" * 100_000))
    code, out, err = _probe(server.url(secrets=False), "-o", "http.max_bytes=10000000")
    # read as text, so no hits to read: the probe says so and exits 2 (issue 63), no traceback
    assert code == 2 and "unexpected" not in err and "Traceback" not in err, err
    assert "No list of hits with ids found" in out + err


def test_bytes_after_a_gzip_member_count_against_the_cap(serve) -> None:
    """Before: 600 MB after a small gzip member were held (390 MB of memory), answered."""
    body = gzip.compress(_hits()) + b"\0" * 3_000_000
    server = serve(lambda: _http("200 OK", body, "Content-Encoding: gzip\r\nContent-Type: application/json\r\n"))
    code, _, err = _probe(server.url(secrets=False), "-o", "http.max_bytes=100000", "-o", "http.tries=1")
    assert code == 2 and "larger than http.max_bytes (100000)" in err, err


def test_the_timeout_covers_the_headers_not_only_each_read(serve) -> None:
    """Before: one header byte a second kept `-o http.timeout=5` running past 150 s."""
    server = serve(lambda: _http("200 OK", _hits()), trickle=0.5)
    started = time.monotonic()
    code, _, err = _probe(server.url(secrets=False), "-o", "http.timeout=1", "-o", "http.tries=1")
    assert code == 2 and "no answer within 1 s" in err, err
    assert time.monotonic() - started < 15  # the interpreter's start, and 1 s; the headers alone take 40 s
