"""What a new user meets first: --debug anywhere, --version, a closed pipe, rounded stats,
"not measured" latencies, the shipped example dataset, and the PYTHONPATH hint."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from recall_kit import BenchmarkResult
from recall_kit.cli import get_app

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(get_app(), list(args))


def test_debug_is_accepted_after_the_command_too(tiny_dataset):
    for args in (["--debug", "eval", "-d", str(tiny_dataset), "-r", "nope"],
                 ["eval", "-d", str(tiny_dataset), "-r", "nope", "--debug"]):
        result = invoke(*args)
        # --debug re-raises instead of printing one line: the error reaches the runner.
        assert result.exception is not None and "Unknown retriever 'nope'" in str(result.exception)
    plain = invoke("eval", "-d", str(tiny_dataset), "-r", "nope")
    assert plain.exit_code == 2 and plain.stderr.startswith("Error: Unknown retriever 'nope'")


def test_version():
    from recall_kit import __version__

    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout == f"recall-kit {__version__}\n"


def test_a_closed_pipe_ends_quietly():
    # Many lines, one echo each (as `dataset lint` prints): the reader closes after the first.
    program = (
        "import typer\n"
        "from recall_kit.cli import app\n"
        "@app.command('spam')\n"
        "def spam() -> None:\n"
        "    for i in range(200000):\n"
        "        typer.echo(f'line {i}')\n"
        "app(['spam'])\n"
    )
    process = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stdout.readline() == b"line 0\n"
    process.stdout.close()
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 141  # a Unix tool killed by SIGPIPE; never 1 (a bad verdict); no message
    assert stderr == b""


def test_stats_prints_rounded_numbers(tiny_dataset):
    result = invoke("dataset", "stats", str(tiny_dataset))
    assert result.exit_code == 0, result.output
    words = next(line for line in result.stdout.splitlines() if line.startswith("memory_words:"))
    # Every value is an integer or has exactly two decimals.
    for value in (part.split("=")[1] for part in words.removeprefix("memory_words: ").split(", ")):
        assert value.isdigit() or len(value.split(".")[1]) == 2, words


def test_latency_sample_zero_says_not_measured(overlap_plugin, tiny_dataset):
    result = invoke("eval", "-d", str(tiny_dataset), "-r", "overlap", "--latency-sample", "0")
    assert result.exit_code == 0, result.output
    cost = result.stdout[result.stdout.index("Cost"):]
    row = re.split(r"\s{2,}", cost.split("\n")[3].strip())  # leg, p50, p95, p99, build s, bytes
    assert row[1:4] == ["not measured"] * 3, row
    assert "single-query latency not measured (--latency-sample 0)" in cost


def test_example_dataset_by_name_and_copied(tmp_path):
    from recall_kit.dataset import example_datasets, load_dataset

    assert "memories" in example_datasets()
    shipped = load_dataset("example:memories")
    assert len(shipped.queries) == 120 and set(shipped.strata) == {"exact", "paraphrase", "multihop"}
    result = invoke("dataset", "example", str(tmp_path / "mine"))
    assert result.exit_code == 0, result.output
    assert load_dataset(tmp_path / "mine").fingerprint == shipped.fingerprint
    again = invoke("dataset", "example", str(tmp_path / "mine"))
    assert again.exit_code == 2 and "is not empty; pass --force" in again.stderr
    unknown = invoke("dataset", "validate", "example:nope")
    assert unknown.exit_code == 2 and "example:nope: no such example dataset (available: example:memories)" in unknown.stderr
    read_only = invoke("dataset", "lint", "example:memories", "--fix-twins")
    assert read_only.exit_code == 2 and "read-only" in read_only.stderr


def test_the_example_dataset_is_package_data():
    # The wheel carries it: pyproject's package-data names the files the loader reads.
    import tomllib

    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["recall_kit"]
    assert "examples/*/*.jsonl" in patterns
    for name in ("corpus.jsonl", "queries.jsonl", "qrels.jsonl"):
        assert (REPO / "recall_kit" / "examples" / "memories" / name).is_file()
        assert (REPO / "examples" / "memories" / name).resolve() == (REPO / "recall_kit" / "examples" / "memories" / name)


def test_a_module_in_the_current_folder_needs_pythonpath(tmp_path, tiny_dataset):
    (tmp_path / "myret.py").write_text("def Overlap(query, k):\n    return []\n")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    # The installed command (`python -m` would put the current folder on the path itself).
    command = str(Path(sys.executable).parent / "recall-kit")
    args = [command, "eval", "-d", str(tiny_dataset), "-r", "myret:Overlap", "--report", "json"]
    failed = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert failed.returncode == 2
    assert "myret is in the current folder, which a command does not search: run with PYTHONPATH=." in failed.stderr
    works = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path, env={**env, "PYTHONPATH": "."}, timeout=120)
    assert works.returncode == 0, works.stderr
    assert BenchmarkResult.from_dict(json.loads(works.stdout)).system.spec == "myret:Overlap"


def test_import_help_shows_each_importers_options():
    one = invoke("dataset", "import", "sqlite", "--help")
    assert one.exit_code == 0, one.output
    assert "Options of the sqlite importer (after OUT):" in one.stdout
    assert "--text-col TEXT" in one.stdout and "Column of the memory text. [default: content]" in one.stdout
    assert "trec importer" not in one.stdout
    every = invoke("dataset", "import", "--help")
    for name in ("beir", "locomo", "longmemeval", "sqlite", "trec"):
        assert f"Options of the {name} importer" in every.stdout
    assert "--title / --no-title" in every.stdout  # a bool option of beir


def _all_commands():  # type: ignore[no-untyped-def]
    import typer.main

    root = typer.main.get_command(get_app())
    ctx = root.make_context("recall-kit", ["--help"], resilient_parsing=True)
    for name in root.list_commands(ctx):
        command = root.get_command(ctx, name)
        if hasattr(command, "list_commands"):
            inner = command.make_context(name, [], resilient_parsing=True, parent=ctx)
            for sub in command.list_commands(inner):
                yield [name, sub]
        else:
            yield [name]


#: trec_eval's short flags, which `score` keeps with trec_eval's meaning.
TREC_EVAL_FLAGS = {"-c": "--complete", "-q": "--per-query", "-M": "--max-depth", "-m": "--metrics",
                   "-l": "--relevance-level", "-J": "--judged-only"}


def test_help_uses_click_placeholders_and_short_flags_mean_one_thing():
    import re

    meanings: dict[str, set[str]] = {}
    for path in _all_commands():
        result = invoke(*path, "--help")
        assert result.exit_code == 0, (path, result.output)
        for typer_style in ("<str>", "<path>", "<int>", "<list", "{"):
            assert typer_style not in result.stdout.split("Options of the")[0], (path, typer_style)
        for short, long in re.findall(r"^\s+(-[a-zA-Z]), (--[\w-]+)", result.stdout, flags=re.M):
            if path == ["score"] and short in TREC_EVAL_FLAGS:
                # `score` takes trec_eval's own short flags (docs/trec-eval.md), as its users type them.
                assert TREC_EVAL_FLAGS[short] == long, (short, long)
                continue
            meanings.setdefault(short, set()).add(long)
    assert {short: longs for short, longs in meanings.items() if len(longs) > 1} == {}
    assert meanings["-c"] == {"--config"} and meanings["-d"] == {"--dataset"}


def test_out_dir_and_its_old_spelling(overlap_plugin, tiny_dataset, tmp_path):
    for flag in ("--out-dir", "--out"):
        result = invoke("ablate", "-d", str(tiny_dataset), "-r", "overlap+overlap2", "--fusion", "x",
                        flag, str(tmp_path / flag.strip("-")))
        # the option is accepted under both names (the spec error comes after parsing)
        assert "No such option" not in result.output


def test_study_is_listed_first_and_says_start_here():
    # issue 70: `study`, where the docs tell a user to start, was 16th of 17 commands in --help.
    result = invoke("--help")
    assert result.exit_code == 0, result.output
    commands = result.stdout.split("Commands:", 1)[1].split()
    assert commands[0] == "study" and commands[1:3] == ["Start", "here:"]
