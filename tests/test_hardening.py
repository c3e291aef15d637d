"""The adversarial cases of issue 32 (the second hardening pass): each one failed before its fix.
Grouped as the issue groups them, worst first; see docs/reliability.md."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import threading
from pathlib import Path

import pytest
from helpers import write_dataset
from typer.testing import CliRunner

from recall_kit import load_result
from recall_kit.cli import get_app
from recall_kit.fileio import atomic_batch, atomic_open, check_outputs, write_text_atomic

runner = CliRunner()


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(get_app(), list(args))


# Data loss: writing over special files -----------------------------------------------------------

def test_a_named_pipe_is_written_through_not_replaced(tmp_path):
    pipe = tmp_path / "out.fifo"
    os.mkfifo(pipe)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()))
    reader.start()
    check_outputs({"--json": pipe})
    write_text_atomic(pipe, '{"a": 1}\n')
    reader.join(timeout=10)
    assert received == [b'{"a": 1}\n']
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)  # still a pipe, not a regular file
    assert sorted(os.listdir(tmp_path)) == ["out.fifo"]


def test_dev_null_stays_a_device():
    before = os.stat("/dev/null")
    check_outputs({"--json": "/dev/null", "--run": "/dev/null"})  # both to /dev/null is fine
    with atomic_batch():
        write_text_atomic("/dev/null", "{}")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino


def test_a_symlink_is_followed_to_its_target(tmp_path):
    target = tmp_path / "real" / "result.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    check_outputs({"--json": link})
    write_text_atomic(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new"


def test_dash_writes_to_stdout(capsys):
    with atomic_open("-") as stream:
        stream.write("to stdout\n")
    assert capsys.readouterr().out == "to stdout\n"


# Data loss: --force deleting the inputs ----------------------------------------------------------

def _beir(folder: Path) -> Path:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "text": "kestrel stores events"}) + "\n")
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "kestrel events"}) + "\n")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return folder


@pytest.mark.parametrize("out", ["same", "parent"])
def test_import_force_never_deletes_its_source(tmp_path, out):
    source = _beir(tmp_path / "data" / "beir")
    before = sorted(p.name for p in source.rglob("*"))
    target = source if out == "same" else source.parent
    result = invoke("dataset", "import", "beir", str(source), str(target), "--force")
    assert result.exit_code == 2, result.output
    assert "input" in result.output
    assert sorted(p.name for p in source.rglob("*")) == before


def test_import_sqlite_force_on_the_folder_of_the_database(tmp_path):
    import sqlite3

    database = tmp_path / "store" / "memories.db"
    database.parent.mkdir()
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE memories (id INTEGER, content TEXT)")
    (database.parent / "notes.txt").write_text("keep")
    result = invoke("dataset", "import", "sqlite", str(database), str(database.parent), "--force")
    assert result.exit_code == 2 and "holds the input" in result.output
    assert database.is_file()


@pytest.mark.parametrize("out", ["same", "parent"])
def test_export_force_never_deletes_the_dataset(tmp_path, out):
    folder = write_dataset(tmp_path / "sets" / "tiny")
    target = folder if out == "same" else folder.parent
    result = invoke("dataset", "export", str(folder), str(target), "--force")
    assert result.exit_code == 2, result.output
    assert (folder / "corpus.jsonl").is_file()


def test_synth_force_never_empties_a_folder_of_datasets(tmp_path):
    write_dataset(tmp_path / "sets" / "tiny")
    result = invoke("dataset", "synth", str(tmp_path / "sets"), "--memories", "30", "--queries", "6", "--force")
    assert result.exit_code == 2 and "holds another dataset" in result.output
    assert (tmp_path / "sets" / "tiny" / "corpus.jsonl").is_file()
    # --force still replaces a dataset folder itself
    result = invoke("dataset", "synth", str(tmp_path / "sets" / "tiny"), "--memories", "30", "--queries", "6", "--force")
    assert result.exit_code == 0, result.output


# Data loss: several outputs of one command, all or nothing ----------------------------------------

def test_a_signal_between_two_moves_waits_until_both_are_in_place(tmp_path, monkeypatch):
    import signal

    real_replace = os.replace
    moves: list[str] = []

    def replace_then_interrupt(source, target):  # type: ignore[no-untyped-def]
        real_replace(source, target)
        moves.append(str(target))
        if len(moves) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C right after the first move

    monkeypatch.setattr(os, "replace", replace_then_interrupt)
    # Ctrl-C as a terminal delivers it, even where this run was started with SIGINT ignored (`cmd &`).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _interrupted_batch(tmp_path)
    finally:
        signal.signal(signal.SIGINT, previous)


def _default_signals() -> None:
    """In a child process: SIGINT and SIGHUP as a terminal delivers them, even where the test run
    itself was started with them ignored (`nohup`, `cmd &`), which a child inherits."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _interrupted_batch(tmp_path):  # type: ignore[no-untyped-def]
    with pytest.raises(KeyboardInterrupt):
        with atomic_batch():
            write_text_atomic(tmp_path / "out.json", "{}")
            write_text_atomic(tmp_path / "out.run", "q1 Q0 d1 1 1.0 x\n")
    assert sorted(os.listdir(tmp_path)) == ["out.json", "out.run"]


def test_a_full_disk_leaves_no_output_folder_behind(tmp_path, monkeypatch):
    import errno

    def full(_descriptor: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(Exception, match="No space left"):
        with atomic_batch():
            write_text_atomic(tmp_path / "ab" / "deep" / "fts5.json", "{}")
    with pytest.raises(Exception, match="No space left"):
        write_text_atomic(tmp_path / "s" / "s.json", "{}")
    assert os.listdir(tmp_path) == []


# Privacy: is_sensitive as stores write it ---------------------------------------------------------

@pytest.mark.parametrize("flag", [True, 1, "1", "true", "TRUE", "yes", "Yes", "on", "t", "y", 2])
def test_every_truthy_spelling_of_is_sensitive_drops_the_row(tmp_path, flag):
    from helpers import CORPUS

    from recall_kit.dataset import read_dataset

    corpus = [*CORPUS[:5], {"id": 6, "content": "private note", "is_sensitive": flag}]
    dataset, problems = read_dataset(write_dataset(tmp_path / "d", corpus=corpus))
    assert problems == [] and dataset is not None
    assert [m.id for m in dataset.corpus] == ["1", "2", "3", "4", "5"]
    assert dataset.dropped_sensitive == 1


@pytest.mark.parametrize("flag", [False, 0, "0", "false", "no", "off", "", None])
def test_falsy_spellings_keep_the_row(tmp_path, flag):
    from helpers import CORPUS

    from recall_kit.dataset import read_dataset

    corpus = [*CORPUS[:5], {"id": 6, "content": "ordinary note", "is_sensitive": flag}]
    dataset, problems = read_dataset(write_dataset(tmp_path / "d", corpus=corpus))
    assert problems == [] and dataset is not None and len(dataset.corpus) == 6


@pytest.mark.parametrize("flag", ["maybe", [1], {"x": 1}, float("nan")])
def test_an_unreadable_is_sensitive_refuses_the_file_and_never_indexes_the_row(tmp_path, flag):
    from helpers import CORPUS

    from recall_kit.dataset import read_dataset

    corpus = [*CORPUS[:5], {"id": 6, "content": "private note", "is_sensitive": flag}]
    folder = write_dataset(tmp_path / "d", corpus=corpus)
    dataset, problems = read_dataset(folder)
    assert [str(p) for p in problems] == [f"corpus.jsonl:6: is_sensitive {flag!r} is not true or false"
                                          if isinstance(flag, (str, float)) else
                                          f"corpus.jsonl:6: is_sensitive {type(flag).__name__} is not true or false"]
    assert dataset is None or "6" not in [m.id for m in dataset.corpus]


def test_import_force_never_replaces_a_folder_inside_its_source(tmp_path):
    source = _beir(tmp_path / "beir")
    result = invoke("dataset", "import", "beir", str(source), str(source / "qrels"), "--force")
    assert result.exit_code == 2 and "sits inside the input" in result.output
    assert (source / "qrels" / "test.tsv").is_file()


# A broken plugin must not take the tool down ------------------------------------------------------

BROKEN = {
    "rk-nonclass": """
        from recall_kit import hookimpl
        @hookimpl
        def register_retrievers(register):
            register("weird", 42)
    """,
    "rk-zdupe": """
        from recall_kit import hookimpl, Retriever
        class Mine(Retriever):
            def build_index(self, corpus): pass
            def search(self, query, k): return []
        @hookimpl
        def register_retrievers(register):
            register("fts5", Mine)
    """,
    "rk-shadow": """
        from recall_kit import hookimpl
        @hookimpl
        def register_commands(app):
            @app.command("eval")
            def hijack():
                print("hijacked")
    """,
    "rk-observer": """
        from recall_kit import hookimpl
        @hookimpl
        def on_index_built(leg, retriever, corpus, stats):
            raise RuntimeError("private memory text in an observer")
    """,
    "rk-chatty": """
        from recall_kit import hookimpl, Retriever, Hit
        class Chatty(Retriever):
            def build_index(self, corpus):
                print("building!")
                self.ids = corpus.ids
            def search(self, query, k):
                print("searching", query)
                return [Hit(i, 1.0) for i in self.ids[:k]]
        @hookimpl
        def register_retrievers(register):
            register("chatty", Chatty)
    """,
}


def test_broken_plugins_are_left_out_and_the_tool_works(tmp_path):
    from test_plugins import _run_cli, _write_plugin_dist

    site = tmp_path / "site"
    site.mkdir()
    for dist, body in BROKEN.items():
        _write_plugin_dist(site, dist, dist.replace("-", "_"), body)
    listing = _run_cli(["plugins", "--json"], site, {})
    assert listing.returncode == 0, listing.stderr
    errors = json.loads(listing.stdout)["errors"]
    assert errors["rk-nonclass (register_retrievers)"].startswith("RegistrationError: Plugin 'rk-nonclass'")
    assert "'recall-kit-fts5' (registered first) keeps it" in errors["rk-zdupe (register_retrievers: fts5)"]
    assert "'eval' would shadow" in errors["rk-shadow (register_commands)"]
    assert sum("rk-nonclass" in line for line in listing.stderr.splitlines()) == 1  # named once

    listed = _run_cli(["list", "retrievers", "--json"], site, {})
    assert listed.returncode == 0, listed.stderr
    names = {entry["name"]: entry["plugin"] for entry in json.loads(listed.stdout)}
    assert names["fts5"] == "recall-kit-fts5" and "weird" not in names and names["chatty"] == "rk-chatty"

    dataset = write_dataset(tmp_path / "d")
    for retriever in ("fts5", "chatty"):
        evaluated = _run_cli(["eval", "-d", str(dataset), "-r", retriever, "--report", "json",
                              "--latency-sample", "2"], site, {})
        assert evaluated.returncode == 0, evaluated.stderr
        assert "metrics" in json.loads(evaluated.stdout)  # the plugin's prints went to stderr
        assert "hijacked" not in evaluated.stdout
        assert "plugin 'rk-observer' failed in on_index_built (RuntimeError (message withheld" in evaluated.stderr
        assert "private memory text" not in evaluated.stderr
    assert "searching" in evaluated.stderr


def test_a_system_exit_message_is_withheld_and_a_path_is_named():
    from recall_kit.errors import describe_plugin_exception

    assert describe_plugin_exception(SystemExit("Priya's allergy is peanuts")) == (
        "SystemExit (message withheld, it may quote memory text; --debug shows it)")
    assert describe_plugin_exception(SystemExit(3)) == "SystemExit(3)"
    error = IsADirectoryError(21, "Is a directory", "/data/index.sqlite")
    assert describe_plugin_exception(error) == "IsADirectoryError: /data/index.sqlite: Is a directory"


def test_a_raising_reporter_or_importer_is_named_not_unexpected(tmp_path):
    from recall_kit import Importer, Reporter, hookimpl
    from recall_kit.testing import registered_plugin

    class Boom(Reporter):
        def render(self, report):  # type: ignore[no-untyped-def]
            raise ValueError("Priya is allergic to peanuts")

    class BadImporter(Importer):
        def run(self, source, destination):  # type: ignore[no-untyped-def]
            raise SystemExit("Priya is allergic to peanuts")

    class Plugin:
        @hookimpl
        def register_reporters(self, register):  # type: ignore[no-untyped-def]
            register("boom", Boom)

        @hookimpl
        def register_importers(self, register):  # type: ignore[no-untyped-def]
            register("bad", BadImporter)

    from helpers import OverlapPlugin

    folder = write_dataset(tmp_path / "d")
    with registered_plugin(Plugin(), name="rk-boom"), registered_plugin(OverlapPlugin(), name="overlap-plugin"):
        result = invoke("eval", "-d", str(folder), "-r", "overlap", "--report", "boom", "--latency-sample", "0")
        assert result.exit_code == 2
        assert result.stderr == ("Error: Reporter 'boom' (plugin 'rk-boom') failed in render: ValueError (message "
                                 "withheld, it may quote memory text; --debug shows it)\n")
        result = invoke("dataset", "import", "bad", str(folder / "corpus.jsonl"), str(tmp_path / "out"))
        assert result.exit_code == 2 and "unexpected" not in result.stderr
        assert "Importer 'bad' (plugin 'rk-boom') failed in run: SystemExit (message withheld" in result.stderr
        assert "peanuts" not in result.stderr


@pytest.mark.parametrize("answer, problem", [
    ("nan", "returned 4 values that are NaN or infinite"),
    ("short", "returned shape (0,), expected (4,)"),
    ("raise", "ValueError (message withheld, it may quote memory text; --debug shows it)"),
])
def test_a_broken_metric_plugin_is_named_with_its_hook_not_unexpected(tmp_path, answer, problem):
    import numpy as np
    from helpers import OverlapPlugin

    from recall_kit import Metric, hookimpl
    from recall_kit.testing import registered_plugin

    def compute(data, cutoff):  # type: ignore[no-untyped-def]
        if answer == "raise":
            raise ValueError("Priya is allergic to peanuts")
        values = np.full(len(data.query_ids), np.nan)
        return values if answer == "nan" else values[:0]

    class Plugin:
        @hookimpl
        def register_metrics(self, register):  # type: ignore[no-untyped-def]
            register("broken", Metric(name="broken", compute=compute, cutoff="none"))

    folder = write_dataset(tmp_path / "d")
    with registered_plugin(Plugin(), name="rk-broken-metric"), registered_plugin(OverlapPlugin(), name="overlap-plugin"):
        result = invoke("eval", "-d", str(folder), "-r", "overlap", "--metrics", "broken", "--latency-sample", "0",
                        "--json", str(tmp_path / "out.json"))
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert lines[-1] == f"Error: Metric 'broken' (plugin 'rk-broken-metric') failed in compute: {problem}" + (
        "" if answer == "raise" else ".")
    assert "unexpected" not in result.stderr and "peanuts" not in result.stderr
    assert not (tmp_path / "out.json").exists()


# Hangs ----------------------------------------------------------------------------------------------

def test_a_corpus_that_is_a_named_pipe_is_refused_not_waited_on(tmp_path):
    folder = write_dataset(tmp_path / "d")
    (folder / "corpus.jsonl").unlink()
    os.mkfifo(folder / "corpus.jsonl")
    result = invoke("dataset", "validate", str(folder))
    assert result.exit_code == 2
    assert "corpus.jsonl: not a regular file (a named pipe or a device)" in result.output
    pipe = tmp_path / "locomo.json"
    os.mkfifo(pipe)
    result = invoke("dataset", "import", "locomo", str(pipe), str(tmp_path / "out"))
    assert result.exit_code == 2 and "not a regular file" in result.stderr
    result = invoke("gate", "--accepted", str(pipe), "--current", str(pipe))
    assert result.exit_code == 2 and "not a regular file" in result.stderr


def test_synth_writes_fifty_thousand_memories():
    # Above ~6,000 memories the pool of two-syllable pet names ran dry and synth looped for ever.
    from recall_kit.curate.synth import generate

    corpus, queries, qrels = generate(50_000, 30, seed=0)
    assert len(corpus) == 50_000 and len(queries) == 30 == len(qrels)
    assert len({row["id"] for row in corpus}) == 50_000


# Unclear or unexpected --------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["list", "retrievers"], ["--version"]])
def test_output_that_cannot_be_written_is_exit_2(args):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "recall_kit", *args], preexec_fn=lambda: os.close(1),
                          stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr == "Error: standard output is closed; the report could not be printed (OSError).\n"


def test_gate_debug_on_a_missing_result_is_2_not_1(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "recall_kit", "gate", "--debug", "--accepted", str(tmp_path / "no.json"),
                           "--current", str(tmp_path / "no.json")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" in done.stderr and "no such result file" in done.stderr


def test_sighup_is_an_orderly_exit(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    script = (
        "import sys, time\n"
        "from recall_kit import cli\n"
        "from recall_kit.fileio import atomic_open\n"
        "@cli.app.command('slow-write')\n"
        "def slow_write(path: str) -> None:\n"
        "    with atomic_open(path) as s:\n"
        "        s.write('x'); s.flush(); print('ready', flush=True); time.sleep(60)\n"
        "sys.argv = ['recall-kit', 'slow-write', sys.argv[1]]\n"
        "cli.main()\n"
    )
    process = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "out.json")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_signals)
    assert process.stdout is not None
    assert process.stdout.readline() == "ready\n"
    time.sleep(0.2)
    process.send_signal(signal.SIGHUP)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGHUP
    assert stderr.startswith("Hung up: outputs not yet finished were not written")
    assert os.listdir(tmp_path) == []


def _result_file(tmp_path: Path, name: str = "a.json") -> Path:
    """A real result of the tiny dataset (the overlap retriever), with five timed queries."""
    from helpers import OverlapPlugin

    from recall_kit.testing import registered_plugin

    path = tmp_path / name
    if not (tmp_path / "a.json").exists():
        with registered_plugin(OverlapPlugin(), name="overlap-plugin"):
            done = invoke("eval", "-d", str(write_dataset(tmp_path / "tiny")), "-r", "overlap",
                          "--json", str(tmp_path / "a.json"), "--latency-sample", "5", "--metrics", "recall@10")
        assert done.exit_code == 0, done.output
    if path.name != "a.json":
        path.write_text((tmp_path / "a.json").read_text())
    return path


@pytest.mark.parametrize(("where", "value"), [("p95", float("nan")), ("p95", -3.0), ("query", -1.0),
                                               ("query", float("nan"))])
def test_a_nan_or_negative_latency_does_not_pass_gate(tmp_path, where, value):
    baseline = _result_file(tmp_path)
    data = json.loads(baseline.read_text())
    if where == "query":
        timed = next(q for q in data["queries"] if "latency_ms" in q)
        timed["latency_ms"] = value
    else:
        data["latency_ms"][where] = value
    current = tmp_path / "b.json"
    current.write_text(json.dumps(data))
    result = invoke("gate", "--accepted", str(baseline), "--current", str(current), "--latency-max-rise", "0.2")
    assert result.exit_code == 2 and "latency_ms" in result.stderr and "unexpected" not in result.stderr


def test_a_five_thousand_digit_metric_is_bad_input(tmp_path):
    baseline = _result_file(tmp_path)
    text = baseline.read_text()
    value = load_result(baseline).mean("recall@10")
    current = tmp_path / "b.json"
    current.write_text(text.replace(f'"recall@10": {value}', '"recall@10": 1' + "0" * 5000, 1))
    result = invoke("gate", "--accepted", str(baseline), "--current", str(current))
    # Issue 37: the message named the file alone ("not a JSON result file (Exceeds the limit ...").
    assert result.exit_code == 2 and "metrics.overall.recall@10 is inf, not a finite number" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "0" * 50 not in result.stderr


def test_pool_of_results_that_share_no_query_with_the_dataset_is_refused(tmp_path):
    result_path = _result_file(tmp_path)
    loaded = load_result(result_path)
    loaded.queries = [dataclasses.replace(query, query_id="other_" + query.query_id) for query in loaded.queries]
    loaded.save(result_path)
    out = tmp_path / "pool.jsonl"
    result = invoke("pool", str(result_path), "--out", str(out), "--dataset", str(tmp_path / "tiny"))
    assert result.exit_code == 2 and "are not queries of" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--resamples", "0"], "--resamples must be at least 1, got 0."),
    (["--bootstrap", "-5"], "--resamples must be at least 1, got -5."),  # the old spelling, hidden
    (["--resamples", "1000000000000"],  # before: "unexpected MemoryError (7.28 TiB)"
     "--resamples 1,000,000,000,000 is more than a p-value needs: at most 1,000,000."),
])
def test_gate_bootstrap_below_one_is_bad_input(tmp_path, args, message):
    baseline = _result_file(tmp_path)
    result = invoke("gate", "--accepted", str(baseline), "--current", str(_result_file(tmp_path, "b.json")), *args)
    note = "recall-kit: gate --bootstrap is now --resamples (the old spelling goes in the next release).\n"
    assert result.exit_code == 2 and result.stderr == (note if "--bootstrap" in args else "") + f"Error: {message}\n"


@pytest.mark.parametrize(("args", "message"), [
    (["--paraphrase-max-overlap", "nan"], "--paraphrase-max-overlap must be a share in [0, 1], got nan."),
    (["--paraphrase-max-overlap", "-0.1"], "--paraphrase-max-overlap must be a share in [0, 1], got -0.1."),
    (["--twin-threshold", "2"], "--twin-threshold must be in (0, 1], got 2.0."),
    (["--twin-threshold", "nan"], "--twin-threshold must be in (0, 1], got nan."),
    (["--min-queries", "-3"], "--min-queries must be 0 or more, got -3."),
    (["--shingle-size", "0"], "--shingle-size must be at least 1, got 0."),
])
def test_lint_thresholds_are_checked(args, message):
    result = invoke("dataset", "lint", "example:memories", *args)
    assert result.exit_code == 2 and result.stderr == f"Error: {message}\n"


def test_an_importance_no_float_holds_is_a_problem_with_its_line(tmp_path):
    from helpers import CORPUS

    from recall_kit.dataset import read_dataset

    corpus = [*CORPUS[:5], {"id": 7, "content": "x", "importance": 10**400}]
    _, problems = read_dataset(write_dataset(tmp_path / "d", corpus=corpus))
    assert [str(p) for p in problems] == ['corpus.jsonl:6: "importance" must be a finite number']


@pytest.mark.parametrize(("args", "message"), [
    (["-r", "../../etc/passwd:X"], "Bad retriever path '../../etc/passwd:X': '../../etc/passwd' is not a dotted Python module name."),
    (["-r", "overlap", "-k", str(10**30)], f"k must be at most 2,147,483,647, got {10**30}."),
])
def test_eval_spec_and_k_mistakes_are_one_line(overlap_plugin, tiny_dataset, args, message):
    result = invoke("eval", "-d", str(tiny_dataset), *args, "--latency-sample", "0")
    assert result.exit_code == 2 and result.stderr == f"Error: {message}\n"


# Privacy: the DSN's password in sweep.json -------------------------------------------------------

def test_sweep_masks_a_password_as_eval_does(tmp_path, tiny_dataset):
    from dataclasses import dataclass, field

    from helpers import OverlapRetriever

    from recall_kit import hookimpl
    from recall_kit.testing import registered_plugin

    def mask(dsn: str) -> str:
        return dsn.replace("s3cret", "***")

    class Remote(OverlapRetriever):
        @dataclass(frozen=True)
        class Options:
            min_overlap: int = 1
            boost: float = 0.0
            dsn: str | None = field(default=None, metadata={"redact": mask})

    class Plugin:
        @hookimpl
        def register_retrievers(self, register):  # type: ignore[no-untyped-def]
            register("remote", Remote)

    out = tmp_path / "sw"
    with registered_plugin(Plugin(), name="remote-plugin"):
        result = invoke("sweep", "-d", str(tiny_dataset), "-r", "remote", "-g", "remote.boost=0,1",
                        "-t", "recall@5", "-o", "remote.dsn=postgresql://me:s3cret@db/memories",
                        "--out-dir", str(out), "--latency-sample", "0", "--resamples", "100")
    assert result.exit_code == 0, result.output
    written = [path.read_text() for path in out.iterdir()]
    assert written and not any("s3cret" in text for text in written)
    assert "postgresql://me:***@db/memories" in (out / "sweep.json").read_text()


# Issue 37, leaks: no secret in any output -------------------------------------------------------

#: A password no output may hold: every test below plants it and looks for it everywhere.
CANARY = "Canary7pw"


@pytest.mark.parametrize(("text", "kept"), [
    ("http://user:Canary7pw@127.0.0.1:9/search", "http://user:***@127.0.0.1:9/search"),
    ("https://Canary7pw@example.com/x", "https://***@example.com/x"),
    ("postgresql://me:Canary7pw@db/memories", "postgresql://me:***@db/memories"),
    ("host=db user=me password=Canary7pw dbname=x", "host=db user=me password=*** dbname=x"),
    ("host=db password='Canary7pw and more' dbname=x", "host=db password=*** dbname=x"),
    ("python server.py --api-key Canary7pw --port 8", "python server.py --api-key *** --port 8"),
    ("python server.py --api-key=Canary7pw", "python server.py --api-key=***"),
    ("prog --token 'Canary7pw x' -v", "prog --token *** -v"),
    ("prog --client-secret Canary7pw", "prog --client-secret ***"),
    ("prog --password Canary7pw", "prog --password ***"),
    ("prog --secret Canary7pw", "prog --secret ***"),
    ("mysql -p Canary7pw -h db", "mysql -p *** -h db"),
    ("curl -H 'Authorization: Bearer Canary7pw' http://x", "curl -H 'Authorization: Bearer ***' http://x"),
    ("Authorization=Bearer Canary7pw", "Authorization=***"),
    ("X-API-Key: Canary7pw", "X-API-Key: ***"),
    ("http://h/s?api_key=Canary7pw&q=1", "http://h/s?api_key=***&q=1"),
    ("http://h/s?q=1&token=Canary7pw#top", "http://h/s?q=1&token=***#top"),
    ('{"api_key": "Canary7pw", "user": "a"}', '{"api_key": "***", "user": "a"}'),
    ("key=Canary7pw", "key=***"),
    ("PGPASSWORD=Canary7pw psql", "PGPASSWORD=*** psql"),
    ("Command 'prog --password Canary7pw' exited", "Command 'prog --password ***' exited"),
    ("Cannot start 'prog --api-key Canary7pw': not found.", "Cannot start 'prog --api-key ***': not found."),
    ("prog --api-key ab:Canary7pw, then", "prog --api-key *** then"),
    ("dsn password=Canary7pw.", "dsn password=***."),
])
def test_mask_secrets_masks_every_kind_of_secret(text, kept):
    from recall_kit.plugin import mask_secrets

    assert mask_secrets(text) == kept
    assert mask_secrets(kept) == kept  # a message masked twice (by its plugin, then the CLI) reads the same


@pytest.mark.parametrize("text", [
    "http://127.0.0.1:8000/search", "postgresql://me@db/memories", "python my_search.py --fast",
    "Bad --grid 'x': expected LEG=v1,v2 (a weight) or NAME.KEY=v1,v2 (an option).",
    "-o NAME.KEY=VALUE dense.model=PATH rrf.k=60", "--no-auth --verbose",
])
def test_mask_secrets_leaves_text_without_secrets_alone(text):
    from recall_kit.masking import mask_secrets

    assert mask_secrets(text) == text


class _SecretOptionsRetriever:
    """A retriever whose options carry secrets the way a remote system's do (a command line, a URL
    and a DSN, none marked for masking by its plugin), and which fails quoting them when asked."""

    @staticmethod
    def make():  # type: ignore[no-untyped-def]
        from dataclasses import dataclass

        from helpers import OverlapRetriever

        from recall_kit.plugin import PluginRunError

        class SecretOptions(OverlapRetriever):
            @dataclass(frozen=True)
            class Options:
                min_overlap: int = 1
                boost: float = 0.0
                argv: str = ""
                url: str = ""
                dsn: str = ""
                fail: bool = False

            def build_index(self, corpus):  # type: ignore[no-untyped-def]
                if self.options.fail:
                    raise PluginRunError(f"Cannot reach {self.options.url} (started {self.options.argv!r})")
                super().build_index(corpus)

        return SecretOptions


@pytest.fixture
def secret_plugin():  # type: ignore[no-untyped-def]
    from recall_kit import hookimpl
    from recall_kit.testing import registered_plugin

    retriever = _SecretOptionsRetriever.make()

    class Plugin:
        @hookimpl
        def register_retrievers(self, register):  # type: ignore[no-untyped-def]
            register("secret", retriever)

    with registered_plugin(Plugin(), name="secret-options-plugin"):
        yield


def _no_canary_in(folder: Path, *texts: str) -> None:
    """Neither a file under `folder` (its name included) nor any of `texts` holds the canary."""
    for path in folder.rglob("*"):
        assert CANARY not in str(path.relative_to(folder)), path
        if path.is_file():
            assert CANARY not in path.read_text(errors="replace"), path
    for text in texts:
        assert CANARY not in text


SECRET_OPTIONS = ["-o", f"secret.argv=python serve.py --api-key {CANARY}",
                  "-o", f"secret.url=http://me:{CANARY}@127.0.0.1:9/search?token={CANARY}",
                  "-o", f"secret.dsn=host=db user=me password={CANARY}"]


def test_eval_masks_secrets_in_the_result_the_run_and_every_report(tmp_path, tiny_dataset, secret_plugin):
    out = tmp_path / "out"
    out.mkdir()
    result = invoke("eval", "-d", str(tiny_dataset), "-r", "secret", *SECRET_OPTIONS, "--json", str(out / "r.json"),
                    "--run", str(out / "r.run"), "--report", "json", "--latency-sample", "0")
    assert result.exit_code == 0, result.output
    options = load_result(out / "r.json").system.legs[0].options
    assert options["argv"] == "python serve.py --api-key ***"
    assert options["url"] == "http://me:***@127.0.0.1:9/search?token=***"
    assert options["dsn"] == "host=db user=me password=***"
    html = invoke("compare", str(out / "r.json"), str(out / "r.json"), "--report", "html",
                  "--output", str(out / "c.html"))
    assert html.exit_code == 0, html.output
    _no_canary_in(out, result.output, html.output)


def test_a_plugin_error_quoting_its_options_is_masked(tmp_path, tiny_dataset, secret_plugin):
    result = invoke("eval", "-d", str(tiny_dataset), "-r", "secret", *SECRET_OPTIONS, "-o", "secret.fail=true",
                    "--json", str(tmp_path / "r.json"))
    assert result.exit_code == 2
    assert "Cannot reach http://me:***@127.0.0.1:9/search?token=***" in result.output
    assert "--api-key ***" in result.output
    _no_canary_in(tmp_path, result.output)


def test_a_dsn_as_a_grid_value_is_masked_in_the_table_sweep_json_and_file_names(tmp_path, tiny_dataset,
                                                                              secret_plugin):
    out = tmp_path / "sw"
    grid = f"secret.dsn=postgresql://me:{CANARY}@db/a,host=db password={CANARY}"
    result = invoke("sweep", "-d", str(tiny_dataset), "-r", "secret", "-g", grid, "-t", "recall@5",
                    "--out-dir", str(out), "--latency-sample", "0", "--resamples", "100")
    assert result.exit_code == 0, result.output
    assert "secret.dsn=postgresql://me:***@db/a" in result.output
    sweep = json.loads((out / "sweep.json").read_text())
    assert [point["settings"] for point in sweep["points"]] == [
        {"secret.dsn": "postgresql://me:***@db/a"}, {"secret.dsn": "host=db password=***"}]
    _no_canary_in(out, result.output)


def test_a_progress_line_masks_a_secret_in_a_stage_or_step(monkeypatch):
    from recall_kit import progress

    display = progress._Display()
    monkeypatch.setattr(progress, "_current", display)
    with progress.steps(2, "leg search") as begin:
        begin(f"secret (url=http://me:{CANARY}@h/s)")
        progress.stage(f"connecting to postgresql://me:{CANARY}@db/a")
        line = display.line()
    assert CANARY not in line and "http://me:***@h/s" in line and "postgresql://me:***@db/a" in line


# Issue 37: Ray's failures as one line, fast ------------------------------------------------------

def _sweep_on_ray(tmp_path: Path, env: dict[str, str], *more: str):  # type: ignore[no-untyped-def]
    """`sweep --executor ray` as a real process (its own TMPDIR and RAY_ADDRESS), timed."""
    import subprocess
    import sys
    import time

    from recall_kit.testing import example_datasets

    environment = {key: value for key, value in os.environ.items() if key not in ("RAY_ADDRESS", "RAY_TMPDIR")}
    environment.update(env, RECALL_KIT_LOAD_PLUGINS="recall-kit-bm25,recall-kit-fts5,recall-kit-fusion")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "recall_kit", "sweep", "--dataset", str(example_datasets()["memories"]), "-r", "bm25+fts5",
                           "-f", "rrf", "--grid", "rrf.k=10,60", "--target", "ndcg@10", "--executor", "ray",
                           "--out-dir", str(tmp_path / "sw"), *more],
                          env=environment, capture_output=True, text=True, timeout=600, check=False)
    return done, time.monotonic() - started


def test_a_tmpdir_too_long_for_rays_sockets_is_named_with_the_limit(tmp_path):
    from recall_kit.measure.run.executor import UNIX_SOCKET_PATH_LIMIT

    long = tmp_path / ("t" * 80)
    long.mkdir()
    done, _ = _sweep_on_ray(tmp_path, {"TMPDIR": str(long)})
    assert done.returncode == 2
    # One line, and Ray's token-authentication banner is not on stderr.
    assert done.stderr.strip().splitlines() == [
        f"Error: Cannot start a local Ray cluster: its socket paths under TMPDIR ({long}, {len(str(long))} "
        f"characters) pass the {UNIX_SOCKET_PATH_LIMIT}-byte limit of a Unix socket path (AF_UNIX); set TMPDIR "
        "to a shorter folder, e.g. /tmp."]
    assert not (tmp_path / "sw").exists()


def test_an_unreachable_ray_address_fails_fast_and_says_where_it_came_from(tmp_path):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done, seconds = _sweep_on_ray(tmp_path, {"RAY_ADDRESS": f"127.0.0.1:{port}"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"Error: Cannot reach the Ray cluster at 127.0.0.1:{port} (from RAY_ADDRESS): 127.0.0.1:{port}: "
        "connection refused."]
    # Ray's own retries took 32 s and more; the check waits at most RAY_REACH_SECONDS (3 s), the
    # rest is starting Python and importing Ray on a busy machine.
    assert seconds < 20, seconds
    given, _ = _sweep_on_ray(tmp_path, {}, "--address", "ray://not a host")
    assert given.returncode == 2
    assert given.stderr.strip().splitlines() == [
        "Error: Bad address for the Ray cluster at ray://not a host: expected HOST:PORT, ray://HOST[:PORT], "
        "auto or local."]


# Issue 37, the third pass (harden-data) -----------------------------------------------------------

def test_fts5_refuses_a_users_own_sqlite_database_and_leaves_it_whole(tmp_path):
    # It was "not a readable recall-kit index; rebuilding it", exit 0, and the user's table was gone.
    import sqlite3

    from recall_kit.testing import registered_plugin

    fts5 = pytest.importorskip("recall_kit_fts5")
    user_db = tmp_path / "user.db"
    connection = sqlite3.connect(user_db)
    connection.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    connection.executemany("INSERT INTO notes (body) VALUES (?)", [(f"row {i}",) for i in range(100)])
    connection.commit()
    connection.close()
    before = user_db.read_bytes()
    with registered_plugin(fts5, name="recall-kit-fts5"):
        result = invoke("eval", "-d", str(write_dataset(tmp_path / "d")), "-r", "fts5", "-o", f"fts5.path={user_db}",
                        "--latency-sample", "0")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"Error: fts5.path {user_db}: not an index recall-kit wrote (no recall-kit mark in its header); "
        "refusing to overwrite it: give a new path, or delete the file yourself."]
    assert user_db.read_bytes() == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["d", "user.db"]


_IMPOSTOR = """
    from recall_kit import hookimpl, Retriever, Hit, Fusion

    class Impostor(Retriever):
        def build_index(self, corpus): self.ids = corpus.ids
        def search(self, query, k): return [Hit(i, 0.0) for i in self.ids[:k]]

    @hookimpl
    def register_retrievers(register):
        register("fts5", Impostor)
        register("{own}", Impostor)
"""


def _installed_dist(site: Path, dist: str, body: str, installed_at: float) -> None:
    """A real installed distribution with a RECORD written at `installed_at` (what pip leaves)."""
    from test_plugins import _write_plugin_dist

    _write_plugin_dist(site, dist, dist.replace("-", "_"), body)
    record = site / f"{dist.replace('-', '_')}-1.2.3.dist-info" / "RECORD"
    record.write_text("", encoding="utf-8")
    os.utime(record, (installed_at, installed_at))


def test_a_plugin_installed_later_loses_only_the_name_it_clashes_on(tmp_path):
    # Issue 37: an impostor registering `fts5` replaced the real one when its entry point sorted
    # first, and the warning blamed recall-kit-fts5; its whole registration was dropped otherwise.
    import time

    from test_plugins import _run_cli

    pytest.importorskip("recall_kit_fts5")
    site = tmp_path / "site"
    site.mkdir()
    _installed_dist(site, "aaa-impostor", _IMPOSTOR.replace("{own}", "mine"), time.time() + 3600)
    listed = _run_cli(["list", "retrievers", "--json"], site, {})
    assert listed.returncode == 0, listed.stderr
    names = {entry["name"]: entry["plugin"] for entry in json.loads(listed.stdout)}
    assert names["fts5"] == "recall-kit-fts5" and names["mine"] == "aaa-impostor"
    said = [line for line in listed.stderr.splitlines() if "fts5" in line]
    assert said == ["recall-kit: retriever 'fts5' is registered by both 'recall-kit-fts5' and 'aaa-impostor'; "
                    "'recall-kit-fts5' (registered first) keeps it; the one 'aaa-impostor' registered is left out."]


def test_a_scaffolded_fusion_named_like_a_built_in_one_is_refused_and_a_clash_keeps_the_rest(tmp_path):
    # Issue 42: `new-plugin borda --kind fusion` + pip install knocked out rrf, convex and the rest
    # of recall-kit-fusion (its whole registration dropped for the one name `borda`).
    import time

    from test_plugins import _run_cli

    pytest.importorskip("recall_kit_fusion")
    refused = invoke("new-plugin", "borda", "--kind", "fusion", "--dir", str(tmp_path))
    assert refused.exit_code == 2 and list(tmp_path.iterdir()) == []
    assert refused.stderr.strip() == ("Error: Fusion 'borda' is already registered by 'recall-kit-fusion': "
                                      "choose another name (nothing was written).")
    site = tmp_path / "site"
    site.mkdir()
    body = """
        from recall_kit import hookimpl, Fusion

        class Borda(Fusion):
            def fuse(self, runs, weights, k): return []

        @hookimpl
        def register_fusions(register):
            register("borda", Borda)
    """
    _installed_dist(site, "recall-kit-borda", body, time.time() + 3600)
    listed = _run_cli(["list", "fusions", "--json"], site, {})
    assert listed.returncode == 0, listed.stderr
    names = {entry["name"]: entry["plugin"] for entry in json.loads(listed.stdout)}
    assert names["borda"] == "recall-kit-fusion" and names["rrf"] == "recall-kit-fusion"
    assert "'recall-kit-fusion' (registered first) keeps it; the one 'recall-kit-borda' registered is left out" in listed.stderr


def _qrels_lines(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_agreement_reads_relevant_ids_as_every_command_does_and_takes_trec_qrels(tmp_path):
    # Issue 37: "1234" was read as the ids 1, 2, 3, 4; TREC qrels were `a.qrels:1: not valid JSON`.
    judged = _qrels_lines(tmp_path / "b.jsonl", [{"query_id": "q1", "relevance": {"1234": 1, "7": 0}}])
    string_ids = _qrels_lines(tmp_path / "a.jsonl", [{"query_id": "q1", "relevant_ids": "1234"}])
    result = invoke("agreement", str(string_ids), str(judged), "--resamples", "0")
    assert result.exit_code == 2
    assert result.stderr.strip() == 'Error: a.jsonl:1: "relevant_ids" must be a list of ids'
    trec = tmp_path / "a.qrels"
    trec.write_text("q1 0 1234 1\nq1 0 7 1\n", encoding="utf-8")
    result = invoke("agreement", str(trec), str(judged), "--resamples", "0", "--json", str(tmp_path / "k.json"))
    assert result.exit_code == 0, result.output
    written = json.loads((tmp_path / "k.json").read_text())
    assert written["n"] == 2 and written["labels"] == [0, 1] and written["confusion"] == [[0, 0], [1, 1]]


@pytest.mark.parametrize(("content", "message"), [
    ('{"query_id": "q1", "relevance": {"d": 1000000000}}\n', "a.jsonl:1: grade 1000000000 for id d is outside -1000..1000"),
    ('{"query_id": "q1", "relevance": {"d": -1000000}}\n', "a.jsonl:1: grade -1000000 for id d is outside -1000..1000"),
    ('{"query_id": "q1", "relevance": {"d": 1e300}}\n', "a.jsonl:1: grade 1e+300 for id d is outside -1000..1000"),
    ('["q1", "d", 1]\n', "a.jsonl:1: expected a JSON object"),
    ('{"query_id": "q1", "relevant_ids": 5}\n', 'a.jsonl:1: "relevant_ids" must be a list of ids'),
    (b'{"query_id": "q1", "relevant_ids": ["d\xff"]}\n', "a.jsonl:1: not UTF-8 text"),
    ('{"query_id": "q1", "relevance": {"d": true}}\n', "a.jsonl:1: grade for id d must be an integer"),
    ('{"query_id": "q1", "relevance": {"d": "2"}}\n', "a.jsonl:1: grade for id d must be an integer"),
    ("q1 0 d 1000000000\n", "a.jsonl:1: relevance 1000000000 is outside -1000..1000"),
])
def test_agreement_refuses_bad_qrels_in_one_line_naming_file_and_line(tmp_path, content, message):
    # Issue 37: a grade of 1e9 allocated a 1e9 x 1e9 matrix (killed at 23 GB), 1e300 was an
    # `unexpected OverflowError`, a list row, an id that is a number and bad UTF-8 `unexpected ...`.
    bad = tmp_path / "a.jsonl"
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    good = _qrels_lines(tmp_path / "b.jsonl", [{"query_id": "q1", "relevance": {"d": 1}}])
    result = invoke("agreement", str(bad), str(good), "--resamples", "0")
    assert result.exit_code == 2 and "unexpected" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {message}"), lines


def test_agreement_on_a_wide_grade_scale_is_small_and_weighs_by_grade(tmp_path):
    # Grades 0 and 1000 were a 1001 x 1001 matrix; the weighted kappa is the same either way.
    from recall_kit.curate.agreement import agreement, cohen_kappa

    a = {"q": {"1": 0, "2": 1000, "3": 1000, "4": 0}}
    b = {"q": {"1": 0, "2": 1000, "3": 0, "4": 0}}
    found = agreement(a, b, samples=0)
    assert found.labels == [0, 1000] and found.confusion == [[2, 0], [1, 1]]
    full = [[0] * 1001 for _ in range(1001)]
    full[0][0], full[1000][1000], full[1000][0] = 2, 1, 1
    assert found.weighted_kappa == pytest.approx(cohen_kappa(full, weighted=True), abs=1e-12)


class _Planted:
    """A pickle that runs a command when loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (f"touch {self.marker}",))


def test_a_planted_checkpoint_pickle_is_never_loaded(tmp_path, capsys):
    # Issue 37: a pickle planted in the checkpoint folder (a shared RECALL_KIT_CACHE) ran its code.
    import pickle

    from recall_kit.measure.run.executor import Checkpoint

    checkpoint = Checkpoint(tmp_path / "tasks")
    checkpoint.folder.mkdir()
    marker = tmp_path / "code-ran"
    for name in ("key1.pickle", "key1.json"):  # where the old version read it, and where this one does
        (checkpoint.folder / name).write_bytes(pickle.dumps(_Planted(marker)))
    assert checkpoint.load("key1") == (False, None)
    assert not marker.exists()
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and said[0].startswith(f"recall-kit: the checkpoint {checkpoint.folder / 'key1.json'} "
                                                 "is not a task result this version wrote")


def test_checkpoints_are_json_and_hold_what_the_tasks_returned(tmp_path, overlap_plugin, tiny_dataset):
    from recall_kit import SystemSpec
    from recall_kit.dataset import load_dataset
    from recall_kit.measure.run.executor import Checkpoint
    from recall_kit.measure.run.runner import run_benchmark, run_legs
    from recall_kit.measure.systems.system import build_system

    system = build_system(SystemSpec("overlap"))
    dataset = load_dataset(tiny_dataset)
    leg_run = run_legs(system.legs, dataset, 5, 3, False)["overlap"]
    result = run_benchmark(system, dataset, k=5, latency_sample=3, show_progress=False)
    checkpoint = Checkpoint(tmp_path / "tasks")
    checkpoint.save("leg", leg_run)
    checkpoint.save("result", result)
    assert sorted(path.name for path in checkpoint.folder.iterdir()) == ["leg.json", "result.json"]
    json.loads((checkpoint.folder / "leg.json").read_text())  # plain JSON
    assert checkpoint.load("leg") == (True, leg_run)
    done, loaded = checkpoint.load("result")
    assert done and loaded.to_dict() == result.to_dict()


@pytest.mark.parametrize("document", [
    {"format": 1, "type": "leg_run", "data": {"name": 5}},
    {"format": 1, "type": "leg_run", "data": []},
    {"format": 1, "type": "result", "data": {"schema": "nope"}},
    {"format": 1, "type": "module", "data": {}},
    [1, 2, 3],
])
def test_a_checkpoint_of_the_wrong_type_is_one_line_and_run_again(tmp_path, capsys, document):
    # Issue 37: a checkpoint holding another type was `unexpected AttributeError`.
    from recall_kit.measure.run.executor import Checkpoint

    checkpoint = Checkpoint(tmp_path / "tasks")
    checkpoint.folder.mkdir()
    (checkpoint.folder / "key.json").write_text(json.dumps(document))
    assert checkpoint.load("key") == (False, None)
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "is not a task result this version wrote" in said[0]


def test_an_exception_whose_str_raises_is_still_one_line(tmp_path, tiny_dataset):
    # Issue 37: `unexpected RuntimeError: str failed`.
    from helpers import OverlapRetriever

    from recall_kit import hookimpl
    from recall_kit.testing import registered_plugin

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("str failed")

    class Broken(OverlapRetriever):
        def search(self, query, k):  # type: ignore[no-untyped-def]
            raise Unprintable()

    class Plugin:
        @hookimpl
        def register_retrievers(self, register):  # type: ignore[no-untyped-def]
            register("broken", Broken)

    with registered_plugin(Plugin(), name="broken-plugin"):
        result = invoke("eval", "-d", str(tiny_dataset), "-r", "broken", "--latency-sample", "0")
    assert result.exit_code == 2 and "unexpected" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Unprintable (its message could not be read)" in lines[0], lines


@pytest.mark.parametrize("command", ["eval", "score", "compare"])
def test_a_reporter_that_raises_leaves_no_json_behind(tmp_path, command):
    # Issue 37: `--report` raising after out.json was written left the file (all or nothing).
    from helpers import OverlapPlugin

    from recall_kit import Reporter, hookimpl
    from recall_kit.testing import registered_plugin

    class Boom(Reporter):
        def render(self, report):  # type: ignore[no-untyped-def]
            raise ValueError("no")

    class Plugin:
        @hookimpl
        def register_reporters(self, register):  # type: ignore[no-untyped-def]
            register("boom", Boom)

    out = tmp_path / "out.json"
    result_file = _result_file(tmp_path)
    if command == "eval":
        args = ["eval", "-d", str(tmp_path / "tiny"), "-r", "overlap", "--latency-sample", "0"]
    elif command == "score":
        load_result(result_file).write_run(tmp_path / "run.trec")
        from recall_kit.dataset import load_dataset
        from recall_kit.measure.score.trec import write_qrels

        qrels = tmp_path / "qrels.trec"
        write_qrels(qrels, load_dataset(tmp_path / "tiny").qrels)
        args = ["score", "--qrels", str(qrels), "--run", str(tmp_path / "run.trec")]
    else:
        args = ["compare", str(result_file), str(_result_file(tmp_path, "b.json")), "--resamples", "100"]
    with registered_plugin(Plugin(), name="rk-boom"), registered_plugin(OverlapPlugin(), name="overlap-plugin"):
        result = invoke(*args, "--json", str(out), "--report", "boom")
    assert result.exit_code == 2 and "Reporter 'boom'" in result.stderr
    assert not out.exists()


def test_pool_of_a_result_with_no_queries_is_refused(tmp_path):
    # Issue 37: an empty pool was written with exit 0, which reads as "nothing left to judge".
    result_path = _result_file(tmp_path)
    loaded = load_result(result_path)
    loaded.queries = []
    loaded.save(result_path)
    out = tmp_path / "pool.jsonl"
    result = invoke("pool", str(result_path), "--out", str(out), "--dataset", str(tmp_path / "tiny"))
    assert result.exit_code == 2 and "holds no queries: nothing to pool" in result.stderr
    assert result.stderr.startswith(f"Error: {result_path} holds")  # the file given, not its system's name
    assert len(result.stderr.strip().splitlines()) == 1 and not out.exists()


def test_a_leg_run_checkpoint_keeps_every_field_a_live_leg_sets():
    # The checkpoint's encoding follows LegRun's own fields: a field added later (a live leg's ids
    # outside the corpus, its hint) is kept, not dropped on a rerun from checkpoints.
    import dataclasses
    import json

    from recall_kit.measure.run.runs import LegRun
    from recall_kit.measure.run.task_results import decode, encode
    from recall_kit.types import Hit

    run = LegRun("mcp", [[Hit("a", 1.0)], []], size_bytes=None, latency_ms={0: 1.5}, wait_ms={0: 1.0},
                 failures={1: "TimeoutError"}, outside={0: ["z"]}, own_store=True, empty_hint="h", indexes=1,
                 sensitive={"s2", "s1"})
    back = decode(json.loads(json.dumps(encode(run))))
    assert back == run
    assert {field.name for field in dataclasses.fields(LegRun)} == set(encode(run)["data"])


def test_agreement_resamples_past_a_million_are_bad_input():
    """Before: "unexpected MemoryError" after the pairs were read."""
    qrels = str(Path(__file__).resolve().parents[1] / "examples" / "memories" / "qrels.jsonl")
    result = invoke("agreement", qrels, qrels, "--resamples", "1000000000000")
    assert result.exit_code == 2
    assert result.stderr == "Error: --resamples 1,000,000,000,000 is more than a p-value needs: at most 1,000,000.\n"
