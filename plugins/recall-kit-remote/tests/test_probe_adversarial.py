"""The adversarial pass over `recall-kit remote probe` (issue 60, rerun): well over a hundred
hostile answers, options and URLs against real servers (a raw HTTP socket server, and the
hand-written MCP server over stdio and streamable HTTP), each held to the same rules: exit 0 or
2, no traceback and no "unexpected" error, one line for a failure, no secret from the URL or the
command line and no memory's text in anything printed, done within a bound. Run in this process
(typer's runner) where it is fast; the cases that need a process of their own (Ctrl-C) run one."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
import zlib
from collections.abc import Callable

import pytest
from remote_helpers import API_KEY, PASSWORD, ROOT, RawServer
from test_probe_hostile import MEMORIES, _http

#: A memory of several words, the text the probe must never print.
SENTENCE = "my sister's chemotherapy ends in May"


def invoke(*args: str) -> tuple[int, str, float]:
    """`recall-kit ARGS` in this process: exit status, stdout and stderr together, seconds."""
    from recall_kit.testing import invoke_cli

    started = time.monotonic()
    done = invoke_cli(args, plugin_commands=True)
    return done.exit_code, done.output, time.monotonic() - started


def held_to_the_rules(code: int, output: str, seconds: float, bound: float = 20.0) -> None:
    assert code in (0, 2), (code, output)
    assert "Traceback" not in output and "unexpected" not in output, output
    assert sum(line.startswith("Error") for line in output.splitlines()) <= 1, output
    assert PASSWORD not in output and API_KEY not in output and "sk-cmd-secret" not in output, output
    assert SENTENCE not in output and not any(memory in output for memory in MEMORIES), output
    assert "\x1b" not in output, repr(output)  # no terminal escape from the server reaches the terminal
    assert seconds < bound, seconds


def hits(*, text: str = SENTENCE, **extra: object) -> bytes:
    return json.dumps({"results": [{"id": f"m{i}", "content": word if i else text, "score": 1 - i / 10, **extra}
                                   for i, word in enumerate(["", *MEMORIES])]}).encode()


def probe_http(server: RawServer, *options: str, timeout: str = "3") -> tuple[int, str, float]:
    return invoke("remote", "probe", "http", "--query", "coffee", "-o", f"http.url={server.url()}",
                  "-o", f"http.timeout={timeout}", "-o", "http.tries=1", "-o", "http.max_bytes=1000000", *options)


# HTTP status codes, each as the search's answer (the HEAD check answered 200).
STATUSES = [204, 301, 302, 303, 304, 307, 308, 400, 401, 403, 404, 405, 408, 410, 413, 418, 429, 431,
            500, 501, 502, 503, 504, 520, 599]


@pytest.mark.parametrize("status", STATUSES)
def test_any_status_is_one_line_and_no_secret(serve, status: int) -> None:
    location = f"Location: http://alice:{PASSWORD}@elsewhere.example/?api_key={API_KEY}\r\n"
    server = serve(lambda: _http(f"{status} Whatever", hits(), "Content-Type: application/json\r\n" + location))
    code, output, seconds = probe_http(server)
    held_to_the_rules(code, output, seconds)
    assert code == 2 and (f"HTTP {status}" in output or status == 204), output  # 204: no body, no hits
    if 300 <= status < 400 and status != 304:  # before: the redirect's body was read as the hits, exit 0
        assert "a redirect to http://alice:***@elsewhere.example/?api_key=***, not followed" in output, output


PROTOCOL = {
    "closed at once": b"",
    "no status line": b"garbage\r\n\r\n",
    "HTTP/2 status line": b"HTTP/2 200\r\n\r\n{}",
    "no length, close-delimited": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + hits(),
    "length abc": b"HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n{}",
    "length -1": b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n{}",
    "two lengths": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 7\r\n\r\n{}",
    "bad chunk size": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    "chunks cut short": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n100\r\n{\"res",
    "chunks past the cap": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                           + b"10000\r\n" + b"x" * 0x10000 + b"\r\n" * 1 + (b"10000\r\n" + b"x" * 0x10000 + b"\r\n") * 20,
    "a 100 KB header": b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 100_000 + b"\r\nContent-Length: 2\r\n\r\n{}",
    "2000 headers": b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 2000 + b"Content-Length: 2\r\n\r\n{}",
    "NUL in a header": b"HTTP/1.1 200 OK\r\nX-A: \x00\r\nContent-Length: 2\r\n\r\n{}",
    "LF line ends": b"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}",
    "1xx then nothing": b"HTTP/1.1 100 Continue\r\n\r\n",
    "status 999": b"HTTP/1.1 999 Odd\r\nContent-Length: 2\r\n\r\n{}",
}


@pytest.mark.parametrize("name", list(PROTOCOL))
def test_a_broken_http_answer_is_one_line(serve, name: str) -> None:
    server = serve(lambda: PROTOCOL[name])
    code, output, seconds = probe_http(server)
    held_to_the_rules(code, output, seconds)
    if name != "no length, close-delimited":
        assert code == 2, output


def _deflated(data: bytes, raw: bool = False) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS if raw else zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


def _bomb(size: int, wbits: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return b"".join(packer.compress(b"0" * 1_000_000) for _ in range(size // 1_000_000)) + packer.flush()


COMPRESSED = {
    "gzip bomb": ("gzip", lambda: _bomb(50_000_000, 16 + zlib.MAX_WBITS)),
    "deflate bomb": ("deflate", lambda: _bomb(50_000_000, zlib.MAX_WBITS)),
    "raw deflate (no zlib header)": ("deflate", lambda: _deflated(hits(), raw=True)),
    "not gzip at all": ("gzip", lambda: b"this is not gzip"),
    "gzip cut short": ("gzip", lambda: gzip.compress(hits())[:40]),
    "gzip then garbage": ("gzip", lambda: gzip.compress(hits()) + b"garbage"),
    "two gzip members": ("gzip", lambda: gzip.compress(hits()[:20]) + gzip.compress(hits()[20:])),
    "gzip twice over": ("gzip, gzip", lambda: gzip.compress(gzip.compress(hits()))),
    "upper-case GZIP": ("GZIP", lambda: gzip.compress(hits())),
    "zstd": ("zstd", lambda: b"(\xb5/\xfd"),
    "compress": ("compress", lambda: b"\x1f\x9d"),
    "identity": ("identity", hits),
}


@pytest.mark.parametrize("name", list(COMPRESSED))
def test_a_compressed_answer_is_capped_or_read_never_a_crash(serve, name: str) -> None:
    encoding, body = COMPRESSED[name]
    made = body()
    server = serve(lambda: _http("200 OK", made, f"Content-Encoding: {encoding}\r\nContent-Type: application/json\r\n"))
    code, output, seconds = probe_http(server)
    held_to_the_rules(code, output, seconds)
    if name in ("upper-case GZIP", "identity", "gzip then garbage"):
        assert code == 0 and "options: " in output, output


def _deep(depth: int) -> bytes:
    return b'{"results": ' + b"[" * depth + b"]" * depth + b"}"


BODIES = {
    "empty": b"", "null": b"null", "empty list": b"[]", "empty object": b"{}", "a number": b"123",
    "a string": b'"grandma"', "true": b"true", "NaN": b"NaN", "infinities": b"[NaN, Infinity, -Infinity]",
    "NaN scores": hits(score=float("nan")), "infinite scores": b'{"results": [{"id": "a", "score": 1e400}, {"id": "b", "score": 1}]}',
    "a 5000-digit id": b'{"results": [{"id": ' + b"9" * 5000 + b"}]}",
    "a 5000-digit score": b'{"results": [{"id": "a", "score": ' + b"9" * 5000 + b"}]}",
    "a list 900 deep": _deep(900), "a list 100,000 deep": _deep(100_000),
    "objects 900 deep": b'{"a": ' * 900 + b"1" + b"}" * 900,
    "200,000 hits": json.dumps({"results": [{"id": n} for n in range(120_000)]}).encode(),
    "100,000 keys": json.dumps({f"k{n}": n for n in range(60_000)}).encode(),
    "a 10,000-character key": json.dumps({"x" * 10_000: [{"id": "a"}]}).encode(),
    "memory text as keys": json.dumps({"results": {SENTENCE: 0.9, f"{SENTENCE}, again": 0.8}}).encode(),
    "memory text as a key of hits": json.dumps({SENTENCE: [{"id": "a"}, {"id": "b"}]}).encode(),
    "terminal escapes in keys": json.dumps({"\x1b[2J\x1b[31mresults": [{"id\x1b[0m": "a"}, {"id\x1b[0m": "b"}]}).encode(),
    "a newline in a key": json.dumps({"res\nults": [{"id": "a"}, {"id": "b"}]}).encode(),
    "latin-1 bytes": b'{"results": [{"id": "caf\xe9", "content": "d\xe9j\xe0 vu"}]}',
    "UTF-16 with a BOM": '{"results": [{"id": "a"}]}'.encode("utf-16"),
    "UTF-8 BOM": b"\xef\xbb\xbf" + hits(),
    "a lone surrogate": b'{"results": [{"id": "\\ud800", "content": "x"}, {"id": "b", "content": "y"}]}',
    "NUL in strings": b'{"results": [{"id": "a\\u0000b", "content": "grandma\\u0000"}]}',
    "ids that are objects": b'{"results": [{"id": {"x": 1}}, {"id": {"x": 2}}]}',
    "ids that are booleans": b'{"results": [{"id": true}, {"id": false}]}',
    "duplicate ids": b'{"results": [{"id": "a"}, {"id": "a"}]}',
    "hits as lists": b'{"results": [["a", 1], ["b", 0.5]]}',
    "one-word memories only": json.dumps({"results": [{"memory": word} for word in MEMORIES]}).encode(),
    "memories under an id key's neighbour": json.dumps([{"id": n, "title": word} for n, word in enumerate(MEMORIES)]).encode(),
    "a text answer of 200,000 labelled lines": "".join(f"id: m{n} score: {1 - n / 1e6}\n" for n in range(40_000)).encode(),
    "a 900 KB line of words": b"a " * 450_000,
    "a text answer with memories": f"1. {SENTENCE} (id: m1, score: 0.9)\n2. grandma (id: m2, score: 0.8)\n".encode(),
    "a text answer with escapes": b"\x1b[2Jid: m1 score: 0.9\nid: m2 score: 0.8\n",
    "hex ids in text": b"found 1234567890abcdef1234 and abcdef1234567890abcd",
}


@pytest.mark.parametrize("name", list(BODIES))
def test_any_answer_body_is_read_or_refused_in_one_line(serve, name: str) -> None:
    body = BODIES[name]
    server = serve(lambda: _http("200 OK", body))
    code, output, seconds = probe_http(server)
    held_to_the_rules(code, output, seconds)


@pytest.mark.parametrize(("name", "trickle", "answer", "timeout"), [
    # The timeout is a deadline for the whole answer: twice the time between two bytes or more,
    # so that a timeout of each read (which every byte restarts) would not end it.
    ("a body a byte every 0.2 s", 0.2, lambda: _http("200 OK", hits()), "1"),
    ("the headers a byte a second", 1.0, lambda: _http("200 OK", hits()), "2"),
    ("nothing at all", 0.0, lambda: _wait(10), "1"),
])
def test_a_slow_answer_ends_at_the_timeout(serve, name: str, trickle: float, answer: Callable[[], bytes],
                                           timeout: str) -> None:
    server = serve(answer, trickle)
    code, output, seconds = probe_http(server, timeout=timeout)
    held_to_the_rules(code, output, seconds, bound=10)
    assert code == 2 and f"no answer within {timeout} s" in output, output


def _wait(seconds: float) -> bytes:
    time.sleep(seconds)
    return b""


URLS = [
    f"http://alice:{PASSWORD}@127.0.0.1:9/search?api_key={API_KEY}",
    f"http://127.0.0.1:9/search?token={API_KEY}",
    f"http://127.0.0.1:9/search?access_token={API_KEY}&q=1",
    f"http://127.0.0.1:9/search?key={API_KEY}",
    f"http://{API_KEY}@127.0.0.1:9/search",
    f"http://alice:{PASSWORD}@127.0.0.1:99999/search",
    f"http://alice:{PASSWORD}@[::1/search",
    f"ftp://alice:{PASSWORD}@127.0.0.1/search",
    f"file:///etc/passwd?api_key={API_KEY}",
    f"http://alice:{PASSWORD}@/search",
    f"https://alice:{PASSWORD}@127.0.0.1:9/search",
    "not a url",
    "",
]


@pytest.mark.parametrize("url", URLS)
def test_a_url_that_cannot_be_reached_never_shows_its_secrets(url: str) -> None:
    code, output, seconds = invoke("remote", "probe", "http", "--query", "x", "-o", f"http.url={url}",
                                   "-o", "http.timeout=3")
    held_to_the_rules(code, output, seconds)
    assert code == 2


OPTIONS = [
    ["--k", "0"], ["--k", "-1"], ["--k", "abc"], ["--k", "1.5"],
    ["-o", "http.timeout=0"], ["-o", "http.timeout=-1"], ["-o", "http.timeout=nan"], ["-o", "http.timeout=inf"],
    ["-o", "http.timeout=abc"], ["-o", "http.timeout=1e999"], ["-o", "http.max_bytes=0"],
    ["-o", "http.max_bytes=-5"], ["-o", "http.max_bytes=1e3"], ["-o", "mcp.tool=search"],
    ["-o", "http.method=PUT"], ["-o", "http.concurrency=0"], ["-o", "http.tries=0"], ["-o", "http.nope=1"],
    ["-o", "noequals"], ["-o", "=1"], ["-o", "http.method=POST", "-o", "http.body={not json"], ["-o", "http.method=POST", "-o", "http.body=[1]"],
    ["-o", "http.auth_env=RECALL_KIT_NOT_SET_ANYWHERE"], ["-o", "http.id_pattern=("],
    ["-o", "http.id_pattern=(a)(b)"], ["-o", "http.score_order=sideways"],
]


@pytest.mark.parametrize("flags", OPTIONS, ids=lambda flags: " ".join(flags))
def test_a_bad_option_value_is_one_line(serve, flags: list[str]) -> None:
    server = serve(lambda: _http("200 OK", hits()))
    code, output, seconds = invoke("remote", "probe", "http", "--query", "coffee", "-o", f"http.url={server.url()}",
                                   "-o", "http.tries=1", *flags)
    held_to_the_rules(code, output, seconds)
    assert code == 2, output


def test_a_huge_query_and_odd_queries_are_sent_not_a_crash(serve) -> None:
    server = serve(lambda: _http("200 OK", hits()))
    for query in ["", "\x00", "q" * 100_000, "\ud800", "é" * 1000]:
        code, output, seconds = invoke("remote", "probe", "http", "--query", query, "-o", f"http.url={server.url()}",
                                       "-o", "http.timeout=3", "-o", "http.tries=1")
        held_to_the_rules(code, output, seconds)


@pytest.mark.parametrize("name", ["unknown adapter", "command adapter"])
def test_an_unknown_adapter_is_one_line(name: str) -> None:
    code, output, seconds = invoke("remote", "probe", "nope" if name == "unknown adapter" else "command",
                                   "--query", "x", "-o", "x=1")
    held_to_the_rules(code, output, seconds)
    assert code == 2


def test_text_keys_and_terminal_escapes_in_keys_are_never_printed() -> None:
    """Before: a map keyed by memory text printed the text in the shape and offered it as the
    hits' path; a key holding terminal escapes reached the terminal (click strips them only when
    stdout is no terminal, so this reads the probe's lines themselves)."""
    from recall_kit_remote.probe import report

    for payload in ({"results": {SENTENCE: 0.9}}, {SENTENCE: [{"id": "a"}, {"id": "b"}]},
                    {"\x1b[2Jresults": [{"id\x1b[0m": "a"}, {"id\x1b[0m": "b"}]}):
        lines, options = report("test", [payload], "http")
        shown = "\n".join(lines + options)
        assert SENTENCE not in shown and "\x1b" not in shown, shown
        assert "-character key, not shown>" in shown


def test_big_values_that_are_fine_are_read() -> None:
    """A huge k and a huge byte cap are sent and kept, not refused."""
    code, output, seconds = invoke("remote", "probe", "http", "--query", "x", "--k", "99999999999999999999999",
                                   "-o", "http.url=http://127.0.0.1:9/s", "-o", "http.max_bytes=99999999999999999999999")
    held_to_the_rules(code, output, seconds)
    assert "Cannot reach http://127.0.0.1:9/s" in output, output


def test_numbers_past_what_python_prints_are_neither_ids_nor_scores() -> None:
    """Before: 'unexpected ValueError' (an int of 5,000 digits has no str) or OverflowError (no
    float): an MCP server's structured content may hold one."""
    from recall_kit_remote.probe import report

    lines, options = report("test", [{"results": [{"id": 10**5000, "score": 10**5000, "key": "a"},
                                                  {"id": 2, "score": 1, "key": "b"}]}], "mcp")
    assert options == ["-o mcp.results=results", "-o mcp.id=key", "-o mcp.score="], lines


@pytest.mark.parametrize("status", ["200 OK", "401 Unauthorized"])
def test_the_auth_header_s_value_is_never_printed_even_when_echoed(serve, monkeypatch, status: str) -> None:
    monkeypatch.setenv("RECALL_KIT_PROBE_TOKEN", API_KEY)
    body = json.dumps({"results": [{"id": "m1", "echo": f"Bearer {API_KEY}"}, {"id": "m2", "echo": API_KEY}],
                       "auth": API_KEY}).encode()
    server = serve(lambda: _http(status, body))
    code, output, seconds = probe_http(server, "-o", "http.auth_env=RECALL_KIT_PROBE_TOKEN")
    held_to_the_rules(code, output, seconds)


def test_ctrl_c_while_an_http_answer_trickles_in_exits_130_in_one_line(serve) -> None:
    server = serve(lambda: _http("200 OK", hits()), trickle=0.5)
    environment = dict(os.environ, RECALL_KIT_LOAD_PLUGINS="recall-kit-remote")
    process = subprocess.Popen([sys.executable, "-m", "recall_kit", "remote", "probe", "http", "--query", "x",
                                "-o", f"http.url={server.url()}", "-o", "http.timeout=60"], cwd=ROOT, env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The interpreter's start, and the answer's first bytes (a byte every 0.5 s, for 30 s or more).
    server.answering.wait(60)
    time.sleep(1)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130 and err.count("\n") == 1 and "Traceback" not in err, (process.returncode, err)
    assert PASSWORD not in out + err and API_KEY not in out + err
