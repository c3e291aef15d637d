"""The adversarial pass over `recall-kit remote probe mcp` (issue 60, rerun): hostile answers from
the hand-written MCP server (systems/raw_mcp_server.py) over stdio and streamable HTTP, command
lines carrying secrets, bad option values, and Ctrl-C while a server holds the probe. The rules
are test_probe_adversarial.py's: exit 0 or 2 (130 after Ctrl-C), no traceback, one line for a
failure, no secret and no memory text printed, done within a bound."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from remote_helpers import API_KEY, PASSWORD, ROOT, SYSTEMS
from test_probe_adversarial import SENTENCE, held_to_the_rules, invoke

RAW_MCP = SYSTEMS / "raw_mcp_server.py"


def _answer(result: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 0, "result": result}).replace('"id": 0', '"id": __ID__', 1).encode()


def _text(*texts: str, **extra: object) -> bytes:
    return _answer({"content": [{"type": "text", "text": text} for text in texts], **extra})


def _deep(depth: int) -> bytes:
    return b'{"jsonrpc": "2.0", "id": __ID__, "result": {"content": [], "structuredContent": {"a": ' + \
        b"[" * depth + b"]" * depth + b"}}}"


ANSWERS = {
    "not JSON": b"this is not json",
    "JSON, not JSON-RPC": b'{"hello": 1}',
    "an error quoting secrets": json.dumps({"jsonrpc": "2.0", "id": 0, "error": {"code": -32000, "message":
        f"bad key {API_KEY} for alice:{PASSWORD}; {SENTENCE}"}}).replace('"id": 0', '"id": __ID__').encode(),
    "isError with memory text": _text(SENTENCE, isError=True),
    "a null result": b'{"jsonrpc": "2.0", "id": __ID__, "result": null}',
    "content that is no list": _answer({"content": "x"}),
    "a block of an unknown type": _answer({"content": [{"type": "video", "data": SENTENCE}]}),
    "100,000 text blocks": _text(*(f"id: m{n}" for n in range(100_000))),
    "structured content 10,000 deep": _deep(10_000),
    "structured content 150 deep": _deep(150),
    "a text block of JSON 100,000 deep": _text("[" * 100_000 + "]" * 100_000),
    "a text answer with memories": _text(f"1. {SENTENCE} (id: m1, score: 0.9)\n2. grandma (id: m2, score: 0.8)"),
    "structured content keyed by memory text": _answer({"content": [], "structuredContent": {SENTENCE: [{"id": "a"}]}}),
    "terminal escapes in text": _text("\x1b[2Jid: m1 score: 0.9\nid: m2 score: 0.8"),
    "non-UTF-8 bytes": b'{"jsonrpc": "2.0", "id": __ID__, "result": {"content": [{"type": "text", "text": "caf\xe9"}]}}',
    "a NUL byte": b'{"jsonrpc": "2.0", "id": __ID__, "result": {"content": [{"type": "text", "text": "a\x00b"}]}}',
    "a CRLF line end": _text("id: m1") + b"\r",
    "a U+2028 in text": _text("id: m1\u2028id: m2"),
    "an escaped lone surrogate": _text("id: \\ud800"),
    "10,000 notifications first": b'{"jsonrpc": "2.0", "method": "notifications/message", "params": '
                                  b'{"level": "info", "data": "x"}}\n' * 10_000 + _text("id: m1"),
    "a request from the server first": b'{"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", '
                                       b'"params": {}}\n' + _text("id: m1"),
    "a 4000-digit number": _answer({"content": [], "structuredContent": {"results": [{"id": int("9" * 4000)}]}}),
    "5000-digit numbers": b'{"jsonrpc": "2.0", "id": __ID__, "result": {"content": [], "structuredContent": {"results": '
                          b'[{"id": ' + b"9" * 5000 + b', "score": ' + b"9" * 5000 + b'}, {"id": 1, "score": 1}]}}}',
    "structured hits": _answer({"content": [], "structuredContent": {"results": [{"id": "m1", "content": SENTENCE}]}}),
}


@pytest.fixture()
def answer_file(tmp_path: Path) -> Callable[[bytes], str]:
    def write(answer: bytes) -> str:
        path = tmp_path / f"answer{len(list(tmp_path.iterdir()))}.txt"
        path.write_bytes(answer)
        return str(path)

    return write


def probe_mcp(reach: str, *options: str, timeout: str = "3") -> tuple[int, str, float]:
    """The probe; `timeout` for its call (the server is up by then: connect_timeout covers its start)."""
    return invoke("remote", "probe", "mcp", "--query", "coffee", "-o", reach, "-o", "mcp.tool=search",
                  "-o", f"mcp.timeout={timeout}", "-o", "mcp.tries=1", "-o", "mcp.connect_timeout=15", *options)


def stdio(*arguments: str) -> str:
    return f"mcp.command={sys.executable} {RAW_MCP} {' '.join(arguments)}"


#: Answers the SDK cannot read at all: the call times out, and says what came instead.
GARBLED = ("not JSON", "JSON, not JSON-RPC")
#: Answers the SDK never turns into the call's result, so that the call waits out its timeout: a
#: short one, as the server answers at once (only a message that is not MCP is read meanwhile).
UNANSWERED = (*GARBLED, "a null result", "a NUL byte", "structured content 10,000 deep", "5000-digit numbers")
SHORT_TIMEOUT = "1"


@pytest.mark.parametrize("name", list(ANSWERS))
def test_any_stdio_answer_is_read_or_refused_in_one_line(answer_file, name: str) -> None:
    timeout = SHORT_TIMEOUT if name in UNANSWERED else "3"
    code, output, seconds = probe_mcp(stdio("--answer-file", answer_file(ANSWERS[name])), timeout=timeout)
    held_to_the_rules(code, output, seconds)
    if name == "non-UTF-8 bytes":  # read as U+FFFD, as over HTTP; before: no answer within 3 s (the SDK's reader died)
        assert code == 2 and "No list of hits with ids found" in output, output
    if name in GARBLED:  # before: only "no answer within 3 s"
        assert f"no answer within {timeout} s; meanwhile the server sent" in output, output
        assert "not MCP (JSON-RPC)" in output, output


def test_tool_names_that_are_text_or_escapes_are_not_printed() -> None:
    """Before: the message naming the server's tools printed every name as sent."""
    code, output, seconds = probe_mcp(stdio("--tools", "3", "--extra-tool", shlex.quote(SENTENCE), "--extra-tool",
                                            shlex.quote("\x1b[2Jx")), "-o", "mcp.tool=nope")
    available = output.partition("Available: ")[2]
    held_to_the_rules(code, available, seconds)
    assert code == 2 and available.startswith("<a 5-character name, not shown>, <a 36-character name, not shown>, "
                                              "search, tool000000"), output


@pytest.mark.parametrize("name", ["not JSON", "an error quoting secrets", "structured content 10,000 deep",
                                  "non-UTF-8 bytes", "a text answer with memories", "structured hits"])
@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse"])
def test_any_http_answer_is_read_or_refused_in_one_line(raw_mcp_http, answer_file, name: str, sse: bool) -> None:
    reach = raw_mcp_http("--answer-file", answer_file(ANSWERS[name]), *(["--sse"] if sse else []))
    code, output, seconds = probe_mcp(f"mcp.url={reach}")
    held_to_the_rules(code, output, seconds)


@pytest.mark.parametrize("status", [302, 400, 401, 404, 405, 500, 503])
def test_any_http_status_of_a_call_is_one_line(raw_mcp_http, answer_file, status: int) -> None:
    reach = raw_mcp_http("--answer-file", answer_file(b"<html>" + SENTENCE.encode() + b"</html>"),
                        "--call-status", str(status))
    code, output, seconds = probe_mcp(f"mcp.url={reach}")
    held_to_the_rules(code, output, seconds)
    assert code == 2


@pytest.mark.parametrize(("name", "arguments", "says"), [
    ("an answer, then the server exits before its newline", ["--exit-after-call"], "exited"),
    ("half an answer, then the server exits", ["--exit-after-call", "--half"], "exited"),
    ("an answer a byte every 0.1 s", ["--trickle", "0.1", "--exit-at-eof"], f"no answer within {SHORT_TIMEOUT} s"),
])
def test_a_server_that_dies_or_dawdles_mid_answer_is_named(answer_file, name: str, arguments: list[str],
                                                           says: str) -> None:
    answer = _text("id: m1 score: 0.9")  # about 100 bytes: 10 s at a byte every 0.1 s
    # A server that dawdles is waited for a short while; one that exits, the time to notice it.
    timeout = SHORT_TIMEOUT if "--trickle" in arguments else "3"
    if "--half" in arguments:
        arguments, answer = ["--exit-after-call"], answer[: len(answer) // 2]
    code, output, seconds = probe_mcp(stdio("--answer-file", answer_file(answer), *arguments), timeout=timeout)
    held_to_the_rules(code, output, seconds)
    assert code == 2 and says in output, output


COMMANDS = [
    f"{sys.executable} -c 'import sys; sys.exit(3)' --api-key sk-cmd-secret",
    "recall-kit-no-such-program --token=sk-cmd-secret",
    "env API_KEY=sk-cmd-secret false",
    f"{sys.executable} -c 'print(1)' --password 'sk-cmd-secret'",
    "'unclosed quote --api-key sk-cmd-secret",
    "",
    "   ",
    "/",
    "/dev/null",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_that_cannot_serve_is_one_line_without_its_secrets(command: str) -> None:
    code, output, seconds = probe_mcp(f"mcp.command={command}")
    held_to_the_rules(code, output, seconds)
    assert code == 2


OPTIONS = [
    ["-o", "mcp.connect_timeout=inf"], ["-o", "mcp.connect_timeout=nan"], ["-o", "mcp.connect_timeout=0"],
    ["-o", "mcp.timeout=inf"], ["-o", "mcp.timeout=nan"], ["-o", "mcp.arguments=[1]"], ["-o", "mcp.arguments={x"],
    ["-o", "mcp.search_arguments={\"q\": \"{nope}\"}"], ["-o", "mcp.url=file:///etc/passwd"],
    ["-o", f"mcp.url=http://alice:{PASSWORD}@127.0.0.1:9/mcp"], ["-o", "mcp.tool="], ["-o", "mcp.query_arg="],
    ["-o", "mcp.tool=nope"], ["-o", "mcp.id_pattern=("],
]


@pytest.mark.parametrize("flags", OPTIONS, ids=lambda flags: " ".join(flags))
def test_a_bad_mcp_option_is_one_line(flags: list[str]) -> None:
    code, output, seconds = probe_mcp(stdio("--tools", "40"), *flags)
    held_to_the_rules(code, output, seconds)
    assert code == 2, output


def _interrupted(argv: list[str], pid_file: Path | None, after: float, again: float | None = None) -> tuple[int, str]:
    """Run recall-kit, Ctrl-C it `after` seconds past the server's start (once it wrote `pid_file`),
    and again `again` seconds later; its exit status and stderr."""
    environment = dict(os.environ, RECALL_KIT_LOAD_PLUGINS="recall-kit-remote")
    process = subprocess.Popen([sys.executable, "-m", "recall_kit", *argv], cwd=ROOT, env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while pid_file is not None and not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(after)
    process.send_signal(signal.SIGINT)
    if again is not None:
        time.sleep(again)
        process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    return process.returncode, err


#: Seconds between two bytes of a slow server's answer: longer than the 5 s a stdio server is
#: given to end, so one that is not ended does not die of its next write to a closed pipe instead.
TRICKLE = "30"


@pytest.mark.parametrize("where", ["stdio call", "stdio connect", "http call", "stdio call, Ctrl-C twice"])
def test_ctrl_c_while_a_server_holds_the_probe_exits_130_and_ends_the_server(answer_file, raw_mcp_http, tmp_path: Path,
                                                                             where: str) -> None:
    """Twice: the second Ctrl-C lands while the SDK gives the server its 2 s to end; before, the
    probe then exited at once and left the server running. (Before, too, every case started an
    HTTP server writing the same pid file: a stdio server not yet started when the Ctrl-C came
    left that one's pid, alive until the test's end, and the test failed on it.)"""
    pid_file = tmp_path / "server.pid"
    slow = ["--answer-file", answer_file(_text("id: m1")), "--trickle", TRICKLE, "--pid-file", str(pid_file)]
    if where == "http call":
        reach = f"mcp.url={raw_mcp_http(*slow)}"
    elif where == "stdio connect":  # a tools/list that never ends: the server trickles it
        reach = stdio("--list-mib", "1", "--trickle", TRICKLE, "--pid-file", str(pid_file), "--slow-list")
    else:
        reach = stdio(*slow)
    code, err = _interrupted(["remote", "probe", "mcp", "--query", "coffee", "-o", reach, "-o", "mcp.tool=search",
                              "-o", "mcp.timeout=60"], pid_file, after=1.0, again=0.5 if "twice" in where else None)
    assert code == 130 and "Traceback" not in err and err.count("\n") == 1, (code, err)
    if where.startswith("stdio"):
        status = Path(f"/proc/{int(pid_file.read_text())}/status")
        deadline = time.monotonic() + 5
        while status.exists() and "zombie" not in status.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not status.exists() or "zombie" in status.read_text(), status.read_text()  # ended (a zombie awaits init)


@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse"])
def test_an_mcp_url_s_secrets_are_never_printed(raw_mcp_http, sse: bool) -> None:
    reach = raw_mcp_http(*(["--sse"] if sse else [])).replace("http://", f"http://alice:{PASSWORD}@")
    code, output, seconds = probe_mcp(f"mcp.url={reach}?api_key={API_KEY}")
    held_to_the_rules(code, output, seconds)
    assert code == 0 and "MCP server http://alice:***@127.0.0.1:" in output and "api_key=***" in output, output


def test_a_tools_list_that_pages_forever_is_given_up() -> None:
    """Empty pages, each with a cursor to the next: the listing is given up (a cursor seen twice),
    and the probe carries on with its call."""
    code, output, seconds = probe_mcp(stdio("--endless-pages"))
    held_to_the_rules(code, output, seconds, bound=15)
    assert code == 0 and "options: " in output, output
