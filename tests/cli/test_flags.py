"""Every flag offered is one that works, and one spelling each: --report trec_eval only where it
renders, `-c` one meaning, --resamples everywhere; empty metric names refused; a closed pipe is not
a bad verdict; an interrupt tells the truth about what is on disk; errors name what the user gave."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import write_dataset
from typer.testing import CliRunner

from recall_kit.cli import get_app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "memories"


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(get_app(), list(args))


def one_line(result) -> str:  # type: ignore[no-untyped-def]
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("command", [
    ["eval", "-d", "DATA", "-r", "fts5"],
    ["ablate", "-d", "DATA", "-r", "fts5+bm25", "--out-dir", "OUT"],
    ["sweep", "-d", "DATA", "-r", "fts5+bm25", "--grid", "bm25=0.5,1", "-t", "recall@5", "--out-dir", "OUT"],
    ["compare", "a.json", "b.json"],
    ["gate", "--accepted", "a.json", "--current", "b.json"],
    ["pool", "a.json", "--out", "OUT"],
])
def test_report_trec_eval_is_refused_before_anything_runs_where_it_does_not_render(
    tmp_path: Path, command: list[str]
) -> None:
    data = write_dataset(tmp_path / "data")
    out = tmp_path / "out"
    args = [str(data) if a == "DATA" else str(out) if a == "OUT" else a for a in command]
    line = one_line(invoke(args[0], "--report", "trec_eval", *args[1:]))
    assert line == (f"Error: --report trec_eval renders score's reports, not {args[0]}'s: "
                    "use csv, html, json, latex, markdown, table.")
    assert not out.exists()  # ablate once wrote its results, then refused the format


def test_only_the_reporters_that_render_a_command_are_offered() -> None:
    for command in ("ablate", "eval", "pool"):
        shown = " ".join(invoke(command, "--help").output.split())
        assert "Available: csv, html, json, latex, markdown, table." in shown
    assert "Available: csv, html, json, latex, markdown, table, trec_eval." in " ".join(
        invoke("score", "--help").output.split())


def test_dash_c_is_config_everywhere_and_completes_only_as_a_hidden_alias_in_score(tmp_path: Path) -> None:
    shown = " ".join(invoke("score", "--help").output.split())
    assert "--complete Average" in shown and "-c," not in shown
    for command in ("eval", "ablate", "sweep"):
        assert "-c, --config PATH" in " ".join(invoke(command, "--help").output.split())
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 1.0 r\n")
    for spelling in ("-c", "--complete"):  # trec_eval's -c still works
        result = invoke("score", "--qrels", str(tmp_path / "qrels.txt"), "--run", str(tmp_path / "run.txt"),
                        spelling, "-m", "recip_rank", "--report", "trec_eval")
        assert result.exit_code == 0 and result.output.split() == ["recip_rank", "all", "1.0000"]


@pytest.mark.parametrize("command", ["score", "compare", "gate", "ablate", "sweep", "agreement"])
def test_resamples_have_one_spelling_in_every_command(command: str) -> None:
    shown = invoke(command, "--help").output
    assert "--resamples" in shown and "--bootstrap" not in shown and "--samples" not in shown


def test_agreement_takes_the_old_spelling_still(tmp_path: Path) -> None:
    row = json.dumps({"query_id": "q1", "relevance": {"1": 3, "2": 0, "3": 1}}) + "\n"
    (tmp_path / "a.jsonl").write_text(row)
    (tmp_path / "b.jsonl").write_text(row)
    new = invoke("agreement", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--resamples", "0")
    old = invoke("agreement", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--samples", "0")
    assert new.exit_code == old.exit_code == 0 and new.stdout == old.stdout
    assert old.stderr == "recall-kit: agreement --samples is now --resamples (the old spelling goes in the next release).\n"


def test_agreement_checks_its_output_before_it_runs(tmp_path: Path) -> None:
    """As the user guide promises of every output: before, --json a.jsonl replaced judge A's file."""
    row = json.dumps({"query_id": "q1", "relevance": {"1": 3, "2": 0, "3": 1}}) + "\n"
    (tmp_path / "a.jsonl").write_text(row)
    (tmp_path / "b.jsonl").write_text(row)
    line = one_line(invoke("agreement", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--resamples", "0",
                           "--json", str(tmp_path / "a.jsonl")))
    assert "--json" in line and (tmp_path / "a.jsonl").read_text() == row


@pytest.mark.parametrize("flag", [["--metrics", "recall@10,,mrr"], ["--metrics", "recall@10,"], ["--primary", ",mrr"]])
def test_an_empty_metric_name_is_refused_with_one_line(tmp_path: Path, flag: list[str]) -> None:
    data = write_dataset(tmp_path / "data")
    out = tmp_path / "out"
    line = one_line(invoke("ablate", "-d", str(data), "-r", "fts5+bm25", "--out-dir", str(out), *flag,
                           "--latency-sample", "0"))
    assert f"{flag[0]} {flag[1]!r} holds an empty metric name" in line
    assert not out.exists()


def test_a_closed_pipe_is_not_a_bad_verdict() -> None:
    """`recall-kit dataset lint DIR | head`: exit 1 read "lint found problems"; now 141, as a
    Unix tool killed by SIGPIPE, and nothing on stderr."""
    process = subprocess.Popen([sys.executable, "-m", "recall_kit", "dataset", "lint", str(EXAMPLE)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before the first line
    stderr = process.stderr.read()
    assert process.wait(timeout=120) == 128 + signal.SIGPIPE
    assert stderr == b""


def test_ctrl_c_in_judge_names_its_journal_and_what_was_written(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "data")
    queries = [json.loads(line) for line in (data / "queries.jsonl").read_text().splitlines()]
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").read_text().splitlines()]
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"query_id": queries[0]["query_id"], "doc_ids": [row["id"] for row in corpus]}) + "\n")
    out = tmp_path / "grades.jsonl"
    journal = tmp_path / "grades.jsonl.journal"
    process = subprocess.Popen([sys.executable, "-m", "recall_kit", "judge", str(pool), "-d", str(data),
                                "--output", str(out)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert process.stdin is not None and process.stderr is not None
    process.stdin.write(b"2\n")
    process.stdin.flush()
    deadline = time.monotonic() + 60
    while not (journal.is_file() and journal.read_text().strip() and out.is_file()):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.1)
    time.sleep(0.3)  # at the next question
    process.send_signal(signal.SIGINT)
    try:
        stderr = process.communicate(timeout=60)[1].decode()
    finally:
        process.kill()  # a child that never saw the Ctrl-C fails the test instead of hanging it
    assert process.returncode == 130
    assert (f"Interrupted: outputs not yet finished were not written; kept in {journal}: every grade given so "
            f"far (run the same command to go on); written before the interrupt: {out}.") in stderr
    assert "no partial files are left" not in stderr


def test_a_full_disk_names_the_file_being_written_not_its_source(tmp_path: Path) -> None:
    import shutil

    from recall_kit.cli import _describe_os_error

    full = tmp_path / "full"
    full.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(full)], capture_output=True).returncode:
        pytest.skip("needs a small tmpfs (mount) for a real full disk")
    try:
        source = tmp_path / "c.jsonl"
        source.write_text("x" * 300_000)
        with pytest.raises(OSError) as raised:
            shutil.copyfile(source, full / "corpus.jsonl")  # the study's copies of the user's files
        assert _describe_os_error(raised.value) == f"{full / 'corpus.jsonl'}: No space left on device."
    finally:
        subprocess.run(["umount", str(full)], check=False)


def test_a_module_object_that_is_not_a_retriever_names_the_spec(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "data")
    line = one_line(invoke("eval", "-d", str(data), "-r", "math:pi", "--latency-sample", "0"))
    assert line.startswith("Error: Retriever 'math:pi' is 3.141592653589793, which is not a retriever")
