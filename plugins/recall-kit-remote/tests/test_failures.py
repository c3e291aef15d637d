"""A live system that fails never yields a result (issue 37): real servers (the MCP test server over
stdio, the HTTP search endpoint) crash, hang, close mid-answer or answer garbage; recall-kit exits 2
with one line and no result file, unless --max-failed accepts the failures, and then the result
records them and compare and gate refuse it. Also: every process recall-kit starts is ended, and
the http body and timeout are bounded."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from http_server import SearchServer
from memory_store import MemoryStore
from remote_helpers import SERVERS, dataset_with, mcp_command, run_cli

from recall_kit import load_result


def _query_ids(folder: Path) -> list[str]:
    return [json.loads(line)["query_id"] for line in (folder / "queries.jsonl").read_text().splitlines()]


def _refused(result, out: Path, leg: str) -> str:  # type: ignore[no-untyped-def]
    """The run ended as a failed live system must: exit 2, one line naming the leg, no file."""
    assert result.returncode == 2, result.stderr
    line = result.stderr.strip()
    assert "\n" not in line, line
    assert f"Leg {leg!r} failed on" in line and "no result was written" in line
    assert not out.exists()
    return line


@pytest.mark.parametrize("crash_on_call", [1, 3])
def test_an_mcp_server_that_dies_mid_run_yields_no_result(tmp_path: Path, sample_folder: Path,
                                                          crash_on_call: int) -> None:
    """Before: exit 0 and a result of zeros (dead from the first call) or 2 answers and 4 zeros;
    then "closed during the run" or an MCPError per query. Now one line with its exit status."""
    out = tmp_path / "dead.json"
    command = mcp_command("--dataset", str(sample_folder), "--crash-on-call", str(crash_on_call))
    result = run_cli("eval", "--dataset", str(sample_folder), "-r", "mcp", "-o", f"mcp.command={command}",
                     "-o", "mcp.timeout=5", "-o", "mcp.tries=1", "--latency-sample", "0", "--no-progress", "--json", str(out))
    assert result.returncode == 2
    assert "\n" not in result.stderr.strip() and "the server exited (status 1) during the run" in result.stderr
    assert not out.exists()


def test_a_dead_stdio_server_ends_a_120_query_run_at_once(tmp_path: Path) -> None:
    """The example's 120 queries against a server that dies on its first search: one line naming
    the exit status, in seconds (before: 3 tries a query and the timing pass, 56 s, `MCPError`)."""
    from remote_helpers import EXAMPLE

    out, stamp = tmp_path / "dead.json", tmp_path / "died-at"
    command = mcp_command("--dataset", str(EXAMPLE), "--crash-on-call", "1", "--crash-stamp", str(stamp))
    result = run_cli("eval", "--dataset", str(EXAMPLE), "-r", "mcp", "-o", f"mcp.command={command}",
                     "--no-progress", "--json", str(out))
    ended = time.time()
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "the server exited (status 1)" in result.stderr
    after = ended - float(stamp.read_text())  # the server's start (its imports, its store) comes before
    assert after < 5, after
    assert not out.exists()


def test_a_wrong_answer_path_stops_after_three_queries(tmp_path: Path) -> None:
    """A format error is the same on every query: the run stops after three alike, naming the
    probe, instead of trying each of 120 queries three times (360 calls)."""
    from remote_helpers import EXAMPLE

    started = time.perf_counter()
    result = run_cli("eval", "--dataset", str(EXAMPLE), "-r", "mcp", "-o", f"mcp.url={SERVERS['mcp_sample']}",
                     "-o", "mcp.results=hits", "--latency-sample", "0", "--no-progress")
    assert result.returncode == 2
    line = result.stderr.strip()
    assert "\n" not in line and "3 answers in a row could not be read" in line and "the answer has no 'hits'" in line
    assert time.perf_counter() - started < 60


#: The faults each live system's test server can be told to have on one query, and how long a
#: call may take there ("slow" answers after 2 s; "hangforever" never).
FAULTS = [*(("mcp", fault, "8") for fault in ("hangforever", "nanscore", "schemalie", "toolerror")),
          *(("http", fault, "1.8") for fault in ("status500", "notjson", "closemid", "nanscore", "badid", "slow"))]


@pytest.mark.parametrize(("leg", "fault", "timeout"), FAULTS)
def test_a_live_system_that_fails_on_one_query_yields_no_result(tmp_path: Path, sample_folder: Path, leg: str,
                                                               fault: str, timeout: str) -> None:
    """Before: exit 0, and a result with that query scored as a miss."""
    folder = dataset_with(tmp_path, sample_folder, {2: fault})
    out = tmp_path / "one.json"
    result = run_cli("eval", "--dataset", str(folder), "-r", leg, "-o", f"{leg}.url={SERVERS[leg + '_sample']}",
                     "-o", f"{leg}.timeout={timeout}", "-o", f"{leg}.tries=1", "--latency-sample", "0", "--no-progress",
                     "--json", str(out))
    line = _refused(result, out, leg)
    assert f"failed on 1 of 6 queries ({_query_ids(folder)[2]}: " in line
    assert "boom" not in line and "the tool failed" not in line  # what the server said stays unprinted


def test_max_failed_accepts_records_and_compare_and_gate_refuse(tmp_path: Path, sample_folder: Path) -> None:
    folder = dataset_with(tmp_path, sample_folder, {0: "status500", 4: "notjson"})
    ids = _query_ids(folder)
    arguments = ["eval", "--dataset", str(folder), "-r", "http", "-o", f"http.url={SERVERS['http_sample']}",
                 "-o", "http.tries=1", "--latency-sample", "0", "--no-progress"]
    # One accepted, two failed: still no result. A share of a third (2 of 6) accepts both.
    _refused(run_cli(*arguments, "--max-failed", "1", "--json", str(tmp_path / "no.json")), tmp_path / "no.json", "http")
    out = tmp_path / "accepted.json"
    result = run_cli(*arguments, "--max-failed", "34%", "--json", str(out))
    assert result.returncode == 0, result.stderr
    accepted = load_result(out)
    assert accepted.failed_queries == {"http": {ids[0]: "HTTP 500; 1 try",
                                                ids[4]: "the answer is not valid JSON (http.id_pattern reads text); not retried"}}
    assert accepted.n_failed == 2
    whole = tmp_path / "whole.json"
    assert run_cli("eval", "--dataset", str(folder), "-r", "fts5", "--latency-sample", "0", "--no-progress", "--json",
                   str(whole)).returncode == 0
    for command in (["compare", str(whole), str(out)], ["gate", "--accepted", str(out), "--current", str(whole)]):
        refused = run_cli(*command)
        assert refused.returncode == 2, refused.stderr
        assert "\n" not in refused.stderr.strip() and "2 queries failed on leg http" in refused.stderr


def test_max_failed_that_is_not_a_count_or_share_is_one_line(sample_folder: Path) -> None:
    for bad in ("-1", "x", "150%", "nan%"):
        result = run_cli("eval", "--dataset", str(sample_folder), "-r", "fts5", "--max-failed", bad)
        assert result.returncode == 2 and "\n" not in result.stderr.strip() and "--max-failed" in result.stderr


def test_ablate_and_sweep_refuse_a_failing_leg_and_keep_no_failed_checkpoint(tmp_path: Path, sample_folder: Path) -> None:
    folder = dataset_with(tmp_path, sample_folder, {3: "status500"})
    with SearchServer(MemoryStore.from_dataset(str(sample_folder)), faults=True) as server:
        legs = ["--dataset", str(folder), "-r", "fts5+http", "--fusion", "rrf", "-o", f"http.url={server.url}",
                "-o", "http.tries=1", "--latency-sample", "0", "--no-progress", "--resamples", "100"]
        ablation = run_cli("ablate", *legs, "--out-dir", str(tmp_path / "ab"))
        _refused(ablation, tmp_path / "ab" / "ablation.json", "http")
        sweep = run_cli("sweep", *legs, "-g", "fts5=0.5,1", "-t", "ndcg@10", "--out-dir", str(tmp_path / "sw"))
        _refused(sweep, tmp_path / "sw" / "sweep.json", "http")
        asked = len(server.requests_seen)
        accepted = run_cli("ablate", *legs, "--out-dir", str(tmp_path / "ab"), "--max-failed", "1", "--brief")
        # The refused run's http search was not kept for the rerun: every query is asked again.
        assert len(server.requests_seen) - asked == 6
    assert accepted.returncode == 0, accepted.stderr
    assert "FAILED QUERIES" in accepted.stdout


def test_unknown_mcp_tool_is_named_with_the_available_ones(tmp_path: Path, sample_folder: Path) -> None:
    """Before: every query failed in turn (tries x queries calls), then a result of zeros."""
    out = tmp_path / "nope.json"
    result = run_cli("eval", "--dataset", str(sample_folder), "-r", "mcp", "-o", f"mcp.url={SERVERS['mcp_sample']}",
                     "-o", "mcp.tool=nope", "--json", str(out))
    assert result.returncode == 2, result.stderr
    line = result.stderr.strip()
    assert "\n" not in line and "'nope'" in line and "add, recall, recall_text" in line
    assert not out.exists()


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie whose parent has not reaped it yet is gone in all but name.
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "zombie" in status.read_text()


def _assert_ended(pid: int) -> None:
    """The process `pid` is gone within 5 s (killed here if not, so no test leaves it behind)."""
    try:
        deadline = time.monotonic() + 5
        while not _gone(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _gone(pid), f"the MCP server {pid} outlived recall-kit"
    finally:
        if not _gone(pid):
            os.kill(pid, 9)


def test_an_mcp_server_hanging_at_initialize_is_ended(tmp_path: Path, sample_folder: Path) -> None:
    """Before: recall-kit gave up after the connect timeout and left the server running (it
    ignores SIGTERM, as a hung server may)."""
    pid_file = tmp_path / "server.pid"
    command = mcp_command("--hang-at-initialize", "--pid-file", str(pid_file))
    started = time.monotonic()
    # The server writes its pid file in about 0.3 s on a busy machine (the SDK is imported before
    # the connect timeout starts), and has 2 s more before the SDK's SIGTERM, which it ignores.
    result = run_cli("eval", "--dataset", str(sample_folder), "-r", "mcp", "-o", f"mcp.command={command}",
                     "-o", "mcp.connect_timeout=2")
    assert result.returncode == 2, result.stderr
    assert "\n" not in result.stderr.strip() and "Cannot connect" in result.stderr
    assert time.monotonic() - started < 60
    _assert_ended(int(pid_file.read_text()))


@pytest.mark.parametrize("where", ["garbage", "not-mcp"])
def test_sdk_validation_errors_are_one_line(tmp_path: Path, sample_folder: Path, where: str) -> None:
    """Before: the mcp SDK's pydantic errors (43 lines) reached stderr."""
    if where == "garbage":
        target = f"mcp.command={mcp_command('--dataset', str(sample_folder), '--garbage-on-stdout')}"
    else:
        target = f"mcp.url={SERVERS['http_sample']}"  # a JSON search endpoint, not an MCP server
    out = tmp_path / "x.json"
    result = run_cli("eval", "--dataset", str(sample_folder), "-r", "mcp", "-o", target,
                     "-o", "mcp.timeout=2", "-o", "mcp.tries=1", "--no-progress", "--json", str(out))
    assert "validation error" not in result.stderr and "Traceback" not in result.stderr
    if result.returncode == 0:
        assert result.stderr.strip() == f"Wrote {out}"
    else:
        assert result.returncode == 2 and not out.exists()
        assert "\n" not in result.stderr.strip(), result.stderr


def test_http_body_is_capped(tmp_path: Path, sample_folder: Path) -> None:
    """Before: an endless chunked body was read into memory until the kernel stepped in."""
    folder = dataset_with(tmp_path, sample_folder, {0: "endless"})
    started = time.monotonic()
    result = run_cli("eval", "--dataset", str(folder), "-r", "http", "-o", f"http.url={SERVERS['http_sample']}",
                     "-o", "http.tries=1", "-o", "http.timeout=60", "-o", "http.max_bytes=1000000",
                     "--latency-sample", "0", "--no-progress", "--json", str(tmp_path / "x.json"))
    line = _refused(result, tmp_path / "x.json", "http")
    assert "larger than http.max_bytes (1000000)" in line
    assert time.monotonic() - started < 50


def test_http_timeout_is_a_deadline_for_the_whole_request(tmp_path: Path, sample_folder: Path) -> None:
    """Before: a byte every 0.5 s reset a per-read timeout, so 2 s held for as long as the server liked."""
    with SearchServer(MemoryStore.from_dataset(str(sample_folder)), faults=True) as server:
        folder = dataset_with(tmp_path, sample_folder, {0: "trickle"})
        started = time.monotonic()
        result = run_cli("eval", "--dataset", str(folder), "-r", "http", "-o", f"http.url={server.url}",
                         "-o", "http.tries=1", "-o", "http.timeout=2", "--latency-sample", "0", "--no-progress",
                         "--json", str(tmp_path / "x.json"))
        took = time.monotonic() - started
    line = _refused(result, tmp_path / "x.json", "http")
    assert "no answer within 2 s" in line
    assert took < 25, took


def test_sigterm_mid_run_ends_the_mcp_server(tmp_path: Path, sample_folder: Path) -> None:
    """Every process recall-kit starts is ended when it stops: here, SIGTERM while a stdio server's
    tool hangs."""
    import signal
    import subprocess
    import sys

    from remote_helpers import ROOT

    folder = dataset_with(tmp_path, sample_folder, {0: "hangforever"})
    pid_file, hanging = tmp_path / "server.pid", tmp_path / "hanging"
    command = mcp_command("--dataset", str(folder), "--pid-file", str(pid_file), "--faults", "--hang-stamp", str(hanging))
    environment = dict(os.environ, RECALL_KIT_LOAD_PLUGINS="recall-kit-remote,recall-kit-fts5")
    process = subprocess.Popen([sys.executable, "-m", "recall_kit", "eval", "--dataset", str(folder), "-r", "mcp",
                                "-o", f"mcp.command={command}", "-o", "mcp.timeout=120", "--no-progress",
                                "--json", str(tmp_path / "x.json")], cwd=ROOT, env=environment,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not hanging.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)  # until the server is up and the hanging call made (it writes `hanging` then)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 143, stderr
    _assert_ended(int(pid_file.read_text()))
    assert not (tmp_path / "x.json").exists()
