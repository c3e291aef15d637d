"""The adversarial cases of issue 18: each one failed (a silent wrong outcome, a traceback, a
leftover file) before it was fixed. Grouped by the promise they test; see docs/reliability.md."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import OverlapRetriever, write_dataset
from test_plugins import GOOD_PLUGIN, _run_cli, _write_plugin_dist
from typer.testing import CliRunner

from recall_kit import Hit, hookimpl
from recall_kit.cli import get_app
from recall_kit.dataset import read_dataset
from recall_kit.decide.gate import run_gate
from recall_kit.errors import OptionError, OutputError, ResultFileError
from recall_kit.fileio import atomic_batch, check_outputs, write_text_atomic
from recall_kit.measure.result import SCHEMA, BenchmarkResult
from recall_kit.testing import registered_plugin

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(get_app(), list(args))


def _result(path: Path, values: list[float], metric: str = "mrr", **changes) -> Path:  # type: ignore[no-untyped-def]
    queries = [{"query_id": f"q{i:02d}", "stratum": "all", "ranking": [], "scores": [],
                "metrics": {metric: v}} for i, v in enumerate(values)]
    data = {
        "schema": SCHEMA, "system": {"spec": path.stem, "label": path.stem}, "k": 10,
        "dataset": {"name": "synthetic", "fingerprint": "fp", "path": "nowhere"},
        "metrics": {"names": [metric], "overall": {metric: sum(values) / len(values), "n": len(values)},
                    "strata": {}},
        "queries": queries, "latency_ms": {"n": 0}, "manifest": {"platform": "same"},
    }
    data.update(changes)
    path.write_text(json.dumps(data))
    return path


def _only_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


# 1. A NaN threshold switched the gate off ------------------------------------------------------

@pytest.mark.parametrize("flag", ["--max-drop", "--latency-max-rise"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_gate_refuses_non_finite_thresholds(tmp_path, flag, value):
    # MRR falls by 0.19: with `--max-drop nan` every comparison was False, so the gate passed.
    base = _result(tmp_path / "base.json", [0.69] * 30)
    cur = _result(tmp_path / "cur.json", [0.50] * 30)
    result = invoke("gate", "--accepted", str(base), "--current", str(cur), flag, value, "--resamples", "200")
    assert result.exit_code == 2, result.output
    assert f"{flag} must be a finite number" in _only_line(result.stderr)
    with pytest.raises(OptionError):
        run_gate(base, cur, max_drop=float("nan"))


# 2. A plugin's SystemExit(0) ended a run as a success with nothing written ---------------------

class ExitPlugin:
    @hookimpl
    def register_retrievers(self, register):  # type: ignore[no-untyped-def]
        class QuietExit(OverlapRetriever):
            def search(self, query: str, k: int) -> list[Hit]:
                raise SystemExit(0)

        register("quiet-exit", QuietExit)


def test_system_exit_from_a_plugin_is_a_plugin_error(tiny_dataset, tmp_path):
    out = tmp_path / "r.json"
    with registered_plugin(ExitPlugin(), name="exit-plugin"):
        result = invoke("eval", "-d", str(tiny_dataset), "-r", "quiet-exit", "--json", str(out))
    assert result.exit_code == 2
    assert "Retriever 'quiet-exit' failed" in _only_line(result.stderr) and "SystemExit(0)" in result.stderr
    assert not out.exists()


# 3. Huge grades passed validate and gave wrong metrics -----------------------------------------

@pytest.mark.parametrize("grade", ["4294967297", "1e300", "1001", "-1001", "99999999999999999999"])
def test_grades_outside_the_sane_range_are_refused_with_file_and_line(tmp_path, grade):
    folder = write_dataset(tmp_path / "d")
    lines = (folder / "qrels.jsonl").read_text().splitlines()
    lines[1] = '{"query_id": "e2", "relevance": {"4": ' + grade + "}}"
    (folder / "qrels.jsonl").write_text("\n".join(lines) + "\n")
    dataset, problems = read_dataset(folder)
    assert str(problems[0]) == f"qrels.jsonl:2: grade {_shown(grade)} for id 4 is outside -1000..1000"
    result = invoke("dataset", "validate", str(folder))
    assert result.exit_code == 2 and "Traceback" not in result.output


def _shown(grade: str) -> str:
    """A grade as the file wrote it (issue 72: 1e300 was printed as its 301 digits), a long integer
    by its length."""
    value = json.loads(grade)
    if isinstance(value, float):
        return repr(value)
    return str(value) if len(str(value)) <= 12 else f"of {len(str(abs(value)))} digits"


def test_grades_at_the_edges_of_the_range_are_accepted(tmp_path):
    folder = write_dataset(tmp_path / "d")
    lines = (folder / "qrels.jsonl").read_text().splitlines()
    lines[1] = '{"query_id": "e2", "relevance": {"4": 1000, "5": -1000}}'
    (folder / "qrels.jsonl").write_text("\n".join(lines) + "\n")
    assert read_dataset(folder)[1] == []


def test_trec_qrels_grades_are_range_checked(tmp_path):
    from recall_kit.errors import DatasetError
    from recall_kit.measure.score.trec import read_qrels

    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 1\nq1 0 d2 4294967297\n")
    with pytest.raises(DatasetError, match=r"qrels.txt:2: relevance 4294967297 is outside -1000..1000"):
        read_qrels(path)


# 4 and 6. Outputs: distinct, writable, not folders, checked before the run ---------------------

def test_json_and_run_on_one_path_are_refused_before_any_work(overlap_plugin, tiny_dataset, tmp_path):
    same = tmp_path / "out"
    result = invoke("eval", "-d", str(tiny_dataset), "-r", "overlap", "--json", str(same), "--run", str(same))
    assert result.exit_code == 2
    assert "--json and --run name the same path" in _only_line(result.stderr)
    assert not same.exists()
    # Spelled differently, still one file.
    other = tmp_path / "sub" / ".." / "out"
    result = invoke("eval", "-d", str(tiny_dataset), "-r", "overlap", "--json", str(same), "--output", str(other))
    assert result.exit_code == 2 and "--json and --output name the same path" in result.stderr


class SlowPlugin:
    """Counts searches, so a test can tell whether the run started."""

    searches = 0

    @hookimpl
    def register_retrievers(self, register):  # type: ignore[no-untyped-def]
        plugin = self

        class Counting(OverlapRetriever):
            def search(self, query: str, k: int) -> list[Hit]:
                plugin.searches += 1
                return super().search(query, k)

        register("counting", Counting)


@pytest.mark.parametrize("case", ["folder", "under-a-file", "same-as-config"])
def test_unwritable_outputs_fail_before_the_run(tiny_dataset, tmp_path, case):
    plugin = SlowPlugin()
    config = tmp_path / "exp.toml"
    config.write_text('[system]\nretriever = "counting"\n')
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    target = {"folder": tmp_path, "under-a-file": a_file / "r.json", "same-as-config": config}[case]
    with registered_plugin(plugin, name="slow-plugin"):
        result = invoke("eval", "-d", str(tiny_dataset), "-c", str(config), "--json", str(target))
    assert result.exit_code == 2, result.output
    line = _only_line(result.stderr)
    assert "--json" in line and "unexpected" not in line
    assert plugin.searches == 0
    assert config.read_text() == '[system]\nretriever = "counting"\n'


def test_an_output_may_not_overwrite_the_dataset(overlap_plugin, tiny_dataset):
    before = (tiny_dataset / "qrels.jsonl").read_text()
    result = invoke("eval", "-d", str(tiny_dataset), "-r", "overlap", "--run", str(tiny_dataset / "qrels.jsonl"))
    assert result.exit_code == 2
    assert "--dataset's qrels.jsonl and --run name the same path" in _only_line(result.stderr)
    assert (tiny_dataset / "qrels.jsonl").read_text() == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder_fails_before_the_run(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(OutputError, match="cannot write in"):
            check_outputs({"--json": folder / "r.json"})
    finally:
        folder.chmod(0o700)


def test_ablate_out_that_is_a_file_is_refused(tmp_path):
    a_file = tmp_path / "f"
    a_file.write_text("")
    with pytest.raises(OutputError, match="--out .*is a file"):
        check_outputs({}, folders={"--out": a_file})


def test_a_batch_is_all_or_nothing(tmp_path):
    first, second = tmp_path / "a.json", tmp_path / "b.trec"
    with pytest.raises(KeyboardInterrupt), atomic_batch():
        write_text_atomic(first, "{}")
        assert not first.exists()  # held back until the batch ends
        raise KeyboardInterrupt  # Ctrl-C between the JSON and the TREC file
    assert sorted(os.listdir(tmp_path)) == []
    with atomic_batch():
        write_text_atomic(first, "{}")
        write_text_atomic(second, "q")
    assert sorted(os.listdir(tmp_path)) == ["a.json", "b.trec"]


def test_an_id_with_a_line_break_is_refused_at_validate(tmp_path):
    folder = write_dataset(tmp_path / "d")
    with (folder / "corpus.jsonl").open("a") as stream:
        stream.write(json.dumps({"id": "7\nq1 0 1 1", "content": "x"}) + "\n")
    problems = [str(p) for p in read_dataset(folder)[1]]
    assert problems == ['corpus.jsonl:7: missing or bad "id" (an integer, or text on one line of at most 512 characters)']


_SIGTERM_SCRIPT = """
import sys, time
from recall_kit import cli
from recall_kit.fileio import atomic_batch, atomic_open
import signal
signal.signal(signal.SIGTERM, cli._on_sigterm)
try:
    with atomic_batch():
        with atomic_open(sys.argv[1] + "/result.json") as stream:
            stream.write("x" * 1000)
        with atomic_open(sys.argv[1] + "/run.trec") as stream:
            stream.write("y" * 1000)
            print("writing", flush=True)
            time.sleep(60)
except KeyboardInterrupt as error:
    print(type(error).__name__, flush=True)
    sys.exit(143)
"""


def test_sigterm_removes_temporaries_as_ctrl_c_does(tmp_path):
    process = subprocess.Popen([sys.executable, "-c", _SIGTERM_SCRIPT, str(tmp_path)], cwd=ROOT,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "writing"
    assert len(os.listdir(tmp_path)) == 2  # two hidden temporaries, nothing in place yet
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 143 and out.strip() == "Terminated"
    assert os.listdir(tmp_path) == []


def test_sigterm_during_eval_leaves_nothing(tmp_path):
    # The real command: SIGTERM while a slow retriever searches; no file and no temporary remain.
    dataset = write_dataset(tmp_path / "d")
    module = tmp_path / "slowmod.py"
    module.write_text(
        "import sys, time\n"
        "def retrieve(query, k):\n"
        "    print('searching', file=sys.stderr, flush=True)\n"
        "    time.sleep(30)\n"
        "    return []\n"
    )
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "RECALL_KIT_LOAD_PLUGINS": "", "PYTHONPATH": str(tmp_path)}
    process = subprocess.Popen(
        [sys.executable, "-m", "recall_kit", "eval", "-d", str(dataset), "-r", "slowmod:retrieve",
         "--json", str(out / "r.json"), "--run", str(out / "r.trec")],
        cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True,
    )
    assert process.stderr is not None
    deadline = time.monotonic() + 60
    while process.stderr.readline().strip() != "searching":
        assert time.monotonic() < deadline
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143, err
    assert "Terminated" in err and "Traceback" not in err
    assert os.listdir(out) == []


# 9 and 10. Result files: inf scores, exit codes, duplicated queries, impossible metric values --

@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"queries": None}, "queries is not a list"),
        ({"metrics": {"names": ["mrr"], "overall": {"mrr": float("nan")}, "strata": {}}},
         "metrics.overall.mrr is nan, not a finite number"),
    ],
)
def test_malformed_results_are_bad_input(tmp_path, change, message):
    path = _result(tmp_path / "bad.json", [0.5] * 3, **change)
    with pytest.raises(ResultFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        BenchmarkResult.load(path)


def test_duplicated_queries_and_impossible_values_are_refused(tmp_path):
    path = _result(tmp_path / "dup.json", [0.5] * 3)
    data = json.loads(path.read_text())
    data["queries"].append(dict(data["queries"][0]))
    path.write_text(json.dumps(data))
    with pytest.raises(ResultFileError, match=r"queries\[3\]: query 'q00' appears twice"):
        BenchmarkResult.load(path)
    path = _result(tmp_path / "big.json", [0.5, 7.5, 0.5])
    data = json.loads(path.read_text())
    data["metrics"]["overall"]["mrr"] = 0.5  # only the query is impossible
    path.write_text(json.dumps(data))
    with pytest.raises(ResultFileError, match=r"queries\[1\] \(query 'q01'\): metric 'mrr' is 7.5, outside \[0, 1\]"):
        BenchmarkResult.load(path)


@pytest.mark.parametrize("command", ["gate", "compare", "pool"])
@pytest.mark.parametrize("bad", ["folder", "no-queries", "nan-metric"])
def test_gate_compare_and_pool_exit_2_on_bad_input(tmp_path, command, bad):
    good = _result(tmp_path / "good.json", [0.5] * 3)
    if bad == "folder":
        target = tmp_path / "a-folder"
        target.mkdir()
    elif bad == "no-queries":
        target = _result(tmp_path / "bad.json", [0.5] * 3, queries=None)
    else:
        target = tmp_path / "bad.json"
        target.write_text(good.read_text().replace('"mrr": 0.5}', '"mrr": NaN}', 1))
    args = {
        "gate": ["gate", "--accepted", str(good), "--current", str(target)],
        "compare": ["compare", str(good), str(target)],
        "pool": ["pool", str(good), str(target), "--out", str(tmp_path / "pool.jsonl")],
    }[command]
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert str(target) in _only_line(result.stderr)


def test_latency_sample_below_minus_one_is_refused(overlap_plugin, tiny_dataset):
    result = invoke("eval", "-d", str(tiny_dataset), "-r", "overlap", "--latency-sample", "-5")
    assert result.exit_code == 2 and "--latency-sample -5 is not a query count" in _only_line(result.stderr)


# 7. One broken plugin is reported by name; the host and the other plugins work -----------------

BROKEN_PLUGINS = {
    "rk-exit": "import sys\nsys.exit(3)\n",
    "rk-ctrlc": "raise KeyboardInterrupt\n",
    "rk-commands": """
        from recall_kit import hookimpl
        @hookimpl
        def register_commands(app):
            raise RuntimeError("no commands today")
    """,
    "rk-typo": """
        from recall_kit import hookimpl
        @hookimpl
        def register_retriver(register):
            pass
    """,
    "rk-raising": """
        from recall_kit import hookimpl
        @hookimpl
        def register_retrievers(register):
            raise RuntimeError("cannot register")
    """,
    "rk-printer": '\n    print("hello from a plugin import")' + GOOD_PLUGIN,
}


def test_broken_plugins_are_named_and_the_rest_work(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    for dist, body in BROKEN_PLUGINS.items():
        _write_plugin_dist(site, dist, dist.replace("-", "_"), body)
    listed = _run_cli(["list", "retrievers", "--json"], site, {})
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr
    names = {entry["name"]: entry["plugin"] for entry in json.loads(listed.stdout)}  # stdout is pure JSON
    assert names["goodone"] == "rk-printer"
    assert "hello from a plugin import" in listed.stderr
    assert "plugin 'rk-exit' failed to load (SystemExit(3))" in listed.stderr
    assert "plugin 'rk-ctrlc' failed to load (KeyboardInterrupt)" in listed.stderr
    assert "plugin 'rk-commands' failed in register_commands (RuntimeError: no commands today)" in listed.stderr
    assert "plugin 'rk-typo' failed to load (PluginError: implements a hook with no specification" in listed.stderr
    assert "plugin 'rk-raising' failed in register_retrievers (RuntimeError: cannot register)" in listed.stderr

    dataset = write_dataset(tmp_path / "d")
    evaluated = _run_cli(["eval", "-d", str(dataset), "-r", "goodone", "--report", "json", "--latency-sample", "0"],
                         site, {})
    assert evaluated.returncode == 0, evaluated.stderr
    assert "metrics" in json.loads(evaluated.stdout)  # no plugin print mixed into it


# 11. What ended in "unexpected X": now one line naming the file (and line) -----------------------

def _dataset_with_corpus_line(tmp_path: Path, line: str) -> Path:
    folder = write_dataset(tmp_path / "d")
    with (folder / "corpus.jsonl").open("a", encoding="utf-8") as stream:
        stream.write(line + "\n")
    return folder


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": ' + "7" * 5000 + ', "content": "x"}', "corpus.jsonl:7: not valid JSON (Exceeds the limit"),
        ("[" * 100_000 + "]" * 100_000, "corpus.jsonl:7: not valid JSON (nested too deeply)"),
        ('{"id": 7, "content": "a \\ud800 b"}', "corpus.jsonl:7: holds a lone surrogate escape"),
        ('{"id": "' + "x" * 600 + '", "content": "x"}', 'corpus.jsonl:7: missing or bad "id"'),
    ],
)
def test_hostile_corpus_lines_are_one_problem_with_file_and_line(tmp_path, line, message):
    folder = _dataset_with_corpus_line(tmp_path, line)
    result = invoke("dataset", "validate", str(folder))
    assert result.exit_code == 2 and "unexpected" not in result.stderr and "Traceback" not in result.output
    assert result.stderr.splitlines()[0].startswith(message)


def test_a_lone_surrogate_in_a_query_is_refused(tmp_path):
    folder = write_dataset(tmp_path / "d")
    with (folder / "queries.jsonl").open("a") as stream:
        stream.write('{"query_id": "odd", "text": "\\udfff"}\n')
    assert str(read_dataset(folder)[1][0]).startswith("queries.jsonl:5: holds a lone surrogate escape")


def test_non_utf8_corpus_names_the_line(tmp_path):
    folder = write_dataset(tmp_path / "d")
    with (folder / "corpus.jsonl").open("ab") as stream:
        stream.write(b'{"id": 7, "content": "caf\xe9"}\n')
    assert str(read_dataset(folder)[1][0]) == "corpus.jsonl:7: not UTF-8 text"


def test_disk_full_names_the_file(tmp_path, monkeypatch):
    import errno

    def full(_descriptor: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    target = tmp_path / "r.json"
    with pytest.raises(OutputError, match=r"r\.json: cannot write \(No space left on device\)"):
        write_text_atomic(target, "{}")
    assert os.listdir(tmp_path) == []


def test_deeply_nested_result_file_is_bad_input(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ResultFileError, match="nested too deeply"):
        BenchmarkResult.load(path)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (None, "is a folder; --config takes a TOML file"),
        ('[system]\nretriever = "overlap"\n[options]\noverlap = 3\n', "[options] overlap = 3: options are a table"),
        ('[system]\nretriever = "overlap"\nfusoin = "rrf"\n', "unknown key in [system] 'fusoin'. Did you mean 'fusion'?"),
        ('[system]\nretriever = "overlap"\n[wieghts]\noverlap = 1\n', "unknown table 'wieghts'. Did you mean 'weights'?"),
        ('[system]\nretriever = "overlap"\n[weights]\noverlap = nan\n', "weight 'overlap' must be a finite number"),
        ('[system]\nretriever = 3\n', "[system] retriever must be text"),
    ],
)
def test_config_mistakes_are_refused(overlap_plugin, tiny_dataset, tmp_path, toml, message):
    config = tmp_path / "exp"
    if toml is None:
        config.mkdir()
    else:
        config.write_text(toml)
    result = invoke("eval", "-d", str(tiny_dataset), "-c", str(config))
    assert result.exit_code == 2, result.output
    assert message in _only_line(result.stderr)


@pytest.mark.parametrize(
    ("weights", "message"),
    [(",,", "an empty entry"), ("overlap=1,overlap=2", "leg 'overlap' is given twice")],
)
def test_bad_weights_are_refused(overlap_plugin, tiny_dataset, weights, message):
    result = invoke("eval", "-d", str(tiny_dataset), "-r", "overlap", "--weights", weights)
    assert result.exit_code == 2 and message in _only_line(result.stderr)


# 11 and 15. Importers ----------------------------------------------------------------------------

def _import(*args: str):  # type: ignore[no-untyped-def]
    return invoke("dataset", "import", *args)


def _beir(tmp_path: Path, qrels: str, text: str = "apple") -> Path:
    source = tmp_path / "beir"
    (source / "qrels").mkdir(parents=True)
    (source / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "text": text}) + "\n")
    (source / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "apple?"}) + "\n")
    (source / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return source


def test_beir_fractional_score_is_refused_not_truncated(tmp_path):
    result = _import("beir", str(_beir(tmp_path, "q1\td1\t1.5\n")), str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "test.tsv:2: score '1.5' is not an integer grade" in _only_line(result.stderr)
    assert not (tmp_path / "out").exists()


def test_beir_lone_surrogate_is_one_line(tmp_path):
    source = _beir(tmp_path, "q1\td1\t1\n")
    (source / "corpus.jsonl").write_text('{"_id": "d1", "text": "a \\ud800"}\n')
    result = _import("beir", str(source), str(tmp_path / "out"))
    assert result.exit_code == 2 and "corpus.jsonl:1: holds a lone surrogate" in _only_line(result.stderr)


def test_an_empty_import_says_what_was_dropped(tmp_path):
    result = _import("beir", str(_beir(tmp_path, "q1\td1\t1\n", text="   ")), str(tmp_path / "out"))
    assert result.exit_code == 2
    line = _only_line(result.stderr)
    assert "holds no memories" in line and "it dropped 1 documents empty" in line


def test_locomo_given_a_folder_or_a_list_sample_id(tmp_path):
    result = _import("locomo", str(tmp_path), str(tmp_path / "out"))
    assert result.exit_code == 2 and "is a folder; this importer reads one JSON file" in _only_line(result.stderr)
    source = tmp_path / "locomo.json"
    source.write_text(json.dumps([{"sample_id": ["conv-1"], "conversation": {}, "qa": []}]))
    result = _import("locomo", str(source), str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "sample 1: sample_id must be one line of text or an integer, got list" in _only_line(result.stderr)
    source.write_text('[{"sample_id": "c\\udc80", "conversation": {}}]')
    result = _import("locomo", str(source), str(tmp_path / "out"))
    assert result.exit_code == 2 and "lone surrogate" in _only_line(result.stderr)


def test_sqlite_broken_view_is_one_line(tmp_path):
    import sqlite3

    database = tmp_path / "store.db"
    connection = sqlite3.connect(database)
    connection.execute("CREATE TABLE base (id, content)")
    connection.execute("CREATE VIEW memories AS SELECT id, content FROM base")
    connection.execute("DROP TABLE base")
    connection.commit()
    connection.close()
    (tmp_path / "q.jsonl").write_text('{"query_id": "q", "text": "t"}\n')
    (tmp_path / "r.jsonl").write_text('{"query_id": "q", "relevant_ids": [1]}\n')
    result = _import("sqlite", str(database), str(tmp_path / "out"), "--queries", str(tmp_path / "q.jsonl"),
                     "--qrels", str(tmp_path / "r.jsonl"))
    assert result.exit_code == 2
    assert "store.db: table 'memories' cannot be read" in _only_line(result.stderr)


def test_unclosed_last_trec_topic_is_read_and_counted(tmp_path):
    source = tmp_path / "trec"
    source.mkdir()
    (source / "topics.txt").write_text("<top>\n<num> Number: 1\n<title> apple\n</top>\n"
                                       "<top>\n<num> Number: 2\n<title> pear\n")
    (source / "qrels.txt").write_text("1 0 d1 1\n2 0 d2 1\n")
    (source / "corpus.jsonl").write_text('{"id": "d1", "text": "apple"}\n{"id": "d2", "text": "pear"}\n')
    result = _import("trec", str(source), str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert "queries: 2" in result.stdout
    assert "notes.topics_unclosed_last_block_read: 1" in result.stdout
