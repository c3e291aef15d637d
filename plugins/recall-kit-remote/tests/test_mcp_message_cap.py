"""The cap on one message from an MCP server (`mcp.max_bytes`, 8 MiB by default), against a
hand-written server (systems/raw_mcp_server.py) that sends one message of hundreds of MiB, over
stdio, streamable HTTP with a JSON body and with an SSE event. Before the cap the SDK read the
message whole and then parsed it: a tools/list of 200,000 tools (11 MiB) took 761 MiB and 4.6 s
in the probe, one of 100 MiB 6.2 GB and no answer in 76 s (its line buffer grows by copying).
A gzip member that inflates to 1,000 MiB took 3 GB (httpx inflated it whole).
Measured here: the probe's own peak RSS (not the server's), in a process limited to 1.5 GiB of
address space, so that the unfixed probe fails without taking the machine's memory."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from remote_helpers import ROOT, SYSTEMS

RAW_SERVER = SYSTEMS / "raw_mcp_server.py"
#: recall-kit in this process, its peak RSS (MiB) printed last on stderr.
#: VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss across exec, so a child of a pytest
#: worker that had grown to 8 GB reported 8 GB.
MEASURED = ("import atexit, re, runpy, sys\n"
            "hwm = lambda: int(re.search(r'VmHWM:\\s*(\\d+)', open('/proc/self/status').read()).group(1)) // 1024\n"
            "atexit.register(lambda: print(f'PEAK_RSS_MIB {hwm()}', file=sys.stderr))\n"
            "sys.argv = ['recall-kit', *sys.argv[1:]]\n"
            "runpy.run_module('recall_kit', run_name='__main__')\n")
ADDRESS_SPACE = 1536 << 20


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def probe_measured(*options: str) -> tuple[int, str, str, int, float]:
    """`recall-kit remote probe mcp` as a real process: exit status, stdout, stderr (without the
    measurement), peak RSS in MiB, seconds."""
    environment = dict(os.environ, RECALL_KIT_LOAD_PLUGINS="recall-kit-remote")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", MEASURED, "remote", "probe", "mcp", "--query", "coffee",
                           "-o", "mcp.tool=search", "-o", "mcp.connect_timeout=20", "-o", "mcp.timeout=20", *options],
                          cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120, check=False,
                          preexec_fn=_limited)  # noqa: PLW1509 - no threads in the test process need it
    seconds = time.monotonic() - started
    lines = done.stderr.splitlines()
    peak = int(lines[-1].split()[-1]) if lines and lines[-1].startswith("PEAK_RSS_MIB") else -1
    return done.returncode, done.stdout, "".join(line + "\n" for line in lines[:-1]), peak, seconds


@pytest.fixture()
def raw_server(raw_mcp_http: Callable[..., str]) -> Callable[..., str]:
    """Start the hand-written server with these arguments: the `-o` option that reaches it
    (stdio: its command line; "http"/"sse" first: over streamable HTTP on a free port)."""

    def start(transport: str, *arguments: str) -> str:
        if transport == "stdio":  # a server that exits when its input closes: no 2 s wait for SIGTERM
            return f"mcp.command={sys.executable} {RAW_SERVER} --exit-at-eof {' '.join(arguments)}"
        return "mcp.url=" + raw_mcp_http(*(["--sse"] if transport == "sse" else []), *arguments)

    return start


TRANSPORTS = ["stdio", "http", "sse"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_tools_list_of_300_mib_is_refused_before_it_is_read_whole(raw_server, transport: str) -> None:
    """Before: over stdio the probe ran out of its 1.5 GiB and failed at connect_timeout; over
    HTTP it read the 300 MiB body whole (out of memory)."""
    code, out, err, peak, seconds = probe_measured("-o", raw_server(transport, "--list-mib", "300"))
    assert code == 2 and err.count("\n") == 1, err
    assert err.endswith("the MCP server's tools/list answer exceeds 8 MiB (mcp.max_bytes).\n"), err
    assert "unexpected" not in err and "Traceback" not in err
    assert peak < 250, f"peak RSS {peak} MiB"  # measured: 84-86 MiB; a probe of a normal server: 70-74 MiB
    assert seconds < 30


def test_two_hundred_thousand_tools_in_one_message_are_refused_in_bounded_memory(raw_server) -> None:
    """Before: exit 0 after 4.6 s with a peak of 761 MiB (1.68 GB and 20.8 s with descriptions)."""
    code, _, err, peak, _ = probe_measured("-o", raw_server("stdio", "--tools", "200000"))
    assert code == 2 and "the MCP server's tools/list answer exceeds 8 MiB (mcp.max_bytes)" in err, err
    assert peak < 250, f"peak RSS {peak} MiB"


@pytest.mark.parametrize(("transport", "says"), [
    ("stdio", "an answer exceeds 8 MiB (mcp.max_bytes); the session ended."),
    ("http", "the search failed: the answer exceeds 8 MiB (mcp.max_bytes)."),
    ("sse", "the search failed: the answer exceeds 8 MiB (mcp.max_bytes)."),
])
def test_a_search_answer_of_300_mib_fails_the_search_in_bounded_memory(raw_server, transport: str, says: str) -> None:
    code, _, err, peak, seconds = probe_measured("-o", raw_server(transport, "--call-mib", "300"))
    assert code == 2 and err.count("\n") == 1 and err.endswith(says + "\n"), err
    assert peak < 250 and seconds < 30, (peak, seconds)


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_a_gzip_bomb_is_cut_off_while_it_is_inflated(raw_server, transport: str) -> None:
    """A 1 MB gzip member that inflates to 1,000 MiB. Before: the cap counted the bytes as sent,
    and httpx inflated the body whole (3 GB of memory; out of its address space here)."""
    code, _, err, peak, seconds = probe_measured("-o", raw_server(transport, "--gzip-bomb-mib", "1000"))
    assert code == 2 and err.endswith("the search failed: the answer exceeds 8 MiB (mcp.max_bytes).\n"), err
    assert peak < 250 and seconds < 30, (peak, seconds)  # measured: 90 MiB


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_messages_within_the_cap_are_read_and_the_cap_is_an_option(raw_server, transport: str) -> None:
    from recall_kit.testing import invoke_cli

    reach = raw_server(transport)
    probe = ["remote", "probe", "mcp", "--query", "coffee", "-o", reach, "-o", "mcp.tool=search"]
    done = invoke_cli([*probe, "-o", "mcp.max_bytes=1000"], plugin_commands=True)
    assert done.exit_code == 0 and "options: -o mcp.results=results -o mcp.id=id" in done.output, done.output
    done = invoke_cli([*probe, "-o", "mcp.max_bytes=100"], plugin_commands=True)  # initialize's answer is longer
    assert done.exit_code == 2, done.output
    assert done.output.endswith("the MCP server's initialize answer exceeds 100 bytes (mcp.max_bytes).\n"), done.output


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5"])
def test_a_cap_that_is_no_byte_count_is_one_line(value: str) -> None:
    from recall_kit.testing import invoke_cli

    done = invoke_cli(["remote", "probe", "mcp", "--query", "x", "-o", "mcp.command=true",
                       "-o", f"mcp.max_bytes={value}"], plugin_commands=True)
    assert done.exit_code == 2 and done.output.count("\n") == 1 and "max_bytes" in done.output, done.output
